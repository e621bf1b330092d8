"""Aggregation: bootstrap means, paired agent comparisons, discriminability, typology,
correlation matrices, GoodOutcome rate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cogwm.errors import InputError
from cogwm.metrics.aggregate import (
    AgentType,
    CTSComponents,
    agent_typology,
    correlation_matrix,
    discriminability,
)
from cogwm.metrics.task import good_outcome_rate
from cogwm.stats.means import (
    mean_estimate,
    optional_mean,
    paired_bootstrap,
    paired_difference,
    scenario_table,
)


def test_mean_and_standard_error_by_hand() -> None:
    # mean 2.5; s = sqrt(((1.5^2 + 0.5^2) * 2) / 3) = sqrt(5/3) = 1.29099; se = s / 2 = 0.645497
    est = mean_estimate([1.0, 2.0, 3.0, 4.0])
    assert est.mean == 2.5
    assert est.se == pytest.approx(math.sqrt(5 / 3) / 2)
    assert est.n == 4
    assert est.ci_low is not None and est.ci_high is not None
    assert 1.0 <= est.ci_low < 2.5 < est.ci_high <= 4.0


def test_bootstrap_is_seeded() -> None:
    values = np.random.default_rng(1).normal(size=50)
    assert mean_estimate(values, seed=5) == mean_estimate(values, seed=5)
    assert mean_estimate(values, seed=5).ci_low != mean_estimate(values, seed=6).ci_low


def test_bootstrap_ci_close_to_normal_theory_on_a_large_sample() -> None:
    values = np.random.default_rng(2).normal(loc=3.0, scale=2.0, size=4000)
    est = mean_estimate(values, n_resamples=3000)
    assert est.se is not None and est.ci_low is not None and est.ci_high is not None
    half_width = (est.ci_high - est.ci_low) / 2
    assert half_width == pytest.approx(1.96 * est.se, rel=0.1)


def test_single_value_has_no_spread() -> None:
    est = mean_estimate([0.3])
    assert (est.mean, est.se, est.ci_low, est.ci_high, est.n) == (0.3, None, None, None, 1)


def test_cluster_bootstrap_resamples_whole_groups() -> None:
    # Two dialogues of three turns: 1,1,1 and 5,5,5. A resample of 2 clusters is aa (mean 1,
    # p = 1/4), ab/ba (3, p = 1/2) or bb (5, p = 1/4): the 95% interval is [1, 5].
    values = [1.0, 1.0, 1.0, 5.0, 5.0, 5.0]
    grouped = mean_estimate(values, groups=["a", "a", "a", "b", "b", "b"])
    assert (grouped.ci_low, grouped.ci_high) == (1.0, 5.0)
    ungrouped = mean_estimate(values)
    assert ungrouped.ci_low is not None and ungrouped.ci_low > 1.0


def test_mean_estimate_validates() -> None:
    with pytest.raises(InputError, match="at least one"):
        mean_estimate([])
    with pytest.raises(InputError, match="index 1"):
        mean_estimate([1.0, math.inf])
    with pytest.raises(InputError, match="groups"):
        mean_estimate([1.0, 2.0], groups=["a"])
    with pytest.raises(InputError, match="confidence"):
        mean_estimate([1.0, 2.0], confidence=1.5)


def test_optional_mean_drops_undefined_values_only() -> None:
    assert optional_mean([None, None]) is None
    est = optional_mean([1.0, None, 3.0])
    assert est is not None and (est.mean, est.n) == (2.0, 2)


def test_group_ids_must_match_the_values_one_to_one() -> None:
    # One group id short: before, optional_mean indexed past the end (IndexError) and one too
    # many was silently ignored; both are input errors now.
    with pytest.raises(InputError, match="expected 3 group ids, got 2"):
        optional_mean([1.0, None, 3.0], groups=["a", "b"])
    with pytest.raises(InputError, match="expected 2 group ids, got 3"):
        optional_mean([1.0, 2.0], groups=["a", "b", "c"])
    with pytest.raises(InputError, match="expected 2 scenario ids, got 3"):
        good_outcome_rate([True, False], groups=["s1", "s2", "s3"])


def test_scenario_table_averages_trials() -> None:
    table = scenario_table([("A", "s1", 1.0), ("A", "s1", 3.0), ("B", "s2", 4.0)])
    assert table.agents == ("A", "B")
    assert table.values[0, 0] == 2.0
    assert math.isnan(table.values[0, 1])


def test_paired_bootstrap_draws_the_same_scenarios_for_every_agent() -> None:
    rng = np.random.default_rng(4)
    base = rng.normal(size=40)
    rows = [("A", f"s{i}", float(v)) for i, v in enumerate(base)]
    rows += [("B", f"s{i}", float(v) + 0.25) for i, v in enumerate(base)]
    comparison = paired_bootstrap(scenario_table(rows), n_resamples=500)
    # Paired: in every replicate B's mean is A's mean + 0.25 exactly.
    np.testing.assert_allclose(comparison.replicates[:, 1] - comparison.replicates[:, 0], 0.25)
    a = comparison.estimates["A"]
    assert a.mean == pytest.approx(base.mean())
    assert a.ci_low is not None and a.ci_high is not None and a.ci_low < a.mean < a.ci_high
    diff = paired_difference(scenario_table(rows), "B", "A")
    assert diff.difference.mean == pytest.approx(0.25)
    assert diff.difference.ci_low == pytest.approx(0.25)
    assert diff.difference.ci_high == pytest.approx(0.25)
    assert diff.n_shared == 40


def test_paired_difference_uses_shared_scenarios_only() -> None:
    rows = [("A", "s1", 1.0), ("A", "s2", 2.0), ("B", "s2", 5.0), ("B", "s3", 9.0)]
    diff = paired_difference(scenario_table(rows), "A", "B")
    assert diff.n_shared == 1
    assert diff.difference.mean == -3.0
    with pytest.raises(InputError, match="share no scenario"):
        paired_difference(scenario_table([("A", "s1", 1.0), ("B", "s2", 1.0)]), "A", "B")
    with pytest.raises(InputError, match="unknown agent"):
        paired_difference(scenario_table(rows), "A", "C")


def test_discriminability_by_hand() -> None:
    # Agent means per dimension (E, B, D, I):
    #   X: E (1 + 3) / 2 = 2, B 0, D 0, I 0
    #   Y: E 0, B 1, D undefined, I 0
    #   Z: E 4, B 2, D 1, I 0
    # Sample std across agents: E std(2, 0, 4) = 2; B std(0, 1, 2) = 1; D std(0, 1) = 0.70711;
    # I 0. Mean of the four: (2 + 1 + 0.70711 + 0) / 4 = 0.92678.
    result = discriminability(
        {
            "X": [(1.0, 0.0, 0.0, 0.0), (3.0, 0.0, 0.0, 0.0)],
            "Y": [(0.0, 1.0, None, 0.0)],
            "Z": [(4.0, 2.0, 1.0, 0.0)],
        }
    )
    assert result.per_dimension["emotion"] == pytest.approx(2.0)
    assert result.per_dimension["belief"] == pytest.approx(1.0)
    assert result.per_dimension["desire"] == pytest.approx(math.sqrt(0.5))
    assert result.per_dimension["intention"] == 0.0
    assert result.value == pytest.approx((3 + math.sqrt(0.5)) / 4)
    assert result.n_agents == 3


def test_discriminability_validates_rows() -> None:
    with pytest.raises(InputError, match="needs 4 values"):
        discriminability({"X": [(1.0, 2.0)]})


def test_agent_typology_by_hand() -> None:
    # z-scores (population std) per component:
    #   AUC  (1, 0, 0, 1):    mean 0.5, std 0.5     -> z +1, -1, -1, +1
    #   Δ    (1, 0, 1, 0.5):  mean 0.625, std 0.4146 -> z +0.90, -1.51, +0.90, -0.30
    #   PSR  (1, 0, 0.5, 0.5): mean 0.5, std 0.3536  -> z +1.41, -1.41, 0, 0
    # With the 0.5 band: A high/high/high, B low/low/low, C AUC low + Δ high,
    # D AUC high + Δ moderate.
    components = {
        "A": CTSComponents(auc=1.0, delta=1.0, psr=1.0),
        "B": CTSComponents(auc=0.0, delta=0.0, psr=0.0),
        "C": CTSComponents(auc=0.0, delta=1.0, psr=0.5),
        "D": CTSComponents(auc=1.0, delta=0.5, psr=0.5),
    }
    assert agent_typology(components) == {
        "A": AgentType.ALL_ROUND,
        "B": AgentType.HOLLOW,
        "C": AgentType.SPRINT,
        "D": AgentType.STEADY,
    }
    # A wider band makes D's Δ (z = -0.30) and C's Δ (z = +0.90) both moderate: C is mixed.
    assert agent_typology(components, band=1.0)["C"] is AgentType.MIXED


def test_agent_typology_needs_three_agents() -> None:
    with pytest.raises(InputError, match="at least 3"):
        agent_typology({"A": CTSComponents(1, 1, 1), "B": CTSComponents(0, 0, 0)})


def test_correlation_matrix() -> None:
    columns = {
        "x": [1.0, 2.0, 3.0, 4.0, None],
        "y": [2.0, 4.0, 6.0, 8.0, 1.0],
        "z": [4.0, 3.0, 2.0, 1.0, 0.0],
        "w": [7.0, 7.0, 7.0, 7.0, 7.0],
    }
    m = correlation_matrix(columns)
    assert m.n == 4  # the row with x undefined is dropped
    assert m.get("x", "y") == pytest.approx(1.0)
    assert m.get("x", "z") == pytest.approx(-1.0)
    assert m.get("x", "w") is None  # constant column: undefined
    assert m.get("y", "y") == pytest.approx(1.0)
    with pytest.raises(InputError, match="same length"):
        correlation_matrix({"a": [1.0], "b": [1.0, 2.0]})


def test_correlation_matrix_against_numpy_on_random_data() -> None:
    data = np.random.default_rng(9).normal(size=(3, 30))
    m = correlation_matrix({"a": data[0].tolist(), "b": data[1].tolist(), "c": data[2].tolist()})
    np.testing.assert_allclose(np.array(m.r, dtype=float), np.corrcoef(data))


def test_good_outcome_rate_counts_failures_apart() -> None:
    result = good_outcome_rate([True, False, None, True])
    assert result.rate is not None
    assert result.rate.mean == pytest.approx(2 / 3)
    assert (result.n_judged, result.n_failed) == (3, 1)
    assert good_outcome_rate([None]).rate is None
