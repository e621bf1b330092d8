"""Corpus cold starts come from one split (default test): the option, its hash, its report line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cogwm import tasks
from cogwm.arena.config import config_hash, hashed_view, parse_config, stored_config
from cogwm.arena.runner import open_run
from cogwm.arena.scenarios import (
    ScenarioSource,
    ScenarioSplit,
    describe_scenarios,
    select_scenarios,
    split_dialogues,
)
from cogwm.arena.windows import Window, Windows
from cogwm.errors import ConfigError, InputError
from cogwm.schema import Dialogue, Role, Utterance
from cogwm.simulator.splits import plan_splits
from cogwm.store.db import RunStore


def _raw(**overrides: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "seed": 3,
        "tasks": ["ESC"],
        "dialogues_per_task": 2,
        "simulator": {"model": "fake:schema"},
        "agents": [{"name": "a", "model": "fake:schema"}],
    }
    raw.update(overrides)
    return raw


def test_the_default_split_is_test_and_is_stored_with_the_run() -> None:
    config = parse_config(_raw(scenarios="corpus", data_dir="/data"))
    assert config.scenario_split is ScenarioSplit.TEST
    assert stored_config(config)["scenario_split"] == "test"
    assert parse_config(_raw(scenarios="corpus", scenario_split="all")).scenario_split == "all"


def test_a_split_without_corpus_cold_starts_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="scenario_split") as info:
        parse_config(_raw(scenario_split="train"), source="cfg.toml")
    assert "\n" not in str(info.value) and str(info.value).startswith("cfg.toml: ")
    with pytest.raises(ConfigError, match="scenario_split"):
        parse_config(_raw(scenarios="corpus", scenario_split="dev"))


def test_runs_without_corpus_cold_starts_keep_their_hash() -> None:
    # Catches: the new field entering every hash, which would make every stored run's config
    # "changed" and block its --resume.
    for raw in (_raw(), _raw(scenarios="mine.jsonl")):
        assert "scenario_split" not in hashed_view(parse_config(raw))


def test_the_split_of_corpus_cold_starts_enters_the_hash() -> None:
    # Corpus runs made before the option drew from every split: their hash must change too.
    hashes = {
        config_hash(parse_config(_raw(scenarios="corpus", scenario_split=split)))
        for split in ("test", "val", "train", "all")
    }
    assert len(hashes) == 4


def _dialogue(did: str, split: str, user: str) -> Dialogue:
    roles = [Role.AGENT, Role.USER] * 3
    utterances = [
        Utterance(
            index=i,
            speaker=r.value,
            role=r,
            text=user if r is Role.USER and i == 1 else f"{did} t{i}",
        )
        for i, r in enumerate(roles)
    ]
    return Dialogue(id=did, corpus="esconv", split=split, utterances=utterances)


def test_split_dialogues_keeps_one_split_and_clean_held_out_ones() -> None:
    line = "i have been feeling very low since my job ended"
    dialogues = [
        _dialogue("esconv:train:0", "train", line),
        _dialogue("esconv:test:0", "test", line),  # shares a long line with train
        _dialogue("esconv:test:1", "test", "hello"),
        _dialogue("esconv:validation:0", "validation", "hi"),
    ]
    ids = {s: [d.id for d in split_dialogues("esconv", dialogues, s)] for s in ScenarioSplit}
    assert ids[ScenarioSplit.TEST] == ["esconv:test:1"]
    assert ids[ScenarioSplit.VAL] == ["esconv:validation:0"]
    assert ids[ScenarioSplit.TRAIN] == ["esconv:train:0"]
    assert len(ids[ScenarioSplit.ALL]) == 4
    with pytest.raises(InputError, match="unknown scenario split"):
        split_dialogues("esconv", dialogues, "dev")


def test_the_report_line_names_where_cold_starts_came_from() -> None:
    assert describe_scenarios({}) == "Cold starts: the built-in scenarios."
    assert "mine.jsonl" in describe_scenarios({"scenarios": "mine.jsonl"})
    old = describe_scenarios({"scenarios": "corpus"})
    assert "every split, train included" in old
    new = describe_scenarios({"scenarios": "corpus", "scenario_split": "test"})
    assert "test split, clean dialogues only" in new
    assert "train split" in describe_scenarios({"scenarios": "corpus", "scenario_split": "train"})


def test_builtin_scenarios_ignore_the_split() -> None:
    spec = tasks.get("ESC")
    chosen = select_scenarios(spec, 2, ScenarioSource.BUILTIN, data_dir=None, seed=0, split="all")
    assert [s.id for s in chosen] == ["builtin:esc-01", "builtin:esc-02"]


#: The hash of ``_raw(scenarios="corpus", data_dir="/data")`` at c77d4d3, before scenario_split
#: existed (its corpus cold starts came from every split).
_HASH_BEFORE_THE_SPLIT = "03366d4e26d1399526970dee01ac072e9e764766c55ea3ca5acaae00a7ab8c28"


def test_an_old_corpus_run_keeps_its_hash_with_the_split_all() -> None:
    # Catches: "all" entering the hash, so a corpus run made before the option cannot resume.
    old = parse_config(_raw(scenarios="corpus", data_dir="/data", scenario_split="all"))
    assert config_hash(old) == _HASH_BEFORE_THE_SPLIT
    assert "scenario_split" not in hashed_view(old)
    test = parse_config(_raw(scenarios="corpus", data_dir="/data"))
    assert config_hash(test) != _HASH_BEFORE_THE_SPLIT


#: Windows given, so opening the run plans no units (no corpus files are read).
_WINDOWS = Windows(simulator=Window(turns=8), agents={"a": Window(turns=8)})


def _store_old_run(db: Path) -> None:
    """A store holding a corpus run as it was stored before scenario_split existed."""
    config = stored_config(parse_config(_raw(scenarios="corpus", data_dir="/data")))
    del config["scenario_split"]
    with RunStore(db) as store:
        store.create_run(
            name="old",
            config=config,
            config_hash=_HASH_BEFORE_THE_SPLIT,
            prompts=[],
            git_revision=None,
            packages={},
            seed=3,
            shard=None,
        )


def test_an_old_corpus_run_resumes_with_all_and_the_error_names_the_setting(
    tmp_path: Path,
) -> None:
    # Catches: the "config changed" error of an old corpus run not naming scenario_split = "all".
    db = tmp_path / "old.sqlite"
    _store_old_run(db)
    with RunStore(db) as store:
        with pytest.raises(ConfigError, match='scenario_split = "all"'):
            open_run(
                parse_config(_raw(scenarios="corpus", data_dir="/data")),
                store,
                resume=True,
                force=False,
                shard=None,
                windows=_WINDOWS,
            )
        opened = open_run(
            parse_config(_raw(scenarios="corpus", data_dir="/data", scenario_split="all")),
            store,
            resume=True,
            force=False,
            shard=None,
            windows=_WINDOWS,
        )
    assert not opened.config_changed


def _p4g(did: str) -> Dialogue:
    roles = [Role.AGENT, Role.USER] * 3
    utterances = [
        Utterance(index=i, speaker=r.value, role=r, text=f"{did} line {i}")
        for i, r in enumerate(roles)
    ]
    return Dialogue(id=did, corpus="persuasionforgood", utterances=utterances)


def test_seeded_cold_starts_follow_the_split_seed() -> None:
    # Catches: the seeded split of a corpus without official splits ignoring the simulator's
    # samples seed (seed 1 samples train on dialogues that seed 0 calls test).
    dialogues = [_p4g(f"persuasionforgood:{k}") for k in range(200)]
    for seed in (0, 1):
        test = split_dialogues("persuasionforgood", dialogues, "test", split_seed=seed)
        plan = plan_splits("persuasionforgood", dialogues, seed)
        assert test and all(plan.split_of(d.id) == "test" for d in test)
    seed0 = {d.id for d in split_dialogues("persuasionforgood", dialogues, "test")}
    seed1 = {d.id for d in split_dialogues("persuasionforgood", dialogues, "test", split_seed=1)}
    assert seed0 != seed1


def test_the_split_seed_is_a_corpus_setting_hashed_only_when_not_zero() -> None:
    # Catches: the new field changing every stored hash, or a seed that changes nothing hashed.
    corpus = _raw(scenarios="corpus", data_dir="/data")
    default = parse_config(corpus)
    assert config_hash(parse_config({**corpus, "scenario_split_seed": 0})) == config_hash(default)
    assert "scenario_split_seed" not in hashed_view(default)
    seeded = parse_config({**corpus, "scenario_split_seed": 1})
    assert config_hash(seeded) != config_hash(default)
    assert "seed 1" in describe_scenarios(stored_config(seeded))
    assert "seed 0" in describe_scenarios(stored_config(default))
    with pytest.raises(ConfigError, match="scenario_split_seed"):
        parse_config(_raw(scenario_split_seed=1))
