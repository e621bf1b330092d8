"""API keys never reach exceptions, call records, logs, reprs or the cache.

A local HTTP server plays an OpenAI-compatible endpoint that misbehaves in the worst way: its
error bodies echo the Authorization header back.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from cogwm.errors import ConfigError
from cogwm.models import CallRecord, FailureKind, ModelCallError, Sampling, load, recording
from helpers_agents import serving_handler

FAKE_KEY = "sk-test-DO-NOT-LEAK-8f3a9c1e"
URL_PASSWORD = "pw-DO-NOT-LEAK-77"


class _LeakyHandler(BaseHTTPRequestHandler):
    """Fails with the caller's Authorization header in the body, except for prompts saying 'ok'."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        request = json.loads(self.rfile.read(length))
        auth = self.headers.get("Authorization", "")
        prompt = request["messages"][-1]["content"]
        if prompt == "ok":
            self._send(200, _completion(f"fine ({len(auth)} chars of auth)"))
        elif prompt == "limit":
            self._send(429, {"error": {"message": f"slow down {auth}"}}, {"Retry-After": "0"})
        elif prompt == "auth":
            self._send(401, {"error": {"message": f"bad key {auth}"}})
        else:
            self._send(500, {"error": {"message": f"upstream failed for {auth}"}})

    def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return


def _completion(text: str) -> dict:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


@pytest.fixture
def leaky_server() -> Iterator[str]:
    with serving_handler(_LeakyHandler) as url:
        yield url


def test_key_never_leaks(leaky_server, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("COGWM_API_KEY", FAKE_KEY)
    cache_file = tmp_path / "cache.sqlite"
    model = load(
        "openai:m",
        base_url=leaky_server,
        cache=True,
        cache_path=str(cache_file),
        max_attempts=2,
        backoff_base_s=0.0,
    )
    records: list[CallRecord] = []
    errors: list[ModelCallError] = []

    async def run() -> str:
        text = (await model.generate("ok", Sampling(max_tokens=4))).text
        for prompt in ("boom", "limit", "auth"):
            try:
                await model.generate(prompt, Sampling(max_tokens=4))
            except ModelCallError as exc:
                errors.append(exc)
        await model.aclose()
        return text

    caplog.set_level(logging.DEBUG)
    with recording(records.append):
        text = asyncio.run(run())

    # The server did receive the key (so the test would see a leak if there were one).
    assert text == f"fine ({len('Bearer ' + FAKE_KEY)} chars of auth)"
    assert [e.kind for e in errors] == [
        FailureKind.SERVER,
        FailureKind.RATE_LIMIT,
        FailureKind.CLIENT,
    ]
    assert "***" in errors[0].reason  # the echoed key was scrubbed, not dropped silently

    exposed = [
        *(str(e) for e in errors),
        *(e.reason for e in errors),
        *(r.model_dump_json() for r in records),
        caplog.text,
        repr(model),
        repr(model.backend),
        json.dumps(model.backend.describe()),
        " ".join(model.endpoints),
        cache_file.read_bytes().decode("latin-1"),
    ]
    for text_ in exposed:
        assert FAKE_KEY not in text_
    assert len(records) == 4


def test_credentials_in_base_url_are_refused_without_echo(leaky_server):
    url = leaky_server.replace("http://", f"http://user:{URL_PASSWORD}@")
    with pytest.raises(ConfigError, match="carries credentials") as info:
        load("openai:m", base_url=url)
    assert URL_PASSWORD not in str(info.value)


def test_explicit_key_option_is_hidden_too(leaky_server):
    model = load("openai:m", base_url=leaky_server, api_key=FAKE_KEY, max_attempts=1)
    with pytest.raises(ModelCallError) as info:
        asyncio.run(model.generate("boom"))
    assert FAKE_KEY not in str(info.value)
    assert FAKE_KEY not in repr(model.backend.options)


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception reachable through ``__cause__`` and ``__context__``."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        todo += [current.__cause__, current.__context__]
    return seen


def test_failed_call_does_not_carry_the_client_request(leaky_server, monkeypatch):
    # The openai client's exceptions hold the HTTP request, Authorization header included;
    # ``raise ... from None`` hides it from tracebacks but keeps it as ``__context__``.
    monkeypatch.setenv("COGWM_API_KEY", FAKE_KEY)
    model = load("openai:m", base_url=leaky_server, max_attempts=1)

    async def run() -> ModelCallError:
        try:
            await model.generate("boom")
        except ModelCallError as exc:
            return exc
        finally:
            await model.aclose()
        raise AssertionError("the call should have failed")

    error = asyncio.run(run())
    for exc in _chain(error):
        assert FAKE_KEY not in repr(exc)
        request = getattr(exc, "request", None)
        headers = dict(getattr(request, "headers", {}) or {})
        assert FAKE_KEY not in json.dumps(headers), type(exc).__name__


def test_extra_body_and_the_endpoint_enter_the_identity(leaky_server):
    # Two servers may serve different weights under one model name: their replies must never
    # be served for each other from the cache.
    second = leaky_server.replace("127.0.0.1", "localhost")
    plain = load("openai:m", base_url=leaky_server)
    elsewhere = load("openai:m", base_url=second)
    top_k = load("openai:m", base_url=leaky_server, extra_body={"top_k": 5})
    assert plain.identity == f"openai:m@{leaky_server}"
    assert elsewhere.identity != plain.identity
    assert top_k.identity != plain.identity
    assert (
        top_k.identity == load("openai:m", base_url=leaky_server, extra_body={"top_k": 5}).identity
    )
    both = load("openai:m", base_url=[leaky_server, second])
    assert both.identity == load("openai:m", base_url=[second, leaky_server]).identity


def test_clients_of_finished_event_loops_are_dropped(leaky_server):
    model = load("openai:m", base_url=leaky_server, cache=False)
    for _ in range(3):  # three asyncio.run calls, three event loops
        asyncio.run(model.generate("ok", Sampling(max_tokens=2)))
    backend = model.backend
    assert len(backend._clients) == 1  # type: ignore[attr-defined]
