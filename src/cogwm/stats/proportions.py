"""Intervals of proportions: Wilson's score interval (``statsmodels``).

For shares of items counted one by one (a correctness rate over answers, the share of
memorised utterances), where the items are not resampled by dialogue.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cogwm.stats.estimate import CONFIDENCE


def wilson_intervals(
    successes: Sequence[int], totals: Sequence[int], *, confidence: float = CONFIDENCE
) -> list[tuple[float, float]]:
    """Wilson score intervals of ``successes[i] / totals[i]``, computed in one vector call.

    Every total must be at least 1 (a share of nothing has no interval: leave it out).
    """
    from statsmodels.stats.proportion import proportion_confint

    if not totals:
        return []
    lows, highs = proportion_confint(
        np.asarray(successes), np.asarray(totals), alpha=1 - confidence, method="wilson"
    )
    return [(float(low), float(high)) for low, high in zip(lows, highs, strict=True)]


def wilson_interval(
    successes: int, total: int, *, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The Wilson score interval of one share ``successes / total`` (``total`` >= 1)."""
    return wilson_intervals([successes], [total], confidence=confidence)[0]
