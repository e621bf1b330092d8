"""Pieces every corpus mapping uses: the intensity scale, field builders, per-turn collection."""

from __future__ import annotations

from dataclasses import dataclass, field

from cogwm.corpora.labels.table import MappingRow
from cogwm.schema import Dialogue, Emotion, Profile, Role, StateItem
from cogwm.schema.partial import (
    Constraint,
    EmotionField,
    FieldKind,
    ItemsField,
    LabelledDialogue,
    PartialState,
)

#: LABELS.md section 2: a 1-5 self-report becomes the lexicon's 1-3 as {1,2}->1, 3->2, {4,5}->3.
INTENSITY_1_5: dict[int, int] = {1: 1, 2: 1, 3: 2, 4: 3, 5: 3}

#: ``Profile.source`` of traits the participant reported about themselves.
SELF_REPORT = "self_report"


def compress_intensity(value: int) -> int:
    """A 1-5 intensity on the lexicon's 1-3 scale (see :data:`INTENSITY_1_5`)."""
    return INTENSITY_1_5[value]


def emotion(
    row: MappingRow, label: str, intensity: int, *, intensity_known: bool = True
) -> EmotionField:
    """An emotion value from ``row``; ``intensity_known=False`` marks a conventional intensity."""
    return EmotionField(
        kind=FieldKind.VALUE,
        value=Emotion(label=label, intensity=intensity),
        origin=row.origin(),
        intensity_known=intensity_known,
    )


def items(row: MappingRow, text: str, score: float | None = None) -> ItemsField:
    """A one-item belief/desire/intention value produced by ``row``."""
    return ItemsField(
        kind=FieldKind.VALUE, items=[StateItem(text=text, score=score)], origin=row.origin()
    )


def constraint(row: MappingRow) -> Constraint:
    """The constraint ``row`` describes (its target, relation and bound or sign)."""
    if row.relation is None or row.constraint_target is None or row.score is None:
        raise ValueError(f"{row.id} is not a constraint row")
    return Constraint(
        target=row.constraint_target, relation=row.relation, value=row.score, origin=row.origin()
    )


def self_reported(profile: Profile | None) -> Profile | None:
    """The corpus profile marked as the participant's own report."""
    return None if profile is None else profile.model_copy(update={"source": SELF_REPORT})


@dataclass
class StateCollector:
    """Partial states of one dialogue, filled field by field, keyed by turn index."""

    dialogue: Dialogue
    _states: dict[int, dict[str, object]] = field(default_factory=dict)
    _constraints: dict[int, list[Constraint]] = field(default_factory=dict)
    _roles: list[Role] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._roles = [t.role for t in self.dialogue.turns()]

    def user_turn_indices(self) -> list[int]:
        """Indices (into ``dialogue.turns()``) of the user turns, in order."""
        return [i for i, role in enumerate(self._roles) if role is Role.USER]

    def set(self, turn: int, name: str, value: EmotionField | ItemsField) -> None:
        """Set one field of one turn; a later call for the same field replaces it."""
        self._check_user_turn(turn)
        self._states.setdefault(turn, {})[name] = value

    def has(self, turn: int, name: str) -> bool:
        """Whether the field of that turn has been set."""
        return name in self._states.get(turn, {})

    def add_constraint(self, turn: int, value: Constraint) -> None:
        """Add a constraint to one turn."""
        self._check_user_turn(turn)
        self._constraints.setdefault(turn, []).append(value)

    def labelled(self, dialogue: Dialogue | None = None) -> LabelledDialogue:
        """The labelled dialogue (optionally with a replaced dialogue record)."""
        turns = sorted(set(self._states) | set(self._constraints))
        states = {
            t: PartialState.model_validate(
                {**self._states.get(t, {}), "constraints": self._constraints.get(t, [])}
            )
            for t in turns
        }
        return LabelledDialogue(dialogue=dialogue or self.dialogue, states=states)

    def _check_user_turn(self, turn: int) -> None:
        if not 0 <= turn < len(self._roles) or self._roles[turn] is not Role.USER:
            raise ValueError(f"{self.dialogue.id}: turn {turn} is not a user turn")
