"""Session history: retrospective items shown with the whole session up to the window's end."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogwm import models
from cogwm.errors import InputError
from cogwm.models.types import BackendReply, Message
from cogwm.tom.contexts import contexts_of
from cogwm.tom.evaluate import evaluate
from cogwm.tom.items import Task, ToMItem
from cogwm.tom.stats import compute_stats
from cogwm.tom.store import ToMStore
from cogwm.tom.templates import build_template_items
from helpers_tom import annomi_session

FAKE = "tom-history-test"


@pytest.fixture(autouse=True)
def _forget_fake() -> Iterator[None]:
    yield
    models.unregister_fake(FAKE)


def _retro_items() -> list[ToMItem]:
    return build_template_items(
        contexts_of([annomi_session()], max_words=None), tasks=[Task.RETROSPECTIVE]
    )


def test_items_record_the_session_before_their_window() -> None:
    contexts = contexts_of([annomi_session()], max_words=None)
    items = {i.provenance.window_id: i for i in _retro_items()}
    assert items["annomi:7#w0"].earlier == []
    assert items["annomi:7#w1"].earlier == contexts[0].lines()
    assert items["annomi:7#w2"].earlier == contexts[0].lines() + contexts[1].lines()
    last = items["annomi:7#w2"]
    assert last.shown_history() == last.context  # the window, as before
    assert last.shown_history(full=True) == last.earlier + last.context
    # prospective items show no history either way
    prosp = build_template_items(
        contexts_of([annomi_session()], max_words=None), tasks=[Task.PROSPECTIVE]
    )
    assert all(i.earlier == [] and i.shown_history(full=True) == [] for i in prosp)


def test_full_history_is_shown_recorded_kept_apart_and_measured(tmp_path: Path) -> None:
    prompts: list[str] = []

    def answer(messages: list[Message]) -> BackendReply:
        prompts.append(messages[-1].content)
        return BackendReply(text="A", candidate_logprobs={"A": -0.1, "B": -3.0, "C": -3.0})

    models.register_fake(FAKE, answer)
    items = [i for i in _retro_items() if i.provenance.window_id == "annomi:7#w2"]
    with ToMStore(tmp_path / "runs.sqlite") as store:
        model = models.load(f"fake:{FAKE}")
        window = asyncio.run(evaluate(items, model, store))
        full = asyncio.run(evaluate(items, model, store, history="full"))
        answers = store.scored_answers()
        configs = store.run_configs()
    assert window.run_id != full.run_id  # a different run, not a resumed one
    assert "u0 u0" not in prompts[0] and "u0 u0" in prompts[1]  # utterance 0 is in window w0
    assert (configs[window.run_id].history, configs[full.run_id].history) == ("window", "full")
    assert window.prompt_length is not None and full.prompt_length is not None
    assert full.prompt_length[0] - window.prompt_length[0] >= 2 * 160  # two earlier windows
    models_in_stats = {r.model for r in compute_stats(answers).table3_rates}
    assert models_in_stats == {f"fake:{FAKE}", f"fake:{FAKE} [full history]"}


def test_full_history_refuses_items_without_the_earlier_session(tmp_path: Path) -> None:
    item = next(i for i in _retro_items() if i.provenance.window_index == 2)
    old = item.model_copy(update={"earlier": []})
    with ToMStore(tmp_path / "r.sqlite") as store, pytest.raises(InputError, match="rebuild"):
        asyncio.run(evaluate([old], models.load("fake:schema"), store, history="full"))
    with ToMStore(tmp_path / "r.sqlite") as store, pytest.raises(InputError, match="--history"):
        asyncio.run(evaluate([item], models.load("fake:schema"), store, history="all"))
    # an item without the field keeps the hash it had before the field existed
    assert old.content_hash() != item.content_hash()
    assert (
        old.content_hash()
        == ToMItem.model_validate_json(old.model_dump_json(exclude={"earlier"})).content_hash()
    )
