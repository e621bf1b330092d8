"""Scoring: seeded recorded permutations, one call per item, stored raw answers, resume, masking."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogwm import models
from cogwm.errors import InputError
from cogwm.models.types import BackendReply, CallRecord, Message
from cogwm.tom.evaluate import (
    MASK,
    evaluate,
    injected_condition,
    mask_option_references,
    teacher_reasoning,
)
from cogwm.tom.items import NONE_OF_THE_ABOVE, Task, ToMItem, Variant
from cogwm.tom.prompts import mc_messages, permutation
from cogwm.tom.store import ToMStore
from helpers_tom import mc_item

FAKE = "tom-eval-test"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ToMStore]:
    with ToMStore(tmp_path / "runs.sqlite") as opened:
        yield opened


@pytest.fixture(autouse=True)
def _forget_fake() -> Iterator[None]:
    yield
    models.unregister_fake(FAKE)


def _items(n: int) -> list[ToMItem]:
    return [mc_item(f"x:{k}#w0:retro:t", options=["yes", "no", "maybe", "never"]) for k in range(n)]


def _letter_of(messages: list[Message], text: str) -> str:
    match = re.search(rf"^([A-Z])\. {re.escape(text)}$", messages[-1].content, re.MULTILINE)
    assert match, "the option must be in the prompt"
    return match.group(1)


def test_permutation_is_seeded_recorded_and_keeps_none_of_the_above_last() -> None:
    item = mc_item(
        task=Task.PROSPECTIVE,
        variant=Variant.COUNTERFACTUAL,
        options=["a", "b", "c", "d", NONE_OF_THE_ABOVE],
        gold=NONE_OF_THE_ABOVE,
    )
    orders = {tuple(permutation(item, seed).order) for seed in range(40)}
    assert len(orders) > 1  # the seed matters
    assert all(order[-1] == 4 for order in orders)  # "None of the above" stays last
    shown = permutation(item, 3)
    assert permutation(item, 3) == shown and shown.letters == ["A", "B", "C", "D", "E"]
    assert shown.gold_letter(item) == "E"
    text = mc_messages(item, shown)[-1].content
    assert text.index("E. None of the above") > text.index("D. ")


def test_logprob_scoring_makes_one_call_per_item_and_stores_raw_output(store: ToMStore) -> None:
    def answer(messages: list[Message]) -> BackendReply:
        letter = _letter_of(messages, "yes")  # the gold of every item
        logprobs = {x: (-0.1 if x == letter else -4.0) for x in "ABCD"}
        return BackendReply(text=letter, candidate_logprobs=logprobs)

    models.register_fake(FAKE, answer)
    calls: list[CallRecord] = []
    items = _items(7)
    with models.recording(calls.append):
        summary = asyncio.run(evaluate(items, models.load(f"fake:{FAKE}"), store, seed=5))
    assert len(calls) == len(items) == summary.answered  # one model call per item
    assert summary.paths == {"logits": 7} and summary.unparsed == 0
    rows = store.answers(summary.run_id)
    assert len(rows) == 7 and all(r.correct and r.parsed and r.path == "logits" for r in rows)
    for row, item in zip(rows, items, strict=True):
        assert row.permutation == permutation(item, 5).order  # recorded as shown
        assert row.chosen_index == item.gold_index
        assert '"' in row.raw and row.call_id in {c.call_id for c in calls}
        assert abs(sum(row.probs.values()) - 1) < 1e-9


def test_unparsed_answers_count_as_wrong_and_apart(store: ToMStore) -> None:
    replies = ["I am not sure.", "The answer is B.", "(C)"]
    models.register_fake(FAKE, replies, logprobs=False, full_logits=False)
    items = _items(3)
    summary = asyncio.run(evaluate(items, models.load(f"fake:{FAKE}"), store, concurrency=1))
    assert summary.unparsed == 1 and summary.paths == {"parsed": 3}
    rows = {r.item_id: r for r in store.answers(summary.run_id)}
    first = rows[items[0].id]
    assert first.choice is None and not first.parsed and not first.correct
    assert first.raw == "I am not sure."
    for item, letter in zip(items[1:], ["B", "C"], strict=True):
        row = rows[item.id]
        assert row.choice == letter and row.parsed
        assert row.correct == (letter == permutation(item, 0).gold_letter(item))
    scored = store.scored_answers()
    assert sum(not a.parsed for a in scored) == 1 and sum(a.correct for a in scored) == sum(
        r.correct for r in rows.values()
    )


def test_resume_skips_answered_items_and_retries_failures(store: ToMStore) -> None:
    items = _items(4)
    failing = models.load("fake:schema", faults={"server_error": 1.0}, max_attempts=1)
    summary = asyncio.run(evaluate(items, failing, store))
    assert summary.failed == 4 and summary.answered == 0
    assert store.answers(summary.run_id) == []  # infrastructure failures are not answers
    model = models.load("fake:schema")
    first = asyncio.run(evaluate(items[:2], model, store, resume=True))
    assert first.answered == 2
    with pytest.raises(InputError, match="--resume"):
        asyncio.run(evaluate(items, model, store))
    second = asyncio.run(evaluate(items, model, store, resume=True))
    assert (second.answered, second.skipped) == (2, 2)
    assert len(store.answers(second.run_id)) == 4


def test_mask_option_references() -> None:
    reasoning = (
        "Option A talks about quitting, which fits. (B) is too vague. Options C and D "
        "ignore the profile. The client said she wants to quit smoking for her kids. "
        "So the answer is A."
    )
    options = ["She wants to quit smoking for her kids soon", "no", "maybe", "never"]
    masked = mask_option_references(reasoning, ["A", "B", "C", "D"], options)
    assert masked == (
        f"{MASK} talks about quitting, which fits. {MASK} is too vague. {MASK} ignore the "
        f"profile. The client said {MASK}"
    )


def test_injection_shows_the_teachers_masked_reasoning(store: ToMStore) -> None:
    items = _items(2)
    models.register_fake(FAKE, ["I think option B is right because of the profile."] * 2)
    teacher = models.load(f"fake:{FAKE}")
    done = asyncio.run(teacher_reasoning(items, teacher, store))
    assert done.answered == 2
    assert store.reasoning(f"fake:{FAKE}", 0) == {
        i.id: f"I think {MASK} is right because of the profile." for i in items
    }
    seen: list[str] = []

    def student(messages: list[Message]) -> str:
        seen.append(messages[-1].content)
        return "A"

    models.unregister_fake(FAKE)
    models.register_fake("tom-student", student, logprobs=False, full_logits=False)
    try:
        summary = asyncio.run(
            evaluate(
                items,
                models.load("fake:tom-student"),
                store,
                condition=injected_condition(f"fake:{FAKE}"),
                teacher=f"fake:{FAKE}",
            )
        )
    finally:
        models.unregister_fake("tom-student")
    assert summary.answered == 2
    assert all(f"I think {MASK} is right" in text for text in seen)
    conditions = {a.condition for a in store.scored_answers()}
    assert conditions == {f"injected:fake:{FAKE}"}


@pytest.mark.parametrize(
    ("reasoning", "expected"),
    [
        # The teacher is told to end with its answer; "Answer: A" must not survive as "A".
        ("She cried at work.\nAnswer: A", "She cried at work."),
        ("She cried at work.\n**Answer:** A", "She cried at work."),
        ("She cried. Final choice: A", "She cried."),
        ("I think A, because I'm sure.", f"I think {MASK}, because I'm sure."),
        ("A seeker who cries is sad.", "A seeker who cries is sad."),  # the article stays
        # a quoted option shorter than 6 words, and a quoted part of one
        ('"The seeker is feeling sad" fits.', f"{MASK} fits."),
        ("Saying “feeling sad” is fair.", f"Saying {MASK} is fair."),
        ("the seeker is feeling sad, clearly", f"{MASK} clearly"),
        ('She said "not today" twice.', 'She said "not today" twice.'),  # not an option
    ],
)
def test_mask_hides_answer_lines_short_quotes_and_letter_a(reasoning: str, expected: str) -> None:
    options = [f"The seeker is feeling {e}." for e in ("sad", "angry", "afraid", "ashamed")]
    assert mask_option_references(reasoning, ["A", "B", "C", "D"], options) == expected


def _always(letter: str) -> BackendReply:
    return BackendReply(text=letter, candidate_logprobs={x: (-0.1 if x == letter else -5.0)
                                                         for x in "ABCDE"})  # fmt: skip


def test_rotations_show_every_option_under_every_letter_and_keep_nota_last() -> None:
    from cogwm.tom.evaluate import rotations

    item = mc_item(
        task=Task.PROSPECTIVE,
        variant=Variant.COUNTERFACTUAL,
        options=["a", "b", "c", "d", NONE_OF_THE_ABOVE],
        gold=NONE_OF_THE_ABOVE,
    )
    shown = permutation(item, 2)
    orders = [shown.order] + [r.order for r in rotations(shown)]
    assert len(orders) == 4 and all(order[-1] == 4 for order in orders)
    for position in range(4):  # each movable option once under each letter
        assert sorted(order[position] for order in orders) == [0, 1, 2, 3]


def test_circular_scoring_catches_a_position_biased_model(store: ToMStore) -> None:
    from cogwm.tom.stats import ChoiceRecord, compute_stats

    # items whose seeded order shows the gold under "A": a model that always says "A" scores
    # 100 % on them in the plain order
    items = [i for i in _items(40) if permutation(i, 0).gold_letter(i) == "A"][:5]
    assert len(items) == 5
    models.register_fake(FAKE, lambda _messages: _always("A"))
    calls: list[CallRecord] = []
    with models.recording(calls.append):
        plain = asyncio.run(evaluate(items, models.load(f"fake:{FAKE}"), store))
        circular = asyncio.run(
            evaluate(items, models.load(f"fake:{FAKE}"), store, circular=True, resume=True)
        )
    assert plain.answered == 5 and (circular.answered, circular.rotated) == (0, 5)
    assert len(calls) == 5 + 5 * 3  # the plain answers are not asked again
    answers = store.scored_answers()
    assert all(a.correct and a.circular is False for a in answers)
    choices = [ChoiceRecord(f"fake:{FAKE}", "plain", c, g) for c, g in
               [(a.choice, a.gold_letter) for a in store.answers()]
               + [(a.choice, a.gold_letter) for _, a in store.rotations()]]  # fmt: skip
    report = compute_stats(answers, choices=choices)
    (row,) = report.circular
    assert (row.n, row.plain, row.circular) == (5, 1.0, 0.0)
    (bias,) = report.position_bias
    assert (bias.answers, bias.top_letter, bias.top_share) == (20, "A", 1.0)
    assert bias.gold_share == pytest.approx(0.25)  # the gold was under "A" in 5 of 20 orders


def test_circular_scoring_keeps_a_model_that_knows_the_answer(store: ToMStore) -> None:
    def answer(messages: list[Message]) -> BackendReply:
        return _always(_letter_of(messages, "yes"))

    models.register_fake(FAKE, answer)
    items = _items(3)
    summary = asyncio.run(evaluate(items, models.load(f"fake:{FAKE}"), store, circular=True))
    assert summary.rotated == 3
    assert all(a.circular is True for a in store.scored_answers())
    assert len(store.rotations(summary.run_id)) == 3 * 3


def test_model_masking_is_shown_checked_and_its_path_recorded(store: ToMStore) -> None:
    from cogwm.tom.evaluate import mask_reasoning

    items = _items(3)
    models.register_fake(FAKE, ["Option B is right: she wants to quit."] * 3)
    teacher = f"fake:{FAKE}"
    asyncio.run(teacher_reasoning(items, models.load(teacher), store))
    rewrites = iter(
        [
            "She wants to quit, which one option captures.",  # clean: shown as written
            "Option C fits because she wants to quit.",  # a letter left: the regex masks it
        ]
    )

    def masker(messages: list[Message]) -> str:
        assert "Option B is right" in messages[-1].content  # the masker sees the raw reasoning
        return next(rewrites)

    models.register_fake("tom-masker", masker, logprobs=False, full_logits=False)
    failing = models.load("fake:tom-masker", faults={"server_error": 1.0}, max_attempts=1)
    try:
        first = asyncio.run(
            mask_reasoning(items[:2], teacher, models.load("fake:tom-masker"), store, concurrency=1)
        )
        # the third item: the masking model fails, the regular expressions stand in
        fallback = asyncio.run(mask_reasoning(items, teacher, failing, store))
    finally:
        models.unregister_fake("tom-masker")
    assert first == {"model": 1, "model+regex": 1}
    masks = store.masks(teacher, 0, "fake:tom-masker")
    assert masks[items[0].id] == ("She wants to quit, which one option captures.", "model")
    assert masks[items[1].id] == (f"{MASK} fits because she wants to quit.", "model+regex")
    assert fallback == {"regex (model failed)": 1}
    assert store.masks(teacher, 0, failing.spec)[items[2].id][1] == "regex (model failed)"

    seen: list[str] = []

    def student(messages: list[Message]) -> str:
        seen.append(messages[-1].content)
        return "A"

    models.register_fake("tom-student", student, logprobs=False, full_logits=False)
    try:
        summary = asyncio.run(
            evaluate(items[:2], models.load("fake:tom-student"), store,
                     condition=injected_condition(teacher, "fake:tom-masker"),
                     teacher=teacher, masker="fake:tom-masker")
        )  # fmt: skip
    finally:
        models.unregister_fake("tom-student")
    assert summary.answered == 2
    assert any("which one option captures" in text for text in seen)
    assert not any("Option B" in text or "Option C" in text for text in seen)
    assert {a.condition for a in store.scored_answers()} == {
        f"injected:{teacher}|masked-by:fake:tom-masker"
    }
