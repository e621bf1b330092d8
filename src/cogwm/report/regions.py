"""The cross-task mean trajectory (paper Figure 5): each agent's mean ``s_t`` over all its
conversations of every task, each conversation's trajectory interpolated onto five normalised
regions of dialogue progress. For plotting only: the trajectory metrics (AUC, Δ, PSR, Mono)
are computed on the turns themselves and do not change.

The five regions are the points 0, 25, 50, 75 and 100 % of a conversation's progress: its first
value ``s_1`` sits at 0 %, its last ``s_N`` at 100 % and the others evenly between, and each
region takes the linear interpolation there. So the region endpoints are ``s_1`` and ``s_N``
and the plotted Δ of a conversation is exactly its ``Δ = s_N − s_1``; a trajectory of five
values is drawn as it is, one of nine keeps every other value.

A trajectory of one value (only the initial state, e.g. an agent that failed at its first
turn) has no progress to spread over the regions, and its Δ is undefined (N < 2), so it is left
out of the figure and counted per agent, not drawn as a flat line. Tasks without composite
weights (DAILY) have no ``s_t`` and are left out the same way.

Conversations of all tasks are pooled: every conversation weighs the same, so a task with more
conversations weighs more. The band is ±1 SEM across conversations per region (as the paper's);
the mean Δ carries a 95% bootstrap interval over scenarios (all of a scenario's conversations
are drawn together).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from cogwm.arena.run_data import ConversationData, RunData
from cogwm.errors import CogwmError
from cogwm.report.series import dimension_series, mean_sem, on_grid
from cogwm.stats.bootstrap import Settings, cluster_bootstrap_mean

FloatArray = npt.NDArray[np.float64]

#: How many normalised regions a trajectory is interpolated onto.
REGIONS = 5
#: The regions' places in dialogue progress (%): 0, 25, 50, 75, 100.
REGION_PROGRESS: FloatArray = np.linspace(0.0, 100.0, REGIONS)


class CrossTaskCurve(NamedTuple):
    """One agent's mean ``s_t`` per region across tasks.

    Attributes:
        arm: The agent x condition.
        mean: Mean ``s_t`` per region (None where no conversation has a value).
        sem: Standard error of the mean per region.
        n: Conversations drawn.
        left_out: Conversations without a trajectory to draw (one value, or no ``s_t``).
        tasks: The tasks the drawn conversations come from.
        delta: Mean Δ (last minus first region, i.e. ``s_N − s_1``) of the drawn conversations.
        delta_ci: 95% bootstrap interval of ``delta`` over scenarios (None, None with fewer
            than two scenarios).
    """

    arm: str
    mean: list[float | None]
    sem: list[float | None]
    n: int
    left_out: int
    tasks: list[str]
    delta: float | None
    delta_ci: tuple[float | None, float | None]


def to_regions(values: Sequence[float | None]) -> FloatArray | None:
    """A trajectory interpolated onto the five regions (None with fewer than two known values).

    Args:
        values: ``s_1 .. s_N`` (None where unknown).

    Returns:
        ``REGIONS`` values at ``REGION_PROGRESS``; NaN before the first known value.
    """
    return on_grid(values, REGION_PROGRESS)


#: The dimensions with a cross-task panel: the composite, then emotion and B/D/I (the paper's
#: BDI/E panels), key -> what the panel shows.
PANEL_DIMENSIONS: dict[str, str] = {
    "comp": "s_t (Comp)",
    "emotion": "emotion (valence × intensity)",
    "belief": "belief",
    "desire": "desire",
    "intention": "intention",
}


def _values(c: ConversationData, data: RunData, dimension: str) -> list[float | None]:
    """One conversation's values of ``dimension``; a state whose dimension is empty (or has no
    emotion) stays unknown, whatever the report's empty policy (no 0 is drawn for it)."""
    from cogwm.schema import BDI

    if dimension in ("comp", "emotion"):
        return dimension_series(c, dimension, data.empty)
    dim = next(d for d in BDI if d.value == dimension)
    return [state.dimension_value(dim) for state in c.states]


