"""Fault soak: many conversations on the fake backend with injected failures.

Every attempt fails with HTTP 5xx (20 %), a timeout (10 %), or (structured calls) returns
malformed JSON (10 %); each call has 3 attempts without backoff, so some calls fail for good and
their conversations with them. Checks: the run completes; every failed call is counted by kind;
no failed conversation has metrics and no GoodOutcome that the judge could not give is a 0; then
``--resume`` (the outage passes: another fault seed) until every conversation is finished.

Usage: python bench/bench_arena_soak.py [--conversations 1000] [--concurrency 100]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.models import register_fake
from cogwm.models.types import Message, Sampling
from cogwm.schema.lexicon import DEFAULT_VALENCES
from cogwm.store import RunStore

FAKE = "soak"
LABELS = sorted(DEFAULT_VALENCES)
SCENARIOS = 20
FAULTS = {"server_error": 0.2, "timeout": 0.1, "malformed_json": 0.1}


_ASKS = (
    "Give your new state and your reply.",
    "Give your state at this point.",
    "Success criterion",
    "naturally come to an end",
)


def _asked(messages: list[Message]) -> str:
    """The prompt that says what is asked (a repair request appends the bad reply after it)."""
    for m in messages:
        if m.role == "user" and any(ask in m.content for ask in _ASKS):
            return m.content
    return messages[-1].content


def _reply(messages: list[Message], sampling: Sampling) -> str:
    last = _asked(messages)
    text = f"{sampling.seed}\x1d{last[-400:]}"  # a sampled model: the seed matters
    h = int(hashlib.blake2b(text.encode(), digest_size=6).hexdigest(), 16)
    state = {
        "emotion": {"label": LABELS[h % len(LABELS)], "intensity": 1 + h % 3},
        "beliefs": [{"text": "things can get better", "score": h % 3}],
        "desires": [],
        "intentions": [],
    }
    if "Give your new state and your reply." in last:
        return json.dumps({**state, "utterance": f"I see, {h % 997}.", "leave": False})
    if "Give your state at this point." in last:
        return json.dumps(state)
    if "Success criterion" in last:
        return json.dumps({"reason": "scripted", "good_outcome": h % 2 == 0})
    if "naturally come to an end" in last:
        return json.dumps({"ended": h % 5 == 0})
    return f"That sounds hard; what would help most right now? ({h % 991})"


def soak_config(conversations: int, concurrency: int, fault_seed: int) -> dict[str, Any]:
    """ESC only: ``conversations / 20`` no-CoT agents on the 20 built-in scenarios."""
    options = {
        "faults": {**FAULTS, "seed": fault_seed},
        "max_attempts": 3,
        "backoff_base_s": 0.0,
        "max_concurrency": 4 * concurrency,
    }
    model = f"fake:{FAKE}"
    return {
        "name": "soak",
        "seed": 1,
        "tasks": ["ESC"],
        "dialogues_per_task": SCENARIOS,
        "max_rounds": 7,
        "intent_from_round": 5,
        "concurrency": concurrency,
        "simulator": {"model": model, "options": options},
        "agents": [
            {"name": f"a{i:03d}", "model": model, "options": options}
            for i in range(max(1, conversations // SCENARIOS))
        ],
    }


class Pass(NamedTuple):
    """What one run (or resume) of the soak did."""

    finished: int
    failed: int
    seconds: float
    failed_calls: Counter[str]  # failed call records by failure kind
    reasons: Counter[str]  # failed conversations by the kind in their reason


def _kind(error: str) -> str:
    """The failure kind in a conversation's reason (``fake:soak: timeout: ...``)."""
    if "does not match" in error:
        return "invalid_output"
    head = error.split(": ", 2)
    return head[1] if len(head) > 1 and head[0].startswith("fake:") else head[0]


def one_pass(db: Path, conversations: int, concurrency: int, fault_seed: int) -> Pass:
    """Run (or resume) the soak once and count what failed."""
    register_fake(FAKE, _reply)
    config = parse_config(soak_config(conversations, concurrency, fault_seed))
    with RunStore(db) as store:
        before = store.db.execute("SELECT COALESCE(MAX(id), 0) FROM model_calls").fetchone()[0]
        start = time.perf_counter()
        resume = fault_seed > 1  # later passes resume the run (the outage has passed)
        summary = asyncio.run(run_arena(config, store, resume=resume, show_progress=False))
        seconds = time.perf_counter() - start
        store.call_totals()  # writes held-back call records
        calls = store.db.execute(
            "SELECT error FROM model_calls WHERE ok = 0 AND id > ?", (before,)
        ).fetchall()
        reasons = store.db.execute(
            "SELECT error FROM conversations WHERE status = 'failed'"
        ).fetchall()
    return Pass(
        summary.finished,
        summary.failed,
        seconds,
        Counter(e.split(":", 1)[0] for (e,) in calls),
        Counter(_kind(e or "") for (e,) in reasons),
    )


def check_store(db: Path) -> dict[str, int]:
    """What a failure may never do: leave metrics on a failed conversation, or a 0 for an
    unjudged GoodOutcome. Returns counts for the report."""
    with sqlite3.connect(db) as conn:
        failed_with_metrics = conn.execute(
            "SELECT COUNT(*) FROM metrics m JOIN conversations c ON c.id = m.conversation_id"
            " WHERE c.status != 'finished'"
        ).fetchone()[0]
        unjudged = conn.execute(
            "SELECT COUNT(*) FROM metrics WHERE name = 'go' AND value IS NULL"
        ).fetchone()[0]
        unjudged_as_zero = conn.execute(
            "SELECT COUNT(*) FROM metrics WHERE name = 'go' AND value = 0"
            " AND detail LIKE '%invalid%'"
        ).fetchone()[0]
        finished = conn.execute(
            "SELECT COUNT(*) FROM conversations WHERE status = 'finished'"
        ).fetchone()[0]
        retried = conn.execute("SELECT COUNT(*) FROM conversations WHERE attempts > 1").fetchone()[
            0
        ]
        kept = conn.execute(
            "SELECT COUNT(*) FROM model_calls WHERE conversation_attempt IS NOT NULL"
        ).fetchone()[0]
    assert failed_with_metrics == 0, "a failed conversation has metrics"
    assert unjudged_as_zero == 0, "an unparsable judge verdict was stored as 0"
    return {
        "finished": finished,
        "unjudged_go": unjudged,
        "retried_conversations": retried,
        "calls_of_earlier_attempts_kept": kept,
    }


def soak(conversations: int, concurrency: int, folder: Path, max_resumes: int = 6) -> list[Pass]:
    """The first run and the resumes it takes to finish every conversation."""
    db = folder / "soak.sqlite"
    passes = []
    for fault_seed in range(1, max_resumes + 2):
        done = one_pass(db, conversations, concurrency, fault_seed)
        passes.append(done)
        if done.failed == 0:
            break
    return passes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["COGWM_CACHE_DIR"] = str(Path(tmp) / "cache")
        passes = soak(args.conversations, args.concurrency, Path(tmp))
        for i, p in enumerate(passes):
            label = "run" if i == 0 else f"resume {i}"
            print(
                f"{label}: {p.finished} finished, {p.failed} failed in {p.seconds:.1f} s; "
                f"failed calls by kind {dict(p.failed_calls)}; "
                f"failed conversations by kind {dict(p.reasons)}"
            )
        print("store:", check_store(Path(tmp) / "soak.sqlite"))


if __name__ == "__main__":
    main()
