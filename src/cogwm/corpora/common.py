"""Pieces the corpus loaders share: the task of a corpus, label counting, corpus profiles."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from cogwm import tasks
from cogwm.corpora.readers import Row
from cogwm.schema import BigFive, Profile

#: How a missing label is counted in a distribution.
NONE_LABEL = "(none)"


def task_of(corpus: str) -> str | None:
    """The name of the task built on ``corpus`` (e.g. ``"ESC"`` for ``"esconv"``), if any."""
    spec = tasks.for_corpus(corpus)
    return spec.name if spec is not None else None


def distribution(values: Iterable[object]) -> dict[str, int]:
    """Counts of each value, most frequent first (ties by name); ``None`` counts as "(none)"."""
    counts = Counter(NONE_LABEL if v is None else str(v) for v in values)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


#: The range of the Big Five questionnaires of P4G and INSPIRED, checked on the real files:
#: every score lies in [1, 5], the profile's own scale, so scores are taken unchanged.
BIG_FIVE_RANGE = (1.0, 5.0)
#: Confidence of a profile read from a corpus: the traits were measured by a questionnaire.
CORPUS_PROFILE_CONFIDENCE = 3


def big_five(row: Row, columns: Mapping[str, str]) -> BigFive | None:
    """Big Five scores from a questionnaire row.

    Args:
        row: The participant's row.
        columns: Profile trait name (``openness`` ...) -> the row's column.

    Returns:
        The traits, or ``None`` when all five cells are empty (a participant who skipped the
        questionnaire gets no profile rather than a default one).

    Raises:
        InputError: A score that is missing, not a number or outside :data:`BIG_FIVE_RANGE`.
    """
    if all(row.text(column).strip() == "" for column in columns.values()):
        return None
    low, high = BIG_FIVE_RANGE
    scores: dict[str, float] = {}
    for trait, column in columns.items():
        score = row.number(column)
        if not low <= score <= high:
            raise row.error(f"a Big Five score within [{low}, {high}] in {column!r}", score)
        scores[trait] = score
    return BigFive(**scores)


def corpus_profile(traits: BigFive | None) -> Profile | None:
    """The user profile a corpus provides: its Big Five, marked ``source="corpus"``."""
    if traits is None:
        return None
    return Profile(big_five=traits, confidence=CORPUS_PROFILE_CONFIDENCE, source="corpus")
