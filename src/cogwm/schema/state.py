"""Cognitive state records: emotion, belief/desire/intention items, knowledge and trust."""

from __future__ import annotations

import functools
import math
from enum import StrEnum
from typing import Any

from pydantic import Field, field_validator, model_validator

from cogwm.schema.base import Record
from cogwm.schema.lexicon import is_known, valence, valence_table


class Dimension(StrEnum):
    """The item-list dimensions of a cognitive state (BDI, plus K and T for DialToM)."""

    BELIEF = "belief"
    DESIRE = "desire"
    INTENTION = "intention"
    KNOWLEDGE = "knowledge"
    TRUST = "trust"


#: The three dimensions that enter the composite score.
BDI: tuple[Dimension, ...] = (Dimension.BELIEF, Dimension.DESIRE, Dimension.INTENTION)

#: The ``CognitiveState`` field holding each dimension's items (built once: ``items`` is hot).
_ITEM_FIELDS: dict[str, str] = {
    Dimension.BELIEF: "beliefs",
    Dimension.DESIRE: "desires",
    Dimension.INTENTION: "intentions",
    Dimension.KNOWLEDGE: "knowledge",
    Dimension.TRUST: "trust",
}


def _lexicon_enum(schema: dict[str, Any]) -> None:
    schema["enum"] = sorted(valence_table())


class Emotion(Record):
    """One emotion label from the lexicon with an intensity 1 (weak) to 3 (strong)."""

    label: str = Field(
        description="An emotion label from the lexicon.",
        # The enum is filled when the schema is generated, so that grammar-constrained decoding
        # (and the fake backend) only produce labels the lexicon knows, extensions included.
        json_schema_extra=_lexicon_enum,
    )
    intensity: int = Field(ge=1, le=3, description="1 weak, 2 moderate, 3 strong.")
    evidence: str = Field(default="", description="A quote from the utterance that grounds it.")

    @model_validator(mode="after")
    def _keep_valence(self) -> Emotion:
        # The label's valence in the lexicon in force when the record is made, kept with it so
        # that an emotion read under a run's lexicon keeps its number wherever it is used. It is
        # the cached value of ``valence`` (a plain attribute read on every state of every
        # trajectory metric; a pydantic private attribute costs a slow ``__getattr__`` on each
        # read and its set-up on each record). Not a field: never validated, dumped or shown;
        # equality still compares fields only, and copies and pickles carry it.
        self.__dict__["valence"] = valence(self.label)
        return self

    @field_validator("label")
    @classmethod
    def _label_in_lexicon(cls, value: str) -> str:
        label = value.strip().lower()
        if not is_known(label):
            known = ", ".join(sorted(valence_table()))
            raise ValueError(f"emotion {value!r} is not in the lexicon (allowed: {known})")
        return label

    @functools.cached_property
    def valence(self) -> float:
        """Valence of the label (``E_val``), in the lexicon in force when the record was made."""
        # Computed here only for a record made without validation (``model_construct``).
        return valence(self.label)

    @property
    def quantified(self) -> float:
        """``e = valence * intensity`` (used for E-Δ)."""
        return self.valence * self.intensity


class StateItem(Record):
    """One belief, desire or intention (or knowledge/trust) item."""

    text: str = Field(min_length=1, description="The item, in a short sentence.")
    score: float | None = Field(
        default=None,
        description="Task-specific score (default range 0-2); None where only the text is known.",
    )
    evidence: str = Field(default="", description="A quote from the utterance that grounds it.")
    global_ref: str | None = Field(
        default=None, description="Id of the dialogue-level item this instantiates."
    )

    @field_validator("score")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("score must be a finite number")
        return value


class CognitiveState(Record):
    """The user's state at one turn. Empty lists and a missing emotion mean *unknown*."""

    emotion: Emotion | None = None
    beliefs: list[StateItem] = Field(default_factory=list)
    desires: list[StateItem] = Field(default_factory=list)
    intentions: list[StateItem] = Field(default_factory=list)
    knowledge: list[StateItem] | None = None
    trust: list[StateItem] | None = None

    def items(self, dimension: Dimension | str) -> list[StateItem]:
        """The item list of one dimension (empty for an absent knowledge/trust)."""
        attr = _ITEM_FIELDS.get(dimension)  # a plain string finds its StrEnum member's entry
        if attr is None:
            attr = _ITEM_FIELDS[Dimension(dimension)]  # raises ValueError for an unknown name
        value: list[StateItem] | None = getattr(self, attr)
        return value or []

    def dimension_value(self, dimension: Dimension | str) -> float | None:
        """Mean score of a dimension's scored items; None when it has none (unknown, not 0)."""
        scores = [i.score for i in self.items(dimension) if i.score is not None]
        return sum(scores) / len(scores) if scores else None

    def has_bdi(self) -> bool:
        """Whether any of B/D/I has an item (the nz% criterion)."""
        return any(self.items(d) for d in BDI)
