"""People as a baseline: the answer sheet, its validated import, and people in ``tom stats``."""

from __future__ import annotations

import csv
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from statsmodels.stats.proportion import proportion_confint
from typer.testing import CliRunner

from cogwm.cli.tom import app
from cogwm.errors import InputError
from cogwm.stats import gwet_ac1
from cogwm.tom.items import Task, write_items
from helpers_tom import mc_item

runner = CliRunner()
OPTIONS = ["yes", "no", "maybe", "never"]


def _items(path: Path) -> Path:
    items = [mc_item(f"x:{k}#w0:retro:t", options=OPTIONS, gold="yes") for k in range(4)]
    items += [
        mc_item(f"x:{k}#w1:prosp:t", task=Task.PROSPECTIVE, options=OPTIONS, gold="no")
        for k in range(2)
    ]
    write_items(path, items)
    return path


def _export(tmp_path: Path, seed: int = 3) -> list[dict[str, str]]:
    items = _items(tmp_path / "items.jsonl")
    sheet = tmp_path / "sheet.csv"
    result = runner.invoke(
        app, ["answers-export", str(items), "--out", str(sheet), "--seed", str(seed)]
    )
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(sheet.open(encoding="utf-8")))


def _letter(row: dict[str, str], text: str) -> str:
    match = re.search(rf"^([A-Z])\. {re.escape(text)}$", row["options"], re.MULTILINE)
    assert match, row["options"]
    return match.group(1)


def _fill(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _answered(sheet: list[dict[str, str]], plan: dict[str, list[bool]]) -> list[dict[str, str]]:
    """Copies of the sheet's retrospective rows, one per respondent, right or wrong per plan."""
    retro = [r for r in sheet if r["task"] == "retrospective"]
    rows = []
    for respondent, outcomes in plan.items():
        for row, right in zip(retro, outcomes, strict=True):
            gold = _letter(row, "yes")
            wrong = _letter(row, "never")
            rows.append({**row, "respondent": respondent, "choice": gold if right else wrong,
                         "time_s": "12.5"})  # fmt: skip
    return rows


def _stats(db: Path) -> dict[str, object]:
    result = runner.invoke(app, ["stats", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_export_letters_options_in_the_seeded_permutation(tmp_path: Path) -> None:
    from cogwm.tom.prompts import permutation

    sheet = _export(tmp_path, seed=3)
    assert len(sheet) == 6 and sheet[0]["seed"] == "3"
    item = mc_item("x:0#w0:retro:t", options=OPTIONS, gold="yes")
    shown = permutation(item, 3)
    first = next(r for r in sheet if r["item_id"] == item.id)
    assert _letter(first, "yes") == shown.gold_letter(item)  # the same order a model sees
    assert "yes" not in first["question"] and not first["choice"]


def test_import_puts_people_into_stats_with_wilson_rates_and_ac1(tmp_path: Path) -> None:
    sheet = _export(tmp_path)
    plan = {"r1": [True, True, True, True], "r2": [True, False, True, False],
            "r3": [True, False, False, False]}  # fmt: skip
    answers = _answered(sheet, plan)
    answers.append({**sheet[-1], "respondent": "r1", "choice": ""})  # a skipped item
    # one respondent answers by option text instead of letter
    answers[0]["choice"] = "yes"
    db = tmp_path / "runs.sqlite"
    result = runner.invoke(
        app,
        ["answers-import", str(_fill(tmp_path / "answers.csv", answers)), "--db", str(db),
         "--as", "human:lay", "--items", str(tmp_path / "items.jsonl"), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert (info["imported"], info["respondents"], info["skipped"]) == (12, 3, 1)

    stats = _stats(db)
    (row,) = [r for r in stats["table3_rates"] if r["model"] == "human:lay"]  # type: ignore[union-attr,index]
    assert (row["n"], row["correct"], row["task"]) == (12, 7, "retrospective")
    low, high = proportion_confint(7, 12, alpha=0.05, method="wilson")
    assert row["rate"] == pytest.approx(7 / 12)
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low), pytest.approx(high))

    agreement = {(r["respondent"], r["task"]): r for r in stats["people_agreement"]}  # type: ignore[union-attr]
    group = agreement[("all", "retrospective")]
    # every respondent chose the gold (stored option 0) or "never" (stored option 3)
    table = [[0, 0, 0], [0, 3, 3], [0, 0, 3], [0, 3, 3]]
    expected = gwet_ac1(table, categories=[0, 1, 2, 3]).coefficient
    assert group["ac1"] == pytest.approx(expected)
    assert group["respondents"] == 3 and group["items"] == 4
    r1 = agreement[("r1", "all")]
    assert r1["rate"] == 1.0 and r1["ac1"] is not None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"item_id": "nope"}, "row 4: unknown item id 'nope'"),
        ({"choice": "Z"}, "row 4: choice 'Z' is neither an option letter"),
        ({"choice": "perhaps"}, "row 4: choice 'perhaps'"),
        ({"respondent": ""}, "row 4: empty respondent"),
        ({"time_s": "-3"}, "row 4: time_s '-3' must be a non-negative"),
        ({"respondent": "r1", "item_id": "x:0#w0:retro:t", "choice": "A"}, "row 4: respondent"),
    ],
)
def test_a_bad_row_is_named_and_nothing_is_imported(
    tmp_path: Path, change: dict[str, str], message: str
) -> None:
    sheet = _export(tmp_path)
    answers = _answered(sheet, {"r1": [True, True, True, True]})
    answers[2] = {**answers[2], **change}  # row 4 of the file (header is row 1)
    db = tmp_path / "runs.sqlite"
    result = runner.invoke(
        app,
        ["answers-import", str(_fill(tmp_path / "answers.csv", answers)), "--db", str(db),
         "--as", "human:expert", "--items", str(tmp_path / "items.jsonl")],
    )  # fmt: skip
    assert isinstance(result.exception, InputError), result.output
    assert message in str(result.exception)
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT COUNT(*) FROM tom_answers").fetchone() == (0,)


def test_importing_a_sheet_twice_imports_nothing_the_second_time(tmp_path: Path) -> None:
    sheet = _export(tmp_path)
    path = _fill(tmp_path / "answers.csv", _answered(sheet, {"r1": [True, False, True, True]}))
    args = ["answers-import", str(path), "--db", str(tmp_path / "db.sqlite"), "--as", "human:lay",
            "--items", str(tmp_path / "items.jsonl")]  # fmt: skip
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, args)
    assert isinstance(again.exception, InputError) and "already has answers" in str(again.exception)
    with sqlite3.connect(tmp_path / "db.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM tom_answers").fetchone() == (4,)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    bad_kind = subprocess.run(
        [sys.executable, "-m", "cogwm.cli.main", "tom", *args[:4], "--as", "lay"],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    assert bad_kind.returncode == 2
    assert bad_kind.stderr.startswith("error: --as must name a group of people")
