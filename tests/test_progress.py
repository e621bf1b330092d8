"""The one progress facility: a live bar on a terminal, plain lines elsewhere, nothing when off."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from cogwm.arena import progress as arena_progress
from cogwm.arena.progress import RunProgress
from cogwm.models.types import CallRecord
from cogwm.progress import ProgressBar


def _console(*, terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=120), out


def test_without_a_terminal_the_bar_ends_with_one_plain_line() -> None:
    # Catches: a bar that prints nothing to a log (or a line per step) where stderr is a file.
    console, out = _console(terminal=False)
    with ProgressBar("scoring", 3, console=console) as bar:
        for _ in range(3):
            bar.update(advance=1, info="2 failed")
    assert out.getvalue().splitlines() == ["scoring · 3/3 · 2 failed"]


def test_without_a_terminal_a_line_is_written_every_interval() -> None:
    # Catches: a long job (training for hours) that says nothing in its log until it ends.
    console, out = _console(terminal=False)
    with ProgressBar("train", 4, console=console, completed=1, line_every_s=0.0) as bar:
        bar.update(completed=2, info="loss 1.000")
        bar.update(completed=4, info="loss 0.500")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("train · 2/4 · loss 1.000")
    assert lines[-1] == "train · 4/4 · loss 0.500"
    assert len(lines) == 2  # the last state was already written: not again at the end


def test_a_disabled_bar_writes_nothing() -> None:
    for terminal in (False, True):
        console, out = _console(terminal=terminal)
        with ProgressBar("x", 2, console=console, enabled=False) as bar:
            bar.update(advance=2)
        assert out.getvalue() == ""


def test_each_stage_counts_on_its_own() -> None:
    # Catches: a new stage that keeps the previous stage's count (or total) and its line.
    console, out = _console(terminal=False)
    with ProgressBar("samples", None, console=console) as bar:
        bar.stage("reading esconv", None)
        bar.update(completed=5)
        bar.stage("building samples", 10)
        bar.update(completed=4)
        bar.stage("building samples", 10)  # the same stage again: the count stays
        bar.update(advance=1)
    lines = out.getvalue().splitlines()
    assert lines[0] == "reading esconv · 5"
    assert lines[1].startswith("building samples · 5/10")
    assert len(lines) == 2


def test_on_a_terminal_the_bar_draws_its_columns() -> None:
    console, out = _console(terminal=True)
    with ProgressBar("conversations", 2, console=console) as bar:
        bar.update(advance=2, info="12 tok")
    drawn = out.getvalue()
    assert "conversations" in drawn and "2/2" in drawn and "12 tok" in drawn and "ETA" in drawn


def test_run_progress_counts_and_reports_through_the_bar() -> None:
    console, out = _console(terminal=False)
    record = CallRecord(
        call_id="c",
        model="fake:x",
        endpoint=None,
        started_at=0.0,
        latency_s=0.1,
        prompt_tokens=3,
        completion_tokens=2,
        cached=False,
        ok=False,
    )
    with RunProgress(2, console=console) as progress:
        progress.on_call(record)
        progress.on_conversation(failed=True)
        progress.on_conversation(failed=False)
    assert (progress.ended, progress.failed, progress.failed_calls, progress.tokens) == (2, 1, 1, 5)
    assert out.getvalue().splitlines() == [
        "conversations · 2/2 · 5 tok · $0.0000 · 1 calls · 1 failed"
    ]


def _record() -> CallRecord:
    return CallRecord(
        call_id="c",
        model="fake:x",
        endpoint=None,
        started_at=0.0,
        latency_s=0.1,
        prompt_tokens=3,
        completion_tokens=2,
        cached=False,
        ok=True,
    )


class _Updates:
    """Counts a bar's updates, and those that change its totals text."""

    def __init__(self, bar: ProgressBar) -> None:
        self.bar_update, self.calls, self.texts = bar.update, 0, 0

    def __call__(self, **changes: Any) -> None:
        self.calls += 1
        self.texts += changes.get("info") is not None
        self.bar_update(**changes)


def test_run_progress_off_counts_without_touching_its_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    # Catches: a run without progress still updating a bar (formatting its totals) on every call.
    with RunProgress(3, enabled=False) as progress:
        updates = _Updates(progress._bar)
        monkeypatch.setattr(progress._bar, "update", updates)
        for _ in range(20):
            progress.on_call(_record())
        progress.on_conversation(failed=True)
    assert (progress.calls, progress.ended, progress.failed, progress.tokens) == (20, 1, 1, 100)
    assert updates.calls == 0


def test_run_progress_updates_its_totals_at_most_every_refresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Catches: the totals text redrawn on every call (more often than rich draws the bar), and
    # a throttle that drops the conversation count or the last totals.
    now = [100.0]
    monkeypatch.setattr(arena_progress, "monotonic", lambda: now[0])
    console, out = _console(terminal=False)
    with RunProgress(2, console=console) as progress:
        updates = _Updates(progress._bar)
        monkeypatch.setattr(progress._bar, "update", updates)
        for _ in range(50):
            progress.on_call(_record())
        progress.on_conversation(failed=False)
        assert (updates.calls, updates.texts) == (2, 1)  # the first call's totals, one advance
        now[0] += 1.0  # past REFRESH_S: the next call shows the totals again
        progress.on_call(_record())
        progress.on_conversation(failed=True)
        assert (updates.calls, updates.texts) == (4, 2)
    assert out.getvalue().splitlines() == [
        "conversations · 2/2 · 255 tok · $0.0000 · 51 calls · 1 failed"
    ]
