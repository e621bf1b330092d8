"""The statistics moved into ``cogwm.stats``: Wilson intervals, Fisher's rule, the paired
difference of two sets of answers and the estimates built from a bootstrap."""

from __future__ import annotations

import pytest

from cogwm.stats.bootstrap import Settings, estimate_of_groups, paired_answer_difference
from cogwm.stats.contingency import fisher_exact_p, min_expected_count
from cogwm.stats.means import paired_means
from cogwm.stats.proportions import wilson_interval, wilson_intervals

SETTINGS = Settings(resamples=200, seed=0)


def test_wilson_interval_of_none_right_is_not_zero_wide() -> None:
    low, high = wilson_interval(0, 10)
    assert low == pytest.approx(0.0, abs=1e-12)
    assert high == pytest.approx(1.96**2 / (10 + 1.96**2), abs=1e-3)  # z^2 / (n + z^2)
    assert wilson_intervals([], []) == []
    assert wilson_intervals([5, 10], [10, 10])[0] == pytest.approx(wilson_interval(5, 10))


def test_expected_counts_and_fishers_test() -> None:
    assert min_expected_count([[8, 2], [1, 5]]) == pytest.approx(6 * 7 / 16)  # row 6, column 7
    assert 0 < fisher_exact_p([[8, 2], [1, 5]]) < 0.05


def test_paired_answer_difference_is_first_minus_second() -> None:
    truth = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    groups = ["a", "a", "b", "b", "c", "c"]
    better = [0.9, 0.1, 0.8, 0.3, 0.7, 0.2]
    worse = [0.2, 0.6, 0.4, 0.5, 0.3, 0.9]
    mean = paired_answer_difference("mean", truth, better, worse, groups, SETTINGS)
    assert mean.difference == pytest.approx(sum(better) / 6 - sum(worse) / 6)
    assert mean.n == 6 and mean.n_groups == 3
    auroc = paired_answer_difference("auroc", truth, better, worse, groups, SETTINGS)
    assert auroc.difference == pytest.approx(1.0 - 0.0)
    assert auroc.ci_low is not None and auroc.ci_high is not None


def test_estimates_of_nothing_are_undefined_not_zero() -> None:
    empty = estimate_of_groups(
        [[], []], lambda xs: sum(xs) / len(xs) if xs else None, resamples=50, seed=0
    )
    assert empty.value is None and empty.ci is None and empty.n == 0
    assert paired_means([]) == {}
    means = paired_means([("a", "s1", 1.0), ("a", "s2", 3.0), ("b", "s1", 2.0)], n_resamples=50)
    assert means["a"].mean == 2.0 and means["b"].n == 1 and means["b"].ci is None
