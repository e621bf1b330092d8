"""Benchmark of the arena, printing every figure and ratio from one run.

1. Concurrency: 1,000 conversations of 10 simulated turns (5 rounds after the 2-round cold start,
   no intent detector, one judge call) on a scripted fake model with 50 ms per call, at most 100
   conversations in flight, written to a real SQLite store. The ideal time is the total model
   time divided by the concurrency (perfect packing, zero overhead). Target: ideal / actual >= 0.8.
2. Store: turns written one commit each (the runner's pattern), with realistic state JSON.
   Target: >= 2,000 turns/s.
3. ``--embedded N``: N conversations on the embedded model (SmolLM2-135M via llama.cpp, every
   role) with the full protocol; prints conversations per hour on this machine. Slow.
4. ``--targets``: the orchestration-cost targets, each on 1,000 conversations: turns per CPU
   second with a 0 ms fake (>= 6,000), ideal/actual with 100 in flight against 50 ms (>= 0.9)
   and with 1,000 in flight against 250 ms (>= 0.8). Wall-clock ratios mean something only on
   an otherwise idle machine; turns per CPU second less so. ``--json``: one JSON object on
   stdout (the run's lines go to stderr).
5. ``--targets --baseline REV [--repeats 3]``: the targets of commit REV's tree and of the
   current tree, alternately, each in a fresh process; medians, current / baseline and whether
   the current tree is within 5 % (``arena_targets.py``).

Usage: python bench/bench_arena.py [--conversations 1000] [--concurrency 100] [--latency 0.05]
       [--store-turns 20000] [--embedded N] [--embedded-rounds 20]
       [--targets [--json | --baseline REV [--repeats 3]]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from arena_targets import TARGETS, main_baseline, target_lines, targets_json
from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.models import register_fake
from cogwm.models.types import Message
from cogwm.schema import CognitiveState, Emotion, StateItem
from cogwm.schema.lexicon import DEFAULT_VALENCES
from cogwm.store import RunStore, UnitRow

LABELS = sorted(DEFAULT_VALENCES)
FAKE = "bench-arena"
SCENARIOS = 20  # built-in ESC scenarios


def _reply(messages: list[Message]) -> str:
    """A deterministic answer to each arena prompt (the user never leaves)."""
    last = messages[-1].content
    h = int(hashlib.blake2b(last[-400:].encode(), digest_size=6).hexdigest(), 16)
    state = {
        "emotion": {"label": LABELS[h % len(LABELS)], "intensity": 1 + h % 3},
        "beliefs": [{"text": "things can get better", "score": h % 3}],
        "desires": [],
        "intentions": [{"text": "call a friend", "score": (h >> 3) % 3}] if h % 2 else [],
    }
    if "Give your new state and your reply." in last:
        return json.dumps({**state, "utterance": f"I see, {h % 997}.", "leave": False})
    if "Give your state at this point." in last:
        return json.dumps(state)
    if "Success criterion" in last:
        return json.dumps({"reason": "scripted", "good_outcome": h % 2 == 0})
    if "naturally come to an end" in last:
        return json.dumps({"ended": False})
    return f"That sounds hard; what would help most right now? ({h % 991})"


def concurrency_config(conversations: int, concurrency: int, latency: float) -> dict[str, Any]:
    """ESC only: ``conversations / 20`` agents on the 20 built-in scenarios."""
    agents = max(1, conversations // SCENARIOS)
    # No request log: a real backend keeps none, and the fake's would grow with every call.
    options = {
        "latency_s": latency,
        "max_concurrency": 4 * concurrency,
        "max_attempts": 1,
        "keep_requests": False,
    }
    model = f"fake:{FAKE}"
    return {
        "name": "bench",
        "seed": 1,
        "tasks": ["ESC"],
        "dialogues_per_task": SCENARIOS,
        "max_rounds": 7,  # 2 cold-start rounds + 5 simulated rounds = 10 simulated turns
        "intent_from_round": 7,  # the limit ends every conversation; no detector calls
        "concurrency": concurrency,
        "cache": False,
        "simulator": {"model": model, "options": options},
        "agents": [
            {"name": f"a{i:03d}", "model": model, "options": options} for i in range(agents)
        ],
    }


def bench_concurrency(
    conversations: int, concurrency: int, latency: float, folder: Path
) -> tuple[float, float]:
    """``(ideal / actual, turns per CPU second)`` of one run."""
    register_fake(FAKE, _reply)
    config = parse_config(concurrency_config(conversations, concurrency, latency))
    db = folder / f"concurrency-{concurrency}-{latency}.sqlite"
    with RunStore(db) as store:
        start, cpu = time.perf_counter(), time.process_time()
        summary = asyncio.run(run_arena(config, store, show_progress=False))
        actual = time.perf_counter() - start
        cpu = time.process_time() - cpu
        turns = store.db.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
        per_conversation = store.db.execute(
            "SELECT COUNT(*) FROM model_calls WHERE conversation_id IS NOT NULL"
        ).fetchone()[0]
        shared = store.db.execute(
            "SELECT COUNT(*) FROM model_calls WHERE conversation_id IS NULL"
        ).fetchone()[0]
    n = summary.finished
    # Perfect packing: all model time spread over `concurrency` slots, plus the shared openings
    # (one call per scenario, all in parallel before the first round).
    ideal = per_conversation * latency / concurrency + latency
    print(
        f"[1] {n} conversations, {summary.failed} failed, {turns} turns, "
        f"{per_conversation} + {shared} calls at {latency * 1000:.0f} ms, concurrency {concurrency}"
    )
    print(
        f"    ideal {ideal:.2f} s, actual {actual:.2f} s -> ideal/actual = {ideal / actual:.2f}"
        f"  (target >= 0.8)"
    )
    print(
        f"    {n / actual * 3600:,.0f} conversations/hour, {turns / actual:,.0f} turns/s; "
        f"{cpu:.2f} s of CPU -> {turns / cpu:,.0f} turns per CPU second"
    )
    return ideal / actual, turns / cpu


def _state_json(i: int) -> str:
    return CognitiveState(
        emotion=Emotion(label=LABELS[i % len(LABELS)], intensity=1 + i % 3),
        beliefs=[StateItem(text="my manager does not value my work", score=float(i % 3))],
        desires=[StateItem(text="I want to be treated fairly", score=1.0)],
        intentions=[StateItem(text="talk to HR next week", score=2.0)] if i % 2 else [],
    ).model_dump_json(exclude_none=True)


def bench_store(turns: int, folder: Path) -> float:
    db = folder / "store.sqlite"
    with RunStore(db) as store:
        run_id = store.create_run(
            name="bench",
            config={},
            config_hash="x",
            prompts=[],
            git_revision=None,
            packages={},
            seed=0,
            shard=None,
        )
        per_conversation = 40
        states = [_state_json(i) for i in range(64)]
        text = "That sounds really hard. What would help you most right now? " * 2
        start = time.perf_counter()
        for c in range(turns // per_conversation):
            unit = UnitRow(f"u{c}", "ESC", "a", "no_cot", f"s{c}", "builtin", "m", "m", c)
            cid = store.start_conversation(run_id, unit)
            for i in range(per_conversation):
                user = i % 2 == 1
                store.add_turn(
                    cid,
                    idx=i,
                    round=i // 2 + 1,
                    role="user" if user else "agent",
                    phase="simulated",
                    text=text,
                    state_json=states[i % 64] if user else None,
                    call_id=f"{c}-{i}",
                )
        elapsed = time.perf_counter() - start
    written = (turns // per_conversation) * per_conversation
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == written
    rate = written / elapsed
    print(
        f"[2] store: {written:,} turns, one commit each, in {elapsed:.2f} s -> "
        f"{rate:,.0f} turns/s  (target >= 2,000)"
    )
    return rate


def bench_embedded(conversations: int, rounds: int, folder: Path) -> None:
    from cogwm.arena.quickstart import EMBEDDED_MODEL

    os.environ.setdefault("COGWM_CACHE_DIR", str(folder / "cache"))
    agents = ["builtin:empathetic", "builtin:solution_first", "builtin:dismissive"]
    raw = {
        "name": "bench-embedded",
        "seed": 3,
        "tasks": ["ESC"],
        "dialogues_per_task": max(1, -(-conversations // len(agents))),
        "max_rounds": rounds,
        "intent_from_round": min(8, rounds),
        "concurrency": 2,
        "cache": False,
        "simulator": {"model": EMBEDDED_MODEL},
        "agents": [{"name": p.split(":")[1], "model": EMBEDDED_MODEL, "prompt": p} for p in agents],
    }
    config = parse_config(raw)
    with RunStore(folder / "embedded.sqlite") as store:
        summary = asyncio.run(run_arena(config, store, show_progress=True))
        rounds_done = [c.rounds or 0 for c in store.conversations()]
    n = summary.finished + summary.failed
    print(
        f"[3] embedded {EMBEDDED_MODEL}: {n} conversations ({summary.failed} failed), "
        f"mean {sum(rounds_done) / max(1, len(rounds_done)):.1f} rounds (limit {rounds}), "
        f"{summary.tokens:,} tokens in {summary.elapsed_s:.0f} s -> "
        f"{n / summary.elapsed_s * 3600:.1f} conversations/hour on {os.cpu_count()} cores"
    )


def targets(as_json: bool = False) -> None:
    """The three orchestration-cost targets of the arena, each on 1,000 conversations.

    With ``as_json`` the run's lines go to stderr and stdout holds one JSON object.
    """
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            _, cpu_rate = bench_concurrency(1000, 100, 0.0, folder)
            at_50ms, _ = bench_concurrency(1000, 100, 0.05, folder)
            at_250ms, _ = bench_concurrency(1000, 1000, 0.25, folder)
        values = dict(zip((t.key for t in TARGETS), (cpu_rate, at_50ms, at_250ms), strict=True))
        print("\n".join(target_lines(values)))
    if as_json:
        print(targets_json(values))


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--store-turns", type=int, default=20_000)
    parser.add_argument("--embedded", type=int, default=0, metavar="N")
    parser.add_argument("--embedded-rounds", type=int, default=20)
    parser.add_argument("--targets", action="store_true", help="Run the three cost targets.")
    parser.add_argument("--json", action="store_true", help="--targets: one JSON object.")
    parser.add_argument(
        "--baseline", metavar="REV", help="--targets: compare with commit REV, alternately."
    )
    parser.add_argument("--repeats", type=_positive, default=3, help="--baseline: runs per side.")
    args = parser.parse_args()
    if args.baseline is not None and (not args.targets or args.json):
        parser.error("--baseline goes with --targets (and prints text, not --json)")
    if args.baseline is not None:
        sys.exit(main_baseline(args.baseline, args.repeats))
    if args.targets:
        targets(args.json)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ratio, _ = bench_concurrency(args.conversations, args.concurrency, args.latency, folder)
        rate = bench_store(args.store_turns, folder)
        if args.embedded:
            bench_embedded(args.embedded, args.embedded_rounds, folder)
    print(
        f"summary: ideal/actual {ratio:.2f} ({'ok' if ratio >= 0.8 else 'BELOW 0.8'}), "
        f"store {rate:,.0f} turns/s ({'ok' if rate >= 2000 else 'BELOW 2,000'})"
    )


if __name__ == "__main__":
    main()
