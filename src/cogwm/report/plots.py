"""Figures of an arena run (matplotlib, Agg backend): mean trajectories over normalised dialogue
progress with ±1 SEM bands per task and dimension (paper Figures 7, 8), the cross-task mean
trajectory per agent over five regions (paper Figure 5, see ``cogwm.report.regions``), and the
correlation heatmap of the trajectory metrics.

Each conversation's series of N values is placed at progress 0..100 % and linearly interpolated
onto a common grid; the mean and the standard error of the mean across conversations are taken
per grid point. The emotion line is ``e = valence x intensity``; B/D/I follow the report's empty
policy (``zero``: an empty dimension is 0; ``carry``: the last known value, none before the first).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from cogwm.arena.run_data import RunData
from cogwm.metrics.aggregate import CorrelationMatrix
from cogwm.report.series import DIMENSIONS, GRID, dimension_series, mean_sem, on_grid


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _draw(ax: Any, data: RunData, task: str, dimension: str) -> None:
    convs = [c for c in data.conversations if c.task == task]
    for arm in sorted({c.arm for c in convs}):
        rows = [
            g
            for c in convs
            if c.arm == arm
            and (g := on_grid(dimension_series(c, dimension, data.empty))) is not None
        ]
        if not rows:
            continue
        mean, sem = mean_sem(rows)
        (line,) = ax.plot(GRID, mean, label=f"{arm} (n={len(rows)})")
        ax.fill_between(GRID, mean - sem, mean + sem, color=line.get_color(), alpha=0.15)
    ax.set_title(f"{task}: {DIMENSIONS[dimension]}")
    ax.set_xlabel("dialogue progress (%)")
    ax.grid(alpha=0.3)


def trajectory_plots(data: RunData, out_dir: Path) -> list[Path]:
    """One PNG per task and dimension, plus one overview per task; returns the paths written."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for task in sorted({c.task for c in data.conversations}):
        for dimension in DIMENSIONS:
            fig, ax = plt.subplots(figsize=(6, 4))
            _draw(ax, data, task, dimension)
            ax.legend(fontsize=7)
            written.append(_save(fig, plt, out_dir / f"trajectory_{task}_{dimension}.png"))
        fig, axes = plt.subplots(1, len(DIMENSIONS), figsize=(4 * len(DIMENSIONS), 3.6))
        for ax, dimension in zip(axes, DIMENSIONS, strict=True):
            _draw(ax, data, task, dimension)
        axes[0].legend(fontsize=7)
        written.append(_save(fig, plt, out_dir / f"trajectories_{task}.png"))
    return written


def cross_task_plot(data: RunData, path: Path) -> Path | None:
    """The cross-task mean ``s_t`` per agent over five regions of progress (paper Figure 5);
    None when no agent has a trajectory to draw."""
    from cogwm.report.regions import REGION_PROGRESS, caption, cross_task_curves, delta_text

    curves = [c for c in cross_task_curves(data) if c.n]
    if not curves:
        return None
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for curve in curves:
        mean = np.array([np.nan if v is None else v for v in curve.mean])
        sem = np.array([np.nan if v is None else v for v in curve.sem])
        label = f"{curve.arm} (n={curve.n}) {delta_text(curve)}"
        (line,) = ax.plot(REGION_PROGRESS, mean, marker="o", label=label)
        ax.fill_between(REGION_PROGRESS, mean - sem, mean + sem, color=line.get_color(), alpha=0.12)
    ax.set_title("Cross-task mean trajectory s_t (Comp), ±1 SEM")
    ax.set_xlabel("dialogue progress (%), 5 regions")
    ax.set_ylabel("s_t")
    ax.set_xticks(REGION_PROGRESS)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.text(0.01, 0.01, textwrap.fill(caption(curves), 120), fontsize=6, va="bottom")
    # Room under the axes for the caption's lines.
    return _save(fig, plt, path, rect=(0.0, 0.07, 1.0, 1.0))


#: The paper's BDI/E panels of the cross-task figure (the composite has its own figure).
BDIE_PANELS = ("emotion", "belief", "desire", "intention")


def _region_panel(ax: Any, data: RunData, dimension: str) -> str:
    """One dimension's cross-task curves on ``ax``; returns the panel's caption."""
    from cogwm.report.regions import (
        PANEL_DIMENSIONS,
        REGION_PROGRESS,
        caption,
        cross_task_curves,
        delta_text,
    )

    every = cross_task_curves(data, dimension=dimension)
    for curve in (c for c in every if c.n):
        mean = np.array([np.nan if v is None else v for v in curve.mean])
        sem = np.array([np.nan if v is None else v for v in curve.sem])
        label = f"{curve.arm} (n={curve.n}) {delta_text(curve)}"
        (line,) = ax.plot(REGION_PROGRESS, mean, marker="o", label=label)
        ax.fill_between(REGION_PROGRESS, mean - sem, mean + sem, color=line.get_color(), alpha=0.12)
    if not any(c.n for c in every):
        ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(f"{PANEL_DIMENSIONS[dimension]}, ±1 SEM", fontsize=9)
    ax.set_xlabel("dialogue progress (%), 5 regions")
    ax.set_xticks(REGION_PROGRESS)
    ax.grid(alpha=0.3)
    if any(c.n for c in every):  # a panel without values has no lines to name
        ax.legend(fontsize=6)
    return f"{PANEL_DIMENSIONS[dimension]}: {caption(every, dimension)}"


def cross_task_bdie_plot(data: RunData, path: Path) -> Path | None:
    """The cross-task mean trajectory of emotion, belief, desire and intention, one panel each
    over five regions of progress (paper Figure 5's BDI/E panels); None when no dimension has a
    trajectory to draw. An empty dimension stays unknown (never drawn as 0)."""
    from cogwm.report.regions import cross_task_curves

    if not any(c.n for d in BDIE_PANELS for c in cross_task_curves(data, dimension=d)):
        return None
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(BDIE_PANELS), figsize=(4.2 * len(BDIE_PANELS), 4.4))
    captions = [_region_panel(ax, data, d) for ax, d in zip(axes, BDIE_PANELS, strict=True)]
    fig.text(0.01, 0.01, textwrap.fill(" ".join(captions), 220), fontsize=5, va="bottom")
    return _save(fig, plt, path, rect=(0.0, 0.12, 1.0, 1.0))


def correlation_heatmap(matrix: CorrelationMatrix, path: Path) -> Path:
    """The correlation matrix as an annotated heatmap PNG."""
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    values = np.array([[np.nan if v is None else v for v in row] for row in matrix.r])
    size = 0.6 * len(matrix.names) + 2
    fig, ax = plt.subplots(figsize=(size, size))
    image = ax.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xticks(range(len(matrix.names)), matrix.names, rotation=45, ha="right")
    ax.set_yticks(range(len(matrix.names)), matrix.names)
    for i in range(len(matrix.names)):
        for j in range(len(matrix.names)):
            text = "–" if np.isnan(values[i, j]) else f"{values[i, j]:.2f}"
            ax.text(j, i, text, ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title(f"Trajectory metrics, Pearson r (n = {matrix.n})")
    return _save(fig, plt, path)


def _save(
    fig: Any, plt: Any, path: Path, rect: tuple[float, float, float, float] | None = None
) -> Path:
    fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
