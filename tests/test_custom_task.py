"""Your own task: a TaskSpec from TOML, dialogues from JSONL, the example run by the real CLI."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogwm import tasks
from cogwm.arena.config import load_config
from cogwm.arena.run_data import run_catalog
from cogwm.arena.scenarios import select_scenarios
from cogwm.errors import ConfigError
from cogwm.models import unregister_fake
from cogwm.schema.lexicon import valence_table
from cogwm.store import RunStore
from cogwm.tasks.custom import parse_task
from helpers_arena import FAKE_NAME, register
from helpers_web import cogwm

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_task"


@pytest.fixture(autouse=True)
def _fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    # The example's paths are relative to the repository root, where users run it.
    monkeypatch.chdir(EXAMPLE.parents[1])
    register()
    yield
    unregister_fake(FAKE_NAME)


def _task(**changes: object) -> dict[str, object]:
    """The example task as a mapping, with some keys changed (None removes a key)."""
    import tomllib

    raw = tomllib.loads((EXAMPLE / "task.toml").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            raw["task"].pop(key)
        else:
            raw["task"][key] = value
    return raw


def test_example_task_loads_by_path_and_extends_the_lexicon() -> None:
    spec = tasks.get("examples/custom_task/task.toml")
    assert spec.name == "TUTOR" and spec.initiator_role == "tutor"
    assert spec.require_weights().emotion == 0.25
    assert spec.dimensions["belief"].name == "understanding"  # type: ignore[index]
    assert spec.score_range == (0.0, 2.0)
    # Known under its name, with its labels, where a catalog that read it is in force (a run's
    # or a report's): later lookups there find it.
    with tasks.files_catalog(["examples/custom_task/task.toml"]).active():
        assert tasks.get("tutor") == spec
        assert valence_table()["boredom"] == -1.0


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"weights": {"emotion": 0.5, "belief": 0.5, "desire": 0.5, "intention": 0.5}}, "weights"),
        ({"good_outcome": None}, "task.good_outcome"),
        ({"dimensions": {}}, "dimensions missing"),
        ({"score_range": [2, 0]}, "score range"),
        ({"emotions": {"hope": -1.0}}, "task.emotions.hope"),
        ({"emotions": {"calm": "high"}}, "task.emotions.calm"),
        ({"colour": "red"}, "task.colour"),
    ],
)
def test_bad_task_is_one_error_naming_the_key(changes: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_task(_task(**changes), source="task t.toml")
    message = str(caught.value)
    assert message.startswith("task t.toml: ") and "\n" not in message
    assert key in message


def test_a_task_file_may_not_redefine_a_builtin(tmp_path: Path) -> None:
    text = (EXAMPLE / "task.toml").read_text(encoding="utf-8").replace('"TUTOR"', '"ESC"')
    path = tmp_path / "esc.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="ESC is already a different task"):
        tasks.get(str(path))
    assert tasks.get("ESC").user_role == "seeker"


def test_dialogue_file_gives_seeded_cold_starts() -> None:
    spec = tasks.get("examples/custom_task/task.toml")
    source = "examples/custom_task/dialogues.jsonl"
    chosen = select_scenarios(spec, 3, source, data_dir=None, seed=1)
    again = select_scenarios(spec, 3, source, data_dir=None, seed=1)
    assert chosen == again and len({s.id for s in chosen}) == 3
    first = chosen[0]
    assert first.task == "TUTOR" and first.source == "tutor-notes"
    assert [t.role.value for t in first.opening] == ["agent", "user", "agent", "user"]
    assert first.context == spec.scenario
    with pytest.raises(ConfigError, match="has 4 usable dialogues"):
        select_scenarios(spec, 5, source, data_dir=None, seed=1)


def test_bad_dialogue_line_is_named(tmp_path: Path) -> None:
    lines = (EXAMPLE / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "d.jsonl"
    bad.write_text(lines[0] + "\n" + lines[1].replace('"role": "user"', '"role": "student"', 1))
    spec = tasks.get("examples/custom_task/task.toml")
    with pytest.raises(ConfigError) as caught:
        select_scenarios(spec, 1, str(bad), data_dir=None, seed=1)
    assert "line 2" in str(caught.value) and "\n" not in str(caught.value)


def _fake_config(tmp_path: Path, text: str | None = None) -> Path:
    text = text or (EXAMPLE / "arena.toml").read_text(encoding="utf-8")
    config = tmp_path / "arena.toml"
    # Every model of the example (the world model, the base) on the fake.
    config.write_text(
        re.sub(r"llamacpp:smollm2(-wm)?", f"fake:{FAKE_NAME}", text), encoding="utf-8"
    )
    return config


def test_example_runs_in_the_arena(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "tutor.sqlite"
    assert cogwm("arena", "run", str(_fake_config(tmp_path)), "--db", str(db), "--no-progress") == 0
    capsys.readouterr()
    # The run left no TUTOR behind: the report knows it from the run, which carries the task.
    assert "TUTOR" not in tasks.names()
    assert cogwm("arena", "report", "--db", str(db), "--json") == 0
    with RunStore(db, read_only=True) as store:
        run = store.run()
        assert run is not None
        stored = run_catalog(run).get("TUTOR")
    assert stored.dimensions["belief"].name == "understanding"  # type: ignore[index]
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["finished"] == 8 and report["counts"]["errors"] == 0
    assert {a["arm"] for a in report["agents"]} == {"socratic/no_cot", "answer-giver/no_cot"}


def test_bad_task_file_from_the_cli_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = tmp_path / "task.toml"
    task.write_text("[task]\nname = 'X'\nweights = ", encoding="utf-8")
    text = (EXAMPLE / "arena.toml").read_text(encoding="utf-8")
    config = _fake_config(tmp_path, text.replace("examples/custom_task/task.toml", str(task)))
    assert cogwm("arena", "run", str(config), "--db", str(tmp_path / "r.sqlite")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "not valid TOML" in err


def test_config_rejects_a_scenario_source_that_is_not_a_file_kind() -> None:
    text = (EXAMPLE / "arena.toml").read_text(encoding="utf-8")
    import tomllib

    from cogwm.arena.config import parse_config

    raw = tomllib.loads(text.replace("dialogues.jsonl", "dialogues.csv"))
    with pytest.raises(ConfigError, match=r"scenarios: expected 'builtin', 'corpus' or a \.jsonl"):
        parse_config(raw)
    assert load_config(EXAMPLE / "arena.toml").tasks == ["TUTOR"]


def test_score_takes_a_task_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "task.toml"
    bad.write_text("[task]\nname = 'X'\n", encoding="utf-8")
    empty = tmp_path / "none.jsonl"
    empty.write_text("", encoding="utf-8")
    assert cogwm("score", "trajectories", str(empty), "--task", str(bad)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "task.weights" in err


def test_environment_plays_the_custom_task() -> None:
    from cogwm.arena.scenarios import file_scenarios
    from cogwm.env import ArenaEnv

    spec = tasks.get("examples/custom_task/task.toml")
    scenarios = file_scenarios(spec, Path("examples/custom_task/dialogues.jsonl"))
    env = ArenaEnv(str(EXAMPLE / "task.toml"), f"fake:{FAKE_NAME}", scenarios=scenarios)
    _, info = env.reset(seed=0)
    assert info["scenario"].startswith("tutor:")
    step = env.step("What would undo adding 5?")
    assert isinstance(step.reward, float) and set(step.info["components"]) >= {"emotion"}
    env.close()
