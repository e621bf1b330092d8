"""Hypothesis tests and correlations: hand arithmetic and scipy/statsmodels reference values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from cogwm.errors import InputError
from cogwm.stats import (
    StatsInputError,
    chi_square,
    cramers_v,
    mann_whitney,
    mcnemar,
    pearson,
    spearman,
)


def test_chi_square_by_hand_and_against_scipy() -> None:
    table = [[10, 20], [30, 25]]
    # n = 85; row sums 30, 55; column sums 40, 45; expected = row * col / n:
    # 14.1176, 15.8824, 25.8824, 29.1176. Every |O - E| = 4.1176, squared 16.955, so
    # chi2 = 16.955 * (1/14.1176 + 1/15.8824 + 1/25.8824 + 1/29.1176) = 3.5059.
    result = chi_square(table)
    assert result.statistic == pytest.approx(3.5059, abs=1e-4)
    assert result.dof == 1
    assert result.n == 85
    # Cramér's V = sqrt(chi2 / (n * (min(r, c) - 1))) = sqrt(3.5059 / 85) = 0.20309
    assert result.cramers_v == pytest.approx(0.20309, abs=1e-5)
    reference = sps.chi2_contingency(np.array(table), correction=False)
    assert result.statistic == pytest.approx(reference.statistic)
    assert result.p_value == pytest.approx(reference.pvalue)


def test_chi_square_yates_matches_scipy_default() -> None:
    table = [[10, 20], [30, 25]]
    reference = sps.chi2_contingency(np.array(table), correction=True)
    assert chi_square(table, yates=True).p_value == pytest.approx(reference.pvalue)


def test_cramers_v_on_a_3x3_table() -> None:
    table = np.array([[12, 3, 5], [4, 15, 6], [2, 5, 20]])
    chi2 = sps.chi2_contingency(table, correction=False).statistic
    assert cramers_v(table) == pytest.approx(math.sqrt(chi2 / (table.sum() * 2)))
    assert chi_square(table).dof == 4


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([1, 2, 3], "2-d"),
        ([[1, 2]], "at least 2 rows"),
        ([[1, -2], [3, 4]], "non-negative"),
        ([[0, 0], [3, 4]], "empty row"),
        ([[0, 0], [0, 0]], "all counts are zero"),
        ([[1, float("nan")], [3, 4]], "finite"),
    ],
)
def test_chi_square_rejects_bad_tables(table: object, message: str) -> None:
    with pytest.raises(StatsInputError, match=message):
        chi_square(table)  # type: ignore[arg-type]


def test_stats_errors_are_value_and_input_errors() -> None:
    with pytest.raises(ValueError):
        chi_square([[1]])
    with pytest.raises(InputError):
        chi_square([[1]])


def test_mcnemar_exact_by_hand() -> None:
    # Discordant b = 5, c = 3: exact two-sided p = 2 * P(X <= 3 | n = 8, 1/2)
    # = 2 * (1 + 8 + 28 + 56) / 256 = 0.7265625; the statistic is min(b, c) = 3.
    result = mcnemar([[10, 5], [3, 7]])
    assert result.exact is True
    assert result.statistic == 3.0
    assert result.p_value == pytest.approx(0.7265625)
    assert (result.discordant_yes_no, result.discordant_no_yes) == (5, 3)


def test_mcnemar_chi_square_against_statsmodels() -> None:
    table = [[50, 30], [12, 40]]
    result = mcnemar(table)  # 42 discordant pairs: the corrected chi-square
    assert result.exact is False
    # (|30 - 12| - 1)^2 / (30 + 12) = 289 / 42 = 6.88095
    assert result.statistic == pytest.approx(289 / 42)
    reference = sm_mcnemar(np.array(table), exact=False, correction=True)
    assert result.p_value == pytest.approx(reference.pvalue)


def test_mcnemar_without_discordant_pairs_has_p_one() -> None:
    assert mcnemar([[10, 0], [0, 7]]).p_value == 1.0


def test_mcnemar_chi_square_without_discordant_pairs_is_not_significant() -> None:
    # (|0 - 0| - 1)^2 / 0 is undefined (statsmodels returns inf and p = 0); with no discordant
    # pair the conditions never disagree, so the exact test answers: statistic 0, p = 1.
    result = mcnemar([[10, 0], [0, 7]], exact=False)
    assert (result.statistic, result.p_value, result.exact) == (0.0, 1.0, True)


def test_chi_square_and_cramers_v_need_integer_counts() -> None:
    with pytest.raises(StatsInputError, match="integer counts"):
        chi_square([[1.5, 2], [3, 4]])
    with pytest.raises(StatsInputError, match="integer counts"):
        cramers_v([[1.5, 2], [3, 4]])
    # Integral floats (e.g. sums of 0/1 arrays) are counts.
    assert chi_square(np.array([[10.0, 20.0], [30.0, 25.0]])).statistic == pytest.approx(
        3.5059, abs=1e-4
    )


def test_mcnemar_needs_2x2_integers() -> None:
    with pytest.raises(StatsInputError, match=r"shape \(2, 2\)"):
        mcnemar([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(StatsInputError, match="integer"):
        mcnemar([[1.5, 2], [3, 4]])


def test_mann_whitney_by_hand_and_against_scipy() -> None:
    a, b = [1, 2, 3], [2, 4, 5, 6]
    # Pairs where a wins: 3 > 2 (1) and 2 = 2 (1/2): U_a = 1.5 of 12 pairs.
    # Rank-biserial r = 2 * 1.5 / 12 - 1 = -0.75 (a tends to be smaller).
    result = mann_whitney(a, b)
    assert result.u == 1.5
    assert result.rank_biserial == pytest.approx(-0.75)
    assert result.p_value == pytest.approx(sps.mannwhitneyu(a, b).pvalue)
    assert (result.n_a, result.n_b) == (3, 4)


def test_mann_whitney_rejects_empty_and_nan() -> None:
    with pytest.raises(StatsInputError, match="at least 1"):
        mann_whitney([], [1.0])
    with pytest.raises(StatsInputError, match="index 1"):
        mann_whitney([1.0, float("nan")], [1.0])


def test_pearson_and_spearman_against_scipy() -> None:
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    y = [2.0, 1.0, 4.0, 3.0, 7.0]
    p = pearson(x, y)
    ref_p = sps.pearsonr(x, y)
    assert p.r == pytest.approx(ref_p.statistic)
    assert p.p_value == pytest.approx(ref_p.pvalue)
    s = spearman(x, y)
    # Ranks of y: 2 1 4 3 5; d = -1 1 -1 1 0; rho = 1 - 6 * 4 / (5 * 24) = 0.8
    assert s.r == pytest.approx(0.8)
    assert s.p_value == pytest.approx(sps.spearmanr(x, y).pvalue)
    assert s.n == 5


def test_correlation_of_a_constant_is_undefined_not_zero() -> None:
    assert pearson([1, 2, 3], [5, 5, 5]).r is None
    assert spearman([1, 1, 1], [1, 2, 3]).p_value is None


def test_correlation_validates_lengths() -> None:
    with pytest.raises(StatsInputError, match="same length"):
        pearson([1, 2, 3], [1, 2])
    with pytest.raises(StatsInputError, match="at least 3"):
        spearman([1, 2], [1, 2])
    with pytest.raises(StatsInputError, match="1-d"):
        pearson([[1, 2], [3, 4]], [[1, 2], [3, 4]])
