"""``cogwm data``: stats, windows and export on the fixtures and the real corpora."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cogwm import corpora
from cogwm.cli.data import app
from cogwm.corpora import Window
from cogwm.schema import Dialogue

SRC = Path(__file__).resolve().parents[1] / "src"
runner = CliRunner()


def _stats_json(name: str, data_dir: Path) -> dict[str, object]:
    result = runner.invoke(app, ["stats", name, "--json", "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    parsed = json.loads(result.stdout)
    assert isinstance(parsed, dict)
    return parsed


def test_stats_json_on_fixtures(fixtures_dir: Path) -> None:
    stats = _stats_json("esconv", fixtures_dir)
    # see test_corpora_loaders: 4 dialogues, 15 utterances, 13 turns, 7 user turns
    assert (stats["dialogues"], stats["utterances"], stats["turns"], stats["user_turns"]) == (
        4,
        15,
        13,
        7,
    )
    assert stats["mean_user_turns_per_dialogue"] == 7 / 4
    assert stats["splits"] == {"train": 2, "test": 1, "valid": 1}
    labels = stats["labels"]
    assert isinstance(labels, dict) and labels["strategy"]["Question"] == 3
    assert stats["release"] == {"dialogues": 1300, "utterances": 38365, "matches": False}
    p4g = _stats_json("p4g", fixtures_dir)
    assert (p4g["corpus"], p4g["dialogues"], p4g["annotated"]) == ("persuasionforgood", 2, 1)


def test_stats_table(fixtures_dir: Path) -> None:
    result = runner.invoke(app, ["stats", "annomi", "--data-dir", str(fixtures_dir)])
    assert result.exit_code == 0, result.output
    for text in ("dialogues", "user turns", "client_talk_type", "sustain"):
        assert text in result.stdout
    assert "published release has 133 dialogues" in result.stderr


def test_data_dir_from_environment(fixtures_dir: Path) -> None:
    result = runner.invoke(
        app, ["stats", "inspired", "--json"], env={"COGWM_DATA_DIR": str(fixtures_dir)}
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["dialogues"] == 3


def test_windows_command(fixtures_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "windows.jsonl"
    result = runner.invoke(
        app, ["windows", "esconv", "--out", str(out), "--data-dir", str(fixtures_dir)]
    )
    assert result.exit_code == 0, result.output
    windows = [Window.model_validate_json(line) for line in out.read_text().splitlines()]
    # every fixture dialogue is under 150 words: one window each
    assert [w.id for w in windows] == [
        "esconv:train:0#w0@200",
        "esconv:train:1#w0@200",
        "esconv:valid:0#w0@200",
        "esconv:test:0#w0@200",
    ]
    assert "esconv: 4 windows from 4 dialogues; 0 (0.0%) over 200 words" in result.stdout


def test_windows_of_several_corpora(fixtures_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "windows.jsonl"
    args = ["windows", "annomi", "p4g", "p4g", "--out", str(out), "--data-dir", str(fixtures_dir)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    # every fixture dialogue is under 150 words; p4g named twice counts once
    assert "total: 4 windows from 4 dialogues" in result.stdout
    assert len(out.read_text().splitlines()) == 4


def test_export_command(fixtures_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "p4g.jsonl"
    result = runner.invoke(
        app, ["export", "p4g", "--out", str(out), "--data-dir", str(fixtures_dir)]
    )
    assert result.exit_code == 0, result.output
    exported = [Dialogue.model_validate_json(line) for line in out.read_text().splitlines()]
    assert exported == corpora.load("p4g", fixtures_dir)
    assert "2 dialogues" in result.stdout


def test_list_command(fixtures_dir: Path) -> None:
    result = runner.invoke(app, ["list", "--data-dir", str(fixtures_dir)])
    assert result.exit_code == 0, result.output
    assert "persuasionforgood" in result.stdout and "p4g" in result.stdout


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("COGWM_DATA_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "cogwm.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("data", "stats", "esconv", "--data-dir", "{missing}"), "does not exist"),
        (("data", "stats", "esconv"), "no data directory"),
        (("data", "stats", "durecdial", "--data-dir", "{root}"), "unknown corpus 'durecdial'"),
        (
            ("data", "stats", "annomi", "--data-dir", "{root}"),
            "line 3: expected 'client_talk_type'",
        ),
        (
            (
                "data",
                "windows",
                "annomi",
                "--out",
                "{root}/no/such/dir/w.jsonl",
                "--data-dir",
                "{ok}",
            ),
            "does not exist",
        ),
    ],
)
def test_errors_exit_2_with_one_line(
    tmp_path: Path, fixtures_dir: Path, args: tuple[str, ...], expected: str
) -> None:
    root = tmp_path / "data"
    (root / "annomi").mkdir(parents=True)
    source = (fixtures_dir / "annomi" / "AnnoMI-simple.csv").read_text()
    (root / "annomi" / "AnnoMI-simple.csv").write_text(source.replace("n/a,neutral", "n/a,calm", 1))
    values = {"missing": str(tmp_path / "missing"), "root": str(root), "ok": str(fixtures_dir)}
    result = _cli(*(a.format(**values) for a in args))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert expected in lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["windows", "export"])
def test_unwritable_out_fails_before_reading_the_corpus(tmp_path: Path, command: str) -> None:
    # The data directory is missing too: the output path is checked first, so a typo in --out
    # does not cost a whole corpus read before it is reported.
    out = tmp_path / "no" / "such" / "out.jsonl"
    result = runner.invoke(
        app, [command, "annomi", "--out", str(out), "--data-dir", str(tmp_path / "missing")]
    )
    assert result.exit_code != 0
    assert str(result.exception) == f"{out}: directory {out.parent} does not exist"


@pytest.mark.parametrize(
    ("name", "dialogues", "utterances"),
    [
        ("esconv", 1_300, 38_365),
        ("p4g", 1_017, 20_932),
        ("dailydialog", 13_118, 102_979),
        ("annomi", 133, 9_699),
        ("inspired", 198, 6_976),
    ],
)
def test_stats_json_on_real_corpora(
    real_data_dir: Path, name: str, dialogues: int, utterances: int
) -> None:
    stats = _stats_json(name, real_data_dir)
    assert (stats["dialogues"], stats["utterances"]) == (dialogues, utterances)
    assert stats["release"] == {"dialogues": dialogues, "utterances": utterances, "matches": True}
    assert isinstance(stats["turns"], int) and isinstance(stats["user_turns"], int)
    if name == "p4g":
        assert stats["annotated"] == 300
        assert stats["turns"] == 20_932 and stats["user_turns"] == 10_332
