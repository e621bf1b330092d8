"""Fault injection: a batch completes under server errors, timeouts and malformed JSON."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from cogwm.models import (
    CallRecord,
    FailureKind,
    Faults,
    ModelCallError,
    Structured,
    StructuredOutputError,
    load,
    recording,
)


class Label(BaseModel):
    emotion: Literal["joy", "anger", "sadness", "neutral"]
    intensity: int = Field(ge=1, le=3)
    score: float = Field(ge=0, le=2)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path))


async def _no_wait(seconds: float) -> None:
    return None


def test_batch_completes_and_every_surviving_failure_is_recorded():
    faults = Faults(server_error=0.2, timeout=0.1, malformed_json=0.1, seed=7)
    model = load("fake:schema", faults=faults, max_attempts=3, endpoints=2)
    model.sleep = _no_wait
    records: list[CallRecord] = []
    n = 300

    async def run() -> list[Structured[Label] | BaseException]:
        calls = (model.generate_structured(f"utterance {i}", Label) for i in range(n))
        return await asyncio.gather(*calls, return_exceptions=True)

    with recording(records.append):
        results = asyncio.run(run())

    assert len(results) == n
    ok = [r for r in results if isinstance(r, Structured)]
    failed = [r for r in results if isinstance(r, BaseException)]
    # Nothing but typed failures escapes.
    assert all(isinstance(e, ModelCallError) for e in failed)
    by_id = {r.call_id: r for r in records}
    for error in failed:
        record = by_id[error.call_id]
        assert not record.ok
        assert record.error and record.error.startswith(record.error_kind.value)
        if isinstance(error, StructuredOutputError):
            assert record.error_kind is FailureKind.INVALID_OUTPUT
        else:
            assert record.error_kind in {FailureKind.SERVER, FailureKind.TIMEOUT}
            assert record.attempts == 3
    # Expected rates: a call's transport fails all 3 attempts with p = 0.3**3 = 2.7 %;
    # structured output fails when both the answer and the repair are malformed, p ~ 1 %.
    kinds = Counter(type(e).__name__ for e in failed)
    assert 0 < len(failed) < 0.1 * n
    assert kinds["StructuredOutputError"] >= 1
    assert kinds["ModelCallError"] >= 1
    assert len(ok) + len(failed) == n
    # Retries happened and were counted: well over one attempt per backend call on average.
    assert model.stats.attempt_failures[FailureKind.SERVER.value] > 0.1 * n
    assert model.stats.attempt_failures[FailureKind.TIMEOUT.value] > 0.05 * n
    # The repair path rescued most malformed answers.
    assert sum(1 for r in ok if r.repaired) > 0.05 * n
