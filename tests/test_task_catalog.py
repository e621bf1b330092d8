"""Tasks read from files and the labels they add belong to the config that read them.

Nothing is registered process-wide: reading a task file for one config leaves every other
config, and plain ``cogwm.tasks.get``, as they were; a run's lookups by name see its own tasks
while it runs. The config hash and digests of a custom-task config are what they were when the
task was registered globally (pinned), so stored runs resume.
"""

from __future__ import annotations

import contextvars
import tomllib
from pathlib import Path
from typing import Any

import pytest

from cogwm import tasks
from cogwm.arena.config import config_hash, parse_config
from cogwm.arena.digests import Digests
from cogwm.arena.runner import planned_units
from cogwm.errors import ConfigError, InputError
from cogwm.schema import lexicon
from cogwm.schema.state import Emotion
from cogwm.tasks import TaskCatalog

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_task"
#: The example config's hash and first unit's digests while its task was registered globally.
EXAMPLE_HASH = "d92cea018336fdd2ab8f2e66bb9464039202ca9de6b83dfb91eafd9b4cf084b2"
EXAMPLE_UNIT = "fe2448a5ac90eb8e650bf20c0e90f2054aec01f60deb1b6679673e1f7de44d48"
EXAMPLE_PREP = "e72b426f4cf3c96a4c3585bae8b80d70967c4ee8406c090d4d35e15f77b7caff"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLE.parents[1])  # the example's paths are relative to it
    # As a new process starts: labels other tests added (human-label extensions) are not known.
    fresh = contextvars.ContextVar("lexicon", default=lexicon.DEFAULT_LEXICON)
    monkeypatch.setattr(lexicon, "_ACTIVE", fresh)


def _example() -> dict[str, Any]:
    return tomllib.loads((EXAMPLE / "arena.toml").read_text(encoding="utf-8"))


def _other_tutor(tmp_path: Path) -> Path:
    """A different task under the same name TUTOR."""
    text = (EXAMPLE / "task.toml").read_text(encoding="utf-8")
    path = tmp_path / "task.toml"
    path.write_text(text.replace('title = "', 'title = "Other '), encoding="utf-8")
    return path


def test_a_task_read_for_one_config_is_not_visible_to_another() -> None:
    # Catches: reading a task file registering it (and its labels) for the whole process.
    config = parse_config(_example())
    assert config.tasks == ["TUTOR"]
    assert config.catalog.get("tutor").initiator_role == "tutor"
    with pytest.raises(InputError, match="unknown task 'TUTOR'"):
        tasks.get("TUTOR")
    assert "boredom" not in lexicon.valence_table()
    other = {**_example(), "tasks": ["TUTOR"]}
    with pytest.raises(ConfigError, match="unknown task 'TUTOR'"):
        parse_config(other)


def test_two_configs_may_each_have_their_own_task_of_one_name(tmp_path: Path) -> None:
    # Catches: the first config's TUTOR refusing (or replacing) the second config's TUTOR.
    first = parse_config(_example())
    second = parse_config({**_example(), "tasks": [str(_other_tutor(tmp_path))]})
    assert first.catalog.get("TUTOR").title != second.catalog.get("TUTOR").title
    assert config_hash(first) == EXAMPLE_HASH != config_hash(second)


def test_one_config_still_refuses_two_tasks_of_one_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="TUTOR is already a different task"):
        TaskCatalog().read(["examples/custom_task/task.toml", str(_other_tutor(tmp_path))])


def test_the_custom_task_config_keeps_its_hash_and_digests() -> None:
    config = parse_config(_example())
    assert config_hash(config) == EXAMPLE_HASH
    unit = planned_units(config)[0]
    digests = Digests(config)
    assert digests.unit(unit) == EXAMPLE_UNIT
    assert digests.prep(unit.task, unit.scenario) == EXAMPLE_PREP
    assert config.model_copy(update={"concurrency": 2}).catalog is config.catalog


def test_the_catalog_in_force_gives_lookups_and_labels_for_its_block_only() -> None:
    catalog = parse_config(_example()).catalog
    with catalog.active():
        assert tasks.get("TUTOR") is catalog.get("TUTOR")
        bored = Emotion(label="boredom", intensity=2)
    # Made under the run's lexicon, the emotion keeps its valence wherever it goes.
    assert bored.quantified == -2.0
    assert not lexicon.is_known("boredom") and "TUTOR" not in tasks.names()
    with pytest.raises(Exception, match="not in the lexicon"):
        Emotion(label="boredom", intensity=2)


def test_a_registered_label_stays_in_its_own_context() -> None:
    # Catches: an extension (a label file, a transition model) leaking into other contexts.
    def register() -> bool:
        lexicon.register_emotion("calm", 0.5)
        return lexicon.is_known("calm")

    assert contextvars.copy_context().run(register)
    assert not lexicon.is_known("calm")
    with pytest.raises(ValueError, match="already has valence"):
        lexicon.Lexicon().extended({"hope": 1.0})


def test_a_stored_run_brings_back_its_tasks() -> None:
    config = parse_config(_example())
    recorded = config.catalog.recorded(config.tasks)
    restored = TaskCatalog.from_recorded(recorded)
    assert restored.get("TUTOR") == config.catalog.get("TUTOR")
    assert restored.lexicon().valence("boredom") == -1.0
    assert restored.recorded(config.tasks) == recorded


def test_an_environment_from_a_custom_task_config_plays_its_task() -> None:
    # Catches: the environment looking the config's task up by name where no catalog is in force.
    from cogwm.env.arena import AsyncArenaEnv

    env = AsyncArenaEnv.from_config(parse_config(_example()))
    assert env.task.name == "TUTOR" and env.task.initiator_role == "tutor"
    assert env.scenarios and all(s.id.startswith("tutor:") for s in env.scenarios)
