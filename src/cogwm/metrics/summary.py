"""Trajectory and task tiers over many conversations: means with CIs, per-agent comparison
(paired over shared scenarios), typology, discriminability and the metric correlations.

This is what ``cogwm score trajectories`` prints; the arena can call it on its stored results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict

from cogwm.metrics.aggregate import (
    AgentType,
    CTSComponents,
    ReportedMean,
    agent_typology,
    correlation_matrix,
    discriminability,
)
from cogwm.metrics.task import good_outcome_rate
from cogwm.metrics.trajectory import METRIC_NAMES, DimensionDeltas, trajectory_metrics_batch
from cogwm.stats.means import (
    DEFAULT_RESAMPLES,
    optional_mean,
    paired_bootstrap,
    scenario_table,
)

#: Per-dimension delta names, in report order.
DELTA_NAMES: tuple[str, ...] = ("E-Δ", "B-Δ", "D-Δ", "I-Δ")


@dataclass(frozen=True, slots=True)
class ConversationScores:
    """One conversation as the trajectory tier sees it.

    ``deltas`` and ``nz`` are None when only the score series is known. ``scenario`` pairs
    conversations of different agents for the bootstrap (default: none, every conversation its
    own unit).
    """

    id: str
    scores: list[float]
    deltas: DimensionDeltas | None = None
    nz: float | None = None
    agent: str | None = None
    scenario: str | None = None
    good_outcome: bool | None = None
    good_outcome_failed: bool = False


class ConversationResult(BaseModel):
    """The metrics of one conversation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    agent: str | None
    scenario: str | None
    n: int
    auc: float | None
    delta: float | None
    psr: float | None
    mono: float | None
    cts: float | None
    deltas: dict[str, float | None] | None
    nz: float | None
    good_outcome: bool | None


class GroupSummary(BaseModel):
    """Means over a set of conversations (all of them, or one agent's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    conversations: int
    undefined: int
    mean_length: float | None
    metrics: dict[str, ReportedMean]
    good_outcome: ReportedMean | None
    good_outcome_failed: int
    typology: AgentType | None = None


class TrajectorySummary(BaseModel):
    """The trajectory and task tiers over a file of conversations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    empty: str
    overall: GroupSummary
    agents: dict[str, GroupSummary]
    discriminability: float | None
    discriminability_per_dimension: dict[str, float | None] | None
    correlations: dict[str, dict[str, float | None]]
    correlation_n: int
    conversations: list[ConversationResult]


