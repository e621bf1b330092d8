"""The example agent service (examples/agent_service) in the arena, beside a Python agent and a
model agent: started with uvicorn on 127.0.0.1, two conversations each, one leaderboard."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.models import unregister_fake
from cogwm.report import build_report, load_run
from cogwm.store import RunStore
from helpers_arena import FAKE_NAME, Script, register

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "agent_service"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def service_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    pytest.importorskip("fastapi")
    uvicorn = pytest.importorskip("uvicorn")
    monkeypatch.syspath_prepend(str(EXAMPLE))
    sys.modules.pop("app", None)
    from app import app  # the example's FastAPI app

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the example service did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Script]:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    yield register(Script())
    unregister_fake(FAKE_NAME)


def test_example_config_runs_three_kinds_in_one_leaderboard(
    service_url: str, script: Script, tmp_path: Path
) -> None:
    raw = tomllib.loads((EXAMPLE / "arena.toml").read_text(encoding="utf-8"))
    # The example as shipped, with the simulator and the model agent on the scripted fake and
    # the endpoint on the port the test started the service on.
    fake = f"fake:{FAKE_NAME}"
    raw.update(dialogues_per_task=2, max_rounds=6, intent_from_round=4)
    raw["simulator"] = {"model": fake, "options": {"max_attempts": 1}}
    raw["intent_detector"]["model"] = raw["judge"]["model"] = fake
    agents = {a["name"]: a for a in raw["agents"]}
    agents["rules-http"]["endpoint"] = service_url
    agents["smollm2-empathetic"]["model"] = fake
    db = tmp_path / "byo.sqlite"
    with RunStore(db) as store:
        summary = asyncio.run(run_arena(parse_config(raw), store, show_progress=False))
        conversations = store.conversations()
        http = [c for c in conversations if c.agent == "rules-http"]
        replies = [
            t.text
            for c in http
            for t in store.turns(c.id)
            if t.role == "agent" and t.phase == "simulated"
        ]
        data = load_run(store)
    assert summary.failed == 0 and summary.finished == 6
    assert len(http) == 2 and all(c.status == "finished" for c in http)
    # The service's rules answered (the fake's agent says "agent says N").
    assert replies and all(r.endswith("?") and "agent says" not in r for r in replies)
    report = build_report(data, n_resamples=20)
    assert {row.arm: row.n for row in report.arms} == {f"{name}/no_cot": 2 for name in agents}
