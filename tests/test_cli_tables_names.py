"""Output fit for logs and one name per thing (the fail-loudly issue, items 6 and 8).

Every command that prints a table has ``--json`` with the same figures (a walk over the whole
command tree keeps new commands honest); help texts show no value type beside flags and no
internal notes; PersuasionForGood's DialToM domain is ``PD`` like its task (``PFG`` still read);
fakes are cached only when asked, as the docs say. Fake backend only.
"""

from __future__ import annotations

import csv
import json
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from helpers_cli import cogwm
from helpers_tom import tom_data_dir
from helpers_validate import write_corpora

ARENA = """
name = "tables"
seed = 1
tasks = ["ESC"]
dialogues_per_task = 1
max_rounds = 3
intent_from_round = 3

[simulator]
model = "fake:schema"

[[agents]]
name = "warm"
model = "fake:schema"
prompt = "builtin:empathetic"
"""

#: Commands that print no table (files, transcripts, one summary line, a server, a chat).
NO_TABLE = {
    "chat",
    "view",
    "serve",
    "annotate run",
    "annotate export",
    "annotate quality-export",
    "arena merge",
    "arena export",
    "data windows",
    "data export",
    "tom verify-export",
    "tom answers-export",
    "simulate",
    "tom score-open",
    "train export-gguf",
    "train merge-gguf",
}


def _commands() -> dict[str, Any]:
    """Every command of the CLI by its path ('tom eval'), groups with options included."""
    from cogwm.cli.main import _register, app

    _register()
    found: dict[str, Any] = {}

    def walk(command: Any, path: tuple[str, ...]) -> None:
        subcommands = getattr(command, "commands", None)
        # A group is a command of its own when it takes options (``cogwm train``).
        if path and (not subcommands or command.params):
            found[" ".join(path)] = command
        for name, sub in (subcommands or {}).items():
            if not sub.hidden:
                walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


# ----------------------------------------------------------------------- every table has --json


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, fixtures_dir: Path) -> dict[str, Path]:
    """Inputs for every table command, made once through the CLI on the fake backend."""
    root = tmp_path_factory.mktemp("tables")
    data = tom_data_dir(root / "data", fixtures_dir)
    paths = {"root": root, "data": data, "fixtures": fixtures_dir}
    paths["validate_data"] = write_corpora(root / "validate-data")
    paths["items"] = root / "items.jsonl"
    assert cogwm("tom", "build", "--out", paths["items"], "--data-dir", data, "--limit", "2") == 0
    paths["tom_db"] = root / "tom.sqlite"
    tom_eval = ["tom", "eval", paths["items"], "--model", "fake:schema", "--db", paths["tom_db"]]
    assert cogwm(*tom_eval) == 0
    paths["arena_toml"] = root / "arena.toml"
    paths["arena_toml"].write_text(ARENA)
    paths["arena_db"] = root / "arena.sqlite"
    assert (
        cogwm("arena", "run", paths["arena_toml"], "--db", paths["arena_db"], "--no-progress") == 0
    )
    paths["annotations"] = root / "annotations.sqlite"
    annotate = ["annotate", "run", "annomi", "--model", "fake:schema", "--limit", "1"]
    assert cogwm(*annotate, "--db", paths["annotations"], "--data-dir", data, "--no-progress") == 0
    paths["card"] = root / "card.json"
    card: list[object] = ["validate", "--model", "fake:schema", "--parts", "dailydialog"]
    card += ["--limit", "3"]
    card += ["--data-dir", paths["validate_data"], "--resamples", "20", "--out", paths["card"]]
    assert cogwm(*card) == 0
    paths["votes"], paths["sheet"] = root / "votes.csv", root / "sheet.csv"
    _votes_and_answers(paths)
    paths["trajectories"] = root / "trajectories.jsonl"
    rows = [{"id": f"c{k}", "scores": [0.0, 0.5 * k, 1.0]} for k in range(3)]
    paths["trajectories"].write_text("".join(json.dumps(r) + "\n" for r in rows))
    return paths


