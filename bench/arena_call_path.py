"""How many of cogwm's files one arena conversation passes through, and how often it enters each.

One conversation (ESC, one scripted fake agent, 4 simulated rounds, the intent detector asked
from round 3 on, the GoodOutcome judge at the end) runs under ``sys.setprofile``. Every call
of a function defined in a cogwm source file counts as an *entry* into that file when the
nearest cogwm frame above it lies in another file. The script prints the files touched, the
total entries and the most entered files: a measure of how far one conversation's logic is
spread, to compare two commits (run it with each one's ``src`` first on ``PYTHONPATH``).

Usage: python bench/arena_call_path.py [--top 10]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import cogwm
from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.models import register_fake
from cogwm.models.types import Message
from cogwm.store import RunStore

FAKE = "bench-call-path"
ROOT = str(Path(cogwm.__file__).parent)


def _reply(messages: list[Message]) -> str:
    """A deterministic answer to each arena prompt; the user never leaves."""
    last = messages[-1].content
    h = int(hashlib.blake2b(last[-400:].encode(), digest_size=6).hexdigest(), 16)
    state = {
        "emotion": {"label": "anxiety", "intensity": 1 + h % 3},
        "beliefs": [{"text": "things can get better", "score": h % 3}],
        "desires": [],
        "intentions": [],
    }
    if "Give your new state and your reply." in last:
        return json.dumps({**state, "utterance": "I see.", "leave": False})
    if "Give your state at this point." in last:
        return json.dumps(state)
    if "Success criterion" in last:
        return json.dumps({"reason": "scripted", "good_outcome": True})
    if "naturally come to an end" in last:
        return json.dumps({"ended": False})
    return "That sounds hard; what would help most right now?"


def config() -> dict[str, Any]:
    """One agent on one built-in ESC scenario, with detector and judge."""
    model = f"fake:{FAKE}"
    return {
        "name": "call-path",
        "seed": 1,
        "tasks": ["ESC"],
        "dialogues_per_task": 1,
        "max_rounds": 6,
        "intent_from_round": 3,
        "concurrency": 1,
        "cache": False,
        "simulator": {"model": model},
        "intent_detector": {"model": model},
        "judge": {"model": model},
        "agents": [{"name": "a", "model": model}],
    }


class Entries:
    """Counts, per cogwm file, the calls that come into it from another file."""

    def __init__(self) -> None:
        self.entries: Counter[str] = Counter()

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        path = frame.f_code.co_filename
        if not path.startswith(ROOT):
            return
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(ROOT):
            caller = caller.f_back
        if caller is None or caller.f_code.co_filename != path:
            self.entries[path[len(ROOT) + 1 :]] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    register_fake(FAKE, _reply)
    parsed = parse_config(config())
    counter = Entries()
    with tempfile.TemporaryDirectory() as folder, RunStore(Path(folder) / "run.sqlite") as store:
        sys.setprofile(counter)
        try:
            summary = asyncio.run(run_arena(parsed, store, show_progress=False))
        finally:
            sys.setprofile(None)
    entries = counter.entries
    print(f"{summary.finished} conversation(s) finished, code under {Path(ROOT).name}/")
    print(f"files entered: {len(entries)}; entries in all: {sum(entries.values())}")
    for path, count in entries.most_common(args.top):
        print(f"  {count:6d}  {path}")


if __name__ == "__main__":
    main()
