"""The fake backend: schema-valid JSON, echo, scripted replies, latency."""

from __future__ import annotations

import asyncio
import json
import random
from enum import StrEnum
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from cogwm.errors import ConfigError
from cogwm.models import (
    BackendReply,
    ChoicePath,
    Message,
    Sampling,
    example_for_schema,
    load,
    register_fake,
    unregister_fake,
)
from cogwm.models.fake import FakeScriptExhaustedError


class Mood(StrEnum):
    LOW = "low"
    HIGH = "high"


class EmotionOut(BaseModel):
    label: Literal["joy", "anger", "sadness", "neutral"]
    intensity: int = Field(ge=1, le=3)
    note: str = Field(min_length=5, max_length=12)


class Item(BaseModel):
    text: str = Field(min_length=1)
    score: float = Field(ge=0, le=2)


class StateOut(BaseModel):
    model_config = {"extra": "forbid", "strict": True}

    emotion: EmotionOut
    mood: Mood
    beliefs: list[Item] = Field(min_length=2, max_length=3)
    desires: list[Item]
    maybe: Item | None = None
    ratio: float = Field(gt=0, lt=1)
    tags: tuple[int, str]
    fixed: Literal["x"]
    lexicon_label: str = Field(json_schema_extra={"examples": ["joy", "fear"]})


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path))


def test_example_for_schema_is_valid_for_many_draws():
    schema = StateOut.model_json_schema()
    for seed in range(200):
        value = example_for_schema(schema, random.Random(seed))
        parsed = StateOut.model_validate_json(json.dumps(value))
        assert 1 <= parsed.emotion.intensity <= 3
        assert all(0 <= b.score <= 2 for b in parsed.beliefs)
        assert 2 <= len(parsed.beliefs) <= 3
        assert parsed.lexicon_label in {"joy", "fear"}


def test_example_for_schema_varies_enum_choices():
    schema = EmotionOut.model_json_schema()
    labels = {example_for_schema(schema, random.Random(s))["label"] for s in range(50)}
    assert labels == {"joy", "anger", "sadness", "neutral"}


def test_fake_schema_structured_is_deterministic_per_prompt():
    model = load("fake:schema")

    async def run() -> tuple[StateOut, StateOut, StateOut]:
        a = await model.generate_structured("turn 1", StateOut)
        b = await model.generate_structured("turn 1", StateOut)
        c = await model.generate_structured("turn 2", StateOut)
        return a.value, b.value, c.value

    first, again, other = asyncio.run(run())
    assert first == again
    assert first != other


def test_fake_schema_samples_differ():
    model = load("fake:schema")

    async def run() -> set[str]:
        outs = [
            await model.generate_structured("same", EmotionOut, Sampling(temperature=1.0), sample=i)
            for i in range(12)
        ]
        return {o.completion.text for o in outs}

    assert len(asyncio.run(run())) > 1


def test_fake_echo_returns_last_user_message():
    model = load("fake:echo")
    messages = [
        Message(role="system", content="be brief"),
        Message(role="user", content="first"),
        Message(role="assistant", content="ok"),
        Message(role="user", content="second"),
    ]
    assert asyncio.run(model.generate(messages)).text == "second"


def test_scripted_list_in_order_then_exhausted():
    register_fake("script-list", ["one", "two"])
    try:
        model = load("fake:script-list")

        async def run() -> list[str]:
            return [(await model.generate("x")).text for _ in range(2)]

        assert asyncio.run(run()) == ["one", "two"]
        with pytest.raises(FakeScriptExhaustedError):
            asyncio.run(model.generate("x"))
    finally:
        unregister_fake("script-list")


def test_scripted_cycle_and_callable_and_reply_objects():
    seen: list[list[Message]] = []

    async def answer(messages: list[Message]) -> str:
        seen.append(messages)
        return messages[-1].content.upper()

    register_fake("script-fn", answer)
    register_fake("script-cycle", ["a", BackendReply(text="b")], cycle=True)
    try:
        upper = load("fake:script-fn")
        cyc = load("fake:script-cycle")

        async def run() -> tuple[str, list[str]]:
            text = (await upper.generate("shout")).text
            return text, [(await cyc.generate("x")).text for _ in range(5)]

        text, cycled = asyncio.run(run())
        assert text == "SHOUT"
        assert seen[0][0].content == "shout"
        assert cycled == ["a", "b", "a", "b", "a"]
    finally:
        unregister_fake("script-fn")
        unregister_fake("script-cycle")


def test_unknown_fake_and_builtin_name_are_config_errors():
    with pytest.raises(ConfigError, match="no fake named"):
        load("fake:nope")
    with pytest.raises(ConfigError, match="built in"):
        register_fake("schema", ["x"])
    with pytest.raises(ConfigError, match="option"):
        load("fake:schema", latency_s=-1)


def test_latency_is_simulated_concurrently():
    model = load("fake:schema", latency_s=0.05, max_concurrency=10)
    backend = model.backend
    original = backend.complete
    state = {"now": 0, "peak": 0}

    async def tracked(request, endpoint):
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        try:
            return await original(request, endpoint)
        finally:
            state["now"] -= 1

    backend.complete = tracked  # type: ignore[method-assign]

    async def run() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.gather(*(model.generate(f"q{i}") for i in range(10)))
        return loop.time() - start

    elapsed = asyncio.run(run())
    # All ten simulated waits overlap (no wall-time upper bound: CI machines are slow)...
    assert state["peak"] == 10
    # ...and the latency is really waited (a lower bound cannot be flaky).
    assert elapsed >= 0.045


def test_fake_scores_choices_on_each_path():
    letters = ["A", "B", "C"]
    full = load("fake:schema")
    top = load("fake:schema", full_logits=False)
    parsed = load("fake:schema", full_logits=False, logprobs=False)

    async def run():
        return [await m.score_choices("Which? A, B or C", letters) for m in (full, top, parsed)]

    s_full, s_top, s_parsed = asyncio.run(run())
    assert s_full.path is ChoicePath.LOGITS
    assert s_top.path is ChoicePath.TOP_LOGPROBS
    assert s_parsed.path is ChoicePath.PARSED
    assert sum(s_full.probs.values()) == pytest.approx(1.0)
    # Same prompt, same deterministic scores: both logprob paths agree, parsing picks the same.
    assert s_full.probs == pytest.approx(s_top.probs)
    assert s_full.choice == s_top.choice == s_parsed.choice
    assert s_parsed.probs[s_parsed.choice] == 1.0


def test_the_request_log_can_be_turned_off() -> None:
    async def two_calls(model_options: dict[str, bool]) -> int:
        model = load("fake:echo", **model_options)
        for text in ("a", "b"):
            await model.generate(text)
        backend = model.backend
        assert backend.calls == 2  # type: ignore[attr-defined]
        return len(backend.requests)  # type: ignore[attr-defined]

    assert asyncio.run(two_calls({})) == 2
    assert asyncio.run(two_calls({"keep_requests": False})) == 0
