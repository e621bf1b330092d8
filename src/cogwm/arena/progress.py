"""The live display of a run: conversations done, ETA, tokens, cost and failures."""

from __future__ import annotations

from types import TracebackType

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

from cogwm.models.types import CallRecord


class RunProgress:
    """Counts conversations and model-call totals; draws a rich progress bar when enabled."""

    def __init__(self, total: int, *, enabled: bool = True, console: Console | None = None):
        self.total = total
        self.ended = 0
        self.failed = 0
        self.calls = 0
        self.failed_calls = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if enabled:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[stats]}"),
                console=console or Console(stderr=True),
                transient=False,
            )

    def __enter__(self) -> RunProgress:
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task("conversations", total=self.total, stats="")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._refresh()
            self._progress.stop()

    def on_call(self, record: CallRecord) -> None:
        """Add one model call to the totals."""
        self.calls += 1
        self.failed_calls += 0 if record.ok else 1
        self.tokens += record.prompt_tokens + record.completion_tokens
        self.cost_usd += record.cost_usd
        if self.calls % 8 == 0:
            self._refresh()

    def on_conversation(self, *, failed: bool) -> None:
        """Count one finished (or failed) conversation."""
        self.ended += 1
        self.failed += int(failed)
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task)
        self._refresh()

    def stats_line(self) -> str:
        """Tokens, cost and failures as one line."""
        line = f"{self.tokens:,} tok · ${self.cost_usd:.4f} · {self.calls:,} calls"
        if self.failed:
            line += f" · [red]{self.failed} failed[/red]"
        return line

    def _refresh(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, stats=self.stats_line())
