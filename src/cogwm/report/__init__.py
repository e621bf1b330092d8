"""Reports of stored runs: tables (rich, JSON, CSV) and figures (matplotlib, imported lazily)."""

from __future__ import annotations

from pathlib import Path

from cogwm.arena.run_data import ConversationData, RunData, load_run
from cogwm.report.render import render, status_line, to_csv, to_json, warnings
from cogwm.report.tables import ArenaReport, ArmRow, TaskRow, build_report


def write_plots(data: RunData, report: ArenaReport, out_dir: Path) -> list[Path]:
    """Every figure of a run into ``out_dir``: trajectories per task and dimension, the
    cross-task mean trajectory over five regions (the composite, and the BDI/E panels), heatmap."""
    from cogwm.report.plots import (
        correlation_heatmap,
        cross_task_bdie_plot,
        cross_task_plot,
        trajectory_plots,
    )

    with data.catalog.active():  # the run's own tasks, looked up by name in the figures
        written = trajectory_plots(data, out_dir)
        cross_task = cross_task_plot(data, out_dir / "cross_task_trajectory.png")
        bdie = cross_task_bdie_plot(data, out_dir / "cross_task_trajectory_bdie.png")
    written.extend(path for path in (cross_task, bdie) if path is not None)
    if report.correlations is not None:
        written.append(correlation_heatmap(report.correlations, out_dir / "correlations.png"))
    return written


__all__ = [
    "ArenaReport",
    "ArmRow",
    "ConversationData",
    "RunData",
    "TaskRow",
    "build_report",
    "load_run",
    "render",
    "status_line",
    "to_csv",
    "to_json",
    "warnings",
    "write_plots",
]
