"""Mapping tables: how one corpus's human labels become partial states, one row per rule.

Every field a human-label state carries names the row that produced it in its
:class:`~cogwm.schema.partial.Origin` (``rule="esconv.E1"``), so any label can be traced back to
the corpus label and the reasoning behind the mapping. ``exact`` is about what the row maps (the
emotion label, the item, the decision): intensities that a corpus grades on another scale or not
at all are mapped by their own rows, named in the label row's ``value``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from pydantic import Field, model_validator

from cogwm.errors import InputError
from cogwm.schema.base import Record
from cogwm.schema.partial import Origin, Source

#: What a row produces: a field of the partial state, a constraint, the profile, or nothing.
Target = Literal[
    "emotion",
    "emotion.intensity",
    "beliefs",
    "desires",
    "intentions",
    "constraint",
    "profile",
    "meta",
    "none",
]


class MappingRow(Record):
    """One rule: a corpus label (column and value) and what it becomes."""

    id: str = Field(description="'<corpus>.<field letter><n>', e.g. 'esconv.E1'.")
    column: str = Field(description="The corpus column or field the label comes from.")
    source: str = Field(description="The label value; '*' for every value of the column.")
    target: Target
    value: str = Field(
        description="What the label becomes: the emotion label, the item text, or a description "
        "of the transform for rows that are not looked up by label."
    )
    detail: str = Field(default="", description="How the rest is set (e.g. the intensity rule).")
    score: float | None = Field(default=None, description="Item score or constraint bound.")
    relation: Literal["direction", "at_least", "at_most"] | None = None
    constraint_target: Literal["emotion", "belief", "desire", "intention"] | None = None
    turn: str = Field(description="Which user turn gets it (first, last, the labelled one, ...).")
    exact: bool
    note: str = Field(description="The reasoning (LABELS.md section 2), in one or two sentences.")

    @model_validator(mode="after")
    def _constraint_complete(self) -> MappingRow:
        is_constraint = self.target == "constraint"
        has_parts = (
            self.relation is not None
            and self.constraint_target is not None
            and self.score is not None
        )
        if is_constraint != has_parts:
            raise ValueError(f"{self.id}: a constraint row needs relation, target and score")
        return self

    def origin(self) -> Origin:
        """The provenance a field produced by this row carries."""
        return Origin(source=Source.HUMAN, rule=self.id, exact=self.exact)


class MappingTable(Record):
    """All rows of one corpus, looked up by id or by (column, label)."""

    corpus: str
    rows: tuple[MappingRow, ...]

    @model_validator(mode="after")
    def _unique(self) -> MappingTable:
        ids = [r.id for r in self]
        keys = [(r.column, r.source, r.target, r.relation, r.constraint_target) for r in self]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.corpus}: row ids repeat")
        if len(set(keys)) != len(keys):
            raise ValueError(f"{self.corpus}: two rows map the same label to the same target")
        prefix = f"{self.corpus}."
        wrong = [i for i in ids if not i.startswith(prefix)]
        if wrong:
            raise ValueError(f"{self.corpus}: row ids must start with {prefix!r}: {wrong}")
        return self

    def __iter__(self) -> Iterator[MappingRow]:  # type: ignore[override]
        return iter(self.rows)

    def row(self, row_id: str) -> MappingRow:
        """The row called ``row_id``."""
        for row in self.rows:
            if row.id == row_id:
                return row
        raise KeyError(row_id)

    def lookup(self, column: str, label: str) -> list[MappingRow]:
        """Every row for ``label`` of ``column`` (an empty list: the table does not know it).

        Raises:
            InputError: The label is not in the table at all (not even as unmapped), so a
                label the corpus release adds is never silently dropped.
        """
        rows = [r for r in self.rows if r.column == column and r.source == label]
        if not rows:
            known = sorted({r.source for r in self.rows if r.column == column})
            raise InputError(
                f"{self.corpus}: label {label!r} of {column!r} has no row in the mapping table "
                f"(known: {', '.join(known)})"
            )
        return [r for r in rows if r.target != "none"]
