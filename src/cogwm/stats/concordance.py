"""Whether two measures agree: Kendall's tau-b between the rankings they give a set of units,
and the 2x2 table of two yes/no readings of the same items, both with cluster-bootstrap intervals.

The arena uses them to show that a trajectory measure and a terminal verdict are distinct: agents
may rank differently by mean CTS and by GoodOutcome rate (tau-b across agents), and single
conversations may improve without a good outcome or end well without improving (the discordant
cells of the 2x2). Both intervals resample whole clusters (scenarios with all their
conversations), never single items. An undefined tau (fewer than three units, a constant
ranking) is None, never 0.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from cogwm.errors import InputError
from cogwm.stats.bootstrap import IntArray, Settings, cluster_estimate, cluster_indices
from cogwm.stats.estimate import Estimate

#: Fewest units a ranking correlation is reported for: with two, tau is only ever +1 or -1.
MIN_UNITS = 3


def kendall_tau_b(first: npt.ArrayLike, second: npt.ArrayLike) -> float | None:
    """Kendall's tau-b between two scorings of the same units (``scipy.stats.kendalltau``; ties
    corrected).

    Returns:
        tau-b in [-1, 1]; None with fewer than :data:`MIN_UNITS` units or when either scoring is
        constant (no ranking to compare).
    """
    from scipy.stats import kendalltau

    a = np.asarray(first, dtype=np.float64)
    b = np.asarray(second, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError(f"kendall_tau_b: expected two 1-d arrays of one length, got {a.shape}")
    if a.size < MIN_UNITS or np.all(a == a[0]) or np.all(b == b[0]):
        return None
    tau = float(kendalltau(a, b).statistic)
    return None if np.isnan(tau) else tau


class TauEstimate(Estimate):
    """Kendall's tau-b between two per-unit means, with an interval over clusters.

    ``n`` counts the units ranked (those with both means defined), ``n_clusters`` the clusters
    resampled, ``units_left_out`` the units with only one of the two means.
    """

    n_clusters: int
    units_left_out: int = 0


@dataclass
class _UnitItems:
    """Items indexed by unit, with each measure's value and whether it is defined."""

    units: IntArray
    unit_count: int
    first: npt.NDArray[np.float64]
    first_defined: npt.NDArray[np.float64]
    second: npt.NDArray[np.float64]
    second_defined: npt.NDArray[np.float64]

    def means(self, idx: IntArray) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Each unit's two means over items ``idx`` (NaN where a unit has no defined value)."""
        found = []
        for values, defined in ((self.first, self.first_defined),
                                (self.second, self.second_defined)):  # fmt: skip
            units = self.units[idx]
            sums = np.bincount(units, weights=values[idx], minlength=self.unit_count)
            counts = np.bincount(units, weights=defined[idx], minlength=self.unit_count)
            with np.errstate(invalid="ignore", divide="ignore"):
                found.append(np.where(counts > 0, sums / counts, np.nan))
        return found[0], found[1]

    def tau(self, idx: IntArray) -> float | None:
        """tau-b of the units' two means over items ``idx``, units with both defined."""
        first, second = self.means(idx)
        both = ~np.isnan(first) & ~np.isnan(second)
        return kendall_tau_b(first[both], second[both])

    def cluster_sums(self, clusters: list[IntArray]) -> list[npt.NDArray[np.float64]]:
        """Per cluster and unit: the first measure's sum and count, then the second's."""
        cluster_of = np.empty(len(self.units), dtype=np.intp)
        for c, members in enumerate(clusters):
            cluster_of[members] = c
        found = []
        for values in (self.first, self.first_defined, self.second, self.second_defined):
            table = np.zeros((len(clusters), self.unit_count))
            np.add.at(table, (cluster_of, self.units), values)
            found.append(table)
        return found


def _unit_items(
    units: Sequence[Hashable], first: Sequence[float | None], second: Sequence[float | None]
) -> _UnitItems:
    if not len(units) == len(first) == len(second):
        raise InputError("tau_of_unit_means: units, first and second differ in length")
    index: dict[Hashable, int] = {}
    ids = np.fromiter((index.setdefault(u, len(index)) for u in units), dtype=np.intp)

    def column(values: Sequence[float | None]) -> tuple[npt.NDArray[np.float64], ...]:
        defined = np.array([v is not None for v in values], dtype=np.float64)
        return np.array([0.0 if v is None else v for v in values]), defined

    a, a_defined = column(first)
    b, b_defined = column(second)
    return _UnitItems(ids, len(index), a, a_defined, b, b_defined)


