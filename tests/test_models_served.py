"""The model id an ``openai:`` server reports enters the reply cache key and the run's digests:
a server restarted with other weights under the same name and URL never has the old replies
served from the cache, and a resumed run refuses to count old conversations under it.

The server is a tiny OpenAI-compatible one on 127.0.0.1 whose model list reports vLLM's
``root`` (the weights it loaded), which a test can change.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from cogwm.arena.config import parse_config
from cogwm.arena.runner import RunSummary, run_arena
from cogwm.errors import ConfigError
from cogwm.models import load, openai_api, registry
from cogwm.models.types import Message, Sampling
from cogwm.store import RunStore
from helpers_agents import serving_handler
from helpers_arena import Script, config, make_reply


@dataclass
class Served:
    """What the server reports and how many chat calls it answered."""

    root: str = "/weights/qwen-a"
    chats: int = 0
    lists: int = 0


@contextmanager
def server() -> Iterator[tuple[str, Served]]:
    state = Served()
    answer = make_reply(Script())

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            state.lists += 1
            entry = {"id": "qwen", "object": "model", "owned_by": "vllm", "root": state.root}
            self._send({"object": "list", "data": [entry]})

        def do_POST(self) -> None:
            state.chats += 1
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            messages = [Message(role=m["role"], content=m["content"]) for m in body["messages"]]
            text = answer(messages, Sampling(seed=body.get("seed")))
            self._send(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "qwen",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                }
            )

        def _send(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    with serving_handler(Handler) as url:
        yield url, state


def new_process() -> None:
    """What a new process starts from: no endpoint asked yet, no backend loaded."""
    openai_api._SERVED.clear()
    registry._shared.clear()


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COGWM_API_KEY", "sk-test")
    # Fresh tables for this test; the process's own come back afterwards.
    monkeypatch.setattr(openai_api, "_SERVED", {})
    monkeypatch.setattr(registry, "_shared", {})


def test_other_weights_behind_the_same_name_and_url_miss_the_cache() -> None:
    with server() as (url, state):
        options = {"base_url": url, "cache": True, "modes": ["json_schema"], "logprobs": False}

        async def ask() -> str:
            model = load("openai:qwen", **options)
            try:
                return (await model.generate("Hello there.", Sampling(seed=1))).text
            finally:
                await model.aclose()

        first = asyncio.run(ask())
        new_process()
        assert asyncio.run(ask()) == first and state.chats == 1  # same weights: a cache hit
        state.root = "/weights/qwen-b"  # restarted with other weights, same name and URL
        new_process()
        asyncio.run(ask())
        assert state.chats == 2  # asked again, never the old weights' reply
        assert state.lists == 3  # one model list per process


def _run(db: Path, raw: dict[str, Any], **kwargs: Any) -> RunSummary:
    with RunStore(db) as store:
        return asyncio.run(run_arena(parse_config(raw), store, show_progress=False, **kwargs))


def test_a_resumed_run_refuses_results_of_other_served_weights(tmp_path: Path) -> None:
    with server() as (url, state):
        options = {"base_url": url, "modes": ["json_schema"], "logprobs": False}
        raw = config(model_name="unused")
        raw["simulator"] = {"model": "openai:qwen", "options": options}
        raw["agents"] = [{**a, "model": "openai:qwen", "options": options} for a in raw["agents"]]
        db = tmp_path / "runs.sqlite"
        assert _run(db, raw).finished > 0
        new_process()
        again = _run(db, raw, resume=True)  # same weights: nothing to do
        assert again.finished == 0 and again.skipped == again.planned
        state.root = "/weights/qwen-b"
        new_process()
        with pytest.raises(ConfigError, match="config changed"):
            _run(db, raw, resume=True)
        forced = _run(db, raw, resume=True, force=True)
        assert forced.stale == forced.planned  # every old conversation is run again


def test_the_command_resumes_a_run_on_a_server_that_lists_its_weights(tmp_path: Path) -> None:
    # Catches: `arena run --resume` checking the stored config hash before asking the servers
    # which weights they serve, so every resumed run on such a server was refused as changed.
    from helpers_cli import cogwm

    with server() as (url, _):
        config = tmp_path / "arena.toml"
        config.write_text(
            f"""
name = "served"
seed = 3
tasks = ["ESC"]
dialogues_per_task = 1
max_rounds = 4
intent_from_round = 4

[simulator]
model = "openai:qwen"
options = {{ base_url = "{url}", modes = ["json_schema"], logprobs = false }}

[[agents]]
name = "warm"
model = "openai:qwen"
options = {{ base_url = "{url}", modes = ["json_schema"], logprobs = false }}
""",
            encoding="utf-8",
        )
        db = tmp_path / "runs.sqlite"
        run = ("arena", "run", config, "--db", db, "--no-progress", "--no-preflight")
        assert cogwm(*run) == 0
        new_process()
        assert cogwm(*run, "--resume") == 0
