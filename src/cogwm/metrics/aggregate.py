"""Aggregation: the reported mean (``ReportedMean``), per-task discriminability, the agent
typology and correlation matrices.

Means with their bootstrap CIs and the paired agent comparisons live in
:mod:`cogwm.stats.means`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, ClassVar, NamedTuple

import numpy as np

from cogwm.errors import InputError
from cogwm.stats.estimate import Estimate
from cogwm.stats.means import (
    FloatArray,
    MeanEstimate,
)


class ReportedMean(Estimate):
    """A reported mean with SE and CI (None fields: undefined) and how many values it covers.

    A ``MeanEstimate`` as metric summaries write it (``mean``, ``se``, ``ci_low``, ``ci_high``,
    ``n``; ``mean`` None: nothing to average); the summaries extend it with their own fields.
    """

    json_omitted = frozenset({"confidence"})
    json_names: ClassVar[Mapping[str, str]] = {"value": "mean"}

    @property
    def mean(self) -> float | None:
        """The mean (``value``); None: nothing to average."""
        return self.value

    @staticmethod
    def fields(estimate: MeanEstimate | None, n: int | None = None) -> dict[str, Any]:
        """Keyword arguments for a ``ReportedMean`` (or subclass) from ``estimate``.

        ``None`` means nothing to average (mean None); ``n`` overrides the estimate's count.
        """
        if estimate is None:
            return {"value": None, "n": n or 0}
        return {
            "value": estimate.mean,
            "se": estimate.se,
            "ci_low": estimate.ci_low,
            "ci_high": estimate.ci_high,
            "n": estimate.n if n is None else n,
        }

    @classmethod
    def of(cls, estimate: MeanEstimate | None) -> ReportedMean:
        """From a ``MeanEstimate`` (None: nothing to average)."""
        return cls(**cls.fields(estimate))


# --- discriminability, typology, correlations -----------------------------------------------

#: The four dimensions of the Δ discriminability, in the order of a per-dimension Δ row.
DELTA_DIMENSIONS: tuple[str, ...] = ("emotion", "belief", "desire", "intention")


class Discriminability(NamedTuple):
    """Mean over the four dimensions of the across-agent standard deviation of mean Δ."""

    value: float | None
    per_dimension: dict[str, float | None]
    n_agents: int


def discriminability(
    agent_deltas: Mapping[str, Sequence[Sequence[float | None]]], *, ddof: int = 1
) -> Discriminability:
    """Per-task discriminability (docs/architecture.md, "Arena").

    For each of E-Δ, B-Δ, D-Δ, I-Δ: every agent's mean Δ over its conversations (undefined Δs
    left out), then the standard deviation of those means across agents (``ddof`` = 1, the
    sample standard deviation, by default); the value is the mean of the four. A dimension with
    fewer than ``ddof + 1`` agents having a defined mean is None and left out of the mean.

    Args:
        agent_deltas: Per agent, one row per conversation ``(E-Δ, B-Δ, D-Δ, I-Δ)``, e.g. a
            ``DimensionDeltas``.
        ddof: Delta degrees of freedom of the standard deviation.
    """
    per_dimension: dict[str, float | None] = {}
    for d, name in enumerate(DELTA_DIMENSIONS):
        means: list[float] = []
        for agent, rows in agent_deltas.items():
            for row in rows:
                if len(row) != len(DELTA_DIMENSIONS):
                    raise InputError(
                        f"agent {agent!r}: a Δ row needs {len(DELTA_DIMENSIONS)} values "
                        f"(E, B, D, I), got {len(row)}"
                    )
            defined = [float(x) for x in (row[d] for row in rows) if x is not None]
            if defined:
                means.append(float(np.mean(defined)))
        per_dimension[name] = float(np.std(means, ddof=ddof)) if len(means) > ddof else None
    defined_dims = [v for v in per_dimension.values() if v is not None]
    return Discriminability(
        value=float(np.mean(defined_dims)) if defined_dims else None,
        per_dimension=per_dimension,
        n_agents=len(agent_deltas),
    )


class AgentType(StrEnum):
    """Agent typology from the CTS components (paper §6)."""

    ALL_ROUND = "all-round"
    SPRINT = "sprint"
    STEADY = "steady"
    HOLLOW = "hollow"
    MIXED = "mixed"


class Level(StrEnum):
    """Where an agent's component lies relative to the other agents."""

    HIGH = "high"
    MODERATE = "moderate"
    LOW = "low"