def _votes_and_answers(paths: dict[str, Path]) -> None:
    ids = [json.loads(line)["id"] for line in paths["items"].read_text().splitlines()[:4]]
    with paths["votes"].open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "worker", "label"])
        writer.writerows([item, worker, "valid"] for item in ids for worker in ("w1", "w2"))
    assert cogwm("tom", "answers-export", paths["items"], "--out", paths["sheet"]) == 0
    with paths["sheet"].open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row.update(respondent="r1", choice="A")
    with paths["sheet"].open("w", newline="", encoding="utf-8") as handle:
        filled = csv.DictWriter(handle, fieldnames=list(rows[0]))
        filled.writeheader()
        filled.writerows(rows)


def _out(w: dict[str, Path], name: str) -> Path:
    return w["root"] / "out" / name


#: Every command that prints a table, with arguments that make it print one (--json is added).
TABLE_COMMANDS: dict[str, Callable[[dict[str, Path]], list[object]]] = {
    "quickstart": lambda w: [
        "--model", "fake:schema", "--dialogues", "1", "--no-progress",
        "--db", _out(w, "qs.sqlite"), "--out", _out(w, "qs-plots"),
    ],
    "validate": lambda w: ["--compare", w["card"], w["card"]],
    "annotate quality": lambda w: ["--db", w["annotations"], "--data-dir", w["data"]],
    "annotate labels": lambda w: [
        "esconv", "--data-dir", w["fixtures"], "--out", _out(w, "labels.jsonl"),
    ],
    "arena run": lambda w: [w["arena_toml"], "--db", _out(w, "a.sqlite"), "--no-progress"],
    "arena report": lambda w: ["--db", w["arena_db"], "--resamples", "50"],
    "arena sensitivity": lambda w: [
        "--simulator", "python:cogwm.simulator.rule:SentimentMeter", "--scenarios", "2",
        "--rounds", "3", "--data-dir", w["fixtures"], "--db", _out(w, "sens"), "--resamples",
        "50", "--no-progress",
    ],
    "data list": lambda w: ["--data-dir", w["data"]],
    "data stats": lambda w: ["esconv", "--data-dir", w["fixtures"]],
    "models list": lambda w: [],
    "models check": lambda w: ["fake:schema"],
    "score fidelity": lambda w: [],  # not run: loads the MiniLM embedder (test_metrics_cli)
    "score trajectories": lambda w: [w["trajectories"], "--task", "ESC", "--resamples", "50"],
    "samples build": lambda w: [
        "--human", "esconv", "--data-dir", w["fixtures"], "--out", _out(w, "samples"),
    ],
    "tom contexts": lambda w: ["--data-dir", w["data"]],
    "tom build": lambda w: ["--data-dir", w["data"], "--limit", "1", "--out", _out(w, "i.jsonl")],
    "tom variants": lambda w: [w["items"], "--easy", "--out", _out(w, "easy.jsonl")],
    "tom verify": lambda w: [w["items"], "--votes", w["votes"]],
    "tom answers-import": lambda w: [
        w["sheet"], "--as", "human:lay", "--items", w["items"], "--db", _out(w, "people.sqlite"),
    ],
    "tom eval": lambda w: [w["items"], "--model", "fake:echo", "--db", _out(w, "t.sqlite")],
    "tom compare": lambda w: [w["items"], "--model", "fake:schema", "--db", _out(w, "c.sqlite")],
    "tom stats": lambda w: ["--db", w["tom_db"]],
    "train": lambda w: [],  # not run: trains a model with torch (test_train_loop)
    "train transition": lambda w: [],  # not run: needs samples (test_transition_card)
}  # fmt: skip
NOT_RUN = {"score fidelity", "train", "train transition"}


def test_every_command_that_prints_a_table_has_json() -> None:
    commands = _commands()
    with_json = {path for path, c in commands.items() if any("--json" in p.opts for p in c.params)}
    # a new command must be sorted into one of the two lists
    assert set(commands) == set(TABLE_COMMANDS) | NO_TABLE
    assert set(TABLE_COMMANDS) - with_json == set(), "table commands without --json"
    assert with_json <= set(TABLE_COMMANDS)


