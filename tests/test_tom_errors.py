"""Error analysis: the kind of distractor wrong answers chose, from the items' rationales."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cogwm import models
from cogwm.cli.tom import app
from cogwm.models.types import BackendReply, Message
from cogwm.tom.contexts import contexts_of
from cogwm.tom.distractors import option_kinds, rationale_kind
from cogwm.tom.evaluate import evaluate
from cogwm.tom.items import NONE_OF_THE_ABOVE, Task, Variant
from cogwm.tom.store import ToMStore
from cogwm.tom.templates import build_template_items
from helpers_tom import annomi_session, mc_item

RATIONALES = {
    "no": "The client never mentions refusing.",
    "maybe": "Too strong: the client is sure.",
    "never": "This contradicts what the client said about quitting.",
}


@pytest.mark.parametrize(
    ("rationale", "kind"),
    [
        ("It contradicts her stated plan.", "contradicts the evidence"),
        ("There is no evidence she feels this.", "unsupported"),
        ("This exaggerates a mild worry.", "overstated"),
        ("That is the counselor's view, not the client's.", "wrong person"),
        ("She felt this earlier, not now.", "wrong time"),
        ("Plausible but wrong.", "other"),
    ],
)
def test_rationale_kinds(rationale: str, kind: str) -> None:
    assert rationale_kind(rationale) == kind


def test_template_items_name_the_label_each_distractor_stands_for() -> None:
    items = build_template_items(contexts_of([annomi_session()]))
    for item in items:
        kinds = option_kinds(item)
        assert kinds[item.gold_index] is None
        others = {k for k in kinds if k is not None}
        assert len(others) == item.n_options - 1
        assert all(k.startswith("client_talk_type=") for k in others)
        assert f"client_talk_type={item.provenance.label_value}" not in others
    cf = mc_item(task=Task.PROSPECTIVE, variant=Variant.COUNTERFACTUAL,
                 options=["a", "b", NONE_OF_THE_ABOVE], gold=NONE_OF_THE_ABOVE,
                 rationales={"a": "fits the old profile"})  # fmt: skip
    assert option_kinds(cf) == ["original gold", "original distractor", None]


def test_stats_errors_counts_the_chosen_distractor_kinds(tmp_path: Path) -> None:
    items = [mc_item(f"x:{k}#w0:retro:t", rationales=RATIONALES) for k in range(4)]
    # wrong on items 0-2: "never", "never", "no"; right on item 3
    wanted = {items[0].id: "never", items[1].id: "never", items[2].id: "no", items[3].id: "yes"}

    current = [""]  # the option the fake picks for the item being asked

    def answer(messages: list[Message]) -> BackendReply:
        for line in messages[-1].content.splitlines():
            if line.endswith(f". {current[0]}"):
                return BackendReply(text=line[0], candidate_logprobs={line[0]: -0.1})
        raise AssertionError("option not found")

    db = tmp_path / "runs.sqlite"
    models.register_fake("tom-errors", answer)
    try:
        with ToMStore(db) as store:
            for item in items:
                current[0] = wanted[item.id]
                asyncio.run(evaluate([item], models.load("fake:tom-errors"), store, resume=True))
    finally:
        models.unregister_fake("tom-errors")
    result = CliRunner().invoke(app, ["stats", "--db", str(db), "--errors", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["errors"]
    got = {(r["kind"], r["n"], r["wrong"]) for r in rows}
    assert got == {("contradicts the evidence", 2, 3), ("unsupported", 1, 3)}
    plain = CliRunner().invoke(app, ["stats", "--db", str(db), "--json"])
    assert json.loads(plain.stdout)["errors"] == []  # only with --errors