def _opt(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _conversation_results(items: Sequence[ConversationScores]) -> list[ConversationResult]:
    batch = trajectory_metrics_batch([c.scores for c in items])
    out = []
    for i, c in enumerate(items):
        deltas = dict(zip(DELTA_NAMES, c.deltas, strict=True)) if c.deltas is not None else None
        out.append(
            ConversationResult(
                id=c.id,
                agent=c.agent,
                scenario=c.scenario,
                n=int(batch.n[i]),
                auc=_opt(batch.auc[i]),
                delta=_opt(batch.delta[i]),
                psr=_opt(batch.psr[i]),
                mono=_opt(batch.mono[i]),
                cts=_opt(batch.cts[i]),
                deltas=deltas,
                nz=c.nz,
                good_outcome=c.good_outcome,
            )
        )
    return out


def _columns(results: Sequence[ConversationResult]) -> dict[str, list[float | None]]:
    columns: dict[str, list[float | None]] = {
        name: [getattr(r, name) for r in results] for name in METRIC_NAMES
    }
    for name in DELTA_NAMES:
        columns[name] = [r.deltas[name] if r.deltas is not None else None for r in results]
    columns["nz"] = [r.nz for r in results]
    return columns


def _group_summary(
    results: Sequence[ConversationResult],
    items: Sequence[ConversationScores],
    *,
    n_resamples: int,
    seed: int,
) -> GroupSummary:
    groups = [c.scenario if c.scenario is not None else c.id for c in items]
    metrics = {
        name: ReportedMean.of(
            optional_mean(values, groups=groups, n_resamples=n_resamples, seed=seed)
        )
        for name, values in _columns(results).items()
    }
    verdicts = [
        c.good_outcome for c in items if c.good_outcome is not None or c.good_outcome_failed
    ]
    go = None
    failed = sum(1 for c in items if c.good_outcome_failed)
    if verdicts:
        go_groups = [
            g
            for g, c in zip(groups, items, strict=True)
            if c.good_outcome is not None or c.good_outcome_failed
        ]
        go = ReportedMean.of(
            good_outcome_rate(verdicts, groups=go_groups, n_resamples=n_resamples, seed=seed).rate
        )
    lengths = [r.n for r in results]
    return GroupSummary(
        conversations=len(results),
        undefined=sum(1 for r in results if r.n < 2),
        mean_length=float(np.mean(lengths)) if lengths else None,
        metrics=metrics,
        good_outcome=go,
        good_outcome_failed=failed,
    )


def _paired_agent_metrics(
    results: Sequence[ConversationResult],
    items: Sequence[ConversationScores],
    summaries: dict[str, GroupSummary],
    *,
    n_resamples: int,
    seed: int,
) -> dict[str, GroupSummary]:
    """Replace each agent's CIs by ones from a bootstrap paired over shared scenarios."""
    columns = _columns(results)
    updated = {a: dict(s.metrics) for a, s in summaries.items()}
    for name, values in columns.items():
        rows = [
            (c.agent, c.scenario if c.scenario is not None else c.id, v)
            for c, v in zip(items, values, strict=True)
            if v is not None and c.agent is not None
        ]
        if not rows:
            continue
        comparison = paired_bootstrap(scenario_table(rows), n_resamples=n_resamples, seed=seed)
        for agent, est in comparison.estimates.items():
            updated[agent][name] = ReportedMean.of(est)
    return {a: s.model_copy(update={"metrics": updated[a]}) for a, s in summaries.items()}


def summarize_trajectories(
    items: Sequence[ConversationScores],
    *,
    task: str,
    empty: str,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> TrajectorySummary:
    """Trajectory and task tiers over ``items``.

    Overall means resample scenarios (or conversations). When conversations name an agent,
    every agent's means come from one bootstrap whose draws of scenarios are shared by all
    agents; with three or more agents the typology (``agent_typology`` on mean AUC, Δ, PSR) and
    the discriminability (over the per-dimension deltas) are added.
    """
    results = _conversation_results(items)
    overall = _group_summary(results, items, n_resamples=n_resamples, seed=seed)
    agent_names = list(dict.fromkeys(c.agent for c in items if c.agent is not None))
    agents: dict[str, GroupSummary] = {}
    for agent in agent_names:
        idx = [i for i, c in enumerate(items) if c.agent == agent]
        agents[agent] = _group_summary(
            [results[i] for i in idx], [items[i] for i in idx], n_resamples=n_resamples, seed=seed
        )
    if agents:
        agents = _paired_agent_metrics(results, items, agents, n_resamples=n_resamples, seed=seed)
    disc = None
    if len(agents) >= 2:
        deltas = {
            a: [c.deltas for c in items if c.agent == a and c.deltas is not None]
            for a in agent_names
        }
        if any(deltas.values()):
            disc = discriminability(deltas)
    typed: dict[str, CTSComponents] = {}
    for a, s in agents.items():
        auc, delta, psr = (s.metrics[m].mean for m in ("auc", "delta", "psr"))
        if auc is not None and delta is not None and psr is not None:
            typed[a] = CTSComponents(auc=auc, delta=delta, psr=psr)
    if len(typed) >= 3:
        kinds = agent_typology(typed)
        agents = {a: s.model_copy(update={"typology": kinds.get(a)}) for a, s in agents.items()}
    correlations = correlation_matrix({name: _columns(results)[name] for name in METRIC_NAMES})
    return TrajectorySummary(
        task=task,
        empty=empty,
        overall=overall,
        agents=agents,
        discriminability=disc.value if disc else None,
        discriminability_per_dimension=disc.per_dimension if disc else None,
        correlations={
            a: {b: correlations.get(a, b) for b in correlations.names} for a in correlations.names
        },
        correlation_n=correlations.n,
        conversations=results,
    )
