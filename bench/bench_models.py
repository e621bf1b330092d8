"""Benchmark of the model interface, printing every figure and ratio from one run.

1. Orchestration: the fake backend with 50 ms simulated latency, 2,000 calls at concurrency 64
   through the whole generate path (endpoint slots, retries wrapper, records). Ideal time is
   2,000 / 64 x 50 ms. Target: ideal / actual >= 0.85.
2. In-process overhead: the embedded backend (``llamacpp:smollm2``) generating from a fixed
   prompt, against llama-cpp-python called directly with the same ``Llama(...)`` arguments and
   the same sampling; runs interleaved (alternating which goes first), median of each.
   Target: tokens/s ratio >= 0.9. Both figures are wall-clock: run on an otherwise idle machine.
3. Cache: a batch of calls, then the same batch again: the rerun must make zero backend calls,
   and a hit must cost < 1 ms (mean over the rerun, in a fresh cache file).

Usage: python bench/bench_models.py [--calls 2000] [--concurrency 64] [--skip-embedded]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cogwm.models import Message, Model, Sampling, load
from cogwm.models.fake import FakeBackend

LATENCY_S = 0.05
STORY_PROMPT = [Message(role="user", content="Write a short story about a lighthouse keeper.")]
STORY_SAMPLING = Sampling(temperature=0.0, max_tokens=96, repeat_penalty=1.1)


def report(name: str, value: float, target: str, ok: bool) -> bool:
    """Print one figure with its target; return whether it met it."""
    print(f"{name:<52} {value:>12.4f}   target {target:<10} {'ok' if ok else 'MISSED'}")
    return ok


def bench_orchestration(calls: int, concurrency: int) -> bool:
    model = load("fake:schema", latency_s=LATENCY_S, max_concurrency=concurrency, cache=False)

    async def run() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(model.generate(f"utterance {i}") for i in range(calls)))
        return time.perf_counter() - start

    actual = asyncio.run(run())
    ideal = calls / concurrency * LATENCY_S
    print(
        f"orchestration: {calls} calls, concurrency {concurrency}, {LATENCY_S * 1000:.0f} ms each"
    )
    print(f"  ideal {ideal:.3f} s, actual {actual:.3f} s")
    return report(
        "orchestration efficiency (ideal / actual)",
        ideal / actual,
        ">= 0.85",
        ideal / actual >= 0.85,
    )


def bench_cache(batch: int) -> bool:
    with tempfile.TemporaryDirectory() as folder:
        model = load("fake:schema", cache=True, cache_path=str(Path(folder) / "bench.sqlite"))
        backend = model.backend
        assert isinstance(backend, FakeBackend)
        prompts = [f"cached prompt {i}" for i in range(batch)]

        async def run_batch() -> float:
            start = time.perf_counter()
            for prompt in prompts:
                await model.generate(prompt)
            return (time.perf_counter() - start) / batch

        asyncio.run(run_batch())
        first_pass_calls = backend.calls
        per_hit = asyncio.run(run_batch())
        rerun_calls = backend.calls - first_pass_calls
        print(f"cache: batch of {batch}, first pass {first_pass_calls} backend calls")
        ok = report("cache rerun: backend calls", float(rerun_calls), "== 0", rerun_calls == 0)
        ok &= report(
            "cache hit cost (ms, mean over rerun)", per_hit * 1000, "< 1 ms", per_hit < 1e-3
        )
        return ok


def _direct_tokens_per_s(llm: object) -> float:
    start = time.perf_counter()
    # Same behaviour as the backend with a repetition penalty: the whole prompt is evaluated.
    llm.reset()  # type: ignore[attr-defined]
    out = llm.create_chat_completion(  # type: ignore[attr-defined]
        messages=[m.model_dump() for m in STORY_PROMPT],
        temperature=STORY_SAMPLING.temperature,
        top_p=STORY_SAMPLING.top_p,
        max_tokens=STORY_SAMPLING.max_tokens,
        repeat_penalty=STORY_SAMPLING.repeat_penalty,
        stop=[],
        seed=STORY_SAMPLING.seed,
    )
    return float(out["usage"]["completion_tokens"]) / (time.perf_counter() - start)


def _model_tokens_per_s(model: Model) -> float:
    async def run() -> float:
        start = time.perf_counter()
        done = await model.generate(STORY_PROMPT, STORY_SAMPLING, cache=False)
        return done.usage.completion_tokens / (time.perf_counter() - start)

    return asyncio.run(run())


def bench_embedded(repeats: int) -> bool:
    from llama_cpp import Llama

    from cogwm.models.llamacpp import LlamaCppBackend

    model = load("llamacpp:smollm2", cache=False)
    backend = model.backend
    assert isinstance(backend, LlamaCppBackend)
    direct = Llama(**backend.llama_kwargs())
    if "tokenizer.chat_template" in direct.metadata:
        direct.chat_format = "chat_template.default"
    # Warm both (model load, first prompt evaluation), then interleave the timed runs.
    _model_tokens_per_s(model)
    _direct_tokens_per_s(direct)
    ours, theirs = [], []
    for round_ in range(repeats):
        # Alternate which goes first, so drift in machine load hits both alike.
        if round_ % 2:
            theirs.append(_direct_tokens_per_s(direct))
            ours.append(_model_tokens_per_s(model))
        else:
            ours.append(_model_tokens_per_s(model))
            theirs.append(_direct_tokens_per_s(direct))
    ours_median, theirs_median = statistics.median(ours), statistics.median(theirs)
    print(f"embedded: {repeats} interleaved runs of {STORY_SAMPLING.max_tokens} tokens max")
    print(f"  cogwm {ours_median:.1f} tok/s, llama-cpp-python direct {theirs_median:.1f} tok/s")
    ratio = ours_median / theirs_median
    ok = report("in-process tokens/s ratio (cogwm / direct)", ratio, ">= 0.9", ratio >= 0.9)

    async def cached_batch() -> tuple[int, int]:
        with tempfile.TemporaryDirectory() as folder:
            cached = load("llamacpp:smollm2", cache=True, cache_path=str(Path(folder) / "c.sqlite"))
            prompts = [f"Name a {thing}." for thing in ("colour", "fruit", "city")]
            short = Sampling(max_tokens=8)
            for prompt in prompts:
                await cached.generate(prompt, short)
            before = cached.stats.backend_calls
            for prompt in prompts:
                await cached.generate(prompt, short)
            return before, cached.stats.backend_calls - before

    first, rerun = asyncio.run(cached_batch())
    ok &= report(
        "embedded cached rerun: model calls", float(rerun), "== 0", first == 3 and rerun == 0
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--cache-batch", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=8, help="Interleaved embedded runs.")
    parser.add_argument("--skip-embedded", action="store_true")
    args = parser.parse_args()
    ok = bench_orchestration(args.calls, args.concurrency)
    ok &= bench_cache(args.cache_batch)
    if not args.skip_embedded:
        ok &= bench_embedded(args.repeats)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
