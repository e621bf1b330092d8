"""Benchmark of DialToM, printing every figure and ratio from one run.

1. Calls per item: multiple-choice items scored by option log-probabilities make exactly one
   model call each (counted with ``cogwm.models.recording``); asserted on the fake backend's
   logits path and, with ``--embedded N``, on the embedded model.
2. Throughput on the embedded model (SmolLM2-135M via llama.cpp): items/s over N real template
   items (``--embedded N``, needs ``--data-dir``; model loading is timed apart).
3. ``cogwm tom stats --json`` over 40,000 stored answers (a subprocess, so interpreter start and
   imports are counted). Target: <= 5 s.

Usage: python bench/bench_tom.py [--answers 40000] [--embedded N] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cogwm import models
from cogwm.models.types import CallRecord
from cogwm.tom.evaluate import evaluate, run_id_for
from cogwm.tom.items import (
    Attribute,
    Domain,
    Line,
    Provenance,
    Source,
    SpeakerRole,
    Task,
    ToMItem,
    Variant,
)
from cogwm.tom.prompts import PROMPT_VERSION
from cogwm.tom.store import AnswerRow, RunInfo, ToMStore

STATS_LIMIT_S = 5.0


def _history_turns(task: Task, variant: Variant, k: int) -> int | None:
    if task is Task.RETROSPECTIVE:
        return None
    return k % 4 if variant is Variant.DEGRADED else 0


def synthetic_item(k: int, rng: random.Random) -> ToMItem:
    """A valid item with a realistic amount of text (a 12-line window, 4 options)."""
    task = Task.RETROSPECTIVE if k % 7 else Task.PROSPECTIVE
    variant = Variant.HARD if k % 5 else rng.choice([Variant.EASY, Variant.DEGRADED])
    if task is Task.RETROSPECTIVE:
        variant = Variant.HARD
    domain = list(Domain)[k % 3]
    lines = [
        Line(role=SpeakerRole.INITIATOR if j % 2 == 0 else SpeakerRole.RECIPIENT,
             speaker="Counselor" if j % 2 == 0 else "Client",
             text=f"utterance {k}-{j} " + "word " * 12)
        for j in range(12)
    ]  # fmt: skip
    options = [f"option {k}-{j} " + "text " * 10 for j in range(4)]
    return ToMItem(
        id=f"bench:{k}",
        task=task,
        variant=variant,
        domain=domain,
        attribute=list(Attribute)[k % 6] if task is Task.RETROSPECTIVE else None,
        initiator="Counselor",
        recipient="Client",
        context=lines,
        history_turns=_history_turns(task, variant, k),
        profile=None if task is Task.RETROSPECTIVE else "Belief: something.",
        question="Which?",
        options=options,
        gold=options[k % 4],
        provenance=Provenance(source=Source.TEMPLATE, corpus="annomi", dialogue_id=f"d{k // 5}",
                              window_id=f"d{k // 5}#w{k % 5}", window_index=k % 5),
    )  # fmt: skip


def fill_store(path: Path, n_answers: int, n_models: int = 10) -> None:
    """A database with ``n_answers`` answers: n_models runs over n_answers / n_models items."""
    rng = random.Random(0)
    per_run = n_answers // n_models
    items = [synthetic_item(k, rng) for k in range(per_run)]
    with ToMStore(path) as store:
        store.put_items(items)
        for m in range(n_models):
            model = f"model-{m}"
            run = RunInfo(run_id_for(model, "plain", 0), model, "plain", None, 0, PROMPT_VERSION)
            store.ensure_run(run, {"model": model})
            skill = 0.3 + 0.05 * m
            store.put_answers(
                [
                    AnswerRow(
                        run_id=run.run_id, item_id=i.id, permutation=[0, 1, 2, 3],
                        letters=["A", "B", "C", "D"], gold_letter="A", choice="A",
                        chosen_index=0, correct=rng.random() < skill, parsed=rng.random() > 0.01,
                        path="logits", raw="{}", probs={"A": 1.0}, call_id=f"c{m}-{k}",
                    )
                    for k, i in enumerate(items)
                ]
            )  # fmt: skip


def bench_stats(n_answers: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "runs.sqlite"
        fill_store(db, n_answers)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "cogwm.cli.main", "tom", "stats", "--db", str(db), "--json"],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ},
        )
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"tom stats failed: {done.stderr}")
    return elapsed


async def count_calls(items: list[ToMItem], spec: str, db: Path) -> tuple[int, float, str]:
    model = models.load(spec)
    calls: list[CallRecord] = []
    with ToMStore(db) as store, models.recording(calls.append):
        start = time.perf_counter()
        summary = await evaluate(items, model, store, concurrency=4)
        elapsed = time.perf_counter() - start
    await model.aclose()
    assert summary.failed == 0, summary.failures
    assert len(calls) == len(items) == summary.answered, (len(calls), len(items))
    return len(calls), elapsed, ", ".join(f"{k} {v}" for k, v in summary.paths.items())


def embedded_items(data_dir: Path, n: int) -> list[ToMItem]:
    from cogwm.tom.contexts import load_contexts
    from cogwm.tom.templates import build_template_items

    items = build_template_items(load_contexts(["annomi", "esconv", "persuasionforgood"], data_dir))
    return random.Random(1).sample(items, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=40_000)
    parser.add_argument("--embedded", type=int, default=0, metavar="N")
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()

    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        items = [synthetic_item(k, rng) for k in range(500)]
        calls, elapsed, paths = asyncio.run(count_calls(items, "fake:schema", Path(tmp) / "a.db"))
        print(f"1. fake backend: {len(items)} items, {calls} model calls "
              f"(ratio {calls / len(items):.2f} call/item; paths: {paths}); "
              f"{len(items) / elapsed:.0f} items/s")  # fmt: skip

    if args.embedded:
        if args.data_dir is None:
            raise SystemExit("--embedded needs --data-dir (real template items)")
        items = embedded_items(args.data_dir, args.embedded)
        start = time.perf_counter()
        asyncio.run(models.load("llamacpp:smollm2").capabilities())  # loads the model
        load_s = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as tmp:
            calls, elapsed, paths = asyncio.run(
                count_calls(items, "llamacpp:smollm2", Path(tmp) / "e.db")
            )
        rate = len(items) / elapsed
        print(f"2. embedded model: {len(items)} template items, {calls} model calls "
              f"(ratio {calls / len(items):.2f}; paths: {paths}); {rate:.2f} items/s "
              f"({1 / rate:.2f} s/item; model load {load_s:.1f} s timed apart)")  # fmt: skip

    elapsed = bench_stats(args.answers)
    print(f"3. cogwm tom stats over {args.answers:,} answers: {elapsed:.2f} s "
          f"(limit {STATS_LIMIT_S:.0f} s, ratio {elapsed / STATS_LIMIT_S:.2f})")  # fmt: skip
    if elapsed > STATS_LIMIT_S:
        raise SystemExit("stats exceeded its time limit")


if __name__ == "__main__":
    main()
