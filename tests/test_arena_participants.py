"""Participants: the simulator's constrained output model, the agent's view, small helpers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import ValidationError

from cogwm import tasks
from cogwm.arena.config import AgentConfig
from cogwm.arena.participants import (
    MAX_ITEMS,
    UTTERANCE_CHARS,
    AgentParticipant,
    state_output_models,
    strip_speaker_label,
    to_state,
)
from cogwm.arena.prompts import AGENT_PERSONAS, describe_state
from cogwm.arena.termination import Condition, Phase
from cogwm.arena.transcript import ArenaTurn
from cogwm.models import load
from cogwm.schema import Role, StateItem
from cogwm.schema.lexicon import DEFAULT_VALENCES

LABELS = tuple(sorted(DEFAULT_VALENCES))


def _turn_value(**overrides: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "emotion": {"label": "hope", "intensity": 2},
        "beliefs": [{"text": "I can find work", "score": 2}],
        "desires": [],
        "intentions": [{"text": "apply this week", "score": 1}],
        "utterance": "Maybe you're right.",
        "leave": False,
    }
    value.update(overrides)
    return value


def test_schema_constrains_labels_intensities_scores_and_lengths() -> None:
    _, turn_model = state_output_models("ESC", (0.0, 2.0), LABELS)
    schema = json.dumps(turn_model.model_json_schema())
    for label in LABELS:
        assert f'"{label}"' in schema
    defs = turn_model.model_json_schema()["$defs"]
    emotion = next(v for k, v in defs.items() if k.startswith("UserEmotion"))
    assert emotion["properties"]["intensity"]["enum"] == [1, 2, 3]
    item = next(v for k, v in defs.items() if k.startswith("UserItem"))
    assert item["properties"]["score"]["enum"] == [0, 1, 2]
    assert turn_model.model_json_schema()["properties"]["beliefs"]["maxItems"] == MAX_ITEMS
    # Text fields exclude control characters, quotes and backslashes in the schema itself, so a
    # grammar built from it cannot emit a raw newline (invalid JSON).
    pattern = turn_model.model_json_schema()["properties"]["utterance"]["pattern"]
    assert pattern == '^[^\\x00-\\x1f"\\\\]{1,' + str(UTTERANCE_CHARS) + "}$"


@pytest.mark.parametrize(
    "bad",
    [
        {"emotion": {"label": "joy", "intensity": 2}},
        {"emotion": {"label": "hope", "intensity": 4}},
        {"beliefs": [{"text": "x", "score": 3}]},
        {"beliefs": [{"text": f"b{i}", "score": 1} for i in range(MAX_ITEMS + 1)]},
        {"mood": "fine"},
        {"utterance": "two\nlines"},
        {"utterance": 'a "quote"'},
        {"utterance": "x" * (UTTERANCE_CHARS + 1)},
        {"utterance": ""},
        {"beliefs": [{"text": "tab\there", "score": 1}]},
    ],
)
def test_invalid_states_are_rejected(bad: dict[str, Any]) -> None:
    _, turn_model = state_output_models("ESC", (0.0, 2.0), LABELS)
    with pytest.raises(ValidationError):
        turn_model.model_validate(_turn_value(**bad))


def test_non_integer_score_ranges_use_bounded_floats() -> None:
    state_model, _ = state_output_models("X", (-1.5, 1.5), LABELS)
    item = next(
        v for k, v in state_model.model_json_schema()["$defs"].items() if k.startswith("UserItem")
    )
    assert item["properties"]["score"]["minimum"] == -1.5
    assert item["properties"]["score"]["maximum"] == 1.5


def test_to_state_converts_to_the_schema_record() -> None:
    _, turn_model = state_output_models("ESC", (0.0, 2.0), LABELS)
    state = to_state(turn_model.model_validate(_turn_value()))
    assert state.emotion is not None and state.emotion.label == "hope"
    assert state.emotion.intensity == 2
    assert state.beliefs == [StateItem(text="I can find work", score=2.0)]
    assert state.desires == []
    assert describe_state(state) == (
        "emotion hope 2 | beliefs: I can find work (2) | intentions: apply this week (1)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("You: I am fine.", "I am fine."),
        ("seeker: ok", "ok"),
        ("Note: I am fine.", "Note: I am fine."),
        ("You:", "You:"),
        ("  plain  ", "plain"),
    ],
)
def test_strip_speaker_label(text: str, expected: str) -> None:
    assert strip_speaker_label(text, ("you", "user", "seeker")) == expected


def _turn(index: int, role: Role, text: str) -> ArenaTurn:
    return ArenaTurn(index=index, round=index, role=role, phase=Phase.SIMULATED, text=text)


def test_agent_sees_its_prompts_and_the_chat_from_its_side() -> None:
    task = tasks.get("PD")
    model = load("fake:schema")
    config = AgentConfig(name="a", model="fake:schema")
    agent = AgentParticipant(
        model, config, task, AGENT_PERSONAS["solution_first"], Condition.NO_COT, history_turns=2
    )
    turns = [_turn(0, Role.AGENT, "hi"), _turn(1, Role.USER, "hello"), _turn(2, Role.AGENT, "so")]
    messages = agent.messages(turns)
    assert messages[0].role == "system"
    assert "Save the Children" in messages[0].content
    assert AGENT_PERSONAS["solution_first"].text in messages[0].content
    assert "reasoning first" not in messages[0].content
    assert [(m.role, m.content) for m in messages[1:]] == [("user", "hello"), ("assistant", "so")]
    cot = AgentParticipant(
        model, config, task, AGENT_PERSONAS["plain"], Condition.COT, history_turns=2
    )
    assert "reasoning first" in cot.system_prompt


def test_agent_chat_follows_a_growing_history_and_starts_over_on_another() -> None:
    task = tasks.get("PD")
    config = AgentConfig(name="a", model="fake:schema")
    agent = AgentParticipant(
        load("fake:schema"),
        config,
        task,
        AGENT_PERSONAS["plain"],
        Condition.NO_COT,
        history_turns=None,
    )

    def chat(turns: list[ArenaTurn]) -> list[tuple[str, str]]:
        return [(m.role, m.content) for m in agent.messages(turns)[1:]]

    turns = [_turn(0, Role.USER, "hello")]
    assert chat(turns) == [("user", "hello")]
    turns.append(_turn(1, Role.AGENT, "hi"))
    turns.append(_turn(2, Role.USER, "well"))
    assert chat(turns) == [("user", "hello"), ("assistant", "hi"), ("user", "well")]
    # A turn replaced in place, a shorter history, another history: never the old messages.
    turns[1] = _turn(1, Role.AGENT, "hey")
    assert chat(turns) == [("user", "hello"), ("assistant", "hey"), ("user", "well")]
    assert chat(turns[:1]) == [("user", "hello")]
    other = [_turn(0, Role.USER, "bye")]
    assert chat(other) == [("user", "bye")]
    assert chat(turns) == [("user", "hello"), ("assistant", "hey"), ("user", "well")]


def test_judge_reads_the_cold_start_and_the_end() -> None:
    from cogwm.arena.judging import judged_turns

    cold = [
        ArenaTurn(index=i, round=i, role=Role.USER, phase=Phase.COLD_START, text=f"c{i}")
        for i in range(3)
    ]
    simulated = [_turn(i, Role.AGENT, f"s{i}") for i in range(3, 20)]
    chosen = judged_turns([*cold, *simulated], 4)
    assert [t.text for t in chosen] == ["c0", "c1", "c2", "s16", "s17", "s18", "s19"]
    short = judged_turns([*cold, *simulated[:2]], 4)
    assert [t.text for t in short] == ["c0", "c1", "c2", "s3", "s4"]


def test_the_simulator_prompt_and_its_schema_agree_on_items_per_dimension() -> None:
    # Catches: the prompt asked for at most 3 items per dimension while the schema allowed 2.
    import re

    from cogwm.arena.prompts import SIMULATOR_SYSTEM

    said = {int(n) for n in re.findall(r"at most (\d+)", SIMULATOR_SYSTEM.text)}
    state_model, turn_model = state_output_models("ESC", (0.0, 2.0), LABELS)
    for model in (state_model, turn_model):
        properties = model.model_json_schema()["properties"]
        assert {properties[d]["maxItems"] for d in ("beliefs", "desires", "intentions")} == said
    assert said == {MAX_ITEMS}


@pytest.mark.parametrize("reply_tokens", [60, 120])
def test_cot_and_no_cot_get_the_same_reply_budget(reply_tokens: int) -> None:
    # Catches: the CoT reply had its own fixed 400-character limit inside one 320-token budget
    # shared with the reasoning, unrelated to the no-CoT reply's max_tokens.
    from cogwm.arena.participants import CHARS_PER_TOKEN, COT_OVERHEAD_TOKENS

    model = load("fake:schema")
    config = AgentConfig(
        name="a", model="fake:schema", max_tokens=reply_tokens, reasoning_max_tokens=150
    )
    task = tasks.get("ESC")
    turns = [ArenaTurn(index=0, round=0, role=Role.USER, phase=Phase.COLD_START, text="hi")]
    budgets = {}
    for condition in (Condition.NO_COT, Condition.COT):
        agent = AgentParticipant(
            model, config, task, AGENT_PERSONAS["plain"], condition, history_turns=4
        )
        asyncio.run(agent.next_turn(turns, seed=1))
        request = model.backend.requests[-1]  # type: ignore[attr-defined]
        budgets[condition] = request
    assert budgets[Condition.NO_COT].sampling.max_tokens == reply_tokens
    cot = budgets[Condition.COT]
    assert cot.sampling.max_tokens == 150 + reply_tokens + COT_OVERHEAD_TOKENS
    assert cot.json_schema is not None
    reply = cot.json_schema["properties"]["reply"]["pattern"]
    reasoning = cot.json_schema["properties"]["reasoning"]["pattern"]
    assert reply.endswith("{1," + str(reply_tokens * CHARS_PER_TOKEN) + "}$")
    assert reasoning.endswith("{1," + str(150 * CHARS_PER_TOKEN) + "}$")


def test_an_old_cot_budget_keeps_its_total() -> None:
    config = AgentConfig.model_validate(
        {"name": "a", "model": "fake:schema", "max_tokens": 100, "cot_max_tokens": 320}
    )
    assert (config.max_tokens, config.reasoning_max_tokens) == (100, 220)


def test_bound_simulator_prompts_match_the_format_and_render_the_system_once() -> None:
    # The arena's simulator builds its prompts piecewise (the system message once per user, the
    # state texts memoised); every turn's messages must still be exactly build_messages'.
    from cogwm.arena.config import SimulatorConfig
    from cogwm.arena.participants import SimulatorParticipant
    from cogwm.arena.transcript import UserSetup
    from cogwm.schema import CognitiveState, Emotion, Profile
    from cogwm.simulator.format import WorldModelInput, build_messages

    task = tasks.get("ESC")
    config = SimulatorConfig(model="fake:schema")
    simulator = SimulatorParticipant(load("fake:schema"), config, task, history_turns=3)
    setup = UserSetup(context="I lost my job last week.", profile=Profile.neutral())
    bound = simulator.for_user(setup)
    start = CognitiveState(emotion=Emotion(label="sadness", intensity=3))
    turns = [
        ArenaTurn(index=0, round=1, role=Role.AGENT, phase=Phase.COLD_START, text="Hi."),
        ArenaTurn(
            index=1, round=1, role=Role.USER, phase=Phase.COLD_START, text="Hey.", state=start
        ),
    ]
    systems = []
    for round_number in range(2, 6):
        turns.append(_turn(len(turns), Role.AGENT, f"How are you, {round_number}?"))
        messages = bound._messages(setup, turns, "predict")
        shown = turns[-3:]
        expected = build_messages(
            WorldModelInput(
                task="ESC",
                context=setup.context,
                profile=setup.profile,
                initial_state=start,
                history=[(t.role.value, t.text) for t in shown],
                previous_state=next(t.state for t in reversed(turns) if t.state is not None),
            ),
            task,
        )
        assert messages == expected
        systems.append(messages[0])
        state = CognitiveState(
            emotion=Emotion(label="hope", intensity=1 + round_number % 3),
            beliefs=[StateItem(text=f"it gets better {round_number}", score=1.0)],
        )
        turns.append(
            ArenaTurn(
                index=len(turns),
                round=round_number,
                role=Role.USER,
                phase=Phase.SIMULATED,
                text="ok",
                state=state,
            )
        )
    assert all(system is systems[0] for system in systems)  # rendered once for this user
    other = simulator.for_user(UserSetup(context="My dog died.", profile=Profile.neutral()))
    assert "My dog died." in other._messages(other.setup, turns, "predict")[0].content  # type: ignore[arg-type]
