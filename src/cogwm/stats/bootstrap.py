"""Cluster bootstrap: intervals that resample whole dialogues, and paired differences.

Items of one dialogue are not independent (both speakers of a DailyDialog conversation, many
client turns of one AnnoMI session), so every interval here draws whole clusters with
replacement and recomputes the statistic on the items of the drawn clusters. A paired
difference draws the clusters once per resample and scores both sides on the same items, so the
interval of ``a - b`` is not the naive combination of two independent intervals.

:func:`cluster_jackknife` leaves one cluster out at a time instead, for corpus ratios that
resampling with replacement biases. :func:`bootstrap_ci_of_groups` is the same cluster bootstrap
for statistics of item lists rather than item indices (the annotation quality sheet's figures).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from cogwm.stats.estimate import Estimate

IntArray = npt.NDArray[np.intp]
#: Maps an array of item indices (with repeats) to a value, or None where it is undefined.
Statistic = Callable[[IntArray], float | None]
#: Maps a list of items (with repeats) to a value, or None where it is undefined.
ItemsStatistic = Callable[[list[Any]], float | None]


@dataclass(frozen=True)
class Settings:
    """Bootstrap settings: resamples, seed and confidence of the percentile interval."""

    resamples: int
    seed: int
    confidence: float = 0.95


class PairedDifference(Estimate):
    """``a - b`` on the same items, with its paired cluster-bootstrap interval.

    ``value`` (also ``difference``) is None where either statistic is undefined on all items;
    ``ci_low`` and ``ci_high`` are None with fewer than two clusters or no defined resample.
    ``n`` counts the items, ``n_groups`` the clusters.
    """

    n_groups: int

    @property
    def difference(self) -> float | None:
        """``a - b`` (``value``); None: undefined."""
        return self.value


def cluster_indices(groups: Sequence[Hashable]) -> list[IntArray]:
    """The item indices of each cluster, in order of first appearance."""
    members: dict[Hashable, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    return [np.asarray(m, dtype=np.intp) for m in members.values()]


def cluster_bootstrap(
    statistic: Statistic, groups: Sequence[Hashable], settings: Settings
) -> tuple[float | None, float | None]:
    """Percentile interval of ``statistic`` over resamples of whole clusters.

    Args:
        statistic: Maps an array of item indices (with repeats) to a value or None (undefined).
        groups: Cluster id per item.
        settings: Resamples, seed and confidence.

    Returns:
        ``(low, high)``; ``(None, None)`` with fewer than two clusters or when the statistic is
        undefined on every resample (undefined resamples are left out of the percentiles).
    """
    clusters = cluster_indices(groups)
    if len(clusters) < 2:
        return None, None
    rng = np.random.default_rng(settings.seed)
    values = np.full(settings.resamples, np.nan)
    for r in range(settings.resamples):
        picks = rng.integers(0, len(clusters), size=len(clusters))
        value = statistic(np.concatenate([clusters[p] for p in picks]))
        if value is not None:
            values[r] = value
    if np.isnan(values).all():
        return None, None
    alpha = 1 - settings.confidence
    low, high = np.nanquantile(values, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def cluster_bootstrap_mean(
    values: npt.ArrayLike, groups: Sequence[Hashable], settings: Settings
) -> tuple[float | None, float | None]:
    """:func:`cluster_bootstrap` of the mean of ``values``, all resamples at once.

    The same clusters are drawn as :func:`cluster_bootstrap` draws with the same settings, so
    the interval is the same; it is computed from per-cluster sums and counts, which is much
    faster when it is needed for many groups of items (e.g. one interval per agent).

    Args:
        values: One finite value per item.
        groups: Cluster id per item.
        settings: Resamples, seed and confidence.

    Returns:
        ``(low, high)``; ``(None, None)`` with fewer than two clusters.
    """
    items = np.asarray(values, dtype=np.float64)
    clusters = cluster_indices(groups)
    if len(clusters) < 2:
        return None, None
    sums = np.array([items[c].sum() for c in clusters])
    counts = np.array([c.size for c in clusters], dtype=np.float64)
    rng = np.random.default_rng(settings.seed)
    picks = rng.integers(0, len(clusters), size=(settings.resamples, len(clusters)))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    alpha = 1 - settings.confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def paired_difference(
    first: Statistic, second: Statistic, groups: Sequence[Hashable], settings: Settings
) -> PairedDifference:
    """``first - second`` on the same items, with a paired cluster-bootstrap interval.

    Each resample draws clusters once and evaluates both statistics on the same indices.

    Args:
        first: The statistic of one side (e.g. the simulator's AUROC on the given indices).
        second: The other side's (e.g. a baseline's) on the same indices.
        groups: Cluster id per item (both statistics index the same items).
        settings: Resamples, seed and confidence.
    """

    def difference(idx: IntArray) -> float | None:
        a, b = first(idx), second(idx)
        return None if a is None or b is None else a - b

    n_groups = len(set(groups))
    value = difference(np.arange(len(groups), dtype=np.intp)) if len(groups) else None
    low, high = cluster_bootstrap(difference, groups, settings) if value is not None else (
        None, None
    )  # fmt: skip
    return PairedDifference(
        value=value,
        ci_low=low,
        ci_high=high,
        n=len(groups),
        n_groups=n_groups,
        confidence=settings.confidence,
    )


FloatArray = npt.NDArray[np.float64]


def mean_of_answers(_: FloatArray, answers: FloatArray) -> float | None:
    """The mean of the answers (the truth is not needed: each answer is already a score, 1
    right and 0 wrong for an accuracy); None without answers."""
    return float(answers.mean()) if answers.size else None


def auroc_of_answers(truth: FloatArray, answers: FloatArray) -> float | None:
    """The AUROC of the answers for the truth classes (1 positive, 0 negative); None with one
    class only."""
    return auroc_or_none(truth, answers)


#: How answers against their truth make a figure's value, by name.
ANSWER_SCORES: dict[str, Callable[[FloatArray, FloatArray], float | None]] = {
    "mean": mean_of_answers,
    "auroc": auroc_of_answers,
}


def paired_answer_difference(
    score: str,
    truth: Sequence[float],
    first: Sequence[float],
    second: Sequence[float],
    groups: Sequence[Hashable],
    settings: Settings,
) -> PairedDifference:
    """``first - second`` of the same score (``mean`` or ``auroc``, see :data:`ANSWER_SCORES`)
    of two sets of answers to the same items, with a paired cluster-bootstrap interval.

    Raises:
        KeyError: An unknown score name.
    """
    scored = ANSWER_SCORES[score]
    gold = np.asarray(truth, dtype=np.float64)

    def side(answers: Sequence[float]) -> Statistic:
        array = np.asarray(answers, dtype=np.float64)
        return lambda idx: scored(gold[idx], array[idx])

    return paired_difference(side(first), side(second), groups, settings)


def auroc_or_none(positive: npt.ArrayLike, scores: npt.ArrayLike) -> float | None:
    """The area under the ROC curve of ``scores`` for telling the ``positive`` items from the
    rest; None when one class is missing (the AUROC is undefined there, never 0.5 or 0)."""
    from sklearn.metrics import roc_auc_score

    truth = np.asarray(positive, dtype=bool)
    if truth.size == 0 or truth.all() or not truth.any():
        return None
    return float(roc_auc_score(truth, np.asarray(scores, dtype=np.float64)))


def auroc_interval(
    positive: Sequence[bool],
    scores: Sequence[float | None],
    groups: Sequence[Hashable],
    settings: Settings,
) -> tuple[float | None, float | None, float | None]:
    """AUROC of ``scores`` for the positive items (unscored ones left out), with a bootstrap
    interval over ``groups``; ``(None, None, None)`` when one class is missing.

    Returns:
        ``(value, low, high)``; the interval is ``(None, None)`` with fewer than two clusters.
    """
    kept = [i for i, s in enumerate(scores) if s is not None]
    y = np.asarray([positive[i] for i in kept], dtype=bool)
    s = np.asarray([scores[i] for i in kept], dtype=np.float64)

    def statistic(idx: IntArray) -> float | None:
        return auroc_or_none(y[idx], s[idx])

    value = statistic(np.arange(len(kept), dtype=np.intp))
    if value is None:
        return None, None, None
    low, high = cluster_bootstrap(statistic, [groups[i] for i in kept], settings)
    return value, low, high


def auroc_value(positive: Sequence[bool], scores: Sequence[float | None]) -> float | None:
    """AUROC of ``scores`` for the positive items (unscored ones left out), without an
    interval; None when one class is missing."""
    kept = [(positive[i], s) for i, s in enumerate(scores) if s is not None]
    return auroc_or_none([p for p, _ in kept], [s for _, s in kept])


def cluster_jackknife(
    statistic: Statistic, groups: Sequence[Hashable], settings: Settings
) -> tuple[float | None, float | None]:
    """Normal interval from the delete-one-cluster jackknife's standard error.

    For corpus ratios such as Distinct-1, which resampling with replacement biases: a dialogue
    drawn twice repeats its words, which are no new types, so nearly every bootstrap replicate
    falls below the estimate (on 120 ESConv predictions, 0.167 with a percentile interval of
    [0.121, 0.147]). Leaving one dialogue out at a time duplicates nothing.

    Returns:
        ``(low, high)``; ``(None, None)`` with fewer than two clusters or when the statistic is
        undefined on the whole set or on any leave-one-out set.
    """
    from scipy.stats import norm

    clusters = cluster_indices(groups)
    estimate = statistic(np.arange(len(groups), dtype=np.intp))
    if len(clusters) < 2 or estimate is None:
        return None, None
    left_out = []
    for drop in range(len(clusters)):
        value = statistic(np.concatenate([c for i, c in enumerate(clusters) if i != drop]))
        if value is None:
            return None, None
        left_out.append(value)
    values = np.asarray(left_out)
    g = len(values)
    stderr = float(np.sqrt((g - 1) / g * np.sum((values - values.mean()) ** 2)))
    z = float(norm.ppf(1 - (1 - settings.confidence) / 2))
    return estimate - z * stderr, estimate + z * stderr


def bootstrap_ci_of_groups(
    groups: Sequence[Sequence[Any]], statistic: ItemsStatistic, *, resamples: int, seed: int
) -> tuple[float, float] | None:
    """95% percentile CI of ``statistic`` over items, resampling whole groups (dialogues).

    The cluster bootstrap of :func:`cluster_bootstrap` for statistics of item lists. It differs
    in what it calls undefined, so the two give different intervals on the same data: a
    non-finite value counts as undefined too, and the interval is None when fewer than half of
    the resamples are defined (:func:`cluster_bootstrap` needs one).

    Args:
        groups: The items of each group.
        statistic: Maps a list of items (with repeats) to a value or None (undefined).
        resamples: Bootstrap resamples.
        seed: Seed of the resampling.

    Returns:
        ``(low, high)``, or None with one group only or too few defined resamples.
    """
    if len(groups) < 2:
        return None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        picks = rng.integers(0, len(groups), len(groups))
        items = [item for i in picks for item in groups[i]]
        value = statistic(items)
        if value is not None and math.isfinite(value):
            values.append(value)
    if len(values) < resamples // 2:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def estimate_of_groups(
    groups: Sequence[Sequence[Any]], statistic: ItemsStatistic, *, resamples: int, seed: int
) -> Estimate:
    """``statistic`` over all items of ``groups`` with the interval of
    :func:`bootstrap_ci_of_groups` (dialogues resampled); value None without items."""
    items = [item for group in groups for item in group]
    ci = bootstrap_ci_of_groups(groups, statistic, resamples=resamples, seed=seed)
    return Estimate(
        value=statistic(items) if items else None,
        ci_low=None if ci is None else ci[0],
        ci_high=None if ci is None else ci[1],
        n=len(items),
    )


def cluster_estimate(
    statistic: Statistic, groups: Sequence[Hashable], settings: Settings
) -> Estimate:
    """``statistic`` on all items with its :func:`cluster_bootstrap` interval (a statistic that
    is not a mean of per-item values, e.g. a macro-F1, recomputed on every resample)."""
    low, high = cluster_bootstrap(statistic, groups, settings)
    return Estimate(
        value=statistic(np.arange(len(groups), dtype=np.intp)),
        ci_low=low,
        ci_high=high,
        n=len(groups),
        confidence=settings.confidence,
    )


def jackknife_estimate(
    statistic: Statistic, groups: Sequence[Hashable], settings: Settings
) -> Estimate:
    """``statistic`` on all items with its :func:`cluster_jackknife` interval (corpus ratios)."""
    low, high = cluster_jackknife(statistic, groups, settings)
    return Estimate(
        value=statistic(np.arange(len(groups), dtype=np.intp)),
        ci_low=low,
        ci_high=high,
        n=len(groups),
        confidence=settings.confidence,
    )


def auroc_estimate(
    positive: Sequence[bool],
    scores: Sequence[float | None],
    groups: Sequence[Hashable],
    settings: Settings,
) -> Estimate:
    """:func:`auroc_interval` as an estimate; ``n`` counts the scored items (the others cannot
    be ranked and are left out)."""
    value, low, high = auroc_interval(positive, scores, groups, settings)
    n = sum(1 for s in scores if s is not None)
    return Estimate(value=value, ci_low=low, ci_high=high, n=n, confidence=settings.confidence)
