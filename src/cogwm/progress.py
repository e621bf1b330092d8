"""Progress of long jobs (arena runs, annotation, training, validity cards, sample builds).

One facility, built on rich: :class:`ProgressBar` draws a live bar (description, bar, done/total,
elapsed, ETA and a free ``info`` text) on a terminal. Where stderr is not a terminal (a log file,
a captured pipe) a live bar would print nothing useful until the end, so the same bar writes one
plain line at most every ``line_every_s`` seconds and a last one when it closes. rich keeps the
counts and estimates the remaining time in both cases.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

#: Seconds between two plain lines where stderr is not a terminal.
LINE_EVERY_S = 60.0


class ProgressBar:
    """A progress bar over ``total`` steps (None: unknown), or nothing when disabled.

    Use as a context manager; ``update`` moves it, ``stage`` starts a new step of a job with
    its own description and total (the previous stage's bar is hidden). A ``transient`` bar is
    cleared from the terminal when it closes.
    """

    def __init__(
        self,
        description: str,
        total: int | None,
        *,
        enabled: bool = True,
        console: Console | None = None,
        completed: int = 0,
        line_every_s: float = LINE_EVERY_S,
        transient: bool = False,
    ) -> None:
        self.enabled = enabled
        self.console = console or Console(stderr=True)
        self.live = enabled and self.console.is_terminal and not self.console.is_dumb_terminal
        self.line_every_s = line_every_s
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[info]}"),
            console=self.console,
            transient=transient,
        )
        self._task: TaskID = self._progress.add_task(
            description, total=total, completed=completed, info=""
        )
        self._last_line = time.monotonic()
        #: Whether the last plain line shows the current state (nothing to show yet).
        self._lined = True

    def __enter__(self) -> ProgressBar:
        if self.live:
            self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.live:
            self._progress.stop()
        elif self.enabled and not self._lined:
            self._print_line()

    @property
    def completed(self) -> float:
        """Steps done in the current stage."""
        return self._progress.tasks[-1].completed

    def update(
        self,
        *,
        advance: float = 0,
        completed: float | None = None,
        total: float | None = None,
        description: str | None = None,
        info: str | None = None,
    ) -> None:
        """Move the bar (``advance`` steps, or to ``completed``) and change what it says."""
        # Extra fields go through ``**fields`` (rich's own way); Any, as rich types them loosely.
        fields: dict[str, Any] = {} if info is None else {"info": info}
        self._progress.update(
            self._task,
            advance=advance or None,
            completed=completed,
            total=total,
            description=description,
            **fields,
        )
        self._lined = False
        due = time.monotonic() - self._last_line >= self.line_every_s
        if self.enabled and not self.live and due:
            self._print_line()

    def stage(self, description: str, total: int | None) -> None:
        """Start a new stage of the job: a fresh bar with its own count and ETA."""
        if description == self._progress.tasks[-1].description:
            self._progress.update(self._task, total=total)
            return
        if self.enabled and not self.live and not self._lined:
            self._print_line()
        self._progress.update(self._task, visible=False)
        self._task = self._progress.add_task(description, total=total, info="")
        self._lined = True

    def _print_line(self) -> None:
        task = self._progress.tasks[-1]
        done = f"{task.completed:.0f}" + ("" if task.total is None else f"/{task.total:.0f}")
        parts = [task.description, done]
        info = str(task.fields.get("info", ""))
        if info:
            parts.append(info)
        remaining = task.time_remaining
        if remaining is not None and not task.finished:
            parts.append(f"ETA {remaining / 60:.1f} min")
        self.console.print(" · ".join(parts), soft_wrap=True, markup=True, highlight=False)
        self._last_line = time.monotonic()
        self._lined = True
