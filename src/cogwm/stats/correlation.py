"""Pearson and Spearman correlations with p-values (scipy)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from cogwm.stats._validate import paired_vectors


class CorrelationResult(NamedTuple):
    """A correlation coefficient and its two-sided p-value; None when undefined."""

    r: float | None
    p_value: float | None
    n: int


def _constant(values: npt.NDArray[np.float64]) -> bool:
    return bool(np.all(values == values[0]))


def pearson(
    x: Sequence[float] | npt.ArrayLike, y: Sequence[float] | npt.ArrayLike
) -> CorrelationResult:
    """Pearson's r with its two-sided p-value (``scipy.stats.pearsonr``).

    A constant input has no correlation: ``r`` and ``p_value`` are None, not 0.

    Raises:
        StatsInputError: Lengths differ, fewer than 3 pairs, or a non-finite value.
    """
    from scipy.stats import pearsonr

    a, b = paired_vectors(x, y, min_len=3)
    if _constant(a) or _constant(b):
        return CorrelationResult(r=None, p_value=None, n=int(a.size))
    result = pearsonr(a, b)
    return CorrelationResult(r=float(result.statistic), p_value=float(result.pvalue), n=a.size)


def spearman(
    x: Sequence[float] | npt.ArrayLike, y: Sequence[float] | npt.ArrayLike
) -> CorrelationResult:
    """Spearman's rho with its two-sided p-value (``scipy.stats.spearmanr``; ties averaged).

    A constant input has no correlation: ``r`` and ``p_value`` are None, not 0.

    Raises:
        StatsInputError: Lengths differ, fewer than 3 pairs, or a non-finite value.
    """
    from scipy.stats import spearmanr

    a, b = paired_vectors(x, y, min_len=3)
    if _constant(a) or _constant(b):
        return CorrelationResult(r=None, p_value=None, n=int(a.size))
    result = spearmanr(a, b)
    r, p = float(result.statistic), float(result.pvalue)
    return CorrelationResult(
        r=None if math.isnan(r) else r, p_value=None if math.isnan(p) else p, n=int(a.size)
    )
