"""DialToM run ids follow the model's identity, not the address it was loaded by."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogwm import models
from cogwm.models.types import BackendReply, Message
from cogwm.tom.evaluate import evaluate
from cogwm.tom.store import ToMStore
from helpers_tom import mc_item

FAKE = "tom-identity"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ToMStore]:
    with ToMStore(tmp_path / "tom.sqlite") as opened:
        yield opened


def test_two_models_behind_one_address_get_two_runs(store: ToMStore) -> None:
    # Catches: run ids hashed the address (spec), so a resumed run with other weights behind
    # the same address continued the old run and mixed the two models' answers.
    def answer(messages: list[Message]) -> BackendReply:
        return BackendReply(text="A", candidate_logprobs={x: -1.0 for x in "ABCD"})

    models.register_fake(FAKE, answer)
    try:
        items = [mc_item(f"i{i}") for i in range(2)]
        first = models.load(f"fake:{FAKE}", identity="weights-v1")
        second = models.load(f"fake:{FAKE}", identity="weights-v2")
        run_a = asyncio.run(evaluate(items, first, store, seed=1)).run_id
        run_b = asyncio.run(evaluate(items, second, store, seed=1)).run_id
    finally:
        models.unregister_fake(FAKE)
    assert run_a != run_b
    assert len(store.answers(run_a)) == len(store.answers(run_b)) == 2
