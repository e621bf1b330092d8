"""The LLM item generator through the model interface, with scripted fakes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from cogwm import models
from cogwm.models.types import Message
from cogwm.tom.contexts import contexts_of
from cogwm.tom.generator import GENERATOR_PROMPT_VERSION, DropReason, ItemGenerator
from cogwm.tom.items import Attribute, Source, Task, ToMItem
from helpers_tom import annomi_session

PROFILE = {a.value: f"The client {a.value} statement." for a in Attribute}


def _distractors(gold_hint: str, repeat_gold: bool) -> str:
    texts = [f"Wrong {gold_hint} {k}." for k in range(3)]
    if repeat_gold:
        texts[1] = f"The client {gold_hint} statement."
    return json.dumps({"distractors": [{"statement": t, "rationale": "Not said."} for t in texts]})


def _script(*, repeat_gold_for: str | None = None, broken_profile: bool = False):  # type: ignore[no-untyped-def]
    def reply(messages: list[Message]) -> str:
        text = "\n".join(m.content for m in messages)
        if "mental state at the end" in text:
            return "{not json" if broken_profile else json.dumps(PROFILE)
        if "alternative continuations" in text:
            lines = [{"speaker": "Client", "text": f"Other continuation {k}."} for k in range(3)]
            return json.dumps(
                {"continuations": [{"lines": [ln], "rationale": "Contradicts."} for ln in lines]}
            )
        attribute = next(a.value for a in Attribute if f"Client's {a.value} (" in text)
        return _distractors(attribute, repeat_gold=attribute == repeat_gold_for)

    return reply


@pytest.fixture
def scripted() -> Iterator[str]:
    name = "tom-generator-test"
    yield name
    models.unregister_fake(name)


def _run(name: str) -> tuple[ItemGenerator, list[ToMItem]]:
    contexts = contexts_of([annomi_session()], max_words=None)
    generator = ItemGenerator(models.load(f"fake:{name}"))
    made: list[ToMItem] = []
    asyncio.run(generator.run(contexts, lambda _c, items: made.extend(items)))
    return generator, made


def test_generator_builds_six_retrospective_and_one_prospective_per_context(
    scripted: str,
) -> None:
    models.register_fake(scripted, _script())
    generator, items = _run(scripted)
    # 3 windows x 6 attributes, plus a prospective item for the 2 windows that are not last.
    retro = [i for i in items if i.task is Task.RETROSPECTIVE]
    prosp = [i for i in items if i.task is Task.PROSPECTIVE]
    assert len(retro) == 18 and len(prosp) == 2
    assert generator.report.dropped == {}
    belief = next(
        i for i in retro if i.id == "llm:fake-tom-generator-test:annomi:7#w0:retro:belief"
    )
    assert belief.gold == PROFILE["belief"] and belief.n_options == 4
    assert set(belief.rationales) == set(belief.options) - {belief.gold}
    assert belief.provenance.source is Source.LLM
    assert belief.provenance.generator_model == f"fake:{scripted}"
    assert belief.provenance.prompt_version == GENERATOR_PROMPT_VERSION
    w0 = next(i for i in prosp if i.provenance.window_id == "annomi:7#w0")
    contexts = contexts_of([annomi_session()], max_words=None)
    assert w0.gold.startswith("Counselor: ") and w0.gold in w0.options
    assert "Client: Other continuation 0." in w0.options
    assert w0.profile is not None and w0.profile.startswith("Belief: The client belief")
    assert w0.context == contexts[0].lines() and w0.shown_history() == []


def test_a_distractor_repeating_the_gold_drops_that_item(scripted: str) -> None:
    models.register_fake(scripted, _script(repeat_gold_for="trust"))
    generator, items = _run(scripted)
    assert not any(i.attribute is Attribute.TRUST for i in items)
    assert generator.report.dropped == {DropReason.DUPLICATE.value: 3}
    assert len(items) == 15 + 2


def test_invalid_structured_output_is_counted_not_kept(scripted: str) -> None:
    models.register_fake(scripted, _script(broken_profile=True))
    generator, items = _run(scripted)
    assert items == []
    assert generator.report.dropped[DropReason.INVALID_OUTPUT.value] == 3
    assert generator.report.dropped[DropReason.NO_PROFILE.value] == 3


def test_schema_fake_runs_end_to_end() -> None:
    contexts = contexts_of([annomi_session()], max_words=None)[:1]
    generator = ItemGenerator(models.load("fake:schema"))
    made: list[ToMItem] = []
    asyncio.run(generator.run(contexts, lambda _c, items: made.extend(items)))
    assert generator.report.contexts == 1
    assert sum(generator.report.items.values()) + sum(generator.report.dropped.values()) == 7


def test_a_none_of_the_above_distractor_is_dropped_not_a_crash(scripted: str) -> None:
    # "None of the above" is reserved (last and correct in counterfactual items): a generated
    # distractor spelled so would make an invalid item and stop the whole run.
    base = _script()

    def reply(messages: list[Message]) -> str:
        text = base(messages)
        if "Client's emotion (" in "\n".join(m.content for m in messages):
            data = json.loads(text)
            data["distractors"][0]["statement"] = "none of the  above"
            return json.dumps(data)
        return text

    models.register_fake(scripted, reply)
    generator, items = _run(scripted)
    assert not any(i.attribute is Attribute.EMOTION for i in items)
    assert generator.report.dropped == {DropReason.DUPLICATE.value: 3}