@pytest.mark.parametrize("path", sorted(set(TABLE_COMMANDS) - NOT_RUN))
def test_json_of_every_table_command_parses(
    path: str, world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    (world["root"] / "out").mkdir(exist_ok=True)
    capsys.readouterr()
    code = cogwm(*path.split(), *TABLE_COMMANDS[path](world), "--json")
    out, err = capsys.readouterr()
    assert code == 0, err
    parsed = json.loads(out)  # the whole of stdout is one JSON document: no table beside it
    assert isinstance(parsed, dict) and parsed
    assert "━" not in out and "│" not in out


def test_json_has_the_figures_of_the_table(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert cogwm("data", "list", "--data-dir", world["data"]) == 0
    table = capsys.readouterr().out
    assert cogwm("data", "list", "--data-dir", world["data"], "--json") == 0
    rows = {r["corpus"]: r for r in json.loads(capsys.readouterr().out)["corpora"]}
    assert rows["esconv"]["present"] is True and rows["dailydialog"]["present"] is False
    assert rows["persuasionforgood"]["aliases"] == ["p4g"]
    assert f"{rows['esconv']['release_dialogues']:,}" in table

    labels = ["annotate", "labels", "esconv", "--data-dir", world["fixtures"]]
    assert cogwm(*labels, "--out", world["root"] / "l.jsonl", "--json") == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["written"] == counts["dialogues"] > 0
    assert set(counts["fields"]) >= {"emotion", "beliefs"}

    run = ["arena", "run", world["arena_toml"], "--no-progress", "--json"]
    assert cogwm(*run, "--db", world["root"] / "j.sqlite") == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["planned"], summary["finished"], summary["failed"]) == (1, 1, 0)
    assert summary["failure_causes"] == []
    assert cogwm(*run, "--db", world["root"] / "dry.sqlite", "--dry-run") == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["units"] == 1 and plan["calls"] == sum(r["calls"] for r in plan["roles"])
    assert not (world["root"] / "dry.sqlite").exists()


def test_arena_run_json_carries_the_failure_causes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(
        ARENA.replace('model = "fake:schema"\nprompt', 'model = "fake:nobody"\nprompt')
    )
    code = cogwm("arena", "run", config, "--db", tmp_path / "r.sqlite", "--no-progress", "--json")
    out, err = capsys.readouterr()
    assert code == 1
    summary = json.loads(out)
    (cause,) = summary["failure_causes"]
    assert cause["kind"] == "infrastructure" and cause["n"] == 1 and "nobody" in cause["example"]
    assert "Failed conversations by cause" not in err  # the table is the JSON's, not printed too


# ----------------------------------------------------------------------------------- help texts


def test_help_of_every_command_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    for path, command in _commands().items():
        assert cogwm(*path.split(), "--help") == 0, path
        text = capsys.readouterr().out
        assert "<bool>" not in text and "<list[" not in text, path  # no Python types
        for note in ("Registered", "tests use", "TODO", "internal"):
            assert note not in text, (path, note)
        missing = [p.opts[0] for p in command.params if not getattr(p, "help", "x") and
                   not getattr(p, "hidden", False) and p.opts[0].startswith("--")]  # fmt: skip
        assert not missing, f"{path}: options without help: {missing}"


# ------------------------------------------------------------------------------ one name per thing


def test_dialtom_names_persuasion_pd_like_its_task(world: dict[str, Path]) -> None:
    from cogwm.tom.items import read_items

    domains = {item.domain.value for item in read_items(world["items"])}
    assert domains == {"MI", "ESC", "PD"}


def test_items_and_stores_that_say_pfg_are_still_read(
    world: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cogwm.tom.items import Domain, read_items

    old_items = tmp_path / "old.jsonl"
    lines = world["items"].read_text().splitlines()
    old_items.write_text("".join(line.replace('"PD"', '"PFG"') + "\n" for line in lines))
    assert "PFG" in old_items.read_text()
    assert {i.domain for i in read_items(old_items)} == {Domain.MI, Domain.ESC, Domain.PD}

    old_db = tmp_path / "old.sqlite"
    old_db.write_bytes(world["tom_db"].read_bytes())
    conn = sqlite3.connect(old_db)
    conn.execute("UPDATE tom_items SET domain = 'PFG' WHERE domain = 'PD'")
    conn.execute("UPDATE tom_items SET json = replace(json, '\"PD\"', '\"PFG\"')")
    conn.commit()
    conn.close()
    capsys.readouterr()
    assert cogwm("tom", "stats", "--db", old_db, "--json") == 0
    rates = json.loads(capsys.readouterr().out)["table3_rates"]
    assert {r["domain"] for r in rates} == {"MI", "ESC", "PD"}


def test_former_and_corpus_names_are_accepted_as_input() -> None:
    from cogwm import tasks
    from cogwm.validate.run import check_parts

    assert tasks.get("PFG").name == tasks.get("pd").name == "PD"
    assert check_parts(["persuasionforgood", "p4g", "annomi"]) == ["persuasionforgood", "annomi"]


# ------------------------------------------------------------------------------ fakes and cache


@pytest.fixture()
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    yield tmp_path / "cache"


def test_fakes_are_cached_only_when_asked(cache_dir: Path, tmp_path: Path) -> None:
    import asyncio

    from cogwm import models
    from cogwm.models import Sampling

    async def twice(model: models.Model) -> int:
        try:
            for _ in range(2):
                await model.generate("hello", Sampling(temperature=0.0))
            return model.stats.cache_hits
        finally:
            await model.aclose()

    assert asyncio.run(twice(models.load("fake:schema"))) == 0  # the documented default
    assert asyncio.run(twice(models.load("fake:schema", cache=True))) == 1
    # the arena asks (its config's cache = true): a run on fakes fills the reply cache
    config = tmp_path / "arena.toml"
    config.write_text(ARENA)
    assert cogwm("arena", "run", config, "--db", tmp_path / "r.sqlite", "--no-progress") == 0
    conn = sqlite3.connect(next(cache_dir.glob("*.sqlite")))
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    rows = sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables)
    conn.close()
    assert rows > 0


# ------------------------------------------------------------------------------- output in logs


def test_logs_get_whole_tables_and_unbroken_messages_even_with_columns_set(
    tmp_path: Path,
) -> None:
    import os
    import subprocess

    long_name = "an_agent_whose_name_is_longer_than_eighty_columns_" * 2
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.replace('"warm"', f'"{long_name}"'))
    failing = tmp_path / "failing.toml"
    failing.write_text(ARENA.replace('"fake:schema"\nprompt', '"fake:nobody"\nprompt'))
    # CI systems and shells export COLUMNS; a pipe must still get whole lines
    env = {**os.environ, "COLUMNS": "80", "COGWM_CACHE_DIR": str(tmp_path / "cache")}

    def run(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cogwm.cli.main", *(str(a) for a in args)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )

    db = tmp_path / "r.sqlite"
    assert run("arena", "run", config, "--db", db, "--no-progress").returncode == 0
    report = run("arena", "report", "--db", db, "--resamples", "50")
    assert report.returncode == 0, report.stderr
    assert f"{long_name}/no_cot" in report.stdout and "…" not in report.stdout
    deep = tmp_path / ("a_folder_with_a_long_name_" * 3) / "failing.sqlite"
    deep.parent.mkdir()
    failed = run("arena", "run", failing, "--db", deep, "--no-progress")
    assert failed.returncode == 1
    (hint,) = [line for line in failed.stderr.splitlines() if "conversations failed" in line]
    assert hint.endswith(f"--resume --db {deep}")


def test_annotate_quality_in_a_log_keeps_long_figures_and_notes_whole(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cogwm.annotate import quality
    from cogwm.annotate.quality import Figure

    name = "a_figure_whose_name_takes_more_room_than_a_log_line_of_160_columns_" * 2
    note = "a note that goes on and on " * 10
    figure = Figure(name, "esconv", 0.5, 10, (0.1, 0.9), 1.0, {"majority": 0.4}, note=note)
    monkeypatch.setattr(quality, "against_human_labels", lambda stored, root: ([figure], {}))
    capsys.readouterr()
    assert (
        cogwm("annotate", "quality", "--db", world["annotations"], "--data-dir", world["data"]) == 0
    )
    out = capsys.readouterr().out
    assert name in out and "…" not in out  # the cell, not cut
    assert f"esconv {name}: {note}" in out.splitlines()  # the note, on one line


def test_validate_cards_that_name_the_part_p4g_are_still_read(
    world: dict[str, Path], tmp_path: Path
) -> None:
    from cogwm.validate import read_card

    data = json.loads(world["card"].read_text())
    data["parts"][0]["name"] = "p4g"
    data["figures"][0]["part"] = "p4g"
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    card = read_card(old)
    assert card.parts[0].name == card.figures[0].part == "persuasionforgood"
    assert card.figures[0].key.startswith("persuasionforgood.")
