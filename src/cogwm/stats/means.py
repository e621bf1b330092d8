"""Means with standard errors and percentile-bootstrap CIs, and agents compared on shared
scenarios.

When values come in clusters (the turns of one dialogue, the trials of one scenario) the
bootstrap resamples whole clusters. Agents are compared on the same scenarios, so their bootstrap
replicates draw the *same* scenarios (paired), and a difference between two agents is the mean of
their per-scenario differences.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple, Self

import numpy as np
import numpy.typing as npt

from cogwm.errors import InputError
from cogwm.stats.estimate import Estimate

FloatArray = npt.NDArray[np.float64]

#: Resamples per bootstrap unless a caller asks otherwise.
DEFAULT_RESAMPLES = 2000
#: Resamples drawn per block, so that memory stays near 16 MB however many values there are.
_BLOCK_CELLS = 2_000_000


class MeanEstimate(Estimate):
    """A mean with its standard error and a bootstrap confidence interval.

    ``se``, ``ci_low`` and ``ci_high`` are None with fewer than two values (or two clusters).
    Written as ``mean``, ``se``, ``ci_low``, ``ci_high``, ``n``, ``confidence``.
    """

    json_fields = ("value", "se", "ci_low", "ci_high", "n", "confidence")
    json_names: ClassVar[Mapping[str, str]] = {"value": "mean"}

    value: float

    @property
    def mean(self) -> float:
        """The mean (``value``)."""
        return self.value

    def _replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (by field name or JSON key, ``mean``), as ``MeanEstimate``
        offered when it was a named tuple."""
        return self.model_copy(update=changes)


def _mean(
    mean: float, se: float | None, low: float | None, high: float | None, n: int, confidence: float
) -> MeanEstimate:
    return MeanEstimate(value=mean, se=se, ci_low=low, ci_high=high, n=n, confidence=confidence)


