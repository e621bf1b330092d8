"""The live display of a run: conversations done, ETA, tokens, cost and failures."""

from __future__ import annotations

from time import monotonic
from types import TracebackType

from rich.console import Console

from cogwm.models.types import CallRecord
from cogwm.progress import ProgressBar

#: Seconds between two updates of the bar's totals text: rich draws a live bar 10 times a
#: second (its default refresh rate), so updating it more often draws nothing more.
REFRESH_S = 0.1


class RunProgress:
    """Counts conversations and model-call totals; draws a progress bar when enabled.

    The counts are always kept; the bar is touched only when enabled, and its totals text at
    most every ``REFRESH_S`` seconds and once at the end (a run makes thousands of calls a
    second on a fast backend).
    """

    def __init__(self, total: int, *, enabled: bool = True, console: Console | None = None):
        self.total = total
        self.ended = 0
        self.failed = 0
        self.calls = 0
        self.failed_calls = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self._bar = ProgressBar("conversations", total, enabled=enabled, console=console)
        self._shown = enabled
        self._refreshed = -REFRESH_S  # the first update shows the totals

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
        if self._shown and self._due():
            self._refresh()

    def on_conversation(self, *, failed: bool) -> None:
        """Count one finished (or failed) conversation."""
        self.ended += 1
        self.failed += int(failed)
        if self._shown:
            self._bar.update(advance=1, info=self.stats_line() if self._due() else None)

    def stats_line(self) -> str:
        """Tokens, cost and failures as one line."""
        line = f"{self.tokens:,} tok · ${self.cost_usd:.4f} · {self.calls:,} calls"
        if self.failed:
            line += f" · [red]{self.failed} failed[/red]"
        return line

    def _due(self) -> bool:
        """Whether the totals text may be updated now (then the next is due in REFRESH_S)."""
        now = monotonic()
        if now - self._refreshed < REFRESH_S:
            return False
        self._refreshed = now
        return True

    def _refresh(self) -> None:
        if self._shown:
            self._bar.update(info=self.stats_line())
