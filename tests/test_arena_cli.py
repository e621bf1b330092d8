"""The command line: arena run / report / merge and quickstart, end to end on the scripted fake."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from cogwm.store import RunStore
from helpers_arena import FAKE_NAME
from helpers_cli import cogwm

CONFIG = """
name = "cli"
seed = 3
tasks = ["ESC", "PD"]
dialogues_per_task = 2
max_rounds = 5
intent_from_round = 4
history_turns = 20

[simulator]
model = "fake:arena-script"

[[agents]]
name = "warm"
model = "fake:arena-script"
prompt = "builtin:empathetic"

[[agents]]
name = "solver"
model = "fake:arena-script"
prompt = "builtin:solution_first"

[[agents]]
name = "cold"
model = "fake:arena-script"
prompt = "builtin:dismissive"
"""


pytestmark = pytest.mark.usefixtures("fake_arena_models")


def test_run_report_and_merge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(CONFIG)
    full = tmp_path / "full.sqlite"
    assert cogwm("arena", "run", str(config), "--db", str(full), "--no-progress") == 0
    capsys.readouterr()

    assert cogwm("arena", "report", "--db", str(full), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {
        "finished": 12,
        "errors": 0,
        "agent_failures": 0,
        "unfinished": 0,
    }
    assert {a["arm"] for a in report["agents"]} == {"warm/no_cot", "solver/no_cot", "cold/no_cot"}
    assert set(report["typology"]) == {"warm/no_cot", "solver/no_cot", "cold/no_cot"}
    assert len(report["cts_differences"]) == 3
    assert len(report["power"]["contrasts"]) == 3 and report["power"]["detect"] is None

    assert cogwm("arena", "report", "--db", str(full), "--json", "--detect", "0.1") == 0
    power = json.loads(capsys.readouterr().out)["power"]
    assert power["detect"] == 0.1
    for contrast in power["contrasts"]:
        assert contrast["n_shared"] == 4 and contrast["needed_detect"] >= 2
    assert cogwm("arena", "report", "--db", str(full), "--detect", "-1") == 2
    capsys.readouterr()
    assert report["warnings"] and "One model plays both sides" in report["warnings"][0]

    assert cogwm("arena", "report", "--db", str(full), "--csv") == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["task"] for r in rows if r["table"] == "per_task"} == {"ESC", "PD"}

    plots = tmp_path / "plots"
    assert cogwm("arena", "report", "--db", str(full), "--plots", str(plots)) == 0
    out = capsys.readouterr().out
    assert "Agents, trajectory (paper Table 6" in out and "Per task" in out
    assert "Scenarios needed for 80% power" in out
    assert (plots / "correlations.png").exists() and (plots / "trajectories_PD.png").exists()

    shards = [tmp_path / f"s{i}.sqlite" for i in (1, 2)]
    for i, shard in enumerate(shards, start=1):
        assert (
            cogwm(
                "arena",
                "run",
                str(config),
                "--db",
                str(shard),
                "--shard",
                f"{i}/2",
                "--no-progress",
            )
            == 0
        )
    merged = tmp_path / "merged.sqlite"
    assert cogwm("arena", "merge", str(merged), *map(str, shards)) == 0
    capsys.readouterr()
    assert cogwm("arena", "report", "--db", str(merged), "--json") == 0
    assert json.loads(capsys.readouterr().out)["agents"] == report["agents"]


def test_user_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cogwm("arena", "report", "--db", str(tmp_path / "none.sqlite")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    config = tmp_path / "arena.toml"
    config.write_text(CONFIG)
    assert (
        cogwm("arena", "run", str(config), "--db", str(tmp_path / "r.sqlite"), "--shard", "3/2")
        == 2
    )
    assert "--shard" in capsys.readouterr().err


def test_quickstart_runs_the_same_code_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, out = tmp_path / "qs.sqlite", tmp_path / "qs-plots"
    args = (
        "quickstart",
        "--db",
        str(db),
        "--out",
        str(out),
        "--no-progress",
        "--dialogues",
        "1",
        "--model",
        f"fake:{FAKE_NAME}",
    )
    assert cogwm(*args) == 0
    text = capsys.readouterr().out
    for agent in ("empathetic", "solution_first", "dismissive"):
        assert f"{agent}/no_cot" in text
    assert "One model plays both sides" in text
    # The leaderboard names the simulated user and says it has no card behind its ranking.
    assert f"Simulated user: fake:{FAKE_NAME} — no validity card" in text
    assert "not validated" in text
    assert (out / "trajectories_ESC.png").exists() and (out / "trajectories_PD.png").exists()
    # Running it again resumes: every conversation is already done, none runs twice.
    assert cogwm(*args) == 0
    with RunStore(db) as store:
        conversations = store.conversations()
    assert len(conversations) == 6  # 3 agents x 2 tasks x 1 scenario
    assert all(c.attempts == 1 and c.status == "finished" for c in conversations)
    # The dismissive control speaks its script's lines (each task's own), whatever the model.
    from cogwm.arena.scripted import script_lines

    with RunStore(db) as store:
        said = [
            t.text
            for c in conversations
            if c.agent == "dismissive"
            for t in store.turns(c.id)
            if t.role == "agent" and t.phase == "simulated"
        ]
    scripted = {line for task in ("ESC", "PD") for line in script_lines(task, "dismissive")}
    assert said and set(said) <= scripted


def test_quickstart_refuses_a_store_of_another_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(CONFIG.replace("dialogues_per_task = 2", "dialogues_per_task = 1"))
    db = tmp_path / "other.sqlite"
    assert cogwm("arena", "run", str(config), "--db", str(db), "--no-progress") == 0
    capsys.readouterr()
    assert (
        cogwm("quickstart", "--db", str(db), "--no-progress", "--model", f"fake:{FAKE_NAME}") == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "another --db" in err
