"""Partial states keep unknown, empty and value apart."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cogwm.schema import CognitiveState, Dialogue, Emotion, Role, StateItem
from cogwm.schema.dialogue import Utterance
from cogwm.schema.partial import (
    Constraint,
    EmotionField,
    FieldKind,
    ItemsField,
    LabelledDialogue,
    Origin,
    PartialState,
    Source,
)

HUMAN = Origin(source=Source.HUMAN, rule="esconv.E1", exact=True)
LLM = Origin(source=Source.LLM)


def test_default_partial_state_is_unknown_everywhere() -> None:
    state = PartialState()
    assert state.is_unknown()
    assert state.known_fields() == []


def test_value_kind_needs_a_value_and_other_kinds_refuse_one() -> None:
    with pytest.raises(ValidationError, match="needs a value"):
        ItemsField(kind=FieldKind.VALUE, origin=HUMAN)
    with pytest.raises(ValidationError, match="cannot carry a value"):
        EmotionField(kind=FieldKind.EMPTY, value=Emotion(label="anger", intensity=2), origin=HUMAN)
    with pytest.raises(ValidationError, match="needs an origin"):
        ItemsField(kind=FieldKind.EMPTY)


def test_from_state_marks_missing_fields_empty_not_unknown() -> None:
    state = CognitiveState(beliefs=[StateItem(text="it will pass", score=1.0)])
    partial = PartialState.from_state(state, LLM)
    assert partial.kind("beliefs") is FieldKind.VALUE
    assert partial.kind("emotion") is FieldKind.EMPTY
    assert partial.kind("desires") is FieldKind.EMPTY
    assert partial.known_fields() == ["emotion", "beliefs", "desires", "intentions"]
    assert partial.to_state().beliefs[0].text == "it will pass"


def test_a_constraint_alone_makes_the_turn_labelled() -> None:
    change = Constraint(target="intention", relation="direction", value=1.0, origin=HUMAN)
    state = PartialState(constraints=[change])
    assert not state.is_unknown()
    assert state.known_fields() == []
    assert change.holds(0.5) and not change.holds(0.0) and not change.holds(-1.0)
    bound = Constraint(target="desire", relation="at_most", value=0.5, origin=HUMAN)
    assert bound.holds(0.5) and not bound.holds(0.6)


def test_labelled_dialogue_round_trips_through_json() -> None:
    dialogue = Dialogue(
        id="x:1",
        corpus="x",
        utterances=[
            Utterance(index=0, speaker="a", role=Role.AGENT, text="hi"),
            Utterance(index=1, speaker="b", role=Role.USER, text="hello"),
        ],
    )
    emotion = EmotionField(
        kind=FieldKind.VALUE, value=Emotion(label="sadness", intensity=3), origin=HUMAN
    )
    labelled = LabelledDialogue(dialogue=dialogue, states={1: PartialState(emotion=emotion)})
    again = LabelledDialogue.model_validate_json(labelled.model_dump_json())
    assert again == labelled
    assert again.states[1].kind("beliefs") is FieldKind.UNKNOWN
