"""What the annotator asks the model for: the output models of stage 1, stage 2 and the profile.

These are the *model's* answers, deliberately looser than the schema records. The emotion label,
the ``global_ref``, the scores and the evidence quotes are plain values whose allowed choices are
sent as JSON-schema enums (the lexicon, the stage-1 ids, the task's score range in steps of
0.5, the sentences of the turn), so grammar-constrained backends cannot leave them; they are
still checked by :mod:`cogwm.annotate.validate`, so a backend that only reads the schema from the
prompt gets the validator's own message and its failure is counted under its own reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from cogwm.annotate.prompts import plural
from cogwm.schema import TaskSpec
from cogwm.schema.lexicon import valence_table
from cogwm.schema.state import BDI, Dimension

#: At most this many dialogue-level items per dimension (bounds the generation of small models).
MAX_GLOBAL_ITEMS = 3
#: At most this many items of one dimension allocated to one turn (a turn rarely voices more;
#: small models otherwise allocate every item to every turn and run out of tokens).
MAX_TURN_ITEMS = 2
_TEXT = Field(min_length=1, max_length=200)
_EVIDENCE_CHARS = 300
_EVIDENCE = Field(max_length=_EVIDENCE_CHARS, description="Words copied exactly from the turn.")
#: Scores are offered in steps of this size within the task's range.
SCORE_STEP = 0.5
_MAX_SCORE_CHOICES = 41
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
#: Quote marks, backslashes and control characters end a quote too: the JSON-schema-to-grammar
#: converters of grammar backends mis-escape them inside enum strings (llama.cpp then fails to
#: parse the grammar and the process crashes), and a shorter quote is still a quote.
_UNQUOTABLE = re.compile(r'["\\\x00-\x1f]')


def score_choices(task: TaskSpec) -> list[float] | None:
    """The scores offered for ``task``: its range in steps of 0.5 (None for a very wide range)."""
    low, high = task.score_range
    count = round((high - low) / SCORE_STEP) + 1
    if count > _MAX_SCORE_CHOICES:
        return None
    return [low + k * SCORE_STEP for k in range(count) if low + k * SCORE_STEP <= high + 1e-9]


def evidence_choices(turn_text: str) -> list[str]:
    """The quotes offered as evidence: the turn's sentences (each cut to 300 characters).

    Sentences are also cut at quote marks, backslashes and control characters, so that no
    offered quote contains one.
    """
    seen: list[str] = []
    for sentence in _SENTENCE_END.split(turn_text):
        for part in _UNQUOTABLE.split(sentence):
            quote = part.strip()[:_EVIDENCE_CHARS].strip()
            if any(c.isalnum() for c in quote) and quote not in seen:
                seen.append(quote)
    return seen


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GlobalItem(_Out):
    """A dialogue-level belief, desire or intention with its task-specific score."""

    text: str = _TEXT
    score: float


class Summary(_Out):
    """Stage 1: the user's dialogue-level items."""

    beliefs: list[GlobalItem] = Field(max_length=MAX_GLOBAL_ITEMS)
    desires: list[GlobalItem] = Field(max_length=MAX_GLOBAL_ITEMS)
    intentions: list[GlobalItem] = Field(max_length=MAX_GLOBAL_ITEMS)

    def items(self, dimension: Dimension) -> list[GlobalItem]:
        """The items of one dimension."""
        value: list[GlobalItem] = getattr(self, plural(dimension))
        return value


def summary_model(task: TaskSpec) -> type[Summary]:
    """A :class:`Summary` whose scores are offered as the task's score choices."""
    choices = score_choices(task)
    if choices is None:
        return Summary
    item = create_model(
        "GlobalItem",
        __base__=GlobalItem,
        score=(float, Field(json_schema_extra={"enum": list[Any](choices)})),
    )
    bounded = (list[item], Field(max_length=MAX_GLOBAL_ITEMS))
    return create_model(
        "Summary", __base__=Summary, beliefs=bounded, desires=bounded, intentions=bounded
    )


