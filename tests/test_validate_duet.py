"""The duet pipeline: DuetSim's verifier checks the generated reply against the state before the
turn and has it written again once when it does not fit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from cogwm.models import load
from cogwm.models.fake import register_fake, unregister_fake
from cogwm.models.types import Message
from cogwm.schema import CognitiveState, Emotion
from cogwm.simulator.format import WorldModelInput
from cogwm.validate.items import Item
from cogwm.validate.reader import read_items

STATE = {"emotion": {"label": "sadness", "intensity": 2}, "beliefs": [], "desires": [],
         "intentions": []}  # fmt: skip


def _item() -> Item:
    inp = WorldModelInput(
        task="ESC",
        context="I lost my job.",
        history=[("user", "hi"), ("agent", "How are you feeling?")],
        initial_state=CognitiveState(emotion=Emotion(label="sadness", intensity=3)),
        previous_state=CognitiveState(emotion=Emotion(label="sadness", intensity=3)),
    )
    return Item(id="d:3", dialogue_id="d", turn_index=3, inp=inp, utterance="meh", gold="x")


@pytest.fixture
def calls() -> Iterator[list[str]]:
    """A fake that writes 'first' then 'second', rejects 'first' and accepts anything else."""
    seen: list[str] = []

    def reply(messages: list[Message]) -> str:
        text = messages[-1].content
        if "Does the reply fit" in text:
            seen.append("verify")
            return json.dumps({"fits": "Their reply: first" not in text})
        if "Write only what you say next" in text:
            seen.append("retry" if "did not fit your state" in text else "generate")
            return "second" if "did not fit your state" in text else "first"
        seen.append("read")
        return json.dumps(STATE)

    register_fake("duet", reply)
    yield seen
    unregister_fake("duet")


def test_duet_writes_a_rejected_reply_again_once(calls: list[str]) -> None:
    model = load("fake:duet")
    [reading] = asyncio.run(read_items(model, [_item()], "predict", seed=0, pipeline="duet"))
    assert reading.utterance == "second"
    assert calls == ["generate", "verify", "retry", "read"]


def test_dual_has_no_verifier(calls: list[str]) -> None:
    model = load("fake:duet")
    [reading] = asyncio.run(read_items(model, [_item()], "predict", seed=0, pipeline="dual"))
    assert reading.utterance == "first"
    assert calls == ["generate", "read"]
