"""Annotating a corpus: a seeded sample of dialogues, annotated concurrently, stored one by one.

Each dialogue is stored in one transaction as soon as it is done (see
:mod:`cogwm.annotate.store`), so an interrupted run keeps every finished dialogue and ``resume``
continues with the rest of the same sample.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cogwm.annotate.prompts import PROMPT_VERSION
from cogwm.annotate.saa import Annotator, DialogueAnnotation
from cogwm.annotate.store import AnnotationStore, Usage
from cogwm.errors import InputError
from cogwm.models import Model, recording
from cogwm.models.types import CallRecord
from cogwm.schema import Dialogue, TaskSpec
from cogwm.schema.labels import P4GMeta

if TYPE_CHECKING:
    from cogwm.models.budget import Budget


def has_fine_labels(dialogue: Dialogue) -> bool:
    """Whether the dialogue carries the corpus's turn-level human labels.

    Only PersuasionForGood labels a subset (its 300 annotated dialogues); every other corpus
    labels all its dialogues.
    """
    meta = dialogue.meta
    return not isinstance(meta, P4GMeta) or meta.annotated


def select(
    dialogues: Sequence[Dialogue],
    *,
    seed: int,
    limit: int | None = None,
    split: str | None = None,
    labelled_only: bool = False,
) -> list[Dialogue]:
    """A seeded random sample of the dialogues (a fixed order; ``limit`` takes its head).

    The order depends only on the seed and the candidates, so a larger ``limit`` with the same
    seed extends a smaller one.

    Raises:
        InputError: No dialogue of ``split``.
    """
    candidates = [d for d in dialogues if split is None or d.split == split]
    if split is not None and not candidates:
        splits = sorted({str(d.split) for d in dialogues})
        raise InputError(f"no dialogue in split {split!r} (splits: {', '.join(splits)})")
    if labelled_only:
        candidates = [d for d in candidates if has_fine_labels(d)]
    order = sorted(candidates, key=lambda d: d.id)
    random.Random(seed).shuffle(order)
    return order if limit is None else order[:limit]


@dataclass
class RunTotals:
    """What one invocation did."""

    done: int = 0
    skipped: int = 0
    user_turns: int = 0
    failed_turns: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    elapsed_s: float = 0.0
    budget_reached: str | None = None  # why a cap stopped the run (see cogwm.arena.budget)


class _Meter:
    """Counts one dialogue's model calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost_usd = 0.0

    def __call__(self, record: CallRecord) -> None:
        self.calls += 1
        self.prompt_tokens += record.prompt_tokens
        self.completion_tokens += record.completion_tokens
        self.cost_usd += record.cost_usd


Listener = Callable[[Dialogue, DialogueAnnotation, Usage], None]


def check_resumable(store: AnnotationStore, model: str, *, resume: bool) -> set[str]:
    """The ids already done; refuses to mix models, prompt versions, or to overwrite silently.

    Raises:
        InputError: The store has dialogues and ``resume`` is off, or they were written with
            another model or prompt version.
    """
    done = store.done_ids()
    if done and not resume:
        raise InputError(
            f"{store.path} already holds {len(done)} annotated dialogues: pass --resume to "
            "continue, or choose another --db"
        )
    others = store.models() - {(model, PROMPT_VERSION)}
    if others:
        found = ", ".join(f"{m} ({v})" for m, v in sorted(others))
        raise InputError(
            f"{store.path} was written by {found}; this run uses {model} ({PROMPT_VERSION})"
        )
    return done


