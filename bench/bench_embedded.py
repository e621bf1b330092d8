"""Benchmark of the embedded backend: the batched engine against the one-at-a-time path.

Every figure comes from one run, with an empty reply cache (a temporary cache folder), on real
requests: a small arena run (scripted agents, the shipped world model ``llamacpp:smollm2-wm`` as
the simulated user) records the simulator's requests first, then they are replayed.

1. Where the batched engine's decode thread spends its time at ``--profile-inflight`` requests
   in flight without the grammar: prompt evaluation, step decodes (with the rows and decode
   calls per step), sampling, the reply's bookkeeping (detokenizing, stop strings), other
   Python of a step, and waiting; and how many prompt tokens came from kept caches.
2. Generated tokens per second of the one-at-a-time path (today's default) and of the batched
   engine at 1, 4, 8 and 16 requests in flight, with and without the JSON grammar, with prompt
   reuse and without it (the reuse gain is the ratio of the two); each ratio is against the
   one-at-a-time path with the same grammar setting. Beside each figure: how many replies are
   byte-identical to the one-at-a-time path's, and to the first batched figure's (a batched
   reply must not depend on how many requests were in flight), and the prompt tokens reused.
3. The grammar sampler's CPU time per token, llama-cpp-python's full chain against the batched
   engine's (grammar on the best tokens only), on the same real logits.
4. Batching's own gain, at equal threads (1 thread both), apart from the gain of more threads
   (the batched engine with every usable core).
5. The physical reference: ``llama_decode`` alone at batch 1 (no sampling, no grammar, no
   Python per token), and the one-at-a-time path's ratio to it.
6. Equivalence: of ``--equivalence`` real requests (JSON grammar, the model; the recorded
   ones, then again with other seeds), how many the batched engine (8 in flight, prompt reuse)
   answers byte for byte as the one-at-a-time path; for each that differs, the first differing
   token and the gap between the two best logits there (below 0.1: a near-tie).
7. ``--end-to-end``: the wall time of ``cogwm quickstart`` and of a validity card
   (``--card-parts``, ``--card-items`` items per item set; 0: no card), today's path
   (``COGWM_LLAMA_ENGINE=single``, ``--baseline-model`` as the simulated user and the carded
   model) against the new one (``=batched``, ``--model``), and the ratio. Slow.

Wall-clock figures mean something only on an otherwise idle machine.

``--model llamacpp:smollm2-wm-merged`` replays the same requests on the world model with its
LoRA folded into the base's weights (no adapter at run time), which the batched engine decodes
in one call per step; ``--model llamacpp:smollm2`` on the base alone.

``--baseline-model llamacpp:smollm2-wm`` takes the ratios against today's model one at a time.

Usage: python bench/bench_embedded.py [--model llamacpp:smollm2-wm] [--baseline-model M]
       [--requests 16] [--levels 1,4,8,16] [--rounds 4] [--threads 1,all] [--equivalence 50]
       [--end-to-end] [--card-items 50] [--card-parts dailydialog] [--data-dir DATA]
Smoke: python bench/bench_embedded.py --requests 4 --levels 4 --rounds 3 --dialogues 1 --threads 1
       --equivalence 8
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cogwm.arena.config import parse_config
from cogwm.arena.quickstart import WORLD_MODEL_WINDOW
from cogwm.arena.runner import run_arena
from cogwm.models.llamacpp import LlamaCppBackend, make_llamacpp
from cogwm.models.llamacpp_batch import (
    ENGINE_ENV,
    BatchEngine,
    ConstrainedSampler,
    PromptCounts,
    _chain,
    usable_cores,
)
from cogwm.models.types import BackendReply, BackendRequest
from cogwm.store import RunStore

#: The model replayed unless ``--model`` names another (the shipped world model, adapter applied
#: at run time).
MODEL = "smollm2-wm"


def record_requests(folder: Path, rounds: int, dialogues: int) -> list[BackendRequest]:
    """The simulator's requests of a small arena run (scripted agents, real world model)."""
    requests: list[BackendRequest] = []
    original = LlamaCppBackend.complete

    async def record(self: LlamaCppBackend, request: BackendRequest, endpoint: str) -> Any:
        requests.append(request)
        return await original(self, request, endpoint)

    raw = {
        "seed": 11,
        "tasks": ["ESC", "PD"],
        "dialogues_per_task": dialogues,
        "max_rounds": rounds,
        "intent_from_round": rounds,
        "concurrency": 8,
        "simulator": {
            "model": f"llamacpp:{MODEL}",
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
    LlamaCppBackend.complete = record  # type: ignore[method-assign]
    try:
        with RunStore(folder / "capture.db") as store:
            asyncio.run(run_arena(parse_config(raw, source="bench"), store, show_progress=False))
    finally:
        LlamaCppBackend.complete = original  # type: ignore[method-assign]
    return requests


def widen(requests: list[BackendRequest], count: int) -> list[BackendRequest]:
    """``count`` requests: the recorded ones, then again with other seeds."""
    out: list[BackendRequest] = []
    for i in range(count):
        base = requests[i % len(requests)]
        seed = (base.sampling.seed or 0) + i // len(requests)
        out.append(
            base.model_copy(update={"sampling": base.sampling.model_copy(update={"seed": seed})})
        )
    return out


def without_grammar(requests: list[BackendRequest]) -> list[BackendRequest]:
    return [r.model_copy(update={"json_schema": None, "mode": None}) for r in requests]


async def _throughput(
    backend: LlamaCppBackend, requests: list[BackendRequest], inflight: int
) -> tuple[float, list[str]]:
    """Generated tokens per second with at most ``inflight`` requests at a time, and the
    replies."""
    gate = asyncio.Semaphore(inflight)

    async def one(request: BackendRequest) -> BackendReply:
        async with gate:
            return await backend.complete(request, "bench")

    await backend.complete(
        requests[0].model_copy(
            update={"sampling": requests[0].sampling.model_copy(update={"max_tokens": 1})}
        ),
        "bench",
    )
    start = time.perf_counter()
    replies = await asyncio.gather(*(one(r) for r in requests))
    tokens = sum(reply.usage.completion_tokens for reply in replies)
    return tokens / (time.perf_counter() - start), [reply.text for reply in replies]


def tokens_per_second(
    options: dict[str, Any], requests: list[BackendRequest], inflight: int, model: str = MODEL
) -> tuple[float, list[str], PromptCounts | None]:
    """Generated tokens per second of a fresh ``model`` backend, its replies, and the batched
    engine's prompt tokens reused and evaluated (None one at a time)."""
    backend = make_llamacpp(model, options)
    rate, replies = asyncio.run(_throughput(backend, requests, inflight))
    engine = backend._batch_engine
    return rate, replies, engine.counts if engine is not None else None


def raw_decode_rate(steps: int = 32, model: str = MODEL) -> float:
    """``llama_decode`` alone, one sequence, one token a step, one thread: tokens per second."""
    backend = make_llamacpp(model, {"engine": "single"})
    llm = backend._main()
    engine = BatchEngine(llm, parallel=1, n_ctx=backend.options.n_ctx, threads=1)
    try:
        prompt = llm.tokenize(b"How are you today? " * 60, add_bos=True, special=False)
        engine._prefill(prompt, 0)
        start = time.perf_counter()
        for step in range(steps):
            engine._decode([(prompt[-1], len(prompt) + step, 0, True)])
        return steps / (time.perf_counter() - start)
    finally:
        engine.close()


def throughput_table(
    requests: list[BackendRequest],
    levels: list[int],
    threads: list[int],
    model: str = MODEL,
    baseline: str | None = None,
) -> None:
    """The tokens-per-second table: one at a time, then batched per level and thread count,
    with prompt reuse and without. With another ``baseline`` model (today's, e.g. the adapter
    applied at run time when ``model`` is its merged form), the ratios are against that model one
    at a time; the identical-reply counts stay against ``model`` one at a time."""
    print(
        f"{'grammar':8} {'path':34} {'in flight':>9} {'tok/s':>8} {'ratio':>6} "
        f"{'same as single':>15} {'same as batched':>16} {'prompt reused':>14}"
    )
    for grammar in (True, False):
        batch = requests if grammar else without_grammar(requests)
        label = "json" if grammar else "none"
        single, expected, _ = tokens_per_second(
            {"engine": "single", "n_threads": 1}, batch, 1, model
        )
        reference = single
        if baseline is not None and baseline != model:
            reference, _, _ = tokens_per_second(
                {"engine": "single", "n_threads": 1}, batch, 1, baseline
            )
            path = f"{baseline}, one at a time, 1 thread"
            print(f"{label:8} {path:34} {1:>9} {reference:>8.1f} {1.0:>6.2f}")
        print(
            f"{label:8} {'one at a time, 1 thread':34} {1:>9} {single:>8.1f} "
            f"{single / reference:>6.2f}"
        )
        first: list[str] | None = None
        for level, count, reuse in itertools.product(levels, threads, (True, False)):
            options = {
                "engine": "batched",
                "parallel": level,
                "n_threads": count,
                "reuse_prefix": reuse,
            }
            rate, replies, counts = tokens_per_second(options, batch, level, model)
            first = first or replies
            path = f"batched, {count} thread{'s' if count > 1 else ''}" + (
                "" if reuse else ", no reuse"
            )
            print(
                f"{label:8} {path:34} {level:>9} {rate:>8.1f} {rate / reference:>6.2f} "
                f"{_same(replies, expected):>15} {_same(replies, first):>16} {_reused(counts):>14}"
            )
        if grammar:
            raw = raw_decode_rate(model=model)
            print(
                f"raw llama_decode, batch 1, 1 thread: {raw:.1f} tok/s; one-at-a-time path with "
                f"grammar at {single / raw:.2f} of it"
            )


def _reused(counts: PromptCounts | None) -> str:
    """The share of prompt tokens taken from kept caches."""
    if counts is None or not counts.reused + counts.evaluated:
        return "-"
    return f"{counts.reused / (counts.reused + counts.evaluated):.0%}"


def _same(replies: list[str], reference: list[str]) -> str:
    """How many replies are byte-identical to the reference's, as ``k/n``."""
    return f"{sum(a == b for a, b in zip(replies, reference, strict=True))}/{len(replies)}"


def sampler_cost(request: BackendRequest, steps: int = 60, model: str = MODEL) -> None:
    """CPU time per token of the grammar sampler: llama-cpp-python's full chain (the grammar over
    the whole vocabulary) against :class:`ConstrainedSampler`, on the same logits (process time,
    so the ratio holds on a busy machine); they must pick the same tokens."""
    import llama_cpp.llama_cpp as raw

    backend = make_llamacpp(model, {"engine": "batched", "n_threads": 1})
    llm = backend._main()
    engine = BatchEngine(llm, parallel=1, n_ctx=backend.options.n_ctx, threads=1)
    plan = backend._plan(request, [])
    formatted = backend._formatter(messages=[m.model_dump() for m in request.messages])
    prompt = llm.tokenize(formatted.prompt.encode(), add_bos=False, special=True)
    fast, full = ConstrainedSampler(llm, plan), _chain(llm, plan, grammar=True)
    spent = {"full": 0.0, "fast": 0.0}
    index, done = engine._prefill(prompt, 0), 0
    try:
        for step in range(steps):
            start = time.process_time()
            token = full.sample(engine._ctx, index)
            middle = time.process_time()
            same = fast.sample(engine._ctx, index) == token
            spent["full"] += middle - start
            spent["fast"] += time.process_time() - middle
            done += 1
            if not same:
                print(f"sampler check: token {step} differs from the full chain's")
                return
            if raw.llama_vocab_is_eog(llm._model.vocab, token):
                break
            engine._decode([(token, len(prompt) + step, 0, True)])
            index = 0
    finally:
        engine.close()
    full_ms, fast_ms = (1000 * spent[k] / done for k in ("full", "fast"))
    print(
        f"grammar sampler, {done} tokens: full chain {full_ms:.2f} ms CPU/token, best tokens "
        f"only {fast_ms:.2f} ({full_ms / fast_ms:.1f}x less), same tokens"
    )


def engine_profile(
    requests: list[BackendRequest], inflight: int, threads: int, model: str = MODEL
) -> None:
    """Where the batched engine's decode thread spends the wall time of a run (no grammar)."""
    from llama_cpp import _internals

    backend = make_llamacpp(
        model, {"engine": "batched", "parallel": inflight, "n_threads": threads}
    )
    engine = backend._engine()
    spent: collections.Counter[str] = collections.Counter()
    rows = {"step calls": 0, "step rows": 0, "steps": 0}
    in_step = [False]

    def timed(name: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start

        return wrapper

    def decode(items: list[tuple[int, int, int, bool]]) -> None:
        if in_step[0]:
            rows["step calls"] += 1
            rows["step rows"] += len(items)
        decoding(items)

    def step() -> None:
        rows["steps"] += 1
        in_step[0] = True
        try:
            stepping()
        finally:
            in_step[0] = False

    decoding, stepping = timed("decode", engine._decode), timed("step", engine._step)
    engine._decode, engine._step = decode, step  # type: ignore[method-assign]
    engine._prefill = timed("prompt", engine._prefill)  # type: ignore[method-assign]
    engine._advance = timed("bookkeeping", engine._advance)  # type: ignore[method-assign]
    samplers = (_internals.LlamaSampler, ConstrainedSampler)
    originals = [kind.sample for kind in samplers]
    for kind, original in zip(samplers, originals, strict=True):
        kind.sample = timed("sampling", original)  # type: ignore[method-assign]
    try:
        start = time.perf_counter()
        asyncio.run(_throughput(backend, without_grammar(requests), inflight))
        wall = time.perf_counter() - start
    finally:
        for kind, original in zip(samplers, originals, strict=True):
            kind.sample = original  # type: ignore[method-assign]
        engine.close()
    _print_profile(wall, spent, rows, engine.counts, inflight, threads)


def _print_profile(
    wall: float,
    spent: collections.Counter[str],
    rows: dict[str, int],
    counts: PromptCounts,
    inflight: int,
    threads: int,
) -> None:
    step_decode = spent["decode"] - spent["prompt"]
    parts = {
        "prompt evaluation": spent["prompt"],
        "step decodes": step_decode,
        "sampling": spent["sampling"],
        "reply bookkeeping": spent["bookkeeping"],
        "other Python of a step": spent["step"] - step_decode - spent["bookkeeping"],
        "waiting or admitting": wall - spent["prompt"] - spent["step"],
    }
    steps = max(rows["steps"], 1)
    print(
        f"engine thread, {inflight} in flight, no grammar, {threads} thread(s), {wall:.1f} s: "
        + ", ".join(f"{name} {value / wall:.0%}" for name, value in parts.items())
        + f"; {rows['steps']} steps, {rows['step rows'] / steps:.1f} rows and "
        f"{rows['step calls'] / steps:.1f} decode calls a step; prompt tokens "
        f"{counts.evaluated} evaluated, {counts.reused} reused"
    )


def equivalence(
    requests: list[BackendRequest], count: int, inflight: int = 8, model: str = MODEL
) -> None:
    """How many of ``count`` real requests (JSON grammar) the batched engine with
    prompt reuse answers byte for byte as the one-at-a-time path, and where the others part."""
    batch = widen(requests, count)
    single = make_llamacpp(model, {"engine": "single", "n_threads": 1})
    batched = make_llamacpp(model, {"engine": "batched", "parallel": inflight, "n_threads": 1})
    _, expected = asyncio.run(_throughput(single, batch, 1))
    _, got = asyncio.run(_throughput(batched, batch, inflight))
    differing = [i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b]
    prompts = len({tuple(m.content for m in r.messages) for r in batch})
    print(
        f"equivalence: {len(batch) - len(differing)}/{len(batch)} replies identical to the "
        f"one-at-a-time path ({prompts} distinct prompts, JSON grammar, {model}, {inflight} in "
        f"flight, prompt reuse)"
    )
    for index in differing:
        token, gap = _divergence(single, batched, batch[index], expected[index])
        verdict = "a near-tie" if gap < 0.1 else "not a near-tie"
        print(f"  request {index}: parts at token {token}, top-2 logit gap {gap:.3f} ({verdict})")


def _divergence(
    single: LlamaCppBackend, batched: LlamaCppBackend, request: BackendRequest, expected: str
) -> tuple[int, float]:
    """The first batched token that is not in the one-at-a-time reply, and the gap between the
    two best logits there on the one-at-a-time path (its prompt, then the shared tokens one by
    one, as it decodes them)."""
    import llama_cpp.llama_cpp as raw
    import numpy as np

    engine = batched._engine()
    job = batched.batch_job(engine.llm, request)
    tokens = asyncio.run(engine.run(job)).tokens
    wanted = expected.encode("utf-8")
    shared = 0
    while shared < len(tokens) and wanted.startswith(
        engine.llm.detokenize(tokens[: shared + 1], prev_tokens=job.tokens)
    ):
        shared += 1
    llm = single._main()
    llm.reset()  # type: ignore[no-untyped-call]
    llm.eval(job.tokens)
    for token in tokens[:shared]:
        llm.eval([token])
    logits = np.ctypeslib.as_array(raw.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
    best, second = np.sort(logits)[-2:][::-1]
    return shared, float(best - second)


#: Runs the ``cogwm`` command line in a fresh interpreter (the package has no ``__main__``).
_CLI = "import sys; from cogwm.cli.main import main; sys.argv[0] = 'cogwm'; main()"


def _build_model_files(model: str, cache: str) -> None:
    """Build a merged model's file in ``cache`` before the clock starts (a no-op otherwise)."""
    before = os.environ.get("COGWM_CACHE_DIR")
    os.environ["COGWM_CACHE_DIR"] = cache
    try:
        make_llamacpp(model, {})
    finally:
        if before is None:
            os.environ.pop("COGWM_CACHE_DIR")
        else:
            os.environ["COGWM_CACHE_DIR"] = before


def end_to_end(
    card_items: int,
    model: str,
    baseline: str,
    card_parts: str,
    data_dir: str | None,
) -> None:
    """Wall time of the quickstart and of a validity card: today's path (``baseline`` as the
    simulated user, one request at a time) against the new one (``model``, batched), each with
    an empty reply cache; then the ratio."""
    runs = (("single", baseline), ("batched", model))
    walls: dict[str, list[float]] = {}
    for engine, simulator in runs:
        with tempfile.TemporaryDirectory() as folder:
            env = {**os.environ, ENGINE_ENV: engine, "COGWM_CACHE_DIR": f"{folder}/cache"}
            _build_model_files(simulator, env["COGWM_CACHE_DIR"])
            commands = {"quickstart": _quickstart_args(folder, simulator)}
            if card_items:
                commands[f"card ({card_parts}, {card_items} per set)"] = _card_args(
                    folder, simulator, card_items, card_parts, data_dir
                )
            for name, args in commands.items():
                start = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-c", _CLI, *args], env=env, capture_output=True, text=True
                )
                wall = time.perf_counter() - start
                # A failed command's time is no figure: its job gets no ratio.
                walls.setdefault(name, []).append(wall if done.returncode == 0 else float("nan"))
                status = "ok" if done.returncode == 0 else f"exit {done.returncode}"
                print(f"{name:36} {engine:8} {simulator:18} {wall:8.1f} s ({status})")
    for name, (before, after) in walls.items():
        if math.isnan(before) or math.isnan(after):
            print(f"{name:36} no ratio: a run failed")
            continue
        change = f"{baseline} one at a time -> {model} batched"
        print(f"{name:36} {before / after:.2f}x faster ({change})")


def _quickstart_args(folder: str, simulator: str) -> list[str]:
    """``cogwm quickstart`` with ``simulator`` as the simulated user, its files in ``folder``."""
    return [
        "quickstart",
        "--db",
        f"{folder}/q.db",
        "--out",
        f"{folder}/plots",
        "--no-progress",
        "--simulator",
        f"llamacpp:{simulator}",
    ]


def _card_args(
    folder: str, simulator: str, items: int, parts: str, data_dir: str | None
) -> list[str]:
    """``cogwm validate`` of ``simulator``: ``items`` per item set of ``parts``."""
    args = ["validate", "--model", f"llamacpp:{simulator}", "--parts", parts]
    args += ["--limit", str(items), "--out", f"{folder}/card.json"]
    return args + (["--data-dir", data_dir] if data_dir else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        default=f"llamacpp:{MODEL}",
        help="The llamacpp: model replayed (e.g. llamacpp:smollm2-wm-merged); the requests are "
        "always recorded with the shipped world model.",
    )
    parser.add_argument("--requests", type=int, default=16, help="Requests replayed per figure.")
    parser.add_argument("--levels", default="1,4,8,16", help="Requests in flight.")
    parser.add_argument("--rounds", type=int, default=4, help="Arena rounds (>= 3) recorded.")
    parser.add_argument(
        "--threads", default="1,all", help="Batched engine threads ('all': every usable core)."
    )
    parser.add_argument("--dialogues", type=int, default=2, help="Scenarios per task.")
    parser.add_argument(
        "--profile-inflight", type=int, default=8, help="Requests in flight of the profile."
    )
    parser.add_argument(
        "--equivalence", type=int, default=50, help="Requests of the equivalence check (0: none)."
    )
    parser.add_argument(
        "--baseline-model",
        help="Today's llamacpp: model, one at a time, for the ratios (default: --model).",
    )
    parser.add_argument("--end-to-end", action="store_true", help="Time quickstart and a card.")
    parser.add_argument(
        "--card-items", type=int, default=50, help="Items per item set (0: the quickstart only)."
    )
    parser.add_argument(
        "--card-parts",
        default="dailydialog",
        help="Parts of the timed card (dailydialog: two item sets, 2 x --card-items items).",
    )
    parser.add_argument("--data-dir", help="The corpora (default: $COGWM_DATA_DIR).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["COGWM_CACHE_DIR"] = f"{folder}/cache"
        os.environ[ENGINE_ENV] = "single"  # record on the one-at-a-time path
        start = time.perf_counter()
        recorded = record_requests(Path(folder), args.rounds, args.dialogues)
        print(
            f"recorded {len(recorded)} simulator requests in {time.perf_counter() - start:.0f} s; "
            f"{usable_cores()} usable cores"
        )
        threads = sorted(
            {usable_cores() if x == "all" else int(x) for x in args.threads.split(",")}
        )
        levels = [int(x) for x in args.levels.split(",")]
        model = args.model.removeprefix("llamacpp:")
        engine_profile(widen(recorded, args.requests), args.profile_inflight, threads[0], model)
        sampler_cost(recorded[0], model=model)
        baseline = args.baseline_model.removeprefix("llamacpp:") if args.baseline_model else None
        throughput_table(widen(recorded, args.requests), levels, threads, model, baseline)
        if args.equivalence:
            equivalence(recorded, args.equivalence, model=model)
    if args.end_to_end:
        end_to_end(
            args.card_items,
            args.model.removeprefix("llamacpp:"),
            (args.baseline_model or args.model).removeprefix("llamacpp:"),
            args.card_parts,
            args.data_dir,
        )


if __name__ == "__main__":
    main()
