"""The template items' audit on the real corpora: each defect found, fixed, and counted.

Figures before the fixes (same corpora): ESC 279 + nervousness items paired a gold with a
near-synonym; 614 MI prospective items (383 without a strictly most consistent gold); 41 PD
"considering" items (16 after a commitment); 217 intended-donation items; majority-answer
baselines 57.9 % MI, 48.2 % ESC, 75.1 % PD decisions, 76.9 % PD reactions, 47.0 % intended.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from cogwm.corpora.annomi import annotators as annomi_annotators
from cogwm.tom.contexts import Context, continuation_text, load_contexts
from cogwm.tom.items import Source, Task, ToMItem, Variant
from cogwm.tom.stats import majority_baseline
from cogwm.tom.store import ScoredAnswer
from cogwm.tom.templates import (
    DECISION_ACTS,
    DROP_ANNOMI_TIE,
    DROP_B5_CONTRADICTS_TEXT,
    DROP_DECLINES_AFTER_PLEDGE,
    DROP_NOT_MOST_CONSISTENT,
    RESOLVED_CONSIDERING,
    SCHEMES,
    _session_acts,
    answer_classes,
    build_template_items,
    consistency,
    donation_bin,
    near_synonyms,
    opening_values,
    stated_amounts,
    statement_value,
)


class Built:
    def __init__(self, data: Path) -> None:
        self.contexts = load_contexts(
            ["annomi", "esconv", "persuasionforgood"], data, max_words=None
        )
        self.by_id: dict[str, Context] = {c.id: c for c in self.contexts}
        self.report: Counter[str] = Counter()
        self.votes = annomi_annotators.load(data / "annomi")
        self.items = build_template_items(
            self.contexts, annomi_votes=self.votes, report=self.report
        )

    def of(self, scheme: str, task: Task = Task.RETROSPECTIVE) -> list[ToMItem]:
        return [i for i in self.items if i.id.endswith(f":{scheme}") and i.task is task]


@pytest.fixture(scope="module")
def built(real_data_dir: Path) -> Built:
    return Built(real_data_dir)


def test_esc_distractors_are_never_near_synonyms_of_the_gold(built: Built) -> None:
    items = built.of("esconv_emotion_type")
    assert len(items) == 1300  # no item lost: 4 options each still
    assert all(i.n_options == 4 for i in items)
    for item in items:
        classes = answer_classes(item)
        assert classes is not None
        values = list(classes.options)
        for k, first in enumerate(values):
            for second in values[k + 1 :]:
                assert not near_synonyms(first, second), (item.id, first, second)
    example = next(i for i in items if i.id == "tpl:esconv:train:362#w0:retro:esconv_emotion_type")
    assert example.gold == "The seeker is feeling afraid."  # it offered "anxious" before
    assert "The seeker is feeling anxious." not in example.options


def _opening_scores(built: Built, item: ToMItem) -> dict[str, float]:
    """Each opening of the item's session, scored against the item's profile value."""
    scheme = next(s for s in SCHEMES if item.id.endswith(f":{s.name}"))
    assert item.profile is not None
    value = statement_value(scheme, item.profile.split(": ", 1)[1])
    session = [c for c in built.contexts if c.dialogue.id == item.provenance.dialogue_id]
    return {
        continuation_text(c.opening() or []): consistency(opening_values(c, scheme), value)
        for c in session
        if c.opening()
    }


def test_prospective_golds_are_strictly_the_most_consistent_option(built: Built) -> None:
    prospective = [i for i in built.items if i.task is Task.PROSPECTIVE]
    for item in prospective:
        scores = _opening_scores(built, item)
        gold = scores[item.gold]
        assert all(scores[o] < gold for o in item.options if o != item.gold), item.id
    mi = [i for i in prospective if i.domain.value == "MI"]
    dropped = built.report[f"annomi_talk_type: {DROP_NOT_MOST_CONSISTENT}"]
    print(f"MI prospective: {len(mi)} kept, {dropped} dropped")
    assert (len(mi), dropped) == (231, 381)  # 614 before: 38 % survive


def test_pfg_considering_after_a_commitment_is_resolved_and_declines_after_a_pledge_dropped(
    built: Built,
) -> None:
    decisions = built.of("p4g_donation_decision")
    for item in decisions:
        context = built.by_id[item.provenance.window_id]
        acts = [a for a in _session_acts(context) if a in DECISION_ACTS]
        earlier_commit = any(DECISION_ACTS[a] == "commits" for a in acts[:-1])
        if earlier_commit:
            assert "considering" not in item.gold and "does not intend" not in item.gold, item.id
    example = next(
        i for i in decisions if i.provenance.window_id.endswith("20180825-070900_49_live#w1")
    )
    assert example.gold == "The persuadee intends to donate to the charity."
    assert (
        example.provenance.label_value is not None and " after " in example.provenance.label_value
    )
    assert built.report[f"p4g_donation_decision: {RESOLVED_CONSIDERING}"] == 16
    assert built.report[f"p4g_donation_decision: {DROP_DECLINES_AFTER_PLEDGE}"] == 3


def test_intended_donation_agrees_with_the_stated_amount(built: Built) -> None:
    intended = built.of("p4g_intended_donation")
    assert len(intended) == 217 - built.report[f"p4g_intended_donation: {DROP_B5_CONTRADICTS_TEXT}"]
    for item in intended:
        amounts = stated_amounts(built.by_id[item.provenance.window_id])
        classes = answer_classes(item)
        assert classes is not None
        if amounts:
            assert donation_bin(amounts[-1]) == classes.gold, item.id
    assert not any("whole task payment" in o for i in intended for o in i.options)


def test_annomi_golds_the_annotators_split_evenly_on_are_dropped(built: Built) -> None:
    ids = {i.provenance.window_id for i in built.of("annomi_talk_type")}
    assert "annomi:66#w0" not in ids  # 4 change / 4 sustain
    assert built.report[f"annomi_talk_type: {DROP_ANNOMI_TIE}"] == 3
    unchecked = build_template_items([c for c in built.contexts if c.id == "annomi:66#w0"])
    assert [i.provenance.window_id for i in unchecked] == ["annomi:66#w0"]


def test_template_items_are_tagged_base_not_hard(built: Built) -> None:
    assert {i.variant for i in built.items} == {Variant.BASE}
    assert all(i.provenance.source is Source.TEMPLATE for i in built.items)


def _majority(items: list[ToMItem]) -> float | None:
    answers = [
        ScoredAnswer("r", "m", "plain", i.id, None, i.task.value, i.variant.value,
                     i.domain.value, None, i.n_options, None, "template", False, True)
        for i in items
    ]  # fmt: skip
    return majority_baseline(answers, {i.id: answer_classes(i) for i in items})


def test_majority_answer_baselines_on_the_real_items(built: Built) -> None:
    figures = {scheme.name: _majority(built.of(scheme.name)) for scheme in SCHEMES}
    print({k: None if v is None else round(100 * v, 1) for k, v in figures.items()})
    # PD reactions are untouched by the fixes: the audit's 76.9 %
    assert figures["p4g_donation_reaction"] == pytest.approx(0.769, abs=5e-4)
    assert all(v is not None and v > 0.4 for v in figures.values())
