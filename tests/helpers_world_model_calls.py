"""The requests the arena sends the shipped world model (its LoRA applied at run time), with the
one-at-a-time path's replies."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cogwm.arena.config import parse_config
from cogwm.arena.quickstart import WORLD_MODEL_WINDOW
from cogwm.arena.runner import run_arena
from cogwm.models.llamacpp import LlamaCppBackend
from cogwm.models.llamacpp_batch import ENGINE_ENV
from cogwm.models.types import BackendReply, BackendRequest
from cogwm.store import RunStore

Recorded = list[tuple[BackendRequest, BackendReply]]

#: The world model as its adapter applied at run time: the form whose replies are recorded.
ADAPTER_WORLD_MODEL = "llamacpp:smollm2-wm"


def record_world_model_calls(folder: Path) -> Recorded:
    """A tiny run (two tasks, two scripted agents, two rounds) with the real simulator, one
    request at a time, in ``folder``: each request the world model got and its reply."""
    recorded: Recorded = []
    original = LlamaCppBackend.complete

    async def record(self: LlamaCppBackend, request: BackendRequest, endpoint: str) -> Any:
        reply = await original(self, request, endpoint)
        recorded.append((request, reply))
        return reply

    raw = {
        "seed": 7,
        "tasks": ["ESC", "PD"],
        "dialogues_per_task": 1,
        "max_rounds": 3,
        "intent_from_round": 3,
        "concurrency": 4,
        "simulator": {
            "model": ADAPTER_WORLD_MODEL,
            "temperature": 0.3,
            "max_tokens": 300,
            "history_turns": WORLD_MODEL_WINDOW,
        },
        "intent_detector": {"model": "fake:schema"},
        "judge": {"model": "fake:schema"},
        "profile_annotator": {"model": "fake:schema"},
        "agents": [
            {"name": "echo", "model": "fake:echo"},
            {"name": "dismissive", "python": "cogwm.arena.scripted:Dismissive"},
        ],
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENGINE_ENV, "single")  # the one-at-a-time path
        # A reply cache of its own: another test's run of the same requests must not answer them.
        patch.setenv("COGWM_CACHE_DIR", str(folder / "cache"))
        patch.setattr(LlamaCppBackend, "complete", record)
        with RunStore(folder / "run.db") as store:
            asyncio.run(run_arena(parse_config(raw, source="test"), store, show_progress=False))
    assert len(recorded) >= 6 and all(request.json_schema for request, _ in recorded)
    return recorded
