"""The one generate path: cache, retries, limits, recording, accounting, structured output."""

from __future__ import annotations

import asyncio
import random
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from cogwm.errors import InputError
from cogwm.models import (
    BackendReply,
    CallRecord,
    FailureKind,
    Message,
    ModelCallError,
    RetryPolicy,
    Sampling,
    StructuredMode,
    StructuredOutputError,
    UnsupportedFeatureError,
    Usage,
    cache_key,
    load,
    open_cache,
    recording,
    register_fake,
    unregister_fake,
)
from cogwm.models.dispatch import EndpointPool
from cogwm.models.fake import FakeBackend


class Verdict(BaseModel):
    label: Literal["yes", "no"]
    confidence: int = Field(ge=0, le=100)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path))


@pytest.fixture
def scripted():
    """Register fakes by name for one test and forget them afterwards."""
    names: list[str] = []

    def register(name: str, replies, **options):
        register_fake(name, replies, **options)
        names.append(name)
        return name

    yield register
    for name in names:
        unregister_fake(name)


def fake_of(model) -> FakeBackend:
    assert isinstance(model.backend, FakeBackend)
    return model.backend


class Sleeps:
    """Stands in for asyncio.sleep and remembers the backoff delays."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


# ------------------------------------------------------------------------------------ cache key


def test_cache_key_depends_on_what_shapes_the_reply_only():
    msgs = [Message(role="user", content="hi")]
    base = dict(identity="m", messages=msgs, sampling=Sampling(), sample=0)
    key = cache_key(**base)
    assert key == cache_key(**base)
    assert key != cache_key(**{**base, "identity": "other"})
    assert key != cache_key(**{**base, "messages": [Message(role="user", content="hi!")]})
    assert key != cache_key(**{**base, "messages": [Message(role="system", content="hi")]})
    assert key != cache_key(**{**base, "sampling": Sampling(temperature=0.5)})
    assert key != cache_key(**{**base, "sampling": Sampling(seed=1)})
    assert key != cache_key(**{**base, "sampling": Sampling(max_tokens=7)})
    assert key != cache_key(**{**base, "sample": 1})
    assert key != cache_key(**base, json_schema=Verdict.model_json_schema())
    assert key != cache_key(**base, logprobs=5)
    assert key != cache_key(**base, candidates=["A", "B"])


def test_cache_hit_skips_backend_and_ignores_endpoint(scripted, tmp_path):
    scripted("counting", lambda messages: f"reply to {messages[-1].content}", endpoints=3)
    model = load("fake:counting", cache=True, cache_path=str(tmp_path / "c.sqlite"))
    records: list[CallRecord] = []

    async def run() -> list[str]:
        with recording(records.append):
            texts = [(await model.generate("same")).text for _ in range(5)]
            texts.append((await model.generate("different")).text)
            return texts

    texts = asyncio.run(run())
    assert texts == ["reply to same"] * 5 + ["reply to different"]
    assert fake_of(model).calls == 2
    assert [r.cached for r in records] == [False, True, True, True, True, False]
    # A second Model over a fresh backend (another process, say) hits the same file.
    again = load("fake:counting", cache=True, cache_path=str(tmp_path / "c.sqlite"))
    assert asyncio.run(again.generate("same")).cached
    assert fake_of(again).calls == 0


def test_cache_default_on_at_temperature_zero_for_real_backends_off_for_fakes(scripted):
    scripted("plain", lambda m: "x")
    model = load("fake:plain")
    asyncio.run(model.generate("a"))
    asyncio.run(model.generate("a"))
    assert fake_of(model).calls == 2  # fakes are not cached unless asked
    # A backend that caches by default: only temperature 0, unless opted in.
    model = load("fake:plain")
    model.backend.cache_by_default = True

    async def run() -> None:
        await model.generate("a")
        await model.generate("a")
        await model.generate("a", Sampling(temperature=0.7))
        await model.generate("a", Sampling(temperature=0.7))
        await model.generate("a", cache=False)

    asyncio.run(run())
    assert fake_of(model).calls == 1 + 2 + 1


def test_sample_index_gives_distinct_cache_entries_and_seeds(scripted):
    scripted("seeds", lambda m: "x")
    model = load("fake:seeds", cache=True)
    warm = Sampling(temperature=0.9, seed=42)

    async def run() -> list[bool]:
        first = [await model.generate("p", warm, sample=i) for i in range(3)]
        again = [await model.generate("p", warm, sample=i) for i in range(3)]
        return [c.cached for c in first + again]

    assert asyncio.run(run()) == [False] * 3 + [True] * 3
    seeds = [r.sampling.seed for r in fake_of(model).requests]
    assert seeds[0] == 42  # sample 0 keeps the caller's seed
    assert len(set(seeds)) == 3


def test_closed_cache_is_not_handed_out_again(tmp_path):
    path = tmp_path / "closed.sqlite"
    first = open_cache(path)
    first.close()
    again = open_cache(path)
    assert again is not first
    assert len(again) == 0  # usable: the closed connection was not returned


# ----------------------------------------------------------------------------------- retries


def test_retries_server_errors_then_succeeds_with_backoff(scripted):
    failures = iter([FailureKind.SERVER, FailureKind.SERVER])

    def flaky(messages):
        kind = next(failures, None)
        if kind is not None:
            from cogwm.models import BackendError

            raise BackendError(kind, "HTTP 503")
        return "finally"

    scripted("flaky", flaky)
    model = load("fake:flaky", max_attempts=4, backoff_base_s=1.0, backoff_max_s=8.0)
    model.sleep = sleeps = Sleeps()
    records: list[CallRecord] = []
    with recording(records.append):
        assert asyncio.run(model.generate("x")).text == "finally"
    # Full jitter: attempt n waits uniform(0, base * 2**(n-1)).
    assert len(sleeps.delays) == 2
    assert 0 <= sleeps.delays[0] <= 1.0
    assert 0 <= sleeps.delays[1] <= 2.0
    assert records[-1].attempts == 3
    assert records[-1].ok


def test_retry_after_is_honoured_and_bounded(scripted):
    scripted("limited", ["unused"], faults={"rate_limit": 1.0, "retry_after_s": 7.5})
    model = load("fake:limited", max_attempts=3, backoff_base_s=0.01, backoff_max_s=60.0)
    model.sleep = sleeps = Sleeps()
    with pytest.raises(ModelCallError) as info:
        asyncio.run(model.generate("x"))
    assert sleeps.delays == [7.5, 7.5]
    assert info.value.kind is FailureKind.RATE_LIMIT
    assert info.value.attempts == 3
    assert info.value.retryable
    # Retry-After longer than the cap waits the cap.
    capped = load("fake:limited", max_attempts=2, backoff_max_s=2.0)
    capped.sleep = sleeps = Sleeps()
    with pytest.raises(ModelCallError):
        asyncio.run(capped.generate("x"))
    assert sleeps.delays == [2.0]


def test_backoff_delay_formula():
    policy = RetryPolicy(max_attempts=5, base_s=0.5, max_s=3.0)
    rng = random.Random(0)
    for attempt, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (5, 3.0)]:
        delays = [policy.delay(attempt, None, rng) for _ in range(200)]
        assert max(delays) <= ceiling
        assert max(delays) > 0.8 * ceiling  # jitter spans the whole range
    assert policy.delay(1, 2.5, rng) == 2.5


def test_client_errors_and_unsupported_are_not_retried(scripted):
    from cogwm.models import BackendError

    calls = {"n": 0}

    def bad_request(messages):
        calls["n"] += 1
        raise BackendError(FailureKind.CLIENT, "HTTP 400 bad request")

    scripted("bad", bad_request)
    model = load("fake:bad", max_attempts=5)
    model.sleep = Sleeps()
    with pytest.raises(ModelCallError) as info:
        asyncio.run(model.generate("x"))
    assert calls["n"] == 1
    assert info.value.kind is FailureKind.CLIENT

    # logprobs from an endpoint without them: unsupported, one attempt, typed.
    no_logprobs = load("fake:schema", logprobs=False, max_attempts=5)
    with pytest.raises(UnsupportedFeatureError):
        asyncio.run(no_logprobs.generate("x", logprobs=3))
    assert fake_of(no_logprobs).calls == 0


def test_unsupported_structured_mode_falls_back_without_retry(scripted):
    answers = iter(['{"label": "yes", "confidence": 90}'])
    scripted("modes", lambda m: next(answers), modes=[StructuredMode.JSON_SCHEMA])
    model = load("fake:modes")
    fake = fake_of(model)
    # Pretend the probe said json_schema works but the endpoint refuses it when used.
    fake.options.modes = []

    async def probe_says_json_schema(endpoint):
        from cogwm.models import Capabilities

        return Capabilities(
            modes=[StructuredMode.JSON_SCHEMA, StructuredMode.PROMPT], logprobs=False
        )

    fake.capabilities = probe_says_json_schema  # type: ignore[method-assign]
    result = asyncio.run(model.generate_structured("Is it?", Verdict))
    assert result.value.label == "yes"
    modes = [r.mode for r in fake.requests]
    assert modes == [StructuredMode.JSON_SCHEMA, StructuredMode.PROMPT]
    # The prompt-mode request carries the schema in a system message.
    assert fake.requests[1].messages[0].role == "system"
    assert '"confidence"' in fake.requests[1].messages[0].content
    assert asyncio.run(model.capabilities()).modes == [StructuredMode.PROMPT]


def test_timeout_is_enforced_and_retried(scripted):
    async def slow(messages):
        await asyncio.sleep(5)
        return "late"

    scripted("slow", slow)
    model = load("fake:slow", timeout_s=0.05, max_attempts=2)
    model.sleep = Sleeps()
    records: list[CallRecord] = []
    with recording(records.append), pytest.raises(ModelCallError) as info:
        asyncio.run(model.generate("x"))
    assert info.value.kind is FailureKind.TIMEOUT
    assert records[0].error_kind is FailureKind.TIMEOUT
    assert records[0].attempts == 2


# ------------------------------------------------------------------------------ structured


def test_repair_attempt_sends_error_back(scripted):
    replies = iter(['{"label": "maybe", "confidence": 50}', '{"label": "no", "confidence": 50}'])
    scripted("repair", lambda m: next(replies))
    model = load("fake:repair")
    records: list[CallRecord] = []
    with recording(records.append):
        result = asyncio.run(model.generate_structured("Is it?", Verdict))
    assert result.repaired
    assert result.value == Verdict(label="no", confidence=50)
    repair_request = fake_of(model).requests[1]
    assert repair_request.messages[-2].role == "assistant"
    assert "maybe" in repair_request.messages[-2].content
    assert "label" in repair_request.messages[-1].content
    assert [r.ok for r in records] == [False, True]
    assert records[0].error_kind is FailureKind.INVALID_OUTPUT


def test_typed_failure_after_repair_never_a_default(scripted):
    scripted("hopeless", ["not json at all", '{"label": "yes"}'])
    model = load("fake:hopeless")
    with pytest.raises(StructuredOutputError) as info:
        asyncio.run(model.generate_structured("Is it?", Verdict))
    assert info.value.raw == '{"label": "yes"}'
    assert "confidence" in info.value.reason
    assert info.value.kind is FailureKind.INVALID_OUTPUT
    assert model.stats.invalid_outputs == 2


def test_json_is_extracted_from_chatter_and_fences(scripted):
    scripted("chatty", ['Sure!\n```json\n{"label": "yes", "confidence": 3}\n```\nHope it helps.'])
    model = load("fake:chatty")
    result = asyncio.run(model.generate_structured("Is it?", Verdict))
    assert result.value.confidence == 3
    assert not result.repaired


# ------------------------------------------------------------------- limits, spread, records


def test_concurrency_limit_per_endpoint_and_spread(scripted):
    state = {"now": 0, "peak": 0}

    async def tracked(messages):
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return "ok"

    scripted("limited", tracked, endpoints=3)
    model = load("fake:limited", max_concurrency=2)

    async def run() -> None:
        await asyncio.gather(*(model.generate(f"q{i}") for i in range(30)))

    asyncio.run(run())
    assert state["peak"] == 6  # 3 endpoints x 2
    counts = fake_of(model).calls_by_endpoint
    assert sorted(counts) == [f"fake://limited/{i}" for i in range(3)]
    assert all(8 <= n <= 12 for n in counts.values())


def test_least_busy_endpoint_gets_more_calls(scripted):
    scripted("uneven", lambda m: "ok", endpoints=2)
    model = load("fake:uneven", max_concurrency=4)
    original = model.backend.complete
    first_released = asyncio.Event()
    answered_by_second = 0

    async def stuck_first(request, endpoint):
        # Endpoint 0 answers nothing until endpoint 1 has answered every other call.
        nonlocal answered_by_second
        if endpoint.endswith("/0"):
            await first_released.wait()
        reply = await original(request, endpoint)
        if endpoint.endswith("/1"):
            answered_by_second += 1
            if answered_by_second == 79:
                first_released.set()
        return reply

    model.backend.complete = stuck_first  # type: ignore[method-assign]

    async def run() -> None:
        async with asyncio.timeout(120):  # a hang guard: a pool that strands calls never ends
            await asyncio.gather(*(model.generate(f"q{i}") for i in range(80)))

    asyncio.run(run())
    # The first call waits on endpoint 0. Endpoint 1 answers each call before the next starts,
    # so it is always the less busy one (0 in flight against 1), though endpoint 0 has 3 free
    # slots: all 79 other calls go there.
    assert model.stats.by_endpoint == {"fake://uneven/0": 1, "fake://uneven/1": 79}


def test_cancelled_waiter_leaves_the_pool_consistent():
    # A task cancelled while queued for a slot, whose entry a release drops before the task
    # runs again (e.g. a TaskGroup cancelling a batch), must end with CancelledError.
    pool = EndpointPool(["e"], max_concurrency=1)

    async def enter() -> None:
        async with pool.slot():
            pass

    async def run() -> None:
        async with pool.slot():
            queued = asyncio.create_task(enter())
            await asyncio.sleep(0)  # it now waits for the slot
            queued.cancel()
        # Leaving the block released the slot before the cancelled task resumed.
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert pool.in_flight() == {"e": 0}
        async with pool.slot() as endpoint:  # still usable
            assert endpoint == "e"

    asyncio.run(run())


def test_recording_reaches_tasks_and_nests(scripted):
    scripted("rec", lambda m: "ok")
    model = load("fake:rec")
    outer: list[CallRecord] = []
    inner: list[CallRecord] = []

    async def run() -> None:
        with recording(outer.append):
            await asyncio.gather(*(asyncio.create_task(model.generate("t")) for _ in range(3)))
            with recording(inner.append):
                await model.generate("i", tag="inner")
        await model.generate("outside")

    asyncio.run(run())
    assert len(outer) == 4
    assert len(inner) == 1
    assert inner[0].tag == "inner"
    assert all(r.endpoint == "fake://rec/0" for r in outer)


def test_usage_and_cost_accounting(scripted):
    scripted(
        "priced",
        lambda m: BackendReply(text="hi", usage=Usage(prompt_tokens=1000, completion_tokens=500)),
    )
    model = load("fake:priced", cost_per_1k_prompt=0.5, cost_per_1k_completion=2.0, cache=True)
    records: list[CallRecord] = []
    with recording(records.append):
        asyncio.run(model.generate("x"))
        asyncio.run(model.generate("x"))  # cache hit: no cost
    # 1000/1000 * 0.5 + 500/1000 * 2.0 = 1.5
    assert records[0].cost_usd == pytest.approx(1.5)
    assert records[1].cached and records[1].cost_usd == 0
    assert model.stats.cost_usd == pytest.approx(1.5)
    assert model.stats.prompt_tokens == 1000


def test_messages_accept_strings_and_dicts(scripted):
    scripted("echo-all", lambda m: "|".join(f"{x.role}:{x.content}" for x in m))
    model = load("fake:echo-all")
    text = asyncio.run(
        model.generate([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    ).text
    assert text == "system:s|user:u"


def test_bad_spec_and_option_errors():
    with pytest.raises(InputError, match="unknown backend"):
        load("nosuch:thing")
    with pytest.raises(InputError, match="expected <backend>:<model>"):
        load("smollm2")
    with pytest.raises(Exception, match="option"):
        load("fake:schema", bogus=1)


def test_retry_goes_to_another_endpoint(scripted):
    from cogwm.models import BackendError

    scripted("half-down", lambda m: "ok", endpoints=2)
    model = load("fake:half-down", max_attempts=2)
    model.sleep = Sleeps()
    original = model.backend.complete

    async def first_is_down(request, endpoint):
        if endpoint.endswith("/0"):
            raise BackendError(FailureKind.SERVER, "HTTP 502")
        return await original(request, endpoint)

    model.backend.complete = first_is_down  # type: ignore[method-assign]

    async def run() -> list[str]:
        # One at a time: every call that starts on the broken endpoint must retry on the other.
        return [(await model.generate(f"q{i}")).endpoint for i in range(10)]

    endpoints = asyncio.run(run())
    assert endpoints == ["fake://half-down/1"] * 10
    assert model.stats.attempt_failures[FailureKind.SERVER.value] >= 1


def test_raw_newline_inside_a_json_string_is_accepted_and_kept() -> None:
    # llama.cpp's schema grammar lets a literal newline into a string; it means "\n".
    from cogwm.models.structured import validate_reply
    from cogwm.schema import StateItem

    result = validate_reply('{"text": "line one\nline two", "score": 1.0}', StateItem)
    assert result.error is None
    assert isinstance(result.value, StateItem)
    assert result.value.text == "line one\nline two"
