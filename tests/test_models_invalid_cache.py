"""A structured call that failed validation is never replayed from the reply cache."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from cogwm.models import load, recording, register_fake, unregister_fake
from cogwm.models.types import CallRecord, Message, Sampling, StructuredOutputError


class Verdict(BaseModel):
    ok: bool


@pytest.fixture
def asked() -> Iterator[list[int]]:
    """The fake answers invalid JSON to its first two calls, valid JSON afterwards."""
    calls: list[int] = []

    def reply(messages: list[Message]) -> str:
        calls.append(len(messages))
        return "not json" if len(calls) <= 2 else '{"ok": true}'

    register_fake("flaky-json", reply)
    yield calls
    unregister_fake("flaky-json")


def _ask(cache: Path, records: list[CallRecord]) -> Verdict:
    async def go() -> Verdict:
        model = load("fake:flaky-json", cache=True, cache_path=str(cache))
        try:
            with recording(records.append):
                result = await model.generate_structured(
                    "Is it ok?", Verdict, Sampling(temperature=0.3, seed=5), tag="t"
                )
            assert isinstance(result.value, Verdict)
            return result.value
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_a_failed_structured_call_gets_a_fresh_sample_next_time(
    tmp_path: Path, asked: list[int]
) -> None:
    # Catches: the invalid reply and its invalid repair were cached, so every --resume replayed
    # the same failure forever without asking the model again.
    cache = tmp_path / "cache.sqlite"
    first: list[CallRecord] = []
    with pytest.raises(StructuredOutputError):
        _ask(cache, first)
    assert len(asked) == 2 and [r.ok for r in first] == [False, False]
    second: list[CallRecord] = []
    assert _ask(cache, second) == Verdict(ok=True)
    assert len(asked) == 3  # the model was asked again, not the cache
    assert [(r.ok, r.cached) for r in second] == [(True, False)]
    # A success is replayed from the cache like any reply.
    third: list[CallRecord] = []
    assert _ask(cache, third) == Verdict(ok=True)
    assert len(asked) == 3 and [r.cached for r in third] == [True]


def test_the_structured_mode_enters_the_cache_key(tmp_path: Path) -> None:
    # Catches: a reply produced under a grammar (json_schema) was served from the cache to a
    # request that an endpoint answers with the schema only in its prompt, and vice versa.
    from cogwm.models.fake import FakeBackend

    register_fake("modal", lambda messages: '{"ok": true}')
    try:

        async def ask(**options: object) -> int:
            model = load("fake:modal", cache=True, cache_path=str(tmp_path / "c.sqlite"), **options)
            await model.generate_structured("Is it ok?", Verdict, Sampling(seed=1))
            backend = model.backend
            assert isinstance(backend, FakeBackend)
            return backend.calls

        assert asyncio.run(ask()) == 1  # json_schema
        assert asyncio.run(ask()) == 0  # same mode: from the cache
        assert asyncio.run(ask(modes=[])) == 1  # prompt only: asked again
        assert asyncio.run(ask(modes=[])) == 0
    finally:
        unregister_fake("modal")
