"""What common random numbers buy: the paired CI width of the control contrast, with and without
paired seeds, on a seed-dependent fake (no model needed).

The fake user's state at each turn is a draw from the call's seed (the part common random numbers
share across agents), plus a small draw from the conversation's own text (agent-specific noise),
minus one scale point after a dismissive agent turn (the effect to detect). Both agents meet the
same 48 scenarios (ESC, PD, CR built-ins); the CTS difference (empathetic - dismissive) and its
95% bootstrap CI, paired over scenarios, come from the arena's report. Repeated over several run
seeds; the widths are averaged.

Usage: python bench/bench_arena_crn.py [--repeats 5] [--rounds 8]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.models import register_fake
from cogwm.models.types import Message, Sampling
from cogwm.report import build_report, load_run
from cogwm.schema.lexicon import DEFAULT_VALENCES
from cogwm.store import RunStore

FAKE = "bench-crn"
LABELS = sorted(DEFAULT_VALENCES)
DISMISSIVE = "Anyway, nice weather today."


def _state(rng: random.Random, own: random.Random, penalty: int) -> dict[str, Any]:
    def item(name: str) -> dict[str, Any]:
        jitter = own.choices((-1, 0, 1), weights=(1, 6, 1))[0]
        score = min(2, max(0, rng.randint(0, 2) + jitter - penalty))
        return {"text": name, "score": score}

    return {
        "emotion": {"label": rng.choice(LABELS), "intensity": rng.randint(1, 3)},
        "beliefs": [item("things can change")],
        "desires": [item("I want help")],
        "intentions": [item("I will try")],
    }


def _reply(messages: list[Message], sampling: Sampling | None = None) -> str:
    seed = 0 if sampling is None or sampling.seed is None else sampling.seed
    last = messages[-1].content
    rng = random.Random(seed)
    text = "\x1e".join(m.content for m in messages)
    own = random.Random(hashlib.blake2b(f"{seed}{text}".encode(), digest_size=8).digest())
    if "Give your new state and your reply." in last:
        penalty = 1 if last.rfind(DISMISSIVE) > last.rfind("I am here for you") else 0
        return json.dumps({**_state(rng, own, penalty), "utterance": "I see.", "leave": False})
    if "Give your state at this point." in last:
        return json.dumps(_state(rng, own, 0))
    if "Success criterion" in last:
        return json.dumps({"reason": "fake", "good_outcome": rng.random() < 0.5})
    if "naturally come to an end" in last:
        return json.dumps({"ended": False})
    system = messages[0].content
    return DISMISSIVE if "weather" in system else "That sounds hard; I am here for you."


def _config(seed: int, paired: bool, rounds: int) -> dict[str, Any]:
    model = f"fake:{FAKE}"
    return {
        "name": "crn",
        "seed": seed,
        "tasks": ["ESC", "PD", "CR"],
        "dialogues_per_task": 12,
        "max_rounds": rounds,
        "intent_from_round": rounds,
        "concurrency": 32,
        "cache": False,
        "paired_seeds": paired,
        "simulator": {"model": model},
        "agents": [
            {"name": "empathetic", "model": model, "prompt": "builtin:empathetic"},
            {"name": "dismissive", "model": model, "prompt": "builtin:dismissive"},
        ],
    }


def contrast(seed: int, paired: bool, rounds: int, folder: Path) -> tuple[float, float]:
    """(difference, CI width) of CTS empathetic - dismissive for one run."""
    db = folder / f"crn-{seed}-{paired}.sqlite"
    with RunStore(db) as store:
        asyncio.run(
            run_arena(parse_config(_config(seed, paired, rounds)), store, show_progress=False)
        )
        report = build_report(load_run(store), n_resamples=2000)
    (diff,) = report.differences
    estimate = diff.difference
    sign = 1.0 if diff.agent_a.startswith("empathetic") else -1.0
    assert estimate.ci_low is not None and estimate.ci_high is not None
    return sign * estimate.mean, estimate.ci_high - estimate.ci_low


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    register_fake(FAKE, _reply)
    widths: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.repeats):
            for paired in (True, False):
                difference, width = contrast(seed, paired, args.rounds, Path(tmp))
                widths[paired].append(width)
                label = f"seed {seed} paired={paired!s:5}"
                print(f"{label}: CTS diff {difference:+.3f}, CI width {width:.3f}")
    common, independent = statistics.mean(widths[True]), statistics.mean(widths[False])
    print(
        f"mean 95% CI width of the control contrast: paired seeds {common:.3f}, "
        f"independent seeds {independent:.3f} -> ratio {independent / common:.2f}x"
    )


if __name__ == "__main__":
    main()
