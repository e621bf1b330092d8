"""Task tier: the Composite Trajectory Score and GoodOutcome rates.

``CTS = 0.40 * AUC + 0.30 * PSR + 0.30 * Δ``. Mono is left out of CTS on purpose: it correlates
strongly with PSR (r = 0.77 in the paper), so adding it would count the same signal twice.
GoodOutcome (GO) is an LLM judge's yes/no on the finished dialogue (see ``cogwm.metrics.judge``);
its rate is computed here from the verdicts, with judge failures counted apart, never as "no".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from cogwm.errors import InputError
from cogwm.stats.means import (
    MeanEstimate,
    mean_estimate,
)


class CTSWeights(NamedTuple):
    """Weights of the CTS components."""

    auc: float
    psr: float
    delta: float


#: The CTS weights (docs/architecture.md, "Evaluation tiers").
CTS_WEIGHTS = CTSWeights(auc=0.40, psr=0.30, delta=0.30)


def cts(auc: float | None, psr: float | None, delta: float | None) -> float | None:
    """``0.40 AUC + 0.30 PSR + 0.30 Δ``; None when any component is undefined (N < 2)."""
    if auc is None or psr is None or delta is None:
        return None
    return CTS_WEIGHTS.auc * auc + CTS_WEIGHTS.psr * psr + CTS_WEIGHTS.delta * delta


class GoodOutcomeRate(NamedTuple):
    """Share of dialogues the judge called a good outcome, over the dialogues it could judge."""

    rate: MeanEstimate | None
    n_judged: int
    n_failed: int


def good_outcome_rate(
    verdicts: Iterable[bool | None],
    *,
    groups: Iterable[str] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> GoodOutcomeRate:
    """The GO rate with a bootstrap CI; a None verdict (judge failure) is counted, not scored.

    Args:
        verdicts: One verdict per dialogue: True (good outcome), False, or None (the judge's
            answer could not be parsed).
        groups: Optional scenario id per dialogue, so that the CI resamples scenarios.
        n_resamples: Bootstrap resamples.
        seed: Seed of the bootstrap.

    Raises:
        InputError: ``groups`` does not have one id per verdict.
    """
    verdict_list = list(verdicts)
    group_list = list(groups) if groups is not None else None
    if group_list is not None and len(group_list) != len(verdict_list):
        raise InputError(
            f"groups: expected {len(verdict_list)} scenario ids, got {len(group_list)}"
        )
    judged = [i for i, v in enumerate(verdict_list) if v is not None]
    values = [1.0 if verdict_list[i] else 0.0 for i in judged]
    kept_groups = [group_list[i] for i in judged] if group_list is not None else None
    rate = (
        mean_estimate(values, groups=kept_groups, n_resamples=n_resamples, seed=seed)
        if values
        else None
    )
    return GoodOutcomeRate(
        rate=rate, n_judged=len(values), n_failed=len(verdict_list) - len(values)
    )
