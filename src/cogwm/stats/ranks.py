"""The Mann-Whitney U test with the rank-biserial correlation as its effect size."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy.typing as npt

from cogwm.stats._validate import finite_vector

Alternative = Literal["two-sided", "less", "greater"]


class MannWhitneyResult(NamedTuple):
    """U of the first sample, its p-value and the rank-biserial correlation."""

    u: float
    p_value: float
    rank_biserial: float
    n_a: int
    n_b: int


def mann_whitney(
    a: Sequence[float] | npt.ArrayLike,
    b: Sequence[float] | npt.ArrayLike,
    *,
    alternative: Alternative = "two-sided",
) -> MannWhitneyResult:
    """Mann-Whitney U test (``scipy.stats.mannwhitneyu``, automatic exact/asymptotic method).

    Args:
        a: The first sample (e.g. per-item correctness on the Easy set).
        b: The second sample (e.g. on the Hard set).
        alternative: ``two-sided``, ``less`` or ``greater`` (``a`` relative to ``b``).

    Returns:
        ``u`` is U of ``a`` (the number of pairs where ``a`` wins, ties counting one half);
        ``rank_biserial`` = 2U / (n_a n_b) - 1, in [-1, 1], positive when ``a`` tends to be larger.

    Raises:
        StatsInputError: A sample is empty, not 1-d or holds a non-finite value.
    """
    from scipy.stats import mannwhitneyu

    x = finite_vector(a, "a")
    y = finite_vector(b, "b")
    result = mannwhitneyu(x, y, alternative=alternative)
    u = float(result.statistic)
    return MannWhitneyResult(
        u=u,
        p_value=float(result.pvalue),
        rank_biserial=2.0 * u / (x.size * y.size) - 1.0,
        n_a=int(x.size),
        n_b=int(y.size),
    )