def _regions_of(c: ConversationData, data: RunData, dimension: str) -> FloatArray | None:
    try:
        series = _values(c, data, dimension)
    except CogwmError:
        # No s_t here (a task without weights, a state without emotion): not drawn as zero.
        return None
    regions = to_regions(series)
    if regions is not None and dimension != "comp":
        # After the last known value the dimension is unknown, not that value carried on.
        last = max(i for i, v in enumerate(series) if v is not None)
        regions[100.0 * last / (len(series) - 1) < REGION_PROGRESS] = np.nan
    return regions


def _clean(values: FloatArray) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in values]


def _curve(
    arm: str, convs: list[ConversationData], data: RunData, settings: Settings, dimension: str
) -> CrossTaskCurve:
    drawn = [(c, g) for c in convs if (g := _regions_of(c, data, dimension)) is not None]
    tasks = sorted({c.task for c, _ in drawn})
    if not drawn:
        empty: list[float | None] = [None] * REGIONS
        return CrossTaskCurve(arm, empty, empty, 0, len(convs), tasks, None, (None, None))
    rows = [g for _, g in drawn]
    mean, sem = mean_sem(rows)
    deltas = np.array([g[-1] - g[0] for g in rows])
    known = np.isfinite(deltas)
    delta = float(deltas[known].mean()) if known.any() else None
    scenarios = [c.scenario_key for (c, _), k in zip(drawn, known, strict=True) if k]
    ci = cluster_bootstrap_mean(deltas[known], scenarios, settings)
    return CrossTaskCurve(
        arm, _clean(mean), _clean(sem), len(rows), len(convs) - len(rows), tasks, delta, ci
    )


def cross_task_curves(
    data: RunData, *, n_resamples: int = 2000, seed: int = 0, dimension: str = "comp"
) -> list[CrossTaskCurve]:
    """Every agent's cross-task mean trajectory of one dimension, sorted by arm.

    Args:
        data: The run.
        dimension: A key of :data:`PANEL_DIMENSIONS` (the composite ``s_t`` by default).
        n_resamples: Bootstrap resamples for the interval of Δ.
        seed: Bootstrap seed.
    """
    by_arm: dict[str, list[ConversationData]] = {}
    for c in data.conversations:
        by_arm.setdefault(c.arm, []).append(c)
    settings = Settings(resamples=n_resamples, seed=seed)
    if dimension not in PANEL_DIMENSIONS:
        raise ValueError(f"no cross-task panel for dimension {dimension!r}")
    return [_curve(arm, convs, data, settings, dimension) for arm, convs in sorted(by_arm.items())]


def delta_text(curve: CrossTaskCurve) -> str:
    """``Δ +0.12 [-0.05, +0.30]`` (dashes where undefined)."""
    if curve.delta is None:
        return "Δ –"
    low, high = curve.delta_ci
    if low is None or high is None:
        return f"Δ {curve.delta:+.2f} [–]"
    return f"Δ {curve.delta:+.2f} [{low:+.2f}, {high:+.2f}]"


def caption(curves: Sequence[CrossTaskCurve], dimension: str = "comp") -> str:
    """What the figure pools and what it leaves out, in one line."""
    tasks = sorted({t for c in curves for t in c.tasks})
    left = sum(c.left_out for c in curves)
    text = (
        f"Tasks pooled: {', '.join(tasks) or '–'}; each conversation's s_t interpolated onto"
        " 5 regions of progress (plotting only); ±1 SEM; Δ = s_N − s_1 with its 95% bootstrap"
        " CI over scenarios"
    )
    if dimension != "comp":
        name = PANEL_DIMENSIONS[dimension]
        text = text.replace("s_t", name, 1).replace("s_N − s_1", "last − first known region")
        text += f"; an empty {name} stays unknown (not 0)"
    if left:
        what = "no s_t" if dimension == "comp" else f"no {PANEL_DIMENSIONS[dimension]}"
        text += f"; {left} conversation(s) with fewer than 2 values or {what} left out"
    undrawn = [c.arm for c in curves if not c.n]
    if undrawn:
        text += f"; no line for {', '.join(undrawn)}"
    return text + "."
