"""The report's trajectory figures as SVG: mean trajectories with ±1 SEM bands per task and
dimension, and the paper's task x dimension grid (emotion rescaled to the score range, Δ printed
on each panel), over all turns and over non-zero turns only (paper Figures 7-9), and the
cross-task mean trajectory per agent over five regions (paper Figure 5, ``cogwm.report.regions``).

The curves are the ones ``cogwm arena report --plots`` draws (``cogwm.report.plots``): each
conversation's series on a 0-100 % progress grid, mean and SEM across conversations per arm.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np

from cogwm import tasks
from cogwm.arena.run_data import ConversationData, RunData
from cogwm.errors import CogwmError
from cogwm.metrics.trajectory import EmptyPolicy
from cogwm.report.series import DIMENSIONS, GRID, dimension_series, mean_sem, on_grid
from cogwm.schema.lexicon import valence_table
from cogwm.web.svg import Series, line_chart

#: The grid's dimensions (paper order) and their panel titles.
GRID_DIMENSIONS: dict[str, str] = {
    "emotion": "Emotion (rescaled)",
    "belief": "Belief",
    "desire": "Desire",
    "intention": "Intention",
}
#: Emotion is valence x intensity; intensity is at most 3.
MAX_INTENSITY = 3


#: One run's per-conversation series by (conversation id, dimension).
SeriesCache = dict[tuple[int, str], list[float | None]]


class Curve(NamedTuple):
    """One arm's mean curve with its SEM and how many conversations it covers."""

    arm: str
    mean: list[float | None]
    sem: list[float | None]
    n: int

    @property
    def delta(self) -> float | None:
        """Last minus first known point of the mean curve."""
        known = [v for v in self.mean if v is not None]
        return known[-1] - known[0] if len(known) >= 2 else None


def _clean(values: np.ndarray) -> list[float | None]:
    return [None if not math.isfinite(v) else round(float(v), 4) for v in values]


def _nonzero(values: list[float | None]) -> list[float | None]:
    """Keep only turns where the dimension is known and non-zero."""
    return [v if v is not None and v != 0 else None for v in values]


def curves(
    convs: list[ConversationData],
    dimension: str,
    empty: EmptyPolicy,
    *,
    nonzero_only: bool = False,
    rescale: tuple[float, float, float, float] | None = None,
    cache: SeriesCache | None = None,
) -> list[Curve]:
    """Per-arm mean curves of ``dimension`` on ``GRID``.

    Args:
        convs: The conversations (one task).
        dimension: ``comp``, ``emotion``, ``belief``, ``desire`` or ``intention``.
        empty: The report's empty B/D/I policy.
        nonzero_only: Drop turns where the value is unknown or zero before interpolating.
        rescale: ``(from_low, from_high, to_low, to_high)`` applied to every value.
        cache: Series already computed, by (conversation, dimension); filled as it goes.
    """
    cache = {} if cache is None else cache
    by_arm: dict[str, list[ConversationData]] = {}
    for c in convs:
        by_arm.setdefault(c.arm, []).append(c)
    found = []
    for arm, mine in sorted(by_arm.items()):
        rows = []
        for c in mine:
            key = (c.id, dimension)
            if key not in cache:
                try:
                    cache[key] = dimension_series(c, dimension, empty)
                except CogwmError:
                    # Undefined here (a task without composite weights, a state without
                    # emotion): the conversation has no curve, it is not drawn as zero.
                    cache[key] = []
            values = cache[key]
            if nonzero_only:
                values = _nonzero(values)
            if rescale is not None:
                values = [None if v is None else _map(v, rescale) for v in values]
            grid = on_grid(values)
            if grid is not None:
                rows.append(grid)
        if rows:
            with warnings.catch_warnings():
                # Grid points no conversation reaches are NaN (unknown), which numpy warns about.
                warnings.simplefilter("ignore", RuntimeWarning)
                mean, sem = mean_sem(rows)
            found.append(Curve(arm, _clean(mean), _clean(sem), len(rows)))
    return found


def _map(value: float, scale: tuple[float, float, float, float]) -> float:
    a, b, c, d = scale
    return c + (value - a) / (b - a) * (d - c)


def emotion_scale(task: str) -> tuple[float, float, float, float]:
    """Map emotion (valence x intensity) linearly onto the task's B/D/I score range."""
    top = max(abs(v) for v in valence_table().values()) * MAX_INTENSITY
    low, high = tasks.get(task).score_range
    return (-top, top, low, high)


