"""Reasoning models on DialToM: the final-letter rule, the thinking budget, the stored thinking."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cogwm import models
from cogwm.cli.tom import app
from cogwm.models.types import BackendReply, Message, Sampling
from cogwm.tom.evaluate import PLAIN, evaluate, run_id_for, teacher_reasoning
from cogwm.tom.items import ToMItem, write_items
from cogwm.tom.reasoning import answer_part, final_letter
from cogwm.tom.store import ToMStore
from helpers_cli import cogwm
from helpers_tom import mc_item

FAKE = "tom-thinker"
runner = CliRunner()
LETTERS = ["A", "B", "C", "D"]


@pytest.fixture(autouse=True)
def _forget_fake() -> Iterator[None]:
    yield
    models.unregister_fake(FAKE)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Answer: A looks tempting, but the client says no.\nAnswer: C", "C"),  # the last one
        ("<think>Answer: B? No, the answer is D.</think>\nAnswer: A", "A"),  # thinking set aside
        ("<think>I weigh A against B and run out of bu", None),  # unclosed: no answer
        ("Option B ignores the pledge; option C fits.\n**Final answer:** (C)", "C"),
        ("A and B are wrong, so:\n\nD.", "D"),  # a bare letter on the last line
        ("I need to answer a question about it. B and C both fit somewhat.", None),
        ("The best fit is B.", None),  # no mark, no bare last line: unparsed, not guessed
        ("the answer is b", None),  # the letter only as written
    ],
)
def test_final_letter_rule(reply: str, expected: str | None) -> None:
    assert final_letter(answer_part(reply), LETTERS) == expected


def _items(n: int) -> list[ToMItem]:
    return [mc_item(f"x:{k}#w0:retro:t", options=["yes", "no", "maybe", "never"]) for k in range(n)]


def _letter_of(messages: list[Message], text: str) -> str:
    match = re.search(rf"^([A-Z])\. {re.escape(text)}$", messages[-1].content, re.MULTILINE)
    assert match, "the option must be in the prompt"
    return match.group(1)


def _thinker(messages: list[Message], sampling: Sampling) -> str:
    """Thinks at length, names every other letter first, then ends on the gold ("yes")."""
    gold = _letter_of(messages, "yes")
    others = [x for x in LETTERS if x != gold]
    asked = messages[-1].content
    assert asked.endswith("'Answer: <letter>' naming the correct option.")  # asked to think
    assert "letter of the correct option only" not in asked
    thought = " ".join(f"Option {x} could fit; answer: {x}?" for x in others)
    padding = " ".join(["hmm"] * 300)
    after = f"Not {others[0]}; answer: {others[1]}? No. Answer: {gold}"
    reply = f"<think>{thought} {padding}</think>\n{after}"
    return " ".join(reply.split(" ")[: sampling.max_tokens])  # a word per token, as budgeted


def test_a_model_that_thinks_first_is_scored_on_its_final_letter(tmp_path: Path) -> None:
    models.register_fake(FAKE, _thinker, logprobs=False, full_logits=False)
    items = _items(6)
    with ToMStore(tmp_path / "t.sqlite") as store:
        model = models.load(f"fake:{FAKE}")
        summary = asyncio.run(evaluate(items, model, store, reasoning_tokens=4096))
        rows = store.answers(summary.run_id)
        plain_id = run_id_for(model.identity, PLAIN, 0)
    assert summary.reasoning_tokens == 4096 and summary.run_id != plain_id  # runs kept apart
    assert len(rows) == 6 and all(r.correct and r.parsed for r in rows)
    assert all(r.raw.startswith("<think>") and "hmm hmm" in r.raw for r in rows)  # stored


def test_a_small_budget_cuts_the_thinking_and_the_answer_is_unparsed(tmp_path: Path) -> None:
    models.register_fake(FAKE, _thinker, logprobs=False, full_logits=False)
    with ToMStore(tmp_path / "t.sqlite") as store:
        model = models.load(f"fake:{FAKE}")
        summary = asyncio.run(evaluate(_items(3), model, store, reasoning_tokens=50))
    assert summary.unparsed == 3  # the reply stopped inside <think>: no letter guessed


def test_a_reasoning_field_from_the_server_is_stored_and_not_parsed(tmp_path: Path) -> None:
    def answer(messages: list[Message]) -> BackendReply:
        gold = _letter_of(messages, "yes")
        wrong = next(x for x in LETTERS if x != gold)
        return BackendReply(text=f"Answer: {gold}", reasoning=f"Answer: {wrong} at first.")

    models.register_fake(FAKE, answer, logprobs=False, full_logits=False)
    with ToMStore(tmp_path / "t.sqlite") as store:
        model = models.load(f"fake:{FAKE}")
        summary = asyncio.run(evaluate(_items(2), model, store, reasoning_tokens=1000))
        rows = store.answers(summary.run_id)
    assert all(r.correct for r in rows)
    assert all(re.match(r"<think>Answer: [A-D] at first\.</think>\nAnswer: ", r.raw) for r in rows)


def test_the_teacher_may_reason_past_400_tokens(tmp_path: Path) -> None:
    def teacher(messages: list[Message], sampling: Sampling) -> str:
        words = ["because"] * 900 + ["Answer:", "B"]
        return " ".join(words[: sampling.max_tokens])  # a word per token, as budgeted

    models.register_fake(FAKE, teacher)
    with ToMStore(tmp_path / "t.sqlite") as store:
        asyncio.run(teacher_reasoning(_items(2), models.load(f"fake:{FAKE}"), store))
        stored = store.raw_reasoning(f"fake:{FAKE}", 0)
    assert all(len(text.split()) == 902 for text in stored.values())


def _cli_json(*args: str) -> Any:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_tom_eval_reasoning_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    models.register_fake(FAKE, _thinker, logprobs=False, full_logits=False)
    items, db = tmp_path / "items.jsonl", str(tmp_path / "t.sqlite")
    write_items(items, _items(4))
    out = _cli_json("eval", str(items), "--model", f"fake:{FAKE}", "--db", db, "--reasoning")
    assert out["reasoning_tokens"] == 4096 and out["unparsed"] == 0
    assert out["paths"] == {"parsed": 4}
    assert all(r["rate"] == 1.0 for r in out["rates"])
    small = _cli_json("eval", str(items), "--model", f"fake:{FAKE}", "--db", db, "--reasoning",
                      "--reasoning-tokens", "20")  # fmt: skip
    assert small["reasoning_tokens"] == 20 and small["unparsed"] == 4
    code = cogwm("tom", "eval", items, "--model", f"fake:{FAKE}", "--db", db,
                 "--reasoning-tokens", "20")  # fmt: skip
    assert code == 2 and "--reasoning-tokens needs --reasoning" in capsys.readouterr().err


def test_the_openai_backend_reads_the_servers_reasoning_field() -> None:
    from types import SimpleNamespace

    from cogwm.models.openai_api import _reasoning_of

    thinking = SimpleNamespace(content="Answer: B", reasoning_content="A? No, B.")
    assert _reasoning_of(thinking) == "A? No, B."
    assert _reasoning_of(SimpleNamespace(content="B", reasoning="C first")) == "C first"
    assert _reasoning_of(SimpleNamespace(content="B", reasoning_content=None)) is None
    assert _reasoning_of(SimpleNamespace(content="B", reasoning_content="  ")) is None


def test_every_rotation_of_a_circular_reasoning_run_thinks_first(tmp_path: Path) -> None:
    models.register_fake(FAKE, _thinker, logprobs=False, full_logits=False)
    with ToMStore(tmp_path / "t.sqlite") as store:
        model = models.load(f"fake:{FAKE}")
        summary = asyncio.run(
            evaluate(_items(2), model, store, reasoning_tokens=4096, circular=True)
        )
        rotations = [row for _, row in store.rotations(summary.run_id)]
    assert summary.rotated == 2 and len(rotations) == 6
    assert all(r.correct and r.raw.startswith("<think>") for r in rotations)


def test_the_teacher_budget_is_set_from_the_cli(tmp_path: Path) -> None:
    def teacher(messages: list[Message], sampling: Sampling) -> str:
        return " ".join((["because"] * 900 + ["Answer:", "B"])[: sampling.max_tokens])

    models.register_fake(FAKE, teacher)
    items, db = tmp_path / "items.jsonl", tmp_path / "t.sqlite"
    write_items(items, _items(2))
    for budget, words in (("4096", 902), ("600", 600)):
        # one seed per budget: stored reasoning is kept per teacher and seed
        _cli_json("eval", str(items), "--model", "fake:schema", "--db", str(db), "--seed", budget,
                  "--inject-from", f"fake:{FAKE}", "--teacher-tokens", budget)  # fmt: skip
        with ToMStore(db) as store:
            stored = store.raw_reasoning(f"fake:{FAKE}", int(budget))
        assert [len(text.split()) for text in stored.values()] == [words, words]
