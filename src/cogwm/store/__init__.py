"""The SQLite run store: runs, scenario preparations, conversations, turns, model calls, metrics."""

from cogwm.store.db import (
    CallTotals,
    ConversationRow,
    PrepRow,
    RunRow,
    RunStore,
    StoreBusyError,
    TurnRow,
    UnitRow,
    stored_run,
)
from cogwm.store.merge import MergeSummary, merge_stores
from cogwm.store.schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "CallTotals",
    "ConversationRow",
    "MergeSummary",
    "PrepRow",
    "RunRow",
    "RunStore",
    "StoreBusyError",
    "TurnRow",
    "UnitRow",
    "merge_stores",
    "stored_run",
]