def _finite(values: Sequence[float] | FloatArray, name: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise InputError(f"{name}: expected a 1-d sequence of numbers, got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise InputError(f"{name}: value at index {int(bad[0])} is not finite")
    return array


def _check_bootstrap(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise InputError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise InputError(f"confidence must lie in (0, 1), got {confidence}")


def _percentiles(replicates: FloatArray, confidence: float) -> tuple[float, float]:
    alpha = 1 - confidence
    low, high = np.nanquantile(replicates, [alpha / 2, 1 - alpha / 2], axis=0)
    return float(low), float(high)


def _resample_means(
    sums: FloatArray, counts: FloatArray, n_resamples: int, rng: np.random.Generator
) -> FloatArray:
    """Means of ``n_resamples`` resamples of the clusters (sum and count per cluster)."""
    units = sums.size
    block = max(1, _BLOCK_CELLS // units)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, block):
        stop = min(n_resamples, start + block)
        idx = rng.integers(0, units, size=(stop - start, units))
        out[start:stop] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    return out


def _clusters(values: FloatArray, groups: Sequence[Hashable]) -> tuple[FloatArray, FloatArray]:
    if len(groups) != values.size:
        raise InputError(f"groups: expected {values.size} group ids, got {len(groups)}")
    index: dict[Hashable, int] = {}
    ids = np.fromiter((index.setdefault(g, len(index)) for g in groups), dtype=np.intp)
    sums = np.bincount(ids, weights=values, minlength=len(index)).astype(np.float64)
    counts = np.bincount(ids, minlength=len(index)).astype(np.float64)
    return sums, counts


def mean_estimate(
    values: Sequence[float] | FloatArray,
    *,
    groups: Sequence[Hashable] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> MeanEstimate:
    """Mean, standard error and percentile-bootstrap CI of ``values``.

    Args:
        values: Finite numbers (at least one).
        groups: Optional cluster id per value (dialogue, scenario). The bootstrap then resamples
            clusters, and ``se`` is the standard deviation of the cluster-bootstrap means;
            without groups ``se`` is the usual s / sqrt(n) (s with n - 1 degrees of freedom).
        n_resamples: Bootstrap resamples.
        confidence: Coverage of the interval.
        seed: Seed of the resampling (the same seed gives the same interval).

    Raises:
        InputError: No values, a non-finite value, or a groups list of the wrong length.
    """
    _check_bootstrap(n_resamples, confidence)
    array = _finite(values, "values")
    if array.size == 0:
        raise InputError("values: a mean needs at least one value")
    mean = float(array.mean())
    if groups is None:
        sums, counts = array, np.ones_like(array)
    else:
        sums, counts = _clusters(array, groups)
    if sums.size < 2:
        return _mean(mean, None, None, None, int(array.size), confidence)
    replicates = _resample_means(sums, counts, n_resamples, np.random.default_rng(seed))
    low, high = _percentiles(replicates, confidence)
    se = (
        float(array.std(ddof=1) / math.sqrt(array.size))
        if groups is None
        else float(replicates.std(ddof=1))
        if n_resamples > 1
        else None
    )
    return _mean(mean, se, low, high, int(array.size), confidence)


def optional_mean(
    values: Iterable[float | None],
    *,
    groups: Sequence[Hashable] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> MeanEstimate | None:
    """``mean_estimate`` over the defined values (None dropped, with their groups); None if none.

    Raises:
        InputError: A groups list of the wrong length, or a non-finite value.
    """
    value_list = list(values)
    if groups is not None and len(groups) != len(value_list):
        raise InputError(f"groups: expected {len(value_list)} group ids, got {len(groups)}")
    pairs = [
        (v, groups[i] if groups is not None else None)
        for i, v in enumerate(value_list)
        if v is not None
    ]
    if not pairs:
        return None
    kept_groups = [g for _, g in pairs] if groups is not None else None
    return mean_estimate(
        [v for v, _ in pairs],
        groups=kept_groups,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )


# --- agents compared on shared scenarios ----------------------------------------------------


class ScenarioTable(NamedTuple):
    """Agents x scenarios matrix of per-scenario means (NaN where an agent lacks a scenario)."""

    agents: tuple[str, ...]
    scenarios: tuple[str, ...]
    values: FloatArray


def scenario_table(rows: Iterable[tuple[str, str, float]]) -> ScenarioTable:
    """Build the agent x scenario table from ``(agent, scenario, value)`` rows.

    Several rows for one (agent, scenario) pair (trials) are averaged, so every scenario weighs
    the same in an agent's mean.

    Raises:
        InputError: No rows, or a non-finite value (name the agent and scenario).
    """
    sums: dict[tuple[str, str], float] = {}
    counts: dict[tuple[str, str], int] = {}
    agents: dict[str, None] = {}
    scenarios: dict[str, None] = {}
    for agent, scenario, value in rows:
        if not math.isfinite(value):
            raise InputError(f"agent {agent!r}, scenario {scenario!r}: value {value} is not finite")
        agents.setdefault(agent)
        scenarios.setdefault(scenario)
        sums[(agent, scenario)] = sums.get((agent, scenario), 0.0) + value
        counts[(agent, scenario)] = counts.get((agent, scenario), 0) + 1
    if not sums:
        raise InputError("no (agent, scenario, value) rows")
    agent_ix = {a: i for i, a in enumerate(agents)}
    scenario_ix = {s: j for j, s in enumerate(scenarios)}
    values = np.full((len(agents), len(scenarios)), np.nan)
    for (agent, scenario), total in sums.items():
        values[agent_ix[agent], scenario_ix[scenario]] = total / counts[(agent, scenario)]
    return ScenarioTable(tuple(agents), tuple(scenarios), values)


class AgentComparison(NamedTuple):
    """Per-agent means whose bootstrap replicates drew the same scenarios for every agent."""

    agents: tuple[str, ...]
    estimates: dict[str, MeanEstimate]
    replicates: FloatArray
    """Bootstrap means, shape (resamples, agents): use them for joint statements (rankings)."""


def paired_bootstrap(
    table: ScenarioTable,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> AgentComparison:
    """Bootstrap every agent's mean over scenarios with one shared draw of scenarios.

    Each replicate draws scenarios with replacement from all scenarios in the table; every
    agent's replicate mean is taken over the drawn scenarios it has. ``se`` is the standard
    deviation of an agent's replicates.
    """
    _check_bootstrap(n_resamples, confidence)
    present = ~np.isnan(table.values)
    filled = np.where(present, table.values, 0.0)
    n_scen = len(table.scenarios)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n_scen, np.full(n_scen, 1.0 / n_scen), size=n_resamples).astype(
        np.float64
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = (draws @ filled.T) / (draws @ present.T.astype(np.float64))
    estimates: dict[str, MeanEstimate] = {}
    for a, agent in enumerate(table.agents):
        own = table.values[a, present[a]]
        if own.size < 2:
            estimates[agent] = _mean(float(own.mean()), None, None, None, 1, confidence)
            continue
        low, high = _percentiles(replicates[:, a], confidence)
        se = float(np.nanstd(replicates[:, a], ddof=1)) if n_resamples > 1 else None
        estimates[agent] = _mean(float(own.mean()), se, low, high, int(own.size), confidence)
    return AgentComparison(table.agents, estimates, replicates)


def paired_means(
    rows: Iterable[tuple[str, str, float]],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, MeanEstimate]:
    """Every agent's mean of ``(agent, scenario, value)`` rows, with intervals paired over
    scenarios (:func:`paired_bootstrap` of :func:`scenario_table`); empty without rows."""
    rows = list(rows)
    if not rows:
        return {}
    table = scenario_table(rows)
    comparison = paired_bootstrap(table, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return dict(comparison.estimates)


class DifferenceEstimate(MeanEstimate):
    """Mean of the per-scenario differences ``a - b`` over the scenarios both agents have
    (``n``: the shared scenarios)."""

    agent_a: str
    agent_b: str

    @property
    def difference(self) -> MeanEstimate:
        """The difference as a plain mean estimate (without the agents' names)."""
        return MeanEstimate(**{name: getattr(self, name) for name in MeanEstimate.model_fields})

    @property
    def n_shared(self) -> int:
        """Scenarios both agents have."""
        return self.n

    def _replace(self, **changes: Any) -> Self:
        """A copy with ``changes``, as the former named tuple offered: ``difference`` (a mean
        estimate) sets the value and interval, ``n_shared`` the count."""
        difference = changes.pop("difference", None)
        if isinstance(difference, MeanEstimate):
            kept = ("value", "se", "ci_low", "ci_high", "n", "confidence")
            changes = {**{name: getattr(difference, name) for name in kept}, **changes}
        if "n_shared" in changes:
            changes["n"] = changes.pop("n_shared")
        return super()._replace(**changes)


def shared_differences(table: ScenarioTable, agent_a: str, agent_b: str) -> FloatArray:
    """``a - b`` on each scenario both agents have, in the table's scenario order.

    Raises:
        InputError: An unknown agent.
    """
    for agent in (agent_a, agent_b):
        if agent not in table.agents:
            raise InputError(f"unknown agent {agent!r}; known: {', '.join(table.agents)}")
    a = table.values[table.agents.index(agent_a)]
    b = table.values[table.agents.index(agent_b)]
    shared = ~np.isnan(a) & ~np.isnan(b)
    return np.asarray(a[shared] - b[shared], dtype=np.float64)


def paired_difference(
    table: ScenarioTable,
    agent_a: str,
    agent_b: str,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> DifferenceEstimate:
    """The paired difference between two agents with a bootstrap CI over shared scenarios.

    Raises:
        InputError: An unknown agent, or no scenario that both agents have.
    """
    differences = shared_differences(table, agent_a, agent_b)
    if not differences.size:
        raise InputError(f"agents {agent_a!r} and {agent_b!r} share no scenario")
    diff = mean_estimate(differences, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return DifferenceEstimate(agent_a=agent_a, agent_b=agent_b, **dict(diff))
