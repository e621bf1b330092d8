"""Why conversations failed: stored errors grouped into causes, with a count and an example.

``arena run`` prints this table when any conversation failed (and then exits with
``EXIT_UNITS_FAILED``); ``arena report`` prints it for the stored run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from rich.table import Table

from cogwm.arena.termination import ConversationStatus, FailureOrigin
from cogwm.store.db import ConversationRow

#: Characters of an error message that name its cause (the rest is usually a detail).
_CAUSE_CHARS = 80


class FailureCause(NamedTuple):
    """Failed conversations with one cause."""

    kind: str  # FailureOrigin value
    cause: str
    n: int
    example: str


def _cause(error: str) -> str:
    # Numbers (ids, ports, counts, seconds) differ between otherwise identical failures.
    first = error.strip().splitlines()[0] if error.strip() else "no message"
    return re.sub(r"\d+", "N", first)[:_CAUSE_CHARS]


def failure_causes(conversations: Iterable[ConversationRow]) -> list[FailureCause]:
    """Infrastructure failures and agent failures, grouped by cause, most frequent first."""
    groups: dict[tuple[str, str], list[str]] = {}
    for row in conversations:
        if row.status == ConversationStatus.FAILED:
            kind = row.failure_kind or FailureOrigin.INFRASTRUCTURE.value
        elif row.failure_kind == FailureOrigin.AGENT:
            kind = FailureOrigin.AGENT.value
        else:
            continue
        error = row.error or "no message"
        groups.setdefault((kind, _cause(error)), []).append(error)
    causes = [
        FailureCause(kind, cause, len(errors), errors[0].strip().splitlines()[0][:300])
        for (kind, cause), errors in groups.items()
    ]
    return sorted(causes, key=lambda c: (-c.n, c.kind, c.cause))


def infrastructure_failures(causes: Iterable[FailureCause]) -> int:
    """Conversations that failed for infrastructure reasons (excluded, re-run by --resume)."""
    return sum(c.n for c in causes if c.kind == FailureOrigin.INFRASTRUCTURE)


def failure_table(causes: list[FailureCause]) -> Table:
    """One row per cause: kind, count and one example message."""
    table = Table(title="Failed conversations by cause", title_justify="left")
    table.add_column("kind")
    table.add_column("n", justify="right")
    table.add_column("example", overflow="fold")
    for cause in causes:
        table.add_row(cause.kind, str(cause.n), cause.example)
    return table
