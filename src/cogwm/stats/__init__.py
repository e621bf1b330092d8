"""Statistics for the benchmarks: thin, validated wrappers over scipy, statsmodels and
scikit-learn, plus Gwet's AC1 and Dawid-Skene, which those libraries lack.

Every number reported with an interval is a :class:`cogwm.stats.estimate.Estimate` or extends
one; the bootstraps over dialogues and scenarios are in :mod:`cogwm.stats.bootstrap` and
:mod:`cogwm.stats.means`, statistics of (human, predicted) pairs in :mod:`cogwm.stats.pairs`,
Wilson intervals in :mod:`cogwm.stats.proportions`, sample sizes in :mod:`cogwm.stats.power`.

Every function checks the shape of its input and raises ``StatsInputError`` (a ``ValueError``
and an ``InputError``) naming what is wrong. Undefined results (a constant series, a kappa with
chance agreement 1) are None, never 0.
"""

from cogwm.stats._validate import StatsInputError
from cogwm.stats.agreement import GwetAC1Result, cohen_kappa, gwet_ac1
from cogwm.stats.contingency import (
    ChiSquareResult,
    McNemarResult,
    chi_square,
    cramers_v,
    mcnemar,
)
from cogwm.stats.correlation import CorrelationResult, pearson, spearman
from cogwm.stats.crowd import DawidSkeneResult, dawid_skene
from cogwm.stats.ranks import MannWhitneyResult, mann_whitney

__all__ = [
    "ChiSquareResult",
    "CorrelationResult",
    "DawidSkeneResult",
    "GwetAC1Result",
    "MannWhitneyResult",
    "McNemarResult",
    "StatsInputError",
    "chi_square",
    "cohen_kappa",
    "cramers_v",
    "dawid_skene",
    "gwet_ac1",
    "mann_whitney",
    "mcnemar",
    "pearson",
    "spearman",
]
