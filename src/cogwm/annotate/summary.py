"""Counts of what labelled dialogues say: per field value / empty / unknown, and constraints.

Counted over every user turn of every dialogue, so a user turn without a state entry counts as
unknown in every field, exactly as consumers must read it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from pydantic import Field

from cogwm.schema.base import Record
from cogwm.schema.partial import STATE_FIELDS, FieldKind, LabelledDialogue, PartialState


class FieldCounts(Record):
    """How many user turns have each kind of one field."""

    value: int = 0
    empty: int = 0
    unknown: int = 0


class LabelSummary(Record):
    """Counts over a set of labelled dialogues."""

    dialogues: int = 0
    user_turns: int = 0
    labelled_turns: int = Field(default=0, description="User turns with any field or constraint.")
    fields: dict[str, FieldCounts] = Field(
        default_factory=lambda: {f: FieldCounts() for f in STATE_FIELDS}
    )
    constrained_turns: int = Field(default=0, description="User turns with any constraint.")
    constraints: dict[str, int] = Field(
        default_factory=dict, description="'<target> <relation> <value>' -> user turns with it."
    )
    rules: dict[str, int] = Field(default_factory=dict, description="Mapping-table row -> uses.")
    emotions: dict[str, int] = Field(default_factory=dict, description="Emotion label -> turns.")

    @property
    def labelled_share(self) -> float | None:
        """Share of user turns with a label; ``None`` when there is no user turn."""
        return self.labelled_turns / self.user_turns if self.user_turns else None

    def add(self, item: LabelledDialogue) -> None:
        """Count one labelled dialogue."""
        self.dialogues += 1
        unknown = PartialState()
        for turn in item.dialogue.user_turns():
            self.user_turns += 1
            self._add_state(item.states.get(turn.index, unknown))

    def _add_state(self, state: PartialState) -> None:
        if not state.is_unknown():
            self.labelled_turns += 1
        for name in STATE_FIELDS:
            kind = state.kind(name)
            counts = self.fields[name]
            setattr(counts, kind.value, getattr(counts, kind.value) + 1)
            origin = getattr(state, name).origin
            if kind is not FieldKind.UNKNOWN and origin is not None and origin.rule:
                _bump(self.rules, origin.rule)
        if state.emotion.value is not None:
            _bump(self.emotions, state.emotion.value.label)
        keys = {_constraint_key(c.target, c.relation, c.value) for c in state.constraints}
        for key in sorted(keys):
            _bump(self.constraints, key)
        if state.constraints:
            self.constrained_turns += 1
        for rule in Counter(c.origin.rule for c in state.constraints if c.origin.rule):
            _bump(self.rules, rule)


def summarize(items: Iterable[LabelledDialogue]) -> LabelSummary:
    """The summary of ``items``."""
    summary = LabelSummary()
    for item in items:
        summary.add(item)
    return summary


def counting(
    items: Iterable[LabelledDialogue], summary: LabelSummary
) -> Iterator[LabelledDialogue]:
    """Pass ``items`` through unchanged, adding each to ``summary`` (to count while writing)."""
    for item in items:
        summary.add(item)
        yield item


def _bump(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _constraint_key(target: str, relation: str, value: float) -> str:
    return (
        f"{target} {relation} {value:+g}"
        if relation == "direction"
        else (f"{target} {relation} {value:g}")
    )
