"""Fault soak (slow): injected 5xx, timeouts and malformed JSON never end the run, never score
a failure as 0, and resuming finishes every conversation."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from bench_arena_soak import check_store, soak

pytestmark = pytest.mark.slow


def test_a_faulty_backend_never_ends_the_run_and_resume_finishes_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Catches: a malformed reply was cached and replayed on every resume (its conversation could
    # never finish); a failure leaving metrics or a 0 behind; earlier attempts' calls dropped.
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    passes = soak(100, 20, tmp_path, max_resumes=8)
    first = passes[0]
    assert first.failed > 0 and first.finished > 0  # the faults really bit
    assert set(first.failed_calls) <= {"server_error", "timeout", "invalid_output"}
    assert set(first.reasons) <= {"server_error", "timeout", "invalid_output"}
    assert sum(first.reasons.values()) == first.failed  # every failure counted by kind
    assert passes[-1].failed == 0  # resuming finished every conversation
    counts = check_store(tmp_path / "soak.sqlite")
    assert counts["finished"] == 100
    assert counts["retried_conversations"] == first.failed
    assert counts["calls_of_earlier_attempts_kept"] > 0
