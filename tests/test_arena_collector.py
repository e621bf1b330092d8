"""The cyclic garbage collector during an arena run: tuned while it runs, restored after."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest

from cogwm.arena.collector import RUN_THRESHOLD, steady_collector
from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.models import register_fake, unregister_fake
from cogwm.models.types import Message
from cogwm.store import RunStore
from helpers_arena import FAKE_NAME, Script, config, make_reply


def test_steady_collector_freezes_raises_the_threshold_and_restores_once() -> None:
    before = gc.get_threshold()
    with steady_collector():
        assert gc.get_threshold()[0] == max(before[0], RUN_THRESHOLD)
        assert gc.get_freeze_count() > 0  # what was alive at the start is left alone
        with steady_collector():  # nested: nothing restored at its end
            pass
        assert gc.get_threshold()[0] == max(before[0], RUN_THRESHOLD)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_run_holds_the_tuned_collector_and_gives_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    before = gc.get_threshold()
    seen: list[int] = []
    reply = make_reply(Script())

    def observed(messages: list[Message], sampling: Any = None) -> str:
        seen.append(gc.get_threshold()[0])
        return reply(messages, sampling)

    register_fake(FAKE_NAME, observed)
    try:
        with RunStore(tmp_path / "run.sqlite") as store:
            summary = asyncio.run(run_arena(parse_config(config()), store, show_progress=False))
    finally:
        unregister_fake(FAKE_NAME)
    assert summary.finished > 0
    assert seen and set(seen) == {max(before[0], RUN_THRESHOLD)}
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
