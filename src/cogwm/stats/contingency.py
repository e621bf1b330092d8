"""Tests on contingency tables: Pearson's chi-square with Cramér's V, and McNemar's test."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from cogwm.stats._validate import StatsInputError, count_table

#: Below this many discordant pairs McNemar's test uses the exact binomial distribution.
MCNEMAR_EXACT_BELOW = 25


class ChiSquareResult(NamedTuple):
    """Pearson's chi-square test of independence on an r x c table."""

    statistic: float
    p_value: float
    dof: int
    cramers_v: float
    n: int


class McNemarResult(NamedTuple):
    """McNemar's test on a paired 2 x 2 table."""

    statistic: float
    p_value: float
    exact: bool
    discordant_yes_no: int
    discordant_no_yes: int


def _checked_for_independence(
    table: Sequence[Sequence[float]] | npt.ArrayLike,
) -> npt.NDArray[np.float64]:
    counts = count_table(table, "table")
    if not _integral(counts):
        raise StatsInputError("table: expected integer counts")
    if counts.sum() == 0:
        raise StatsInputError("table: all counts are zero")
    empty_rows = [i for i, s in enumerate(counts.sum(axis=1)) if s == 0]
    empty_cols = [j for j, s in enumerate(counts.sum(axis=0)) if s == 0]
    if empty_rows or empty_cols:
        raise StatsInputError(
            f"table: expected no empty row or column, got empty rows {empty_rows} "
            f"and columns {empty_cols} (the expected counts would be zero)"
        )
    return counts


def chi_square(
    table: Sequence[Sequence[float]] | npt.ArrayLike, *, yates: bool = False
) -> ChiSquareResult:
    """Pearson's chi-square test of independence (``scipy.stats.chi2_contingency``).

    Args:
        table: An r x c table of counts (r, c >= 2), e.g. correct/wrong x retrospective/prospective.
        yates: Apply Yates' continuity correction on 2 x 2 tables. Off by default: the plain
            Pearson statistic is what Cramér's V is defined on.

    Returns:
        The statistic, p-value, degrees of freedom, Cramér's V and the total count.

    Raises:
        StatsInputError: The table is not 2-d, has fewer than 2 rows or columns, negative or
            non-finite or non-integer counts, or an empty row or column.
    """
    from scipy.stats import chi2_contingency

    counts = _checked_for_independence(table)
    result = chi2_contingency(counts, correction=yates)
    return ChiSquareResult(
        statistic=float(result.statistic),
        p_value=float(result.pvalue),
        dof=int(result.dof),
        cramers_v=cramers_v(counts),
        n=int(counts.sum()),
    )


def cramers_v(table: Sequence[Sequence[float]] | npt.ArrayLike) -> float:
    """Cramér's V = sqrt(chi2 / (n * (min(r, c) - 1))) from the uncorrected Pearson chi-square.

    Uses ``scipy.stats.contingency.association(method="cramer")``.
    """
    from scipy.stats.contingency import association

    counts = _checked_for_independence(table)
    return float(association(counts.astype(np.int64), method="cramer"))


def _integral(counts: npt.NDArray[np.float64]) -> bool:
    return all(float(c).is_integer() for c in counts.ravel())


def mcnemar(
    table: Sequence[Sequence[float]] | npt.ArrayLike, *, exact: bool | None = None
) -> McNemarResult:
    """McNemar's test for paired binary outcomes (``statsmodels.stats.contingency_tables``).

    Args:
        table: The 2 x 2 table ``[[yes/yes, yes/no], [no/yes, no/no]]`` of paired outcomes
            (e.g. the student without / with the teacher's reasoning). Only the discordant
            cells ``table[0][1]`` and ``table[1][0]`` matter.
        exact: Exact binomial test (True) or chi-square with continuity correction (False).
            By default exact when there are fewer than 25 discordant pairs. Without any
            discordant pair the chi-square statistic divides by zero, so the exact test
            (statistic 0, p = 1) is used whatever ``exact`` says.

    Raises:
        StatsInputError: The table is not 2 x 2 of non-negative integer counts.
    """
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

    counts = count_table(table, "table", shape=(2, 2))
    if not _integral(counts):
        raise StatsInputError("table: McNemar's test needs integer counts")
    b, c = int(counts[0, 1]), int(counts[1, 0])
    use_exact = (b + c) < MCNEMAR_EXACT_BELOW if exact is None else exact
    use_exact = use_exact or b + c == 0
    result = sm_mcnemar(counts, exact=use_exact, correction=True)
    return McNemarResult(
        statistic=float(result.statistic),
        p_value=float(result.pvalue),
        exact=use_exact,
        discordant_yes_no=b,
        discordant_no_yes=c,
    )


#: Below this expected count in a cell the chi-square approximation is not trusted.
MIN_EXPECTED = 5


def min_expected_count(table: Sequence[Sequence[int]]) -> float:
    """The smallest expected count of a cell of ``table`` under independence."""
    total = sum(map(sum, table))
    rows = [sum(r) for r in table]
    cols = [sum(c) for c in zip(*table, strict=True)]
    return float(min(r * c / total for r in rows for c in cols))


def fisher_exact_p(table: Sequence[Sequence[int]]) -> float:
    """The two-sided p-value of Fisher's exact test on a 2 x 2 table (``scipy``)."""
    from scipy.stats import fisher_exact

    return float(fisher_exact([list(row) for row in table]).pvalue)
