"""Cohen's kappa (against scikit-learn) and Gwet's AC1 (against values published with the
irrCAC examples by Gwet)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from cogwm.stats import StatsInputError, cohen_kappa, gwet_ac1

NA = None

#: ``cac.raw4raters`` from the irrCAC package: 12 subjects, 4 raters, categories 1-5, NA missing.
RAW_4_RATERS = [
    [1, 1, NA, 1],
    [2, 2, 3, 2],
    [3, 3, 3, 3],
    [3, 3, 3, 3],
    [2, 2, 2, 2],
    [1, 2, 3, 4],
    [4, 4, 4, 4],
    [1, 1, 2, 1],
    [2, 2, 2, 2],
    [NA, 5, 5, 5],
    [NA, NA, 1, 1],
    [NA, NA, 3, NA],
]

#: ``distrib.6raters`` from irrCAC: per subject, how many of 6 raters chose each of 5 categories.
DISTRIB_6_RATERS = [
    [0, 0, 0, 6, 0],
    [0, 3, 0, 0, 3],
    [0, 1, 4, 0, 1],
    [0, 0, 0, 0, 6],
    [0, 3, 0, 3, 0],
    [2, 0, 4, 0, 0],
    [0, 0, 4, 0, 2],
    [2, 0, 3, 1, 0],
    [2, 0, 0, 4, 0],
    [0, 0, 0, 0, 6],
    [1, 0, 0, 5, 0],
    [1, 1, 0, 4, 0],
    [0, 3, 3, 0, 0],
    [1, 0, 0, 5, 0],
    [0, 2, 0, 3, 1],
]

#: ``cont3x3abstractors`` from irrCAC: a 3 x 3 table of two raters' classifications.
CONT_3X3 = [[13, 0, 0], [0, 20, 7], [0, 4, 56]]


def test_gwet_ac1_raw_ratings_with_missing_matches_irrcac() -> None:
    # gwet.ac1.raw(cac.raw4raters): pa 0.8181818, pe 0.1903212, AC1 0.77544, 41 ratings.
    result = gwet_ac1(RAW_4_RATERS)
    assert result.pa == pytest.approx(0.8181818, abs=1e-7)
    assert result.pe == pytest.approx(0.1903212, abs=1e-7)
    assert result.coefficient == pytest.approx(0.77544, abs=1e-5)
    assert result.n_ratings == 41
    assert result.n_subjects == 12


def test_gwet_ac1_accepts_nan_in_a_float_array() -> None:
    array = np.array([[np.nan if v is None else v for v in row] for row in RAW_4_RATERS])
    assert gwet_ac1(array).coefficient == pytest.approx(0.77544, abs=1e-5)


def test_gwet_ac1_six_raters_matches_irrcac() -> None:
    # gwet.ac1.dist(distrib.6raters): AC1 0.4448007, pa 0.5511111, pe 0.1914815.
    ratings = [[k for k, count in enumerate(row) for _ in range(count)] for row in DISTRIB_6_RATERS]
    result = gwet_ac1(ratings)
    assert result.coefficient == pytest.approx(0.4448007, abs=1e-7)
    assert result.pa == pytest.approx(0.5511111, abs=1e-7)
    assert result.pe == pytest.approx(0.1914815, abs=1e-7)


def test_gwet_ac1_two_raters_matches_irrcac_and_hand_arithmetic() -> None:
    # gwet.ac1.table(cont3x3abstractors) = 0.8493305. By hand: pa = (13 + 20 + 56) / 100 = 0.89;
    # pi = (13+13, 27+24, 60+63) / 200 = (0.13, 0.255, 0.615);
    # pe = (0.1131 + 0.189975 + 0.236775) / 2 = 0.269925; AC1 = 0.620075 / 0.730075.
    ratings = [
        [i, j]
        for i, row in enumerate(CONT_3X3)
        for j, count in enumerate(row)
        for _ in range(count)
    ]
    result = gwet_ac1(ratings)
    assert result.pe == pytest.approx(0.269925)
    assert result.coefficient == pytest.approx(0.620075 / 0.730075)
    assert result.coefficient == pytest.approx(0.8493305, abs=1e-7)


def test_gwet_ac1_unused_category_changes_chance_agreement() -> None:
    # Declaring a 6th category never used: q - 1 goes from 4 to 5, so pe shrinks by 4/5.
    result = gwet_ac1(RAW_4_RATERS, categories=[1, 2, 3, 4, 5, 6])
    assert result.pe == pytest.approx(0.1903212 * 4 / 5, abs=1e-7)


@pytest.mark.parametrize(
    ("ratings", "message"),
    [
        ([[1, 2], [1]], "row 1 has 1 raters"),
        ([[1], [2]], "at least 2 raters"),
        ([[1, None], [None, 2]], "no subject has ratings from two raters"),
        ([[1, 1], [1, 1]], "at least 2 categories"),
        ([], "no subjects"),
    ],
)
def test_gwet_ac1_rejects_bad_tables(ratings: list[list[int | None]], message: str) -> None:
    with pytest.raises(StatsInputError, match=message):
        gwet_ac1(ratings)


def test_gwet_ac1_rejects_rating_outside_categories() -> None:
    with pytest.raises(StatsInputError, match="not one of the categories"):
        gwet_ac1([[1, 2], [1, 3]], categories=[1, 2])


def test_cohen_kappa_by_hand_and_against_sklearn() -> None:
    a = ["x", "y", "x"]
    b = ["x", "y", "y"]
    # po = 2/3; pe = (2/3)(1/3) + (1/3)(2/3) = 4/9; kappa = (2/3 - 4/9) / (1 - 4/9) = 0.4
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    rng = np.random.default_rng(3)
    r1 = rng.integers(1, 4, size=60).tolist()
    r2 = [v if rng.random() < 0.7 else int(rng.integers(1, 4)) for v in r1]
    for weights in (None, "linear", "quadratic"):
        expected = cohen_kappa_score(r1, r2, weights=weights)
        assert cohen_kappa(r1, r2, weights=weights) == pytest.approx(expected)  # type: ignore[arg-type]


def test_cohen_kappa_undefined_when_one_label_throughout() -> None:
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None


def test_cohen_kappa_validates() -> None:
    with pytest.raises(StatsInputError, match="same length"):
        cohen_kappa(["a"], ["a", "b"])
    with pytest.raises(StatsInputError, match="index 1 is missing"):
        cohen_kappa(["a", None], ["a", "b"])
    with pytest.raises(StatsInputError, match="at least one"):
        cohen_kappa([], [])
    # Total disagreement: po = 0, pe = 1/2 * 1/2 * 2 = 1/2 -> kappa = (0 - 1/2) / (1 - 1/2) = -1
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
