"""Statistics of (human, predicted) pairs: agreement, accuracy, AUROC, rank correlation and F1.

Each takes the pairs of one set of items (with repeats, when a bootstrap resample draws a
dialogue twice) and returns None where the statistic is undefined on them, never 0.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy.typing as npt

from cogwm.stats.agreement import cohen_kappa
from cogwm.stats.bootstrap import auroc_or_none
from cogwm.stats.correlation import spearman


def kappa_of(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa of (human, predicted) pairs; None when undefined."""
    if not pairs:
        return None
    return cohen_kappa([h for h, _ in pairs], [p for _, p in pairs])


def accuracy_of(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Share of pairs that agree; None without pairs."""
    return sum(h == p for h, p in pairs) / len(pairs) if pairs else None


def auroc_of(pairs: Sequence[tuple[bool, float]]) -> float | None:
    """AUROC of (is positive, predicted score) pairs; None with one class only."""
    return auroc_or_none([y for y, _ in pairs], [s for _, s in pairs])


def spearman_of(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Spearman's rho of pairs; None when undefined (fewer than 3, constant)."""
    if len(pairs) < 3:
        return None
    return spearman([a for a, _ in pairs], [b for _, b in pairs]).r


def f1_of(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """F1 of (human says yes, predicted yes) pairs; None without positives on either side."""
    tp = sum(h and p for h, p in pairs)
    fp = sum(p and not h for h, p in pairs)
    fn = sum(h and not p for h, p in pairs)
    if tp + fp + fn == 0:
        return None
    return 2 * tp / (2 * tp + fp + fn)


def macro_f1(gold: npt.ArrayLike, predicted: npt.ArrayLike, labels: Sequence[Any]) -> float:
    """Macro-F1 over ``labels`` (scikit-learn's ``f1_score``; a class never predicted nor in the
    gold scores 0). A predicted label outside ``labels`` is a miss for its item."""
    from sklearn.metrics import f1_score

    return float(f1_score(gold, predicted, labels=list(labels), average="macro", zero_division=0))
