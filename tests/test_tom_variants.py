"""Variants: easy set, counterfactual probe, context degradation, open-ended prompts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from cogwm import models
from cogwm.errors import InputError
from cogwm.tom.generator import CounterfactualDraft, ProfileDraft
from cogwm.tom.items import NONE_OF_THE_ABOVE, Attribute, Task, ToMItem, Variant, option_key
from cogwm.tom.variants import (
    build_counterfactuals,
    make_counterfactual,
    make_degraded,
    make_easy,
    make_open,
    read_references,
)
from helpers_tom import mc_item


def _prospective(dialogue: int, window: int) -> ToMItem:
    base = f"d{dialogue} w{window}"
    return mc_item(
        f"x:{dialogue}#w{window}:prosp",
        task=Task.PROSPECTIVE,
        dialogue_id=f"x:{dialogue}",
        options=[f"Client: gold {base} text", f"Client: other {base} a", f"Client: other {base} b"],
        gold=f"Client: gold {base} text",
    )


def test_easy_distractors_come_from_other_dialogues() -> None:
    items = [_prospective(d, w) for d in range(4) for w in range(3)]
    easy = make_easy(items, seed=3)
    assert len(easy) == len(items)
    golds = {option_key(i.gold): i.provenance.dialogue_id for i in items}
    for item in easy:
        assert item.variant is Variant.EASY and item.id.endswith("~easy")
        assert item.n_options == 3 and item.gold in item.options
        for option in item.options:
            if option != item.gold:
                # every distractor is another item's gold, from another dialogue
                assert golds[option_key(option)] != item.provenance.dialogue_id
        assert item.provenance.parent_id == item.id.removesuffix("~easy")
    assert make_easy(items, seed=3) == easy
    assert make_easy(items, seed=4) != easy


def test_easy_needs_enough_other_dialogues() -> None:
    assert make_easy([_prospective(0, 0), _prospective(0, 1)]) == []


def _draft() -> CounterfactualDraft:
    statements = {a.value: f"Contradicting {a.value}." for a in Attribute}
    return CounterfactualDraft(profile=ProfileDraft(**statements), rationale="None fits.")


def test_counterfactual_keeps_options_and_adds_none_of_the_above_last() -> None:
    parent = _prospective(1, 0)
    item = make_counterfactual(parent, _draft())
    assert item.options == [*parent.options, NONE_OF_THE_ABOVE]
    assert item.gold == NONE_OF_THE_ABOVE and item.variant is Variant.COUNTERFACTUAL
    assert item.profile is not None and item.profile.startswith("Belief: Contradicting belief.")
    assert item.rationales == {parent.gold: "None fits."}
    with pytest.raises(InputError, match="prospective"):
        make_counterfactual(mc_item(), _draft())


def test_counterfactual_profiles_from_a_model() -> None:
    statements = {a.value: f"Opposite {a.value}." for a in Attribute}
    reply = json.dumps({"profile": statements, "rationale": "No option fits."})
    models.register_fake("tom-cf", [reply, "{broken", "{broken"])
    try:
        items = [_prospective(1, 0), _prospective(2, 0), mc_item("retro")]
        made, failures = asyncio.run(
            build_counterfactuals(items, models.load("fake:tom-cf"), concurrency=1)
        )
    finally:
        models.unregister_fake("tom-cf")
    # the retrospective item is not a candidate; the second prospective one failed twice
    assert [i.id for i in made] == ["x:1#w0:prosp~cf"]
    assert len(failures) == 1 and failures[0].startswith("x:2#w0:prosp")


def test_degradation_restores_0_to_k_turns() -> None:
    parent = _prospective(1, 0)  # its context has 3 turns
    made = make_degraded([parent, mc_item()], max_turns=5)
    assert [i.history_turns for i in made] == [0, 1, 2, 3]
    assert [len(i.shown_history()) for i in made] == [0, 1, 3, 4]
    assert all(i.variant is Variant.DEGRADED and i.options == parent.options for i in made)
    with pytest.raises(InputError):
        make_degraded([parent], max_turns=-1)


def test_open_prompts_with_human_references(tmp_path: Path) -> None:
    refs = tmp_path / "refs.csv"
    refs.write_text("window_id,attribute,reference\nx:1#w0,desire,She wants to quit.\n")
    item = mc_item()  # retrospective, desire, window x:1#w0
    (made,) = make_open([item, _prospective(1, 0)], read_references(refs))
    assert made.variant is Variant.OPEN and made.options == []
    assert made.references == [item.gold, "She wants to quit."]
    assert "desire" in made.question
    bad = tmp_path / "bad.csv"
    bad.write_text("window_id,attribute,reference\nx:1#w0,mood,text\n")
    with pytest.raises(InputError, match="row 2: unknown attribute 'mood'"):
        read_references(bad)


def test_easy_never_offers_the_gold_twice_when_another_dialogue_has_the_same_text() -> None:
    # d0 and d1 open their next windows with the very same words; the pool keeps d0's copy, which
    # is "from another dialogue" for d1's item but must not become its distractor.
    same = "Client: Okay, thank you."
    items = [
        _prospective(0, 0).model_copy(
            update={"gold": same, "options": [same, "Client: x", "Client: y"]}
        ),
        _prospective(1, 0).model_copy(
            update={"gold": same, "options": [same, "Client: z", "Client: w"]}
        ),
        *[_prospective(d, 0) for d in range(2, 5)],
    ]
    for seed in range(20):
        for item in make_easy(items, seed=seed):
            keys = [option_key(o) for o in item.options]
            assert len(set(keys)) == len(keys)
