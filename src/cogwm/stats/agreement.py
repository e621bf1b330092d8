"""Inter-rater agreement: Cohen's kappa (scikit-learn) and Gwet's AC1 (Gwet's formula).

Gwet's AC1 for several raters with missing ratings (Gwet 2014, *Handbook of Inter-Rater
Reliability*, 4th ed., ch. 2; the same computation as ``gwet.ac1.raw`` in the irrCAC R package):

- ``r_ik`` = raters who put subject i in category k, ``r_i = sum_k r_ik``; subjects with no
  rating are dropped, ``n`` subjects remain;
- ``pa`` = mean over the subjects with ``r_i >= 2`` of ``sum_k r_ik (r_ik - 1) / (r_i (r_i - 1))``;
- ``pi_k`` = ``(1/n) sum_i r_ik / r_i`` over all n subjects (one rating is enough here);
- ``pe`` = ``sum_k pi_k (1 - pi_k) / (q - 1)`` with q categories;
- ``AC1 = (pa - pe) / (1 - pe)``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from cogwm.stats._validate import StatsInputError, is_missing

KappaWeights = Literal["linear", "quadratic"]


class GwetAC1Result(NamedTuple):
    """Gwet's AC1 with its parts: observed agreement ``pa`` and chance agreement ``pe``."""

    coefficient: float
    pa: float
    pe: float
    n_subjects: int
    n_ratings: int
    categories: tuple[Hashable, ...]


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    weights: KappaWeights | None = None,
    labels: Sequence[Hashable] | None = None,
) -> float | None:
    """Cohen's kappa of two raters (``sklearn.metrics.cohen_kappa_score``).

    Args:
        a: Labels of the first rater, one per item.
        b: Labels of the second rater for the same items.
        weights: None (nominal), ``linear`` or ``quadratic`` (ordinal labels).
        labels: The label set, when some labels may be absent from both raters.

    Returns:
        Kappa, or None when it is undefined (chance agreement is 1: both raters used a single
        and the same label throughout).

    Raises:
        StatsInputError: Lengths differ, no items, or a missing label.
    """
    from sklearn.metrics import cohen_kappa_score

    if len(a) != len(b):
        raise StatsInputError(f"a and b must have the same length, got {len(a)} and {len(b)}")
    if not a:
        raise StatsInputError("cohen_kappa needs at least one item")
    for name, seq in (("a", a), ("b", b)):
        missing = next((i for i, v in enumerate(seq) if is_missing(v)), None)
        if missing is not None:
            raise StatsInputError(f"{name}: label at index {missing} is missing")
    if len(set(a) | set(b)) == 1:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = float(
            cohen_kappa_score(
                list(a), list(b), weights=weights, labels=None if labels is None else list(labels)
            )
        )
    return None if math.isnan(kappa) else kappa


def _rating_rows(ratings: Sequence[Sequence[Hashable]] | npt.ArrayLike) -> list[list[Hashable]]:
    rows = ratings.tolist() if isinstance(ratings, np.ndarray) else ratings
    if not isinstance(rows, Sequence) or isinstance(rows, str):
        raise StatsInputError("ratings: expected a subjects x raters table")
    table: list[list[Hashable]] = []
    width: int | None = None
    for i, row in enumerate(rows):
        if not isinstance(row, Sequence) or isinstance(row, str):
            raise StatsInputError(f"ratings: row {i} is not a sequence of ratings")
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise StatsInputError(
                f"ratings: row {i} has {len(row)} raters, expected {width} like row 0 "
                "(mark a missing rating with None or NaN)"
            )
        table.append(list(row))
    if not table:
        raise StatsInputError("ratings: no subjects")
    if width is None or width < 2:
        raise StatsInputError(f"ratings: needs at least 2 raters (columns), got {width}")
    return table


def gwet_ac1(
    ratings: Sequence[Sequence[Hashable]] | npt.ArrayLike,
    *,
    categories: Sequence[Hashable] | None = None,
) -> GwetAC1Result:
    """Gwet's AC1 for two or more raters, missing ratings allowed (unweighted).

    Args:
        ratings: A subjects x raters table; a missing rating is None, NaN or "".
        categories: The full category set. By default the categories that occur; pass it when
            some possible category was never used, since ``q`` enters the chance agreement.

    Raises:
        StatsInputError: A ragged table, fewer than 2 raters, no subject with two ratings,
            fewer than 2 categories, or a rating outside ``categories``.
    """
    table = _rating_rows(ratings)
    rated = [[v for v in row if not is_missing(v)] for row in table]
    rated = [row for row in rated if row]
    if not any(len(row) >= 2 for row in rated):
        raise StatsInputError("ratings: no subject has ratings from two raters")
    seen = sorted({v for row in rated for v in row}, key=repr)
    cats: list[Hashable] = list(categories) if categories is not None else seen
    unknown = [v for v in seen if v not in cats]
    if unknown:
        raise StatsInputError(f"ratings: {unknown[0]!r} is not one of the categories {cats}")
    if len(cats) < 2:
        raise StatsInputError(f"ratings: needs at least 2 categories, got {cats}")
    index = {c: k for k, c in enumerate(cats)}
    counts = np.zeros((len(rated), len(cats)))
    for i, row in enumerate(rated):
        for v in row:
            counts[i, index[v]] += 1
    per_subject = counts.sum(axis=1)
    multi = per_subject >= 2
    agreement = (counts[multi] * (counts[multi] - 1)).sum(axis=1)
    pa = float(np.mean(agreement / (per_subject[multi] * (per_subject[multi] - 1))))
    pi = (counts / per_subject[:, None]).mean(axis=0)
    pe = float(np.sum(pi * (1 - pi)) / (len(cats) - 1))
    return GwetAC1Result(
        coefficient=(pa - pe) / (1 - pe),
        pa=pa,
        pe=pe,
        n_subjects=len(rated),
        n_ratings=int(per_subject.sum()),
        categories=tuple(cats),
    )
