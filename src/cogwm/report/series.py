"""Trajectories on normalised dialogue progress, shared by the report's figures and the web
page's: each conversation's series of N values is placed at progress 0..100 % and linearly
interpolated onto a common grid; the mean and the standard error of the mean across
conversations are taken per grid point. The emotion line is ``e = valence x intensity``; B/D/I
follow the report's empty policy (``zero``: an empty dimension is 0; ``carry``: the last known
value, none before the first).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from cogwm import tasks
from cogwm.arena.run_data import ConversationData
from cogwm.metrics.trajectory import EmptyPolicy, composite_series
from cogwm.schema import BDI, CognitiveState

FloatArray = npt.NDArray[np.float64]

#: Points of the normalised progress grid (0, 5, ..., 100 %).
GRID = np.linspace(0.0, 100.0, 21)
#: Plotted dimensions: key -> title.
DIMENSIONS: dict[str, str] = {
    "comp": "Composite",
    "emotion": "Emotion (valence × intensity)",
    "belief": "Belief",
    "desire": "Desire",
    "intention": "Intention",
}


def dimension_series(c: ConversationData, dimension: str, empty: EmptyPolicy) -> list[float | None]:
    """One conversation's values of ``dimension`` per state (None where unknown)."""
    states: Sequence[CognitiveState] = c.states
    if dimension == "comp":
        return list(composite_series(states, tasks.get(c.task), empty))
    if dimension == "emotion":
        return [s.emotion.quantified if s.emotion is not None else None for s in states]
    dim = next(d for d in BDI if d.value == dimension)
    values: list[float | None] = []
    last: float | None = None
    for state in states:
        value = state.dimension_value(dim)
        if empty is EmptyPolicy.ZERO:
            values.append(0.0 if value is None else value)
        else:
            last = value if value is not None else last
            values.append(last)
    return values


def on_grid(values: Sequence[float | None], grid: FloatArray = GRID) -> FloatArray | None:
    """A series interpolated onto ``grid`` (progress in %; None with fewer than two known points).

    The series' first value sits at 0 %, its last at 100 %, the others evenly between.
    """
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(values) < 2 or len(known) < 2:
        return None
    x = np.array([100.0 * i / (len(values) - 1) for i, _ in known])
    y = np.array([v for _, v in known], dtype=np.float64)
    out = np.interp(grid, x, y)
    # Before the first known point the value is unknown, not the first value.
    out[x[0] > grid] = np.nan
    return out


def mean_sem(rows: list[FloatArray]) -> tuple[FloatArray, FloatArray]:
    """Mean and standard error of the mean per grid point (NaN-aware; SEM 0 with one value)."""
    matrix = np.vstack(rows)
    count = np.sum(~np.isnan(matrix), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nanmean(matrix, axis=0)
        std = np.where(
            count > 1, np.nanstd(matrix, axis=0, ddof=1 if matrix.shape[0] > 1 else 0), 0.0
        )
        sem = np.where(count > 0, std / np.sqrt(np.maximum(count, 1)), np.nan)
    return mean, sem