class CTSComponents(NamedTuple):
    """An agent's mean AUC, Δ and PSR."""

    auc: float
    delta: float
    psr: float


#: An agent's component is HIGH at or above this many across-agent standard deviations over
#: the across-agent mean, LOW at or below minus this, MODERATE between.
TYPOLOGY_BAND = 0.5


def _levels(values: FloatArray, band: float) -> list[Level]:
    std = float(values.std())
    if std == 0:
        return [Level.MODERATE] * values.size
    z = (values - values.mean()) / std
    return [Level.HIGH if s >= band else Level.LOW if s <= -band else Level.MODERATE for s in z]


def agent_typology(
    components: Mapping[str, CTSComponents], *, band: float = TYPOLOGY_BAND
) -> dict[str, AgentType]:
    """Classify agents as all-round, sprint, steady, hollow (or mixed) from their CTS components.

    Each component (AUC, Δ, PSR) is standardised across the agents (population standard
    deviation): z >= ``band`` (default 0.5) is HIGH, z <= -``band`` is LOW, otherwise MODERATE.
    A component on which all agents tie is MODERATE for everyone. Rules, first match wins:

    - all-round: AUC, Δ and PSR all HIGH;
    - hollow: AUC, Δ and PSR all LOW;
    - sprint: Δ HIGH and AUC LOW;
    - steady: AUC HIGH and Δ MODERATE;
    - mixed: anything else.

    The typology is relative: it needs at least 3 agents.

    Raises:
        InputError: Fewer than 3 agents or a non-finite component.
    """
    if len(components) < 3:
        raise InputError(f"the typology compares agents: needs at least 3, got {len(components)}")
    names = list(components)
    matrix = np.array([list(components[n]) for n in names], dtype=np.float64)
    if not np.all(np.isfinite(matrix)):
        raise InputError("typology: every agent needs finite AUC, Δ and PSR")
    auc, delta, psr = (_levels(matrix[:, j], band) for j in range(3))
    out: dict[str, AgentType] = {}
    for i, name in enumerate(names):
        levels = (auc[i], delta[i], psr[i])
        if all(lv is Level.HIGH for lv in levels):
            out[name] = AgentType.ALL_ROUND
        elif all(lv is Level.LOW for lv in levels):
            out[name] = AgentType.HOLLOW
        elif delta[i] is Level.HIGH and auc[i] is Level.LOW:
            out[name] = AgentType.SPRINT
        elif auc[i] is Level.HIGH and delta[i] is Level.MODERATE:
            out[name] = AgentType.STEADY
        else:
            out[name] = AgentType.MIXED
    return out


class CorrelationMatrix(NamedTuple):
    """Pearson correlations between named columns over the rows where all are defined."""

    names: tuple[str, ...]
    r: list[list[float | None]]
    n: int

    def get(self, a: str, b: str) -> float | None:
        """The correlation between columns ``a`` and ``b``."""
        return self.r[self.names.index(a)][self.names.index(b)]


def correlation_matrix(columns: Mapping[str, Sequence[float | None]]) -> CorrelationMatrix:
    """Pearson correlation matrix (``numpy.corrcoef``) of equally long columns.

    Rows with any undefined value are dropped (listwise); ``n`` is how many remain. A constant
    column has no correlation with anything: its entries are None.

    Raises:
        InputError: Fewer than two columns, columns of different lengths.
    """
    names = tuple(columns)
    if len(names) < 2:
        raise InputError("a correlation matrix needs at least two columns")
    lengths = {len(c) for c in columns.values()}
    if len(lengths) != 1:
        raise InputError(f"columns must have the same length, got lengths {sorted(lengths)}")
    matrix = np.array(
        [[np.nan if v is None else float(v) for v in columns[n]] for n in names], dtype=np.float64
    )
    keep = np.all(np.isfinite(matrix), axis=0)
    data = matrix[:, keep]
    r: FloatArray = np.full((len(names), len(names)), np.nan)
    if data.shape[1] >= 3:
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.asarray(np.corrcoef(data), dtype=np.float64)
    rows = [[None if math.isnan(x) else float(x) for x in row] for row in r]
    return CorrelationMatrix(names=names, r=rows, n=int(keep.sum()))
