"""Sample sizes: how many paired units (scenarios) a paired t-test needs for a given power."""

from __future__ import annotations

import math

#: Power and two-sided significance level unless a caller asks otherwise.
POWER = 0.8
ALPHA = 0.05


def paired_t_sample_size(
    sd: float, difference: float, *, power: float = POWER, alpha: float = ALPHA
) -> int | None:
    """Pairs a two-sided paired t-test at level ``alpha`` needs to detect ``difference`` at
    ``power``, given the standard deviation ``sd`` of the paired differences.

    Solved by iterating n = ((t_{1-a/2, n-1} + t_{power, n-1}) * sd / difference)^2 from the
    normal approximation; None when the difference is 0 or the spread is undefined, 2 (the
    fewest a t-test takes) when the differences do not vary.
    """
    from scipy import stats

    if not math.isfinite(sd) or sd <= 0 or difference == 0:
        return None if difference == 0 or not math.isfinite(sd) else 2
    ratio = sd / abs(difference)
    z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
    n = max(2.0, (z * ratio) ** 2)
    for _ in range(100):
        t = float(stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(power, n - 1))
        updated = max(2.0, (t * ratio) ** 2)
        if abs(updated - n) < 1e-6:
            break
        n = updated
    return math.ceil(n - 1e-9)