def _resampled_means(
    items: _UnitItems, clusters: list[IntArray], settings: Settings
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each resample's per-unit means of both measures (resamples x units; NaN: undefined),
    drawing clusters as :func:`cogwm.stats.bootstrap.cluster_bootstrap` draws them."""
    rng = np.random.default_rng(settings.seed)
    picks = rng.integers(0, len(clusters), size=(settings.resamples, len(clusters)))
    drawn = np.zeros((settings.resamples, len(clusters)))
    np.add.at(drawn, (np.arange(settings.resamples)[:, None], picks), 1.0)
    first_sum, first_count, second_sum, second_count = items.cluster_sums(clusters)
    with np.errstate(invalid="ignore", divide="ignore"):
        first = (drawn @ first_sum) / (drawn @ first_count)
        second = (drawn @ second_sum) / (drawn @ second_count)
    return first, second


def _batched_taus(
    first: npt.NDArray[np.float64], second: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """tau-b of each row pair (NaN: undefined), from one scipy call over the distinct pairs of
    rankings: tau-b depends on the rankings only, and a few units repeat them often."""
    from scipy.stats import kendalltau, rankdata

    ranks = np.concatenate(
        [rankdata(first, method="dense", axis=1), rankdata(second, method="dense", axis=1)],
        axis=1,
    )
    distinct, which = np.unique(ranks, axis=0, return_inverse=True)
    units = first.shape[1]
    taus = np.asarray(kendalltau(distinct[:, :units], distinct[:, units:], axis=1).statistic)
    return np.asarray(taus[which.ravel()], dtype=np.float64)


def _tau_interval(
    items: _UnitItems, groups: Sequence[Hashable], settings: Settings
) -> tuple[float | None, float | None]:
    """The percentile interval of :meth:`_UnitItems.tau` over resamples of whole clusters:
    what ``cluster_bootstrap(items.tau, groups, settings)`` gives, every resample at once."""
    clusters = cluster_indices(groups)
    if len(clusters) < 2:
        return None, None
    first, second = _resampled_means(items, clusters, settings)
    # A unit never ranked in any resample (no value of one measure at all) is left out of all.
    ever = ~(np.isnan(first).all(axis=0) | np.isnan(second).all(axis=0))
    first, second = first[:, ever], second[:, ever]
    complete = ~(np.isnan(first).any(axis=1) | np.isnan(second).any(axis=1))
    values = np.full(settings.resamples, np.nan)
    if complete.any() and first.shape[1] >= MIN_UNITS:
        values[complete] = _batched_taus(first[complete], second[complete])
    for r in np.flatnonzero(~complete):  # a unit without a defined value in this resample
        both = ~np.isnan(first[r]) & ~np.isnan(second[r])
        tau = kendall_tau_b(first[r, both], second[r, both])
        values[r] = np.nan if tau is None else tau
    if np.isnan(values).all():
        return None, None
    alpha = 1 - settings.confidence
    low, high = np.nanquantile(values, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def tau_of_unit_means(
    units: Sequence[Hashable],
    first: Sequence[float | None],
    second: Sequence[float | None],
    groups: Sequence[Hashable],
    settings: Settings,
) -> TauEstimate:
    """Kendall's tau-b between the units' means of two measures, with a cluster-bootstrap
    interval.

    Each item belongs to one unit (an agent) and one cluster (a scenario) and carries a value of
    each measure, or None where it has none (a conversation the judge gave no verdict). Each
    unit's mean of a measure is over its items where that measure is defined; units with both
    means are ranked. A resample draws whole clusters and recomputes the means and tau.

    Args:
        units: The unit of each item.
        first: The first measure per item (None: undefined on this item).
        second: The second measure per item (None: undefined on this item).
        groups: The cluster of each item.
        settings: Resamples, seed and confidence.

    Returns:
        The estimate; ``value`` None with fewer than three units ranked or a constant ranking.

    Raises:
        InputError: The four sequences differ in length.
    """
    if len(groups) != len(units):
        raise InputError("tau_of_unit_means: units and groups differ in length")
    items = _unit_items(units, first, second)
    every = np.arange(len(units), dtype=np.intp)
    a, b = items.means(every)
    ranked = int(np.sum(~np.isnan(a) & ~np.isnan(b)))
    value = items.tau(every) if len(units) else None
    low, high = _tau_interval(items, groups, settings) if value is not None else (None, None)
    return TauEstimate(
        value=value,
        ci_low=low,
        ci_high=high,
        n=ranked,
        n_clusters=len(set(groups)),
        units_left_out=items.unit_count - ranked,
        confidence=settings.confidence,
    )


class TwoByTwo(NamedTuple):
    """Counts of two yes/no readings of the same items, and the share where they disagree.

    ``discordant`` is the share of items with one reading yes and the other no, with its
    cluster-bootstrap interval (``value`` None without items).
    """

    both: int  # first yes, second yes
    first_only: int  # first yes, second no
    second_only: int  # first no, second yes
    neither: int  # first no, second no
    discordant: Estimate

    @property
    def n(self) -> int:
        """Items in the table."""
        return self.both + self.first_only + self.second_only + self.neither


def two_by_two(
    first: Sequence[bool], second: Sequence[bool], groups: Sequence[Hashable], settings: Settings
) -> TwoByTwo:
    """The 2x2 table of ``first`` against ``second`` and the discordant share with its
    interval over ``groups`` (whole clusters resampled).

    Raises:
        InputError: The sequences differ in length.
    """
    if not len(first) == len(second) == len(groups):
        raise InputError("two_by_two: first, second and groups differ in length")
    a = np.asarray(first, dtype=bool)
    b = np.asarray(second, dtype=bool)
    disagree = (a != b).astype(np.float64)

    def share(idx: IntArray) -> float | None:
        return float(disagree[idx].mean()) if idx.size else None

    return TwoByTwo(
        both=int(np.sum(a & b)),
        first_only=int(np.sum(a & ~b)),
        second_only=int(np.sum(~a & b)),
        neither=int(np.sum(~a & ~b)),
        discordant=cluster_estimate(share, groups, settings),
    )
