"""Reporting every model call to whoever is listening, through a context variable.

A context variable (not a global list) is used so that concurrent runs in one process keep their
records apart, and so that asyncio tasks started inside ``recording(...)`` inherit the listener:
``asyncio.create_task`` copies the current context.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from cogwm.models.types import CallRecord

log = logging.getLogger("cogwm.models")

RecordCallback = Callable[[CallRecord], None]

_listeners: ContextVar[tuple[RecordCallback, ...]] = ContextVar("cogwm_model_listeners", default=())


@contextmanager
def recording(callback: RecordCallback) -> Iterator[None]:
    """Report every model call made inside this block to ``callback``.

    Calls made in asyncio tasks created inside the block are reported too. Blocks nest: an inner
    block adds its callback to the outer ones.

    Args:
        callback: Called with one ``CallRecord`` per model call (cache hits and failures included).
    """
    token = _listeners.set((*_listeners.get(), callback))
    try:
        yield
    finally:
        _listeners.reset(token)


def emit(record: CallRecord) -> None:
    """Send ``record`` to the listeners of the current context and to the debug log."""
    log.debug(
        "model call %s %s endpoint=%s ok=%s cached=%s latency=%.3fs error=%s",
        record.call_id,
        record.model,
        record.endpoint,
        record.ok,
        record.cached,
        record.latency_s,
        record.error,
    )
    for callback in _listeners.get():
        callback(record)
