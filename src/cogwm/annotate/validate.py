"""Checks of the annotator's answers beyond their JSON schema.

Each rule has a name, which is the failure reason stored and counted when an answer still breaks
it after the repair call:

- ``lexicon``: the emotion label is not in the lexicon;
- ``score_range``: a score lies outside the task's score range;
- ``evidence``: an evidence quote does not occur in the turn (after case and whitespace
  normalisation; quotes around it are ignored); B/D/I items must have one;
- ``global_ref``: an allocated item refers to no stage-1 item of its dimension.

Answers that do not even match the schema fail with ``schema``; calls that fail with
``call_error``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from cogwm.annotate.outputs import Allocation, Summary
from cogwm.annotate.prompts import plural
from cogwm.schema import TaskSpec
from cogwm.schema.lexicon import valence_table
from cogwm.schema.state import BDI, Dimension

#: Every failure reason, in report order.
REASONS: tuple[str, ...] = (
    "call_error",
    "schema",
    "lexicon",
    "score_range",
    "evidence",
    "global_ref",
)

_SPACE = re.compile(r"\s+")
_QUOTES = "\"'`“”‘’ "


class Problem(NamedTuple):
    """One broken rule: its name (the failure reason) and what exactly is wrong."""

    rule: str
    message: str


def normalise(text: str) -> str:
    """Lower case with runs of whitespace collapsed to one space."""
    return _SPACE.sub(" ", text).strip().lower()


def evidence_occurs(evidence: str, turn_text: str) -> bool:
    """Whether ``evidence`` (quotes around it ignored) occurs in ``turn_text``, normalised."""
    quote = normalise(evidence.strip(_QUOTES))
    return bool(quote) and quote in normalise(turn_text)


def _score_problem(where: str, score: float, task: TaskSpec) -> Problem | None:
    low, high = task.score_range
    if low <= score <= high:
        return None
    return Problem("score_range", f"{where}: score {score:g} is outside {low:g}..{high:g}")


def check_summary(summary: Summary, task: TaskSpec) -> list[Problem]:
    """Problems of a stage-1 answer (scores in range)."""
    problems = []
    for dimension in BDI:
        for n, item in enumerate(summary.items(dimension)):
            found = _score_problem(f"{plural(dimension)}[{n}]", item.score, task)
            if found:
                problems.append(found)
    return problems


def check_allocation(
    allocation: Allocation,
    task: TaskSpec,
    turn_text: str,
    ids: Mapping[Dimension, Sequence[str]],
) -> list[Problem]:
    """Problems of a stage-2 answer for the turn whose text is ``turn_text``."""
    problems = []
    emotion = allocation.emotion
    if emotion.label.strip().lower() not in valence_table():
        problems.append(Problem("lexicon", f"emotion.label {emotion.label!r} is not in the list"))
    if emotion.evidence.strip() and not evidence_occurs(emotion.evidence, turn_text):
        problems.append(
            Problem("evidence", f"emotion.evidence {emotion.evidence!r} is not in the turn")
        )
    for dimension in BDI:
        allowed = set(ids.get(dimension, ()))
        for n, item in enumerate(allocation.items(dimension)):
            where = f"{plural(dimension)}[{n}]"
            if item.global_ref not in allowed:
                known = ", ".join(sorted(allowed)) or "none"
                problems.append(
                    Problem(
                        "global_ref",
                        f"{where}.global_ref {item.global_ref!r} is not one of: {known}",
                    )
                )
            found = _score_problem(where, item.score, task)
            if found:
                problems.append(found)
            if not evidence_occurs(item.evidence, turn_text):
                problems.append(
                    Problem("evidence", f"{where}.evidence {item.evidence!r} is not in the turn")
                )
    return problems


def describe(problems: Sequence[Problem]) -> str:
    """The validator's message sent back in the repair call."""
    return "; ".join(p.message for p in problems)
