"""Spreading calls over endpoints under per-endpoint limits, and retrying what is worth retrying."""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Awaitable, Callable
from typing import NamedTuple, TypeVar

from cogwm.models.types import BackendError

R = TypeVar("R")

Sleep = Callable[[float], Awaitable[None]]


class _LoopState:
    """Per-event-loop state: asyncio futures cannot be shared across event loops."""

    def __init__(self, endpoints: list[str]) -> None:
        self.in_flight = dict.fromkeys(endpoints, 0)
        self.waiters: deque[asyncio.Future[str]] = deque()
        self.turn = 0


class EndpointPool:
    """Equivalent endpoints of one model, each with a cap on calls in flight.

    ``slot()`` takes the least busy endpoint below its cap (ties go round-robin), so a slow replica
    gets fewer calls and a fast one more. When all are full, callers queue in FIFO order and a
    finishing call hands its endpoint straight to the next one in line.
    """

    def __init__(self, endpoints: list[str], max_concurrency: int) -> None:
        if not endpoints:
            raise ValueError("an endpoint pool needs at least one endpoint")
        self.endpoints = list(endpoints)
        self.max_concurrency = max_concurrency
        self._states: dict[int, tuple[asyncio.AbstractEventLoop, _LoopState]] = {}

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        entry = self._states.get(id(loop))
        if entry is None or entry[0] is not loop:
            # Drop states of closed loops so ids cannot be confused after reuse.
            self._states = {k: v for k, v in self._states.items() if not v[0].is_closed()}
            entry = self._states[id(loop)] = (loop, _LoopState(self.endpoints))
        return entry[1]

    def _pick(self, state: _LoopState, avoid: str | None = None) -> str | None:
        n = len(self.endpoints)
        best: str | None = None
        best_load = 0
        for offset in range(n):
            endpoint = self.endpoints[(state.turn + offset) % n]
            busy = state.in_flight[endpoint]
            if busy >= self.max_concurrency:
                continue
            # A retry goes elsewhere if it can: the endpoint that just failed counts as full.
            load = busy + (self.max_concurrency if endpoint == avoid else 0)
            if best is None or load < best_load:
                best, best_load = endpoint, load
        return best

    async def _acquire(self, state: _LoopState, avoid: str | None) -> str:
        endpoint = self._pick(state, avoid) if not state.waiters else None
        if endpoint is not None:
            state.in_flight[endpoint] += 1
            state.turn += 1
            return endpoint
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        state.waiters.append(waiter)
        try:
            return await waiter  # the releasing call has already counted us in
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release(state, waiter.result())  # handed a slot while being cancelled
            elif waiter in state.waiters:  # a release may already have dropped it as done
                state.waiters.remove(waiter)
            raise

    def _release(self, state: _LoopState, endpoint: str) -> None:
        state.in_flight[endpoint] -= 1
        while state.waiters:
            waiter = state.waiters.popleft()
            if waiter.done():
                continue
            chosen = self._pick(state)
            if chosen is None:  # cannot happen right after a release; keep the waiter anyway
                state.waiters.appendleft(waiter)
                return
            state.in_flight[chosen] += 1
            state.turn += 1
            waiter.set_result(chosen)
            return

    def slot(self, avoid: str | None = None) -> _Slot:
        """Hold one call slot (``async with``); gives the endpoint to use (``avoid``: one that
        just failed)."""
        return _Slot(self, avoid)

    def in_flight(self) -> dict[str, int]:
        """Calls in flight per endpoint on the running loop."""
        return dict(self._state().in_flight)


class _Slot:
    """One call slot of an ``EndpointPool`` (a class, not ``@asynccontextmanager``: it is entered
    once per model call, and a generator-based manager costs several times as much)."""

    __slots__ = ("_avoid", "_endpoint", "_pool", "_state")

    def __init__(self, pool: EndpointPool, avoid: str | None) -> None:
        self._pool = pool
        self._avoid = avoid
        self._state: _LoopState | None = None
        self._endpoint: str | None = None

    async def __aenter__(self) -> str:
        self._state = state = self._pool._state()
        self._endpoint = await self._pool._acquire(state, self._avoid)
        return self._endpoint

    async def __aexit__(self, *exc_info: object) -> None:
        if self._state is not None and self._endpoint is not None:
            self._pool._release(self._state, self._endpoint)
            self._endpoint = None


class RetryPolicy(NamedTuple):
    """Bounded exponential backoff with full jitter.

    Attempt ``n`` (1-based) that fails retryably waits ``uniform(0, min(max_s, base_s * 2**(n-1)))``
    — or the server's Retry-After if that is longer (capped at ``max_s``) — before the next one.
    """

    max_attempts: int = 4
    base_s: float = 0.5
    max_s: float = 30.0

    def delay(self, attempt: int, retry_after_s: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt``."""
        backoff = rng.uniform(0.0, min(self.max_s, self.base_s * 2 ** (attempt - 1)))
        if retry_after_s is not None:
            backoff = max(backoff, min(retry_after_s, self.max_s))
        return backoff


class AttemptFailure(NamedTuple):
    """The last error of a call that gave up, and how many attempts it made."""

    error: BackendError
    attempts: int


async def with_retries(
    attempt: Callable[[], Awaitable[R]],
    policy: RetryPolicy,
    *,
    sleep: Sleep = asyncio.sleep,
    rng: random.Random | None = None,
    on_retry: Callable[[BackendError, int, float], None] | None = None,
) -> tuple[R, int]:
    """Run ``attempt`` until it succeeds, fails for good, or the attempts run out.

    Returns:
        The result and the number of attempts made.

    Raises:
        AttemptFailureError: With the last ``BackendError`` and the attempt count.
    """
    rng = rng or random.Random()
    for number in range(1, policy.max_attempts + 1):
        try:
            return await attempt(), number
        except BackendError as error:
            if not error.kind.retryable or number == policy.max_attempts:
                raise AttemptFailureError(AttemptFailure(error, number)) from error
            wait = policy.delay(number, error.retry_after_s, rng)
            if on_retry is not None:
                on_retry(error, number, wait)
            await sleep(wait)
    raise AssertionError("unreachable: the loop returns or raises")


class AttemptFailureError(Exception):
    """Carries an ``AttemptFailure`` out of ``with_retries``."""

    def __init__(self, failure: AttemptFailure) -> None:
        super().__init__(str(failure.error))
        self.failure = failure
