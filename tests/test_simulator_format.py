"""The world-model prompt format: messages, targets with tagged spans, parsing, fitting."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogwm import tasks
from cogwm.arena.prompts import fixed_prompts
from cogwm.schema import BigFive, CognitiveState, Emotion, Profile, StateItem
from cogwm.schema.partial import (
    Constraint,
    EmotionField,
    FieldKind,
    ItemsField,
    Origin,
    PartialState,
    Source,
)
from cogwm.simulator.format import (
    ITEM_CHARS,
    MAX_ITEMS,
    SIMULATOR_SYSTEM,
    UTTERANCE_CHARS,
    SimulatorOutputError,
    WorldModelInput,
    WorldModelOutput,
    build_messages,
    fit_output,
    fit_text,
    format_version,
    parse_output,
    render_target,
    task_output_models,
)

ESC = tasks.get("ESC")
HUMAN = Origin(source=Source.HUMAN, rule="test.1", exact=True)


def _state() -> CognitiveState:
    return CognitiveState(
        emotion=Emotion(label="sadness", intensity=3),
        beliefs=[StateItem(text="Nobody will hire me", score=0.0)],
        desires=[],
        intentions=[StateItem(text="apply for two jobs", score=1.0)],
    )


def _output(**changes: object) -> WorldModelOutput:
    values: dict[str, object] = {
        "state": _state(),
        "utterance": "I don't know, I just feel stuck.",
        "leave": False,
    }
    values.update(changes)
    return WorldModelOutput.model_validate(values)


def _check_spans(text: str, spans: Sequence[tuple[int, int, str]]) -> None:
    """Spans are contiguous, non-empty and cover the text exactly."""
    assert spans[0][0] == 0
    assert spans[-1][1] == len(text)
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        assert end == start
    assert all(start < end for start, end, _ in spans)


def _tagged(text: str, spans: Sequence[tuple[int, int, str]], tag: str) -> list[str]:
    return [text[s:e] for s, e, t in spans if t == tag]


# ------------------------------------------------------------------------------ messages


def test_messages_hold_instruction_situation_profile_history_and_states() -> None:
    profile = Profile(
        big_five=BigFive(
            openness=4, conscientiousness=2, extraversion=3, agreeableness=5, neuroticism=4
        ),
        communication_style="terse",
    )
    start = CognitiveState(emotion=Emotion(label="anxiety", intensity=3))
    inp = WorldModelInput(
        task="ESC",
        context="I lost my job last week.",
        profile=profile,
        initial_state=start,
        history=[("user", "hi"), ("agent", "How are you feeling?")],
        previous_state=_state(),
    )
    system, user = build_messages(inp, ESC)
    assert (system.role, user.role) == ("system", "user")
    assert "You play a seeker talking with a supporter." in system.content
    assert "Your situation: I lost my job last week." in system.content
    assert "openness 4" in system.content and "talks: terse" in system.content
    assert "beliefs by reality" in system.content
    assert "You: hi\nSupporter: How are you feeling?" in user.content
    assert "Your state at the start: emotion anxiety 3" in user.content
    assert "Your state before this: emotion sadness 3 | beliefs: Nobody" in user.content
    assert user.content.endswith("Give your new state and your reply.")


def test_optional_parts_are_left_out_rather_than_said_empty() -> None:
    # A context equal to the scenario, no profile, no states: none of those lines appear.
    inp = WorldModelInput(task="ESC", context=ESC.scenario, history=[])
    system, user = build_messages(inp, ESC)
    assert "Your situation" not in system.content
    assert "Your profile" not in system.content
    assert "Your state" not in user.content
    assert "(nothing said yet)" in user.content
    # The start state is not repeated when it is the previous state.
    same = WorldModelInput(
        task="ESC", history=[("agent", "hi")], initial_state=_state(), previous_state=_state()
    )
    assert "at the start" not in build_messages(same, ESC)[1].content


def test_understand_mode_asks_for_the_state_only_and_needs_a_user_turn_last() -> None:
    inp = WorldModelInput(
        task="ESC", history=[("agent", "hi"), ("user", "hello")], mode="understand"
    )
    _, user = build_messages(inp, ESC)
    assert user.content.endswith("Give your state at this point.")
    bad = inp.model_copy(update={"history": [("user", "hi"), ("agent", "so?")]})
    with pytest.raises(SimulatorOutputError, match="end with the user"):
        build_messages(bad, ESC)


def test_a_task_mismatch_is_refused() -> None:
    with pytest.raises(SimulatorOutputError, match="task"):
        build_messages(WorldModelInput(task="PD"), ESC)


def test_the_fixed_instruction_stays_short() -> None:
    # Prompt tokens dominate the training cost: guard the fixed part against growth.
    inp = WorldModelInput(task="PD", history=[("agent", "hi")])
    system, user = build_messages(inp, tasks.get("PD"))
    assert len(system.content.split()) + len(user.content.split()) < 120


def test_the_arena_hashes_the_format_prompts() -> None:
    ids = {(p.id, p.version) for p in fixed_prompts()}
    assert (SIMULATOR_SYSTEM.id, SIMULATOR_SYSTEM.version) in ids
    assert format_version().startswith(f"simulator.system@{SIMULATOR_SYSTEM.version}")


# ------------------------------------------------------------------------------ targets


def test_target_is_compact_json_in_the_fixed_key_order() -> None:
    text, _ = render_target(_output())
    assert " " not in text.replace("I don't know, I just feel stuck.", "").replace(
        "Nobody will hire me", ""
    ).replace("apply for two jobs", "")
    assert list(json.loads(text)) == [
        "emotion",
        "beliefs",
        "desires",
        "intentions",
        "utterance",
        "leave",
    ]


def test_round_trip_render_then_parse() -> None:
    out = _output(leave=True)
    text, spans = render_target(out)
    _check_spans(text, spans)
    assert parse_output(text, ESC) == out


def test_understanding_target_has_the_state_only() -> None:
    out = _output(utterance=None, leave=None)
    text, _ = render_target(out)
    assert "utterance" not in text and "leave" not in text
    assert parse_output(text, ESC) == out


def test_spans_tag_values_keys_and_the_utterance() -> None:
    text, spans = render_target(_output())
    state = _tagged(text, spans, "state")
    assert '"sadness"' in state and "3" in state and '"Nobody will hire me"' in state
    assert "[]" in state  # an empty list the source states is a target
    assert _tagged(text, spans, "utterance") == ['"I don\'t know, I just feel stuck."', "false"]
    assert all('"emotion"' not in s for s in state)
    assert any('"beliefs":' in s for s in _tagged(text, spans, "syntax"))
    assert _tagged(text, spans, "unknown") == []


def test_unknown_fields_are_null_and_never_tagged_state() -> None:
    partial = PartialState(
        emotion=EmotionField(
            kind=FieldKind.VALUE, value=Emotion(label="sadness", intensity=3), origin=HUMAN
        ),
        intentions=ItemsField(kind=FieldKind.EMPTY, origin=HUMAN),
        constraints=[Constraint(target="desire", relation="direction", value=1.0, origin=HUMAN)],
    )
    out = WorldModelOutput(state=partial.to_state(), utterance="ok", leave=False)
    text, spans = render_target(out, partial)
    _check_spans(text, spans)
    data = json.loads(text)
    assert data["beliefs"] is None and data["desires"] is None
    assert data["intentions"] == []
    assert _tagged(text, spans, "unknown") == ["null", "null"]
    for start, end, tag in spans:
        if tag == "state":
            assert "null" not in text[start:end]


def test_a_conventional_intensity_is_null_and_unknown() -> None:
    # DailyDialog gives the label only; its intensity is a convention, never a target.
    partial = PartialState(
        emotion=EmotionField(
            kind=FieldKind.VALUE,
            value=Emotion(label="fear", intensity=2),
            origin=HUMAN,
            intensity_known=False,
        )
    )
    out = WorldModelOutput(state=partial.to_state(), utterance="oh no", leave=False)
    text, spans = render_target(out, partial)
    assert json.loads(text)["emotion"] == {"label": "fear", "intensity": None}
    assert '"fear"' in _tagged(text, spans, "state")
    assert (
        _tagged(text, spans, "unknown").count("null") == 4
    )  # intensity, beliefs, desires, intentions


def test_unknown_scores_and_leave_are_null_unknown() -> None:
    state = CognitiveState(
        emotion=Emotion(label="hope", intensity=1), beliefs=[StateItem(text="it may work")]
    )
    text, spans = render_target(WorldModelOutput(state=state, utterance="fine", leave=None))
    data = json.loads(text)
    assert data["beliefs"] == [{"text": "it may work", "score": None}]
    assert data["leave"] is None
    assert _tagged(text, spans, "unknown") == ["null", "null"]


def test_a_value_in_an_unknown_field_is_refused() -> None:
    partial = PartialState()  # every field unknown
    with pytest.raises(ValueError, match="emotion"):
        render_target(_output(), partial)


_texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=0, max_size=300
)


@settings(max_examples=60, deadline=None)
@given(utterance=_texts, belief=_texts, score=st.floats(-5, 5), leave=st.booleans())
def test_fitted_outputs_always_round_trip(
    utterance: str, belief: str, score: float, leave: bool
) -> None:
    state = CognitiveState(
        emotion=Emotion(label="fear", intensity=2),
        beliefs=[StateItem(text=belief or "x", score=score)] * (MAX_ITEMS + 1),
    )
    fitted, _ = fit_output(WorldModelOutput(state=state, utterance=utterance, leave=leave), ESC)
    text, spans = render_target(fitted)
    _check_spans(text, spans)
    assert parse_output(text, ESC) == fitted.model_copy(
        update={"utterance": fitted.utterance.strip() if fitted.utterance else fitted.utterance}
    )


def test_fit_output_reports_what_it_changed() -> None:
    state = CognitiveState(
        emotion=Emotion(label="fear", intensity=2),
        desires=[StateItem(text=f"d{i}", score=1.4) for i in range(MAX_ITEMS + 1)],
    )
    long = 'She said "no".\nThen ' + "word " * 100
    fitted, changes = fit_output(WorldModelOutput(state=state, utterance=long), ESC)
    assert len(fitted.state.desires) == MAX_ITEMS
    assert fitted.state.desires[0].score == 1.0
    assert fitted.utterance is not None and len(fitted.utterance) <= UTTERANCE_CHARS
    assert fitted.utterance.startswith("She said 'no'. Then")
    assert {"items_dropped", "score_rounded", "utterance_fitted"} <= set(changes)
    clean, none = fit_output(_output(), ESC)
    assert none == [] and clean == _output()


def test_scores_round_halves_away_from_the_middle_onto_the_integer_grid() -> None:
    # Catches: every half rounded one way (0.5 and 1.0 would share a score).
    state = CognitiveState(
        emotion=Emotion(label="fear", intensity=2),
        beliefs=[StateItem(text="a", score=0.5), StateItem(text="b", score=1.5)],
        desires=[StateItem(text="d", score=0.4), StateItem(text="e", score=1.0)],
        intentions=[StateItem(text="c", score=2.7)],
    )
    fitted, _ = fit_output(WorldModelOutput(state=state), ESC)
    assert [i.score for i in fitted.state.beliefs] == [0.0, 2.0]
    assert [i.score for i in fitted.state.desires] == [0.0, 1.0]
    assert fitted.state.intentions[0].score == 2.0  # clipped into the range


def test_fit_text_cuts_at_a_sentence_then_a_word() -> None:
    assert fit_text("First one here. Then more words go", 30) == "First one here."
    assert fit_text("alpha beta gamma delta", 13) == "alpha beta"
    assert fit_text("a\\b\tc", ITEM_CHARS) == "a/b c"


# ------------------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"emotion": null}', "emotion"),
        ("{} trailing", "after the JSON object"),
    ],
)
def test_parse_errors_name_the_problem(text: str, problem: str) -> None:
    with pytest.raises(SimulatorOutputError, match=problem):
        parse_output(text, ESC)


def test_parse_rejects_labels_outside_the_lexicon_and_scores_outside_the_range() -> None:
    data = json.loads(render_target(_output())[0])
    data["emotion"]["label"] = "joy"
    with pytest.raises(SimulatorOutputError, match=r"emotion\.label"):
        parse_output(json.dumps(data), ESC)
    data = json.loads(render_target(_output())[0])
    data["beliefs"][0]["score"] = 7
    with pytest.raises(SimulatorOutputError, match="beliefs"):
        parse_output(json.dumps(data), ESC)


def test_output_models_follow_the_target_key_order() -> None:
    state_model, turn_model = task_output_models(ESC)
    assert list(turn_model.model_fields) == list(json.loads(render_target(_output())[0]))
    assert list(state_model.model_fields) == ["emotion", "beliefs", "desires", "intentions"]
