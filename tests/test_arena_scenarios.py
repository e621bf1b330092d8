"""Scenarios: the built-in set, cold starts cut from real dialogues, profiles from metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogwm import tasks
from cogwm.arena.scenarios import (
    COLD_START_ROUNDS,
    OpeningTurn,
    Scenario,
    ScenarioSource,
    builtin_scenarios,
    cold_start,
    count_rounds,
    profile_from_metadata,
    select_scenarios,
)
from cogwm.errors import ConfigError
from cogwm.schema import Dialogue, Role, Utterance
from cogwm.schema.labels import P4GMeta, P4GParticipant


@pytest.mark.parametrize(("task", "count"), [("ESC", 20), ("PD", 16), ("CR", 12)])
def test_builtin_scenarios_ship_with_the_package(task: str, count: int) -> None:
    scenarios = builtin_scenarios(task)
    assert len(scenarios) == count
    assert len({s.id for s in scenarios}) == count
    for s in scenarios:
        assert s.task == task and s.source == "builtin" and s.id.startswith("builtin:")
        assert count_rounds([t.role for t in s.opening]) == COLD_START_ROUNDS
        assert s.opening[-1].role is Role.USER
        assert s.profile is not None and s.profile.big_five is not None
        assert s.context


def test_scenario_opening_must_be_a_two_round_cold_start() -> None:
    base = {"id": "x", "task": "ESC", "source": "builtin", "context": "c"}
    with pytest.raises(ValueError, match="2 rounds"):
        Scenario(
            **base,
            opening=[OpeningTurn(role=Role.AGENT, text="a"), OpeningTurn(role=Role.USER, text="u")],
        )
    with pytest.raises(ValueError, match="alternate"):
        Scenario(
            **base,
            opening=[OpeningTurn(role=Role.USER, text="u"), OpeningTurn(role=Role.USER, text="u")],
        )


def _dialogue(roles: str, corpus: str = "esconv") -> Dialogue:
    utterances = [
        Utterance(index=i, speaker=r, role=Role.USER if r == "u" else Role.AGENT, text=f"{r}{i}")
        for i, r in enumerate(roles)
    ]
    return Dialogue(id="d", corpus=corpus, utterances=utterances)


def test_cold_start_keeps_a_leading_user_greeting() -> None:
    opening = cold_start(_dialogue("uauauau"))
    assert opening is not None
    assert [(t.role.value, t.text) for t in opening] == [
        ("user", "u0"),
        ("agent", "a1"),
        ("user", "u2"),
        ("agent", "a3"),
        ("user", "u4"),
    ]


def test_cold_start_merges_utterances_into_turns() -> None:
    opening = cold_start(_dialogue("aauauuaau"))
    assert opening is not None
    assert [t.text for t in opening] == ["a0 a1", "u2", "a3", "u4 u5"]


def test_cold_start_needs_the_dialogue_to_go_on() -> None:
    assert cold_start(_dialogue("auau")) is None
    assert cold_start(_dialogue("auauu")) is None
    assert cold_start(_dialogue("aua")) is None
    assert cold_start(_dialogue("auaua")) is not None


def test_profile_from_p4g_big_five() -> None:
    traits = {
        "extrovert.x": 3.2,
        "agreeable.x": 4.0,
        "conscientious.x": 3.6,
        "neurotic.x": 1.6,
        "open.x": 3.6,
        "care.x": 5.0,
        "sex.x": "Male",
    }
    person = P4GParticipant(user_id="u", actual_donation=0.0, num_turns=10, traits=traits)
    dialogue = _dialogue("auauau", corpus="persuasionforgood").model_copy(
        update={"meta": P4GMeta(annotated=False, persuader=person, persuadee=person)}
    )
    profile = profile_from_metadata(dialogue)
    assert profile is not None and profile.big_five is not None
    assert profile.source == "corpus" and profile.confidence == 3
    assert profile.big_five.extraversion == 3.2 and profile.big_five.neuroticism == 1.6
    assert profile_from_metadata(_dialogue("auauau")) is None


def test_select_scenarios_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match="dialogues_per_task"):
        select_scenarios(tasks.get("CR"), 13, ScenarioSource.BUILTIN, data_dir=None, seed=0)
    with pytest.raises(ConfigError, match="data_dir"):
        select_scenarios(tasks.get("ESC"), 1, ScenarioSource.CORPUS, data_dir=None, seed=0)


@pytest.mark.parametrize("task", ["ESC", "PD", "CR"])
def test_corpus_cold_starts(real_data_dir: Path, task: str) -> None:
    spec = tasks.get(task)
    first = select_scenarios(spec, 5, ScenarioSource.CORPUS, data_dir=real_data_dir, seed=1)
    assert len({s.id for s in first}) == 5
    for s in first:
        assert s.source == spec.corpus
        assert count_rounds([t.role for t in s.opening]) == COLD_START_ROUNDS
    if task in ("PD", "CR"):
        assert any(s.profile is not None and s.profile.source == "corpus" for s in first)
