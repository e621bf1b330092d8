"""The live display of a run: conversations done, ETA, tokens, cost and failures."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console

from cogwm.models.types import CallRecord
from cogwm.progress import ProgressBar


class RunProgress:
    """Counts conversations and model-call totals; draws a progress bar when enabled."""

    def __init__(self, total: int, *, enabled: bool = True, console: Console | None = None):
        self.total = total
        self.ended = 0
        self.failed = 0
        self.calls = 0
        self.failed_calls = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self._bar = ProgressBar("conversations", total, enabled=enabled, console=console)

    def __enter__(self) -> RunProgress:
        self._bar.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._refresh()
        self._bar.__exit__(exc_type, exc, tb)

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
        self._bar.update(advance=1, info=self.stats_line())

    def stats_line(self) -> str:
        """Tokens, cost and failures as one line."""
        line = f"{self.tokens:,} tok · ${self.cost_usd:.4f} · {self.calls:,} calls"
        if self.failed:
            line += f" · [red]{self.failed} failed[/red]"
        return line

    def _refresh(self) -> None:
        self._bar.update(info=self.stats_line())
