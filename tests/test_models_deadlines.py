"""Shared-timer call deadlines: as strict as asyncio.timeout, one loop timer per slice."""

from __future__ import annotations

import asyncio

import pytest

from cogwm.models.deadlines import Deadline


async def _guarded(seconds: float, timeout_s: float, resolution_s: float | None = None) -> str:
    with Deadline(timeout_s, resolution_s=resolution_s):
        await asyncio.sleep(seconds)
        return "done"


def test_a_call_within_its_timeout_returns():
    assert asyncio.run(_guarded(0.01, 5.0)) == "done"


def test_a_call_past_its_timeout_is_cancelled_as_timeout_error():
    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(TimeoutError):
            await _guarded(30.0, 0.05, resolution_s=0.05)
        return loop.time() - start

    # Cut at the end of its slice (at most 2 x 0.05 s), not after the 30 s it would have run.
    assert 0.05 <= asyncio.run(main()) < 5.0


def test_a_call_returning_after_its_deadline_but_inside_its_slice_times_out():
    # The slice (1 s) ends long after the 0.02 s deadline: the timer has not fired when the call
    # returns at 0.05 s, yet the call took longer than its timeout.
    with pytest.raises(TimeoutError):
        asyncio.run(_guarded(0.05, 0.02, resolution_s=1.0))


def test_a_cancellation_from_outside_stays_cancelled_error():
    async def main() -> None:
        task = asyncio.create_task(_guarded(30.0, 10.0))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_many_calls_share_a_few_timers(monkeypatch):
    scheduled: list[float] = []

    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        call_at = loop.call_at

        def counting(when, callback, *args, **kwargs):  # type: ignore[no-untyped-def]
            if getattr(callback, "__name__", "") == "_fire":
                scheduled.append(when)
            return call_at(when, callback, *args, **kwargs)

        monkeypatch.setattr(loop, "call_at", counting)
        return await asyncio.gather(*(_guarded(0.01, 30.0) for _ in range(1000)))

    assert asyncio.run(main()) == ["done"] * 1000
    assert 1 <= len(scheduled) <= 3  # all 1,000 deadlines fall in one or two 0.47 s slices


def test_no_timer_is_left_behind():
    async def main() -> int:
        await asyncio.gather(*(_guarded(0.0, 30.0) for _ in range(10)))
        loop = asyncio.get_running_loop()
        return sum(1 for h in loop._scheduled if not h.cancelled())  # type: ignore[attr-defined]

    assert asyncio.run(main()) == 0


def test_outside_a_task_is_an_error():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        deadline = Deadline(1.0)
        # A plain callback runs outside any task.
        failed: list[BaseException] = []

        def enter() -> None:
            try:
                deadline.__enter__()
            except RuntimeError as error:
                failed.append(error)

        loop.call_soon(enter)
        await asyncio.sleep(0)
        assert failed

    asyncio.run(main())
