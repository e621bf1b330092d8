"""Agents of three kinds in the arena: model + prompt, an HTTP endpoint, a Python object."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cogwm.arena.config import config_hash, parse_config
from cogwm.arena.runner import RunSummary, run_arena
from cogwm.errors import ConfigError
from cogwm.models import unregister_fake
from cogwm.store import RunStore
from helpers_agents import EchoAgent, Service, serving
from helpers_arena import FAKE_NAME, Script, config, register

FAKE = f"fake:{FAKE_NAME}"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def script() -> Iterator[Script]:
    yield register(Script())
    unregister_fake(FAKE_NAME)


def _raw(*agents: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    return config(tasks=["ESC"], agents=list(agents), **overrides)


def _run(db: Path, raw: dict[str, Any]) -> RunSummary:
    with RunStore(db) as store:
        return asyncio.run(run_arena(parse_config(raw), store, show_progress=False))


def _conversations(db: Path) -> list[Any]:
    with RunStore(db) as store:
        return store.conversations()


# ------------------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ({"name": "x"}, r"agents\.0\.model: a model address is required"),
        ({"name": "x", "endpoint": "http://h/v1", "python": "a.b:c"}, "python: give one of"),
        ({"name": "x", "python": "a.b"}, "package.module:factory"),
        ({"name": "x", "endpoint": "ftp://h/v1"}, "http://"),
        ({"name": "x", "endpoint": "http://h/v1", "conditions": ["cot"]}, "no_cot"),
        ({"name": "x", "endpoint": "http://h/v1", "headers": {"X-Key": "sk-123"}}, "variable"),
        ({"name": "x", "model": FAKE, "headers": {"X-Key": "KEY"}}, "endpoint agents only"),
    ],
)
def test_bad_agent_configs_name_the_problem(agent: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(_raw(agent))


def test_model_agent_hash_is_unchanged_by_the_new_kinds() -> None:
    # The hash of a model agent holds exactly the fields it held before endpoint and Python
    # agents existed: old stores resume without --force.
    agent = parse_config(config()).agents[0]
    assert set(agent.hashed()) == {
        "model", "options", "temperature", "max_tokens", "top_p", "repeat_penalty", "name",
        "prompt", "conditions", "reasoning_max_tokens",
    }  # fmt: skip


def test_identities_enter_the_config_hash() -> None:
    base = {"name": "svc", "endpoint": "http://127.0.0.1:9/v1", "model": "m"}
    hashes = {
        config_hash(parse_config(_raw(a)))
        for a in (
            base,
            {**base, "model": "other"},
            {**base, "version": "2"},
            {**base, "endpoint": "http://127.0.0.1:10/v1"},
        )
    }
    assert len(hashes) == 4
    py = parse_config(_raw({"name": "py", "python": "helpers_agents:EchoAgent"}))
    assert py.agents[0].hashed()["version"] == "echo-2"


def test_unimportable_python_agent_is_a_config_error() -> None:
    raw = _raw({"name": "py", "python": "no_such_module_here:Agent"})
    with pytest.raises(ConfigError, match=r"agents\.0\.python: .*cannot import"):
        parse_config(raw)


# -------------------------------------------------------------------------------- python agents


def test_python_agent_plays_and_sees_no_user_state(script: Script, tmp_path: Path) -> None:
    EchoAgent.seen.clear()
    db = tmp_path / "runs.sqlite"
    raw = _raw(
        {"name": "echo", "python": "helpers_agents:EchoAgent"},
        {"name": "warm", "model": FAKE, "prompt": "builtin:empathetic"},
    )
    summary = _run(db, raw)
    assert summary.failed == 0 and summary.finished == 4
    models = {c.agent: c.agent_model for c in _conversations(db)}
    assert models == {"echo": "python:helpers_agents:EchoAgent", "warm": FAKE}
    brief, _ = EchoAgent.seen[0]
    assert brief.task == "ESC" and brief.system and "empathetic" not in brief.system.lower()
    # The simulated user's states never reach the agent under test.
    assert all(t.state is None for _, h in EchoAgent.seen for t in h)
    with RunStore(db) as store:
        echo = next(c for c in store.conversations() if c.agent == "echo")
        turns = store.turns(echo.id)
    replies = [t for t in turns if t.role == "agent" and t.phase == "simulated"]
    assert replies and replies[0].text == f"I hear you: {turns[replies[0].idx - 1].text}"


def test_blank_python_reply_is_the_agents_scored_failure(script: Script, tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    _run(db, _raw({"name": "silent", "python": "helpers_agents:AsyncSilentAgent"}))
    for row in _conversations(db):
        assert (row.status, row.termination, row.failure_kind) == (
            "finished",
            "agent_failure",
            "agent",
        )
        assert "empty reply" in (row.error or "")


# ------------------------------------------------------------------------------ endpoint agents


def _endpoint(url: str, **extra: Any) -> dict[str, Any]:
    return {"name": "svc", "endpoint": url, "model": "rules", "options": {"max_attempts": 2,
            "backoff_base_s": 0.0, "backoff_max_s": 0.0}, **extra}  # fmt: skip


def test_endpoint_agent_gets_the_chat_and_the_header_from_the_environment(
    script: Script, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "svc-token-5f1e0d9c8b7a"
    monkeypatch.setenv("AGENT_TOKEN", secret)
    service = Service()
    db = tmp_path / "runs.sqlite"
    with serving(service) as url:
        summary = _run(db, _raw(_endpoint(url, headers={"X-Agent-Token": "AGENT_TOKEN"})))
    assert summary.finished == 2 and summary.failed == 0
    first = service.requests[0]
    assert first["model"] == "rules"
    roles = [m["role"] for m in first["messages"]]
    assert roles[0] == "system" and set(roles[1:]) <= {"user", "assistant"}
    assert roles[-1] == "user"  # the user spoke last: the agent's turn
    assert all(h["x-agent-token"] == secret for h in service.headers)
    # The secret reaches the service and nothing else: not the store, not the config.
    assert secret.encode() not in db.read_bytes()
    rows = _conversations(db)
    assert {r.agent_model for r in rows} == {f"endpoint:{url} rules"}


def test_endpoint_without_system_message(script: Script, tmp_path: Path) -> None:
    service = Service()
    with serving(service) as url:
        _run(tmp_path / "runs.sqlite", _raw(_endpoint(url, system_message=False)))
    assert service.requests and all(
        m["role"] != "system" for r in service.requests for m in r["messages"]
    )


@pytest.mark.parametrize(("mode", "error"), [("empty", "empty reply"), ("long", "budget")])
def test_endpoint_bad_reply_is_the_agents_failure(
    script: Script, tmp_path: Path, mode: str, error: str
) -> None:
    db = tmp_path / "runs.sqlite"
    with serving(Service(mode=mode)) as url:
        summary = _run(db, _raw(_endpoint(url)))
    assert summary.failed == 0
    for row in _conversations(db):
        assert (row.termination, row.failure_kind) == ("agent_failure", "agent")
        assert error in (row.error or "")


def test_endpoint_down_is_infrastructure_after_retries(script: Script, tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    service = Service(mode="down")
    with serving(service) as url:
        summary = _run(db, _raw(_endpoint(url)))
    assert summary.failed == 2
    assert len(service.requests) == 4  # two conversations, two attempts each
    for row in _conversations(db):
        assert (row.status, row.failure_kind) == ("failed", "infrastructure")


def test_endpoint_replies_are_not_cached_by_default(script: Script, tmp_path: Path) -> None:
    service = Service()
    with serving(service) as url:
        _run(tmp_path / "a.sqlite", _raw(_endpoint(url)))
        asked = len(service.requests)
        _run(tmp_path / "b.sqlite", _raw(_endpoint(url)))
        assert len(service.requests) == 2 * asked
        _run(tmp_path / "c.sqlite", _raw(_endpoint(url, cache=True)))
        _run(tmp_path / "d.sqlite", _raw(_endpoint(url, cache=True)))
        assert len(service.requests) == 3 * asked  # the second cached run asked nothing