def _series(found: list[Curve], arms: list[str]) -> list[Series]:
    """Chart lines; each arm's palette slot is its place among all ``arms``."""
    x = [float(v) for v in GRID]
    return [Series(f"{c.arm} (n={c.n})", x, c.mean, c.sem, arms.index(c.arm)) for c in found]


def _deltas(found: list[Curve]) -> list[str]:
    """Each line's Δ (last minus first point of its mean curve), in line order."""
    return [f"Δ{'–' if c.delta is None else f'{c.delta:+.2f}'}" for c in found]


def task_names(data: RunData) -> list[str]:
    """Tasks with finished conversations, sorted."""
    return sorted({c.task for c in data.conversations})


def trajectory_svgs(data: RunData, cache: SeriesCache | None = None) -> dict[str, list[str]]:
    """Per task: one chart per dimension (composite first), mean ±1 SEM per arm."""
    charts: dict[str, list[str]] = {}
    for task in task_names(data):
        convs = [c for c in data.conversations if c.task == task]
        arms = sorted({c.arm for c in convs})
        charts[task] = [
            line_chart(
                _series(curves(convs, dim, data.empty, cache=cache), arms),
                title=f"{task}: {title}",
            )
            for dim, title in DIMENSIONS.items()
        ]
    return charts


def paper_grid(
    data: RunData, *, nonzero_only: bool = False, cache: SeriesCache | None = None
) -> list[list[str]]:
    """Rows of panels (task x dimension) with Δ printed, emotion on the score range."""
    rows = []
    for task in task_names(data):
        convs = [c for c in data.conversations if c.task == task]
        arms = sorted({c.arm for c in convs})
        low, high = tasks.get(task).score_range
        panels = []
        for dim, title in GRID_DIMENSIONS.items():
            scale = emotion_scale(task) if dim == "emotion" else None
            found = curves(
                convs, dim, data.empty, nonzero_only=nonzero_only, rescale=scale, cache=cache
            )
            panels.append(
                line_chart(
                    _series(found, arms),
                    title=f"{task}: {title}",
                    y_range=(low, high),
                    series_notes=_deltas(found),
                    width=300,
                    height=210,
                    legend=dim == "emotion",
                )
            )
        rows.append(panels)
    return rows


class CrossTaskChart(NamedTuple):
    """The cross-task chart and the line that says what it pools and leaves out."""

    svg: str
    caption: str


def cross_task_figure(
    data: RunData, *, n_resamples: int = 2000, seed: int = 0, dimension: str = "comp"
) -> CrossTaskChart | None:
    """The cross-task mean of one dimension (``s_t`` by default) per agent over five regions of
    progress (paper Figure 5), ±1 SEM, each line's Δ with its 95% CI; None when no agent has a
    trajectory to draw. An empty B/D/I dimension or a missing emotion stays unknown (not 0)."""
    from cogwm.report.regions import (
        PANEL_DIMENSIONS,
        REGION_PROGRESS,
        caption,
        cross_task_curves,
        delta_text,
    )

    every = cross_task_curves(data, n_resamples=n_resamples, seed=seed, dimension=dimension)
    found = [c for c in every if c.n]
    if not found:
        return None
    x = [float(v) for v in REGION_PROGRESS]
    series = [Series(f"{c.arm} (n={c.n})", x, c.mean, c.sem, i) for i, c in enumerate(found)]
    what = "s_t" if dimension == "comp" else PANEL_DIMENSIONS[dimension]
    svg = line_chart(
        series,
        title=f"Cross-task mean {what} over 5 regions (±1 SEM)",
        series_notes=[delta_text(c) for c in found],
        width=560,
        height=280,
        markers=True,
    )
    return CrossTaskChart(svg, caption(every, dimension))


def cross_task_panels(
    data: RunData, *, n_resamples: int = 2000, seed: int = 0
) -> list[tuple[str, CrossTaskChart | None]]:
    """The BDI/E panels of the cross-task figure: ``(dimension, figure or None)`` for emotion,
    belief, desire and intention."""
    from cogwm.report.regions import PANEL_DIMENSIONS

    return [
        (name, cross_task_figure(data, n_resamples=n_resamples, seed=seed, dimension=key))
        for key, name in PANEL_DIMENSIONS.items()
        if key != "comp"
    ]