async def annotate_all(
    dialogues: Sequence[Dialogue],
    model: Model,
    task: TaskSpec,
    store: AnnotationStore,
    *,
    seed: int = 0,
    concurrency: int = 1,
    profiles: bool = True,
    on_done: Listener | None = None,
    on_call: Callable[[CallRecord], None] | None = None,
    budget: Budget | None = None,
) -> RunTotals:
    """Annotate ``dialogues`` (those not stored yet) and store each one when it is done.

    When a cap of ``budget`` is reached, the dialogues in flight are stopped unstored (as by
    Ctrl-C) and ``RunTotals.budget_reached`` says why; ``resume`` continues.
    """
    if concurrency < 1:
        raise InputError(f"--concurrency must be at least 1, got {concurrency}")
    annotator = Annotator(model, task, seed=seed, profiles=profiles)
    done = store.done_ids()
    todo = [d for d in dialogues if d.id not in done]
    totals = RunTotals(skipped=len(dialogues) - len(todo))
    gate = asyncio.Semaphore(concurrency)
    started = time.perf_counter()

    async def one(dialogue: Dialogue) -> None:
        async with gate:
            annotation, usage = await _annotate_metered(annotator, dialogue, budget, on_call)
            # Written from the event loop's thread, whole or not at all.
            store.add(
                dialogue,
                annotation,
                model=model.spec,
                prompt_version=PROMPT_VERSION,
                seed=seed,
                usage=usage,
            )
            _count(totals, annotation, usage)
            if on_done is not None:
                on_done(dialogue, annotation, usage)

    await _gather_until_budget([asyncio.create_task(one(d)) for d in todo], budget)
    totals.elapsed_s = time.perf_counter() - started
    totals.budget_reached = None if budget is None else budget.reached
    return totals


async def _gather_until_budget(tasks: list[asyncio.Task[None]], budget: Budget | None) -> None:
    """Wait for ``tasks``; when a cap of ``budget`` is reached, cancel those still running.

    Raises:
        asyncio.CancelledError: Cancelled from outside (an interrupt), not by the budget.
    """

    def stop() -> None:
        for task_ in tasks:
            task_.cancel()

    if budget is not None:
        budget.on_reached(stop)
    try:
        await asyncio.gather(*tasks)
    except asyncio.CancelledError:
        if budget is None or budget.reached is None:
            raise  # an interrupt, not the budget
    finally:
        stop()


async def _annotate_metered(
    annotator: Annotator,
    dialogue: Dialogue,
    budget: Budget | None,
    on_call: Callable[[CallRecord], None] | None,
) -> tuple[DialogueAnnotation, Usage]:
    """Annotate one dialogue, with its time, calls, tokens and cost; its calls charge ``budget``."""
    meter = _Meter()
    clock = time.perf_counter()
    charge = budget.charge if budget is not None else (lambda _: None)
    with recording(meter), recording(on_call or (lambda _: None)), recording(charge):
        annotation = await annotator.annotate(dialogue)
    usage = Usage(
        time.perf_counter() - clock,
        meter.calls,
        meter.prompt_tokens,
        meter.completion_tokens,
        meter.cost_usd,
    )
    return annotation, usage


def _count(totals: RunTotals, annotation: DialogueAnnotation, usage: Usage) -> None:
    totals.done += 1
    totals.user_turns += len(annotation.turns)
    totals.failed_turns += sum(1 for t in annotation.turns if t.allocation is None)
    for failure in annotation.failures:
        totals.failures[failure.reason] = totals.failures.get(failure.reason, 0) + 1
    totals.calls += usage.calls
    totals.prompt_tokens += usage.prompt_tokens
    totals.completion_tokens += usage.completion_tokens
    totals.cost_usd += usage.cost_usd


def log_line(index: int, total: int, started: float) -> Listener:
    """A listener printing one line per stored dialogue with an ETA (for logs, not terminals)."""
    state = {"n": index}

    def listener(dialogue: Dialogue, annotation: DialogueAnnotation, usage: Usage) -> None:
        state["n"] += 1
        n = state["n"]
        elapsed = time.perf_counter() - started
        done_here = n - index
        eta = elapsed / done_here * (total - n) if done_here else 0.0
        failed = sum(1 for t in annotation.turns if t.allocation is None)
        print(
            f"[{n}/{total}] {dialogue.id}: {len(annotation.turns)} user turns, {failed} failed, "
            f"{len(annotation.failures)} failures, {usage.elapsed_s:.1f}s, "
            f"{usage.prompt_tokens + usage.completion_tokens} tokens; ETA {eta:.0f}s",
            file=sys.stderr,
            flush=True,
        )

    return listener
