"""Partial cognitive states: what a source says about each field, and what it does not.

Human labels in the corpora describe only part of a user's state (an emotion here, a direction of
change there). Three kinds of value must stay apart everywhere, from the schema to training:

- **unknown**: the source says nothing. Never a training target, never scored.
- **empty**: an annotator said there is none (e.g. an LLM annotator that allocated no belief at
  this turn). A label that says "calm" (DailyDialog's "no emotion") is a value, ``neutral``.
- **value**: a label or items.

Labels that give only a direction or a bound (AnnoMI change/sustain, an INSPIRED rating bound) are
:class:`Constraint` records: they can be checked (sign, bound) but never serve as MAE targets.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field, model_validator

from cogwm.schema.base import Record
from cogwm.schema.dialogue import Dialogue
from cogwm.schema.state import CognitiveState, Emotion, StateItem


class FieldKind(StrEnum):
    """What a source says about one field of the state."""

    UNKNOWN = "unknown"
    EMPTY = "empty"
    VALUE = "value"


class Source(StrEnum):
    """Where a field's value comes from."""

    HUMAN = "human"
    LLM = "llm"
    SELF_REPORT = "self_report"


#: The fields of a partial state, in the order they are rendered everywhere.
STATE_FIELDS: tuple[str, ...] = ("emotion", "beliefs", "desires", "intentions")

ConstraintTarget = Literal["emotion", "belief", "desire", "intention"]


class Origin(Record):
    """Provenance of one field: its source and, for human labels, the mapping-table row used."""

    source: Source
    rule: str | None = Field(default=None, description="Mapping-table row id, e.g. 'esconv.E1'.")
    exact: bool | None = Field(default=None, description="Whether that row is an exact mapping.")


class EmotionField(Record):
    """The emotion field of a partial state."""

    kind: FieldKind = FieldKind.UNKNOWN
    value: Emotion | None = None
    origin: Origin | None = None
    intensity_known: bool = Field(
        default=True,
        description="False when the source gives the label only and the intensity is a "
        "convention (DailyDialog): the intensity is then never a target and never scored.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> EmotionField:
        _check_kind(self.kind, has_value=self.value is not None, origin=self.origin)
        return self


class ItemsField(Record):
    """A belief, desire or intention field of a partial state."""

    kind: FieldKind = FieldKind.UNKNOWN
    items: list[StateItem] = Field(default_factory=list)
    origin: Origin | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ItemsField:
        _check_kind(self.kind, has_value=bool(self.items), origin=self.origin)
        return self


def _check_kind(kind: FieldKind, *, has_value: bool, origin: Origin | None) -> None:
    if kind is FieldKind.VALUE and not has_value:
        raise ValueError("a field of kind 'value' needs a value")
    if kind is not FieldKind.VALUE and has_value:
        raise ValueError(f"a field of kind {kind.value!r} cannot carry a value")
    if kind is not FieldKind.UNKNOWN and origin is None:
        raise ValueError(f"a field of kind {kind.value!r} needs an origin")


class Constraint(Record):
    """A label that fixes only a direction or a bound of one dimension.

    ``relation="direction"`` with ``value=+1`` means the dimension rises at this turn (AnnoMI
    change talk), ``-1`` that it falls (sustain talk). ``at_least`` / ``at_most`` bound the
    dimension's value at this turn (INSPIRED satisfaction).
    """

    target: ConstraintTarget
    relation: Literal["direction", "at_least", "at_most"]
    value: float
    origin: Origin

    def holds(self, observed: float) -> bool:
        """Whether an observed value (a change for ``direction``, else a level) satisfies it."""
        if self.relation == "direction":
            return observed * self.value > 0
        if self.relation == "at_least":
            return observed >= self.value
        return observed <= self.value


class PartialState(Record):
    """The user's state at one turn as far as a source knows it."""

    emotion: EmotionField = Field(default_factory=EmotionField)
    beliefs: ItemsField = Field(default_factory=ItemsField)
    desires: ItemsField = Field(default_factory=ItemsField)
    intentions: ItemsField = Field(default_factory=ItemsField)
    constraints: list[Constraint] = Field(default_factory=list)

    def kind(self, field: str) -> FieldKind:
        """The kind of one of :data:`STATE_FIELDS`."""
        value: EmotionField | ItemsField = getattr(self, field)
        return value.kind

    def is_unknown(self) -> bool:
        """True when no field and no constraint says anything (the turn has no label)."""
        return not self.constraints and all(self.kind(f) is FieldKind.UNKNOWN for f in STATE_FIELDS)

    def known_fields(self) -> list[str]:
        """The fields whose kind is empty or value (the ones that may be targets or scored)."""
        return [f for f in STATE_FIELDS if self.kind(f) is not FieldKind.UNKNOWN]

    @classmethod
    def from_state(cls, state: CognitiveState, origin: Origin) -> PartialState:
        """A complete reading (every field known) of a full state, e.g. an LLM annotation.

        A missing emotion or an empty item list becomes **empty**: the annotator looked and
        found none.
        """

        def items(values: list[StateItem]) -> ItemsField:
            kind = FieldKind.VALUE if values else FieldKind.EMPTY
            return ItemsField(kind=kind, items=list(values), origin=origin)

        emotion = (
            EmotionField(kind=FieldKind.VALUE, value=state.emotion, origin=origin)
            if state.emotion is not None
            else EmotionField(kind=FieldKind.EMPTY, origin=origin)
        )
        return cls(
            emotion=emotion,
            beliefs=items(state.beliefs),
            desires=items(state.desires),
            intentions=items(state.intentions),
        )

    def to_state(self) -> CognitiveState:
        """The values as a :class:`CognitiveState` (unknown and empty both become absent)."""
        return CognitiveState(
            emotion=self.emotion.value,
            beliefs=list(self.beliefs.items),
            desires=list(self.desires.items),
            intentions=list(self.intentions.items),
        )


class LabelledDialogue(Record):
    """A dialogue with partial states keyed by the index of the user turn they belong to.

    Keys are indices into ``dialogue.turns()`` (turn indices, not utterance indices); a user turn
    without an entry is unknown in every field.
    """

    dialogue: Dialogue
    states: dict[int, PartialState] = Field(default_factory=dict)
