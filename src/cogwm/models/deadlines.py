"""Per-call timeouts that share event-loop timers: one timer per slice of time, not per call.

``asyncio.timeout`` schedules one timer per call and cancels it when the call returns; with a
thousand calls in flight the loop's timer heap holds a thousand live and as many cancelled handles,
and every push and pop of the model latencies' own timers compares its way through them. Here a
call's deadline is rounded *up* to a slice of its timeout (``timeout_s / SLICES``) and all calls
whose deadlines fall in one slice share one timer; entering and leaving a deadline is a set
insertion and removal.

Semantics are those of ``asyncio.timeout``, made exact where rounding would loosen them:

- a call still running when its slice's timer fires is cancelled, and the cancellation surfaces
  as ``TimeoutError`` (a cancellation from outside stays ``CancelledError``);
- a call that returns at or after its deadline (before the slice's timer fired) raises
  ``TimeoutError`` too, so whether a call timed out depends on its own duration, never on which
  slice it fell in. No call is cut before its timeout.
"""

from __future__ import annotations

import asyncio
import math
from types import TracebackType

#: A timeout is rounded up to at most 1/SLICES of itself (0.47 s of a 30 s timeout).
SLICES = 64


class _Slice:
    """The calls whose deadlines end in one slice, and the timer that expires them."""

    __slots__ = ("calls", "handle")

    def __init__(self) -> None:
        self.calls: set[Deadline] = set()
        self.handle: asyncio.TimerHandle | None = None


class _LoopSlices:
    """One event loop's slices by end time (timers cannot be shared across loops)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.slices: dict[float, _Slice] = {}

    def join(self, call: Deadline, end: float) -> _Slice:
        piece = self.slices.get(end)
        if piece is None:
            piece = self.slices[end] = _Slice()
            piece.handle = self.loop.call_at(end, self._fire, end)
        piece.calls.add(call)
        return piece

    def leave(self, call: Deadline, end: float, piece: _Slice) -> None:
        piece.calls.discard(call)
        if not piece.calls and self.slices.get(end) is piece:
            del self.slices[end]
            if piece.handle is not None:
                piece.handle.cancel()

    def _fire(self, end: float) -> None:
        piece = self.slices.pop(end, None)
        if piece is not None:
            for call in list(piece.calls):
                call._expire()


_current: _LoopSlices | None = None


def _slices(loop: asyncio.AbstractEventLoop) -> _LoopSlices:
    """The running loop's slices (a new loop, e.g. the next ``asyncio.run``, starts afresh)."""
    global _current
    if _current is None or _current.loop is not loop:
        _current = _LoopSlices(loop)
    return _current


class Deadline:
    """A timeout for the block it guards: ``with Deadline(30.0): await call()``.

    Raises ``TimeoutError`` on leaving the block when the block ran ``timeout_s`` or longer
    (cancelling it at the end of its slice if it is still running). Use it inside a task.
    """

    __slots__ = (
        "_cancelling",
        "_end",
        "_expired",
        "_owner",
        "_slice",
        "_task",
        "_when",
        "_width",
        "timeout_s",
    )

    def __init__(self, timeout_s: float, *, resolution_s: float | None = None) -> None:
        """``resolution_s`` (default ``timeout_s / SLICES``): the width of the shared slices."""
        self.timeout_s = timeout_s
        self._width = resolution_s if resolution_s is not None else timeout_s / SLICES
        self._expired = False

    def __enter__(self) -> Deadline:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("Deadline must be used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._when = when = loop.time() + self.timeout_s
        width = self._width
        end = math.ceil(when / width) * width if width > 0 else when
        if end < when:  # float rounding must never end a slice before a deadline in it
            end += width
        self._end = end
        self._owner = _slices(loop)
        self._slice = self._owner.join(self, end)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._owner.leave(self, self._end, self._slice)
        # As asyncio.timeout: our cancellation becomes TimeoutError, unless the task was also
        # cancelled from outside (then the CancelledError goes on).
        if (
            self._expired
            and self._task.uncancel() <= self._cancelling
            and exc_type is asyncio.CancelledError
        ):
            raise TimeoutError from exc
        if exc_type is None and self._owner.loop.time() >= self._when:
            raise TimeoutError  # returned late, before its slice's timer: late all the same

    def _expire(self) -> None:
        if not self._task.done():
            self._expired = True
            self._task.cancel()