def _lexicon_enum(schema: dict[str, Any]) -> None:
    schema["enum"] = sorted(valence_table())


class EmotionOut(_Out):
    """The emotion at one user turn."""

    label: str = Field(json_schema_extra=_lexicon_enum)
    intensity: int = Field(ge=1, le=3)
    evidence: str = _EVIDENCE


class AllocatedItem(_Out):
    """A stage-1 item expressed at one turn: which one, its score now and the quote."""

    global_ref: str
    score: float
    evidence: str = _EVIDENCE


class Allocation(_Out):
    """Stage 2 for one user turn (the dialogue's own subclass carries the allowed ids)."""

    emotion: EmotionOut
    beliefs: list[AllocatedItem] = Field(default_factory=list)
    desires: list[AllocatedItem] = Field(default_factory=list)
    intentions: list[AllocatedItem] = Field(default_factory=list)

    def items(self, dimension: Dimension) -> list[AllocatedItem]:
        """The allocated items of one dimension."""
        value: list[AllocatedItem] = getattr(self, plural(dimension))
        return value


def allocation_model(
    task: TaskSpec, ids: Mapping[Dimension, Sequence[str]], turn_text: str
) -> type[Allocation]:
    """An :class:`Allocation` for one turn, with the choices of every constrained value.

    The schema lists the stage-1 ids each dimension may refer to, the task's score choices and
    the turn's sentences as evidence (the emotion's evidence may also be empty). A dimension
    without stage-1 items gets ``maxItems: 0``: nothing can be allocated to it.
    """
    quotes = evidence_choices(turn_text)
    scores = score_choices(task)
    quote_field = Field(json_schema_extra={"enum": list[Any](quotes)}) if quotes else _EVIDENCE
    emotion = create_model(
        "EmotionOut",
        __base__=EmotionOut,
        evidence=(str, Field(json_schema_extra={"enum": list[Any](["", *quotes])})),
    )
    fields: dict[str, Any] = {"emotion": (emotion, ...)}
    for dimension in BDI:
        allowed = list(ids.get(dimension, ()))
        if not allowed:
            fields[plural(dimension)] = (list[AllocatedItem], Field(max_length=0))
            continue
        extra: dict[str, Any] = {
            "global_ref": (str, Field(json_schema_extra={"enum": list[Any](allowed)})),
            "evidence": (str, quote_field),
        }
        if scores is not None:
            extra["score"] = (float, Field(json_schema_extra={"enum": list[Any](scores)}))
        item = create_model(f"{dimension.value.capitalize()}Item", __base__=AllocatedItem, **extra)
        limit = min(len(allowed), MAX_TURN_ITEMS)
        fields[plural(dimension)] = (list[item], Field(max_length=limit))
    return create_model("Allocation", __base__=Allocation, **fields)


class BigFiveOut(_Out):
    """Big Five traits, 1-5."""

    openness: float = Field(ge=1, le=5)
    conscientiousness: float = Field(ge=1, le=5)
    extraversion: float = Field(ge=1, le=5)
    agreeableness: float = Field(ge=1, le=5)
    neuroticism: float = Field(ge=1, le=5)


class Feature(_Out):
    """One task-related feature of the user."""

    name: str = Field(min_length=1, max_length=60)
    value: str = Field(min_length=1, max_length=120)


class ProfileOut(_Out):
    """The profile when the corpus has no self-reported traits."""

    big_five: BigFiveOut
    communication_style: str = Field(min_length=1, max_length=120)
    decision_style: str = Field(min_length=1, max_length=120)
    task_features: list[Feature] = Field(max_length=3)
    confidence: int = Field(ge=1, le=3)


class ProfileRestOut(_Out):
    """The profile when the Big Five are self-reported: the model fills only the rest."""

    communication_style: str = Field(min_length=1, max_length=120)
    decision_style: str = Field(min_length=1, max_length=120)
    task_features: list[Feature] = Field(max_length=3)
    confidence: int = Field(ge=1, le=3)
