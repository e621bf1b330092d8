"""A scripted fake model for arena tests: it recognises each prompt and answers it.

Answers are a deterministic function of the messages and the seed (as a sampled model's are), so
a conversation replayed from its start produces the same turns (what resume and sharding rely
on), and a different seed produces different ones (so seed tests mean something). ``Script``
lets a test end conversations at chosen rounds, or fail chosen calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cogwm.models import register_fake
from cogwm.models.types import BackendError, BackendRequest, FailureKind, Message, Sampling

if TYPE_CHECKING:
    from cogwm.arena.runner import RunSummary
from cogwm.schema.lexicon import DEFAULT_VALENCES

LABELS = sorted(DEFAULT_VALENCES)
FAKE_NAME = "arena-script"


@dataclass
class Script:
    """What the fake does.

    ``leave_at``: the simulated user turn (1 = the first after the cold start) at which the user
    leaves (None: never; the simulator must see the whole history, so keep ``history_turns``
    large). ``detector_ends``: the intent detector says the conversation ended whenever asked.
    ``fail_when``: every call whose messages contain this text fails (HTTP 500).
    ``cot_invalid_from``: from this simulated agent turn on (1 = the first), the agent's CoT
    replies are not JSON (the agent breaks its format).
    ``raise_when``: such calls raise an unexpected exception (a backend bug, not a failure the
    model interface knows). ``garble``: the simulated user's every utterance is ``{`` (what a
    tiny model under a JSON grammar writes).
    """

    leave_at: int | None = None
    detector_ends: bool = False
    fail_when: str | None = None
    raise_when: str | None = None
    cot_invalid_from: int | None = None
    garble: bool = False
    calls: dict[str, int] = field(default_factory=dict)


def _digest(messages: list[Message], seed: int | None = None) -> int:
    text = "\x1e".join(f"{m.role}:{m.content}" for m in messages)
    return int(hashlib.sha256(f"{seed}\x1d{text}".encode()).hexdigest()[:12], 16)


def _kind(messages: list[Message]) -> str:
    system = messages[0].content if messages[0].role == "system" else ""
    last = messages[-1].content
    if "Give your new state and your reply." in last:
        return "simulator"
    if "Give your state at this point." in last:
        return "opening"
    if "naturally come to an end" in last:
        return "intent"
    if "Success criterion" in last:
        return "judge"
    if "describe the" in last and "Big Five" in last:
        return "profile"
    if "reasoning first" in system:
        return "agent.cot"
    return "agent"


def _state(h: int) -> dict[str, Any]:
    def items(shift: int) -> list[dict[str, Any]]:
        k = (h >> shift) % 3
        return [{"text": f"item {shift}-{i}", "score": (h >> (shift + i)) % 3} for i in range(k)]

    return {
        "emotion": {"label": LABELS[h % len(LABELS)], "intensity": 1 + (h >> 4) % 3},
        "beliefs": items(8),
        "desires": items(12),
        "intentions": items(16),
    }


def make_reply(script: Script) -> Callable[..., str]:
    """The fake's answer function for ``script`` (``(messages, sampling=None) -> str``)."""

    def reply(messages: list[Message], sampling: Sampling | None = None) -> str:
        kind = _kind(messages)
        script.calls[kind] = script.calls.get(kind, 0) + 1
        if script.fail_when and any(script.fail_when in m.content for m in messages):
            raise BackendError(FailureKind.SERVER, "HTTP 500 (scripted)")
        if script.raise_when and any(script.raise_when in m.content for m in messages):
            raise RuntimeError("scripted backend bug")
        h = _digest(messages, None if sampling is None else sampling.seed)
        if kind == "opening":
            return json.dumps(_state(h))
        if kind == "simulator":
            turn = messages[-1].content.count("user words ") + 1
            leave = script.leave_at is not None and turn >= script.leave_at
            said = "{" if script.garble else f"user words {h % 997}"
            return json.dumps({**_state(h), "utterance": said, "leave": leave})
        if kind == "intent":
            return json.dumps({"ended": script.detector_ends})
        if kind == "judge":
            return json.dumps({"reason": "scripted", "good_outcome": h % 2 == 0})
        if kind == "profile":
            return json.dumps(
                {
                    "openness": 3,
                    "conscientiousness": 4,
                    "extraversion": 2,
                    "agreeableness": 5,
                    "neuroticism": 1,
                    "communication_style": "brief",
                    "decision_style": "careful",
                    "confidence": 2,
                }
            )
        if kind == "agent.cot":
            # The cold start holds 2 agent turns; the agent sees every earlier one of its own.
            own = sum(1 for m in messages if m.role == "assistant") - 1
            if script.cot_invalid_from is not None and own >= script.cot_invalid_from:
                return "I would rather just talk."
            return json.dumps(
                {"reasoning": f"secret plan {h % 991}", "reply": f"agent says {h % 983}"}
            )
        return f"agent says {h % 983}"

    return reply


def register(script: Script | None = None, name: str = FAKE_NAME, **options: Any) -> Script:
    """Register the scripted fake under ``fake:<name>`` and return its script."""
    script = script or Script()
    register_fake(name, make_reply(script), **options)
    return script


def config(**overrides: Any) -> dict[str, Any]:
    """A small arena config on the scripted fake (override any key)."""
    model = f"fake:{overrides.pop('model_name', FAKE_NAME)}"
    raw: dict[str, Any] = {
        "name": "test",
        "seed": 11,
        "tasks": ["ESC", "PD"],
        "dialogues_per_task": 2,
        "max_rounds": 6,
        "intent_from_round": 4,
        "concurrency": 4,
        "history_turns": 20,
        # One attempt per call: scripted failures fail at once (no backoff in tests).
        "simulator": {"model": model, "options": {"max_attempts": 1}},
        "agents": [
            {
                "name": "warm",
                "model": model,
                "prompt": "builtin:empathetic",
                "conditions": ["no_cot", "cot"],
                "options": {"max_attempts": 1},
            },
            {
                "name": "cold",
                "model": model,
                "prompt": "builtin:dismissive",
                "options": {"max_attempts": 1},
            },
        ],
    }
    raw.update(overrides)
    return raw


def run_recording(
    db: Path, raw: dict[str, Any], **kwargs: Any
) -> tuple[RunSummary, list[BackendRequest]]:
    """Run the arena config ``raw`` into the store ``db`` (``kwargs``: to ``run_arena``); also
    every request its fake models received."""
    from cogwm.arena.config import parse_config
    from cogwm.arena.runner import run_arena
    from cogwm.models import load
    from cogwm.models.fake import FakeBackend
    from cogwm.store import RunStore

    backends: list[FakeBackend] = []

    def tracked(spec: str, **options: Any) -> Any:
        model = load(spec, **options)
        assert isinstance(model.backend, FakeBackend)
        backends.append(model.backend)
        return model

    with RunStore(db) as store:
        summary = asyncio.run(
            run_arena(parse_config(raw), store, show_progress=False, load_model=tracked, **kwargs)
        )
    return summary, [r for b in backends for r in b.requests]
