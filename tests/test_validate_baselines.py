"""Trivial baselines, change items and the gate of the validity card, with fake simulators.

The synthetic DailyDialog here has train and validation dialogues that say each emotion with
code words and test dialogues that say it with plain emotion words, so a text classifier fitted
on train is the best rule on validation but poor on test, where the sentiment lexicon is better:
the card must keep the validation choice.
A fake that copies the state shown in its prompt is wrong on every change item; a fake that reads
the words of the turn is not.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from cogwm import models
from cogwm.cli.validate import validate
from cogwm.corpora.labels import extensions
from cogwm.models import Message, register_fake, unregister_fake
from cogwm.schema import CognitiveState, Emotion, StateItem
from cogwm.schema.lexicon import valence
from cogwm.simulator.format import WorldModelInput
from cogwm.simulator.samples import task_for_corpus
from cogwm.stats.bootstrap import IntArray, Settings, cluster_bootstrap, paired_difference
from cogwm.validate import Card, build_card, compare, text_rows, to_csv
from cogwm.validate.baselines import (
    RULES,
    FittedRule,
    StateRule,
    fit_rules,
    prompt_text,
    rule_text,
    rule_value,
    vader,
)
from cogwm.validate.card import Figure
from cogwm.validate.compare import TRIVIAL_COLUMNS
from cogwm.validate.figures import cluster_bootstrap as old_path_bootstrap
from cogwm.validate.items import Heldout, Item
from cogwm.validate.parts import (
    DAILYDIALOG_RULES,
    ESCONV_RULES,
    P4G_RULES,
    PARTS,
    split_dialogues,
)
from helpers_validate import _dd_dialogue

#: How train and validation turns say each emotion: words of their own, which no sentiment
#: lexicon knows (VADER scores them all 0) ...
FIT_WORDS = {
    "happiness": "I got the blue ticket",
    "anger": "I got the red ticket",
    "sadness": "I got the green ticket",
    "fear": "I got the black ticket",
    "no emotion": "Okay, see you",
}
#: ... and how test turns say it: words a lexicon knows and train never used.
TEST_WORDS = {
    "happiness": "What a wonderful happy day, I love it",
    "anger": "This is terrible, I hate it",
    "sadness": "I feel so lonely and sad",
    "fear": "I am afraid, this is a horrible threat",
    "no emotion": "Right, the bus leaves at nine",
}
EMOTIONS = list(FIT_WORDS)


def _dialogues(split: str, count: int, words: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for line in range(count):
        rng = random.Random(f"{split}:{line}")
        turns = [(words[e], e) for e in rng.choices(EMOTIONS, k=6)]
        # A word of its own per dialogue: no two dialogues have the same text (no split twins).
        first, emotion = turns[0]
        turns[0] = (f"{first}, {split}{line}.", emotion)
        out.append(_dd_dialogue(split, line, turns))
    return out


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    root = tmp_path / "data" / "dailydialog" / "convlab3_unified" / "data"
    root.mkdir(parents=True)
    dialogues = (
        _dialogues("train", 40, FIT_WORDS)
        + _dialogues("validation", 16, FIT_WORDS)
        + _dialogues("test", 16, TEST_WORDS)
    )
    (root / "dialogues.json").write_text(json.dumps(dialogues), encoding="utf-8")
    return tmp_path / "data"


# --- fake simulators -----------------------------------------------------------------------------

SHOWN = re.compile(r"Your state before this: emotion (\S+) (\d)")
#: Words of the test turns -> the emotion a text-reading fake answers.
READ_WORDS = [("happy", "happiness"), ("hate", "anger"), ("sad", "sadness"), ("afraid", "fear")]


def _state(label: str, intensity: int) -> str:
    emotion = {"label": label, "intensity": intensity}
    return json.dumps({"emotion": emotion, "beliefs": [], "desires": [], "intentions": []})


def _prompt(messages: list[Message]) -> str:
    return next(m.content for m in messages if m.role == "user")


def copy_shown_state(messages: list[Message]) -> str:
    """Answer the emotion the prompt shows as the state before this turn (none: confusion)."""
    found = SHOWN.search(_prompt(messages))
    return _state(found[1], int(found[2])) if found else _state("confusion", 1)


def read_the_turn(messages: list[Message]) -> str:
    """Answer the emotion the user's last turn names (none named: neutral)."""
    turns = re.findall(r"^You: (.*)$", _prompt(messages), flags=re.MULTILINE)
    text = turns[-1].lower() if turns else ""
    label = next((lab for word, lab in READ_WORDS if word in text), "neutral")
    return _state(label, 3 if label != "neutral" else 2)


@pytest.fixture()
def fakes(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, models.Model]]:
    from cogwm.schema import lexicon

    monkeypatch.setattr(lexicon, "_ACTIVE", ContextVar("lexicon", default=lexicon.DEFAULT_LEXICON))
    register_fake("h-copy", copy_shown_state)
    register_fake("h-read", read_the_turn)
    try:
        yield {"copy": models.load("fake:h-copy"), "read": models.load("fake:h-read")}
    finally:
        unregister_fake("h-copy")
        unregister_fake("h-read")


def _card(model: models.Model, data_dir: Path, address: str) -> Card:
    return build_card(model, address=address, data_dir=data_dir, parts=["dailydialog"],
                      resamples=300, progress=False)  # fmt: skip


def _figure(card: Card, key: str) -> Figure:
    figure = card.figure(key)
    assert figure is not None, key
    return figure


VALENCE = "dailydialog.valence_auroc{}[understand]"
ACCURACY = "dailydialog.emotion_accuracy{}[understand]"


# --- the card ------------------------------------------------------------------------------------


def test_a_copy_machine_is_wrong_on_every_change_item(
    fakes: dict[str, models.Model], data_dir: Path
) -> None:
    card = _card(fakes["copy"], data_dir, "fake:copy")
    change = _figure(card, ACCURACY.format(":change"))
    assert change.subset == "change" and change.n > 0
    assert change.value == 0.0
    # Copying on change items is exactly the carry-forward rule.
    assert change.baselines.carry_forward == 0.0
    valence = _figure(card, VALENCE.format(":change"))
    assert valence.n > 10 and valence.value is not None
    assert valence.value == pytest.approx(valence.baselines.carry_forward)
    assert valence.value < 0.5
    # On all items the copy machine fails the gate against the best trivial rule.
    everything = _figure(card, VALENCE.format(""))
    assert everything.gate is not None and everything.gate.passed is False
    # The subsets partition the items: change + no_previous + same (not given) = all.
    no_previous = _figure(card, VALENCE.format(":no_previous"))
    assert no_previous.n + valence.n < everything.n


def test_reading_the_turn_passes_the_gate_where_copying_is_wrong(
    fakes: dict[str, models.Model], data_dir: Path
) -> None:
    card = _card(fakes["read"], data_dir, "fake:read")
    change = _figure(card, VALENCE.format(":change"))
    assert change.value == pytest.approx(1.0)
    assert change.baselines.carry_forward is not None and change.baselines.carry_forward < 0.5
    gate = change.gate
    assert gate is not None and gate.baseline == change.baselines.best_trivial
    assert gate.n == change.n
    assert gate.difference is not None and gate.ci_low is not None and gate.ci_low > 0
    assert gate.passed is True
    accuracy = _figure(card, ACCURACY.format(":change"))
    assert accuracy.value == pytest.approx(1.0) and accuracy.gate is not None
    assert accuracy.gate.passed is True


def test_the_best_trivial_rule_is_chosen_on_validation_not_test(
    fakes: dict[str, models.Model], data_dir: Path
) -> None:
    card = _card(fakes["read"], data_dir, "fake:read")
    valence = _figure(card, VALENCE.format(""))
    # On validation, train's own words make the text classifier perfect ...
    assert valence.baselines.best_trivial == "text_classifier"
    assert "text_classifier 1.000" in valence.note
    test_values = {name: getattr(valence.baselines, name) for name in RULES}
    best_on_test = max((v, k) for k, v in test_values.items() if v is not None)[1]
    # ... while on test, with other words, another rule is better: the choice stays.
    assert best_on_test != "text_classifier"
    assert test_values["text_classifier"] is not None
    assert test_values["text_classifier"] < max(v for v in test_values.values() if v is not None)
    assert valence.gate is not None and valence.gate.baseline == "text_classifier"
    # Label figures: VADER names no label, so the lexicon rule is undefined (None), never 0.
    accuracy = _figure(card, ACCURACY.format(""))
    assert accuracy.baselines.lexicon is None
    assert accuracy.baselines.carry_forward is not None


def test_comparison_and_csv_show_the_trivial_rules_and_gates(
    fakes: dict[str, models.Model], data_dir: Path
) -> None:
    cards = [_card(fakes["copy"], data_dir, "fake:copy"), _card(fakes["read"], data_dir, "r")]
    comparison = compare(cards)
    row = next(r for r in comparison.rows if r.key == VALENCE.format(":change"))
    figure = _figure(cards[0], VALENCE.format(":change"))
    assert (row.carry_forward, row.best_trivial) == (
        figure.baselines.carry_forward,
        figure.baselines.best_trivial,
    )
    text = dict((r[0].split(" ")[0], r) for r in text_rows(comparison))[row.key]
    # metric, majority, random, carry, VADER, tfidf, comb, best, then the two simulators.
    assert len(text) == 8 + 2
    assert text[7] == dict(TRIVIAL_COLUMNS)[str(row.best_trivial)]
    assert "gate Δ" in text[8] and "fail" in text[8] and "pass" in text[9]
    header = to_csv(comparison).splitlines()[0].split(",")
    assert header[:5] == ["metric", "higher_is_better", "majority", "random", "same_items"]
    assert "best_trivial" in header and "fake:copy gate" in header
    # The comparison stays JSON (the cells carry the gate record).
    dumped = comparison.model_dump(mode="json")
    assert dumped["rows"][0]["cells"][0]["gate"] is not None


# --- the paired cluster bootstrap --------------------------------------------------------------


def test_cluster_bootstrap_resamples_whole_dialogues() -> None:
    groups = ["a", "a", "a", "b", "b", "c", "d", "d", "d", "d"]
    seen: list[IntArray] = []

    def record(idx: IntArray) -> float:
        seen.append(idx)
        return 0.0

    cluster_bootstrap(record, groups, Settings(resamples=50, seed=1))
    assert len(seen) == 50
    members = {g: [i for i, x in enumerate(groups) if x == g] for g in set(groups)}
    for idx in seen:
        counts = np.bincount(idx, minlength=len(groups))
        # A dialogue is drawn whole: its items appear equally often in every resample.
        for items in members.values():
            assert len({int(counts[i]) for i in items}) == 1
        # As many dialogues drawn as there are (so the item count varies with their sizes).
        assert sum(int(counts[m[0]]) for m in members.values()) == len(members)
    # The card's old import path is the same implementation.
    assert old_path_bootstrap is cluster_bootstrap


def test_paired_difference_scores_both_sides_on_the_same_draw() -> None:
    rng = np.random.default_rng(0)
    groups = [f"d{k // 3}" for k in range(60)]
    values = rng.normal(size=60)

    def first(idx: IntArray) -> float:
        return float(values[idx].mean()) + 1.0

    def second(idx: IntArray) -> float:
        return float(values[idx].mean())

    result = paired_difference(first, second, groups, Settings(resamples=200, seed=0))
    # Paired: the item-level noise cancels on every resample, leaving exactly 1.
    assert result.difference == pytest.approx(1.0)
    assert (result.ci_low, result.ci_high) == (pytest.approx(1.0), pytest.approx(1.0))
    assert (result.n, result.n_groups) == (60, 20)
    undefined = paired_difference(first, lambda idx: None, groups, Settings(100, 0))
    assert (undefined.difference, undefined.ci_low, undefined.ci_high) == (None, None, None)


def test_the_cli_prints_the_trivial_rules_and_the_gate(
    fakes: dict[str, models.Model], data_dir: Path, tmp_path: Path
) -> None:
    app = typer.Typer()
    app.command()(validate)
    out = tmp_path / "card.json"
    result = CliRunner().invoke(
        app,
        ["--model", "fake:h-read", "--data-dir", str(data_dir), "--out", str(out),
         "--resamples", "50", "--parts", "dailydialog"],
        env={"COLUMNS": "250"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(line for line in lines if "figure" in line)
    for column in ("majority", "carry", "VADER", "tfidf", "comb", "best", "gate Δ [CI]"):
        assert column in header
    change = next(line for line in lines if "valence_auroc:change" in line)
    # The card's own figure row: carry-forward wrong on change items, the gate passed.
    assert "0.045" in change and "tfidf" in change and "pass" in change
    result = CliRunner().invoke(app, ["--compare", str(out)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "gate Δ +0.500 [+0.500, +0.500] pass" in result.stdout


# --- change items, rule by rule ------------------------------------------------------------------


def _item(corpus: str, gold: str, *, previous: CognitiveState | None = None,
          initial: CognitiveState | None = None, **facts: float) -> Item:  # fmt: skip
    inp = WorldModelInput(
        task=task_for_corpus(corpus).name, previous_state=previous, initial_state=initial
    )
    return Item(f"{corpus}:1", "d", 1, inp, "text", gold, dict(facts))


def _feeling(label: str, intensity: int = 2) -> CognitiveState:
    return CognitiveState(emotion=Emotion(label=label, intensity=intensity))


def _intending(score: float) -> CognitiveState:
    return CognitiveState(intentions=[StateItem(text="donate", score=score)])


def _rule(rules: tuple[StateRule, ...], metric: str) -> StateRule:
    return next(r for r in rules if r.metric == metric)


def test_change_items_are_read_in_the_golds_space() -> None:
    extensions.register()  # DailyDialog's happiness, surprise and neutral
    valence = _rule(DAILYDIALOG_RULES, "valence_auroc")
    dd = "dailydialog"
    assert valence.subset(_item(dd, "happiness")) == "no_previous"
    assert valence.subset(_item(dd, "happiness", previous=_feeling("happiness"))) == "same"
    # Another negative label has the same valence sign: not a change of valence ...
    assert valence.subset(_item(dd, "sadness", previous=_feeling("anger"))) == "same"
    # ... while neutral and surprise (valence 0) differ from both signs.
    assert valence.subset(_item(dd, "happiness", previous=_feeling("neutral"))) == "change"
    assert valence.subset(_item(dd, "anger", previous=_feeling("surprise"))) == "change"
    # Without a previous state, the initial one is what the prompt shows.
    assert valence.subset(_item(dd, "anger", initial=_feeling("happiness"))) == "change"
    emotion = _rule(DAILYDIALOG_RULES, "emotion_accuracy")
    assert emotion.subset(_item(dd, "sadness", previous=_feeling("anger"))) == "change"
    assert emotion.subset(_item(dd, "anger", previous=_feeling("anger"))) == "same"


def test_change_of_direction_and_of_the_read_change() -> None:
    commitment = _rule(P4G_RULES, "commitment_auroc")
    p4g = "persuasionforgood"
    assert commitment.subset(_item(p4g, "refuses", previous=_intending(2.0))) == "change"
    assert commitment.subset(_item(p4g, "commits", previous=_intending(2.0))) == "same"
    assert commitment.subset(_item(p4g, "refuses", previous=_intending(0.0))) == "same"
    # A state without a scored intention shows no value of the field.
    assert commitment.subset(_item(p4g, "commits", previous=_feeling("hope"))) == "no_previous"
    known = _rule(ESCONV_RULES, "known_groups_auroc")
    sad = _feeling("sadness", 3)
    start = valence("sadness") * 3
    # Shown the pre-chat state, a copy reads no change: wrong for ESConv, right for the failed.
    assert known.subset(_item("esconv", "improved", previous=sad, initial_e=start)) == "change"
    assert known.subset(_item("esconv", "failed", previous=sad, initial_e=start)) == "same"
    final = _rule(ESCONV_RULES, "final_intensity_mae")
    assert final.subset(_item("esconv", "improved", previous=sad, final=1.0)) == "change"
    assert final.subset(_item("esconv", "improved", previous=sad, final=3.0)) == "same"


# --- the real corpora --------------------------------------------------------------------------


def _fitted_on_real(
    part: str, data: Path
) -> tuple[dict[tuple[str, str], FittedRule], dict[str, list[Item]]]:
    spec = PARTS[part]
    assert spec.fit_sets is not None
    extensions.register()
    sets = spec.fit_sets(data, Heldout())
    test = {name: p.items for name, p in spec.populations(data, Heldout()).items()}
    return fit_rules(spec.rules, sets["train"], sets["val"]), test


def test_trivial_rules_on_the_real_esconv_and_p4g(real_data_dir: Path) -> None:
    fitted, test = _fitted_on_real("esconv", real_data_dir)
    known = fitted[("known_groups_auroc", "understand")]
    items = known.rule.items(test)
    predictions = known.predict(items)
    gold = [known.rule.gold(i) for i in items]
    # The last seeker turn shows the pre-chat state (the only one labelled before it): a copy
    # reads no change for anyone, which tells ESConv from FailedESConv no better than chance.
    assert rule_value("auroc", gold, predictions["carry_forward"]) == 0.5
    assert known.best["all"] in RULES
    lexicon = rule_value("auroc", gold, predictions["lexicon"])
    assert lexicon is not None and lexicon > 0.6
    fitted, test = _fitted_on_real("persuasionforgood", real_data_dir)
    commitment = fitted[("commitment_auroc", "understand")]
    assert commitment.n_train > 5 * commitment.n_val > 0
    assert commitment.best["all"] in RULES


@pytest.mark.slow
def test_copying_the_shown_state_on_real_dailydialog(real_data_dir: Path) -> None:
    fitted, test = _fitted_on_real("dailydialog", real_data_dir)
    rule = fitted[("valence_auroc", "understand")]
    items = rule.rule.items(test)
    change = [i for i in items if rule.rule.subset(i) == "change"]

    def carry(chosen: list[Item]) -> float | None:
        gold = [rule.rule.gold(i) for i in chosen]
        return rule_value("auroc", gold, rule.predict(chosen)["carry_forward"])

    # The clean test dialogues' items (1,303 on every test dialogue, where copying scored 0.796).
    assert len(items) == 797
    # Copying the shown state orders valence well on all turns, and not at all where it changed.
    assert carry(items) == pytest.approx(0.756, abs=0.001)
    value = carry(change)
    assert value is not None and value < 0.5
    assert rule.best["all"] != "carry_forward"


def test_an_error_figure_passes_the_gate_when_the_upper_bound_is_below_zero() -> None:
    from cogwm.validate.baselines import _gate

    mae = _rule(ESCONV_RULES, "initial_intensity_mae")
    assert not mae.higher_is_better
    items = [
        Item(f"esconv:{k}", f"d{k}", 1, WorldModelInput(task=task_for_corpus("esconv").name),
             "text", "anxiety", {"initial": float(1 + k % 5)})
        for k in range(30)
    ]  # fmt: skip
    gold = [mae.gold(i) for i in items]
    off_by_two = [float(g) + 2.0 for g in gold]
    settings = Settings(resamples=200, seed=0)
    # The simulator is exact and the rule is off by 2: simulator - rule is -2, lower is better.
    better = _gate(mae, "carry_forward", gold, gold, off_by_two, items, settings)
    assert better.difference == pytest.approx(-2.0)
    assert better.ci_high is not None and better.ci_high < 0
    assert better.passed is True
    worse = _gate(mae, "carry_forward", gold, off_by_two, gold, items, settings)
    assert worse.ci_low is not None and worse.ci_low > 0
    assert worse.passed is False


# --- the rules' text per mode, the clean validation split, shared classifiers -------------------


def _fitted_on(data: Path) -> tuple[dict[tuple[str, str], FittedRule], dict[str, list[Item]]]:
    spec = PARTS["dailydialog"]
    assert spec.fit_sets is not None
    extensions.register()
    sets = spec.fit_sets(data, Heldout())
    test = {name: p.items for name, p in spec.populations(data, Heldout()).items()}
    return fit_rules(spec.rules, sets["train"], sets["val"], ("understand", "predict")), test


def test_prediction_rules_read_the_prompt_never_the_real_turn(data_dir: Path) -> None:
    fitted, test = _fitted_on(data_dir)
    predict = fitted[("valence_auroc", "predict")]
    items = predict.rule.items(test)
    assert items and any(i.inp.history for i in items)
    swapped = [replace(i, utterance="I hate this, a terrible awful day") for i in items]
    # In prediction mode the simulator is not shown the real turn, nor are its rules.
    before, after = predict.predict(items), predict.predict(swapped)
    assert before == after
    assert before["lexicon"] == [vader(prompt_text(i)) for i in items]
    # Understanding shows the real turn, and its rules read it.
    understand = fitted[("valence_auroc", "understand")]
    assert understand.predict(items)["lexicon"] != understand.predict(swapped)["lexicon"]
    assert understand.predict(items)["lexicon"] == [vader(i.utterance) for i in items]


def test_the_prompt_text_is_the_last_agent_turn_and_the_user_turn_before_it() -> None:
    task = task_for_corpus("dailydialog").name
    history: list[tuple[Any, str]] = [("user", "a"), ("agent", "b"), ("user", "c"), ("agent", "d")]
    item = Item("x:1", "x", 1, WorldModelInput(task=task, history=history), "real", "anger")
    assert prompt_text(item) == "c\nd"
    assert rule_text(item, "understand") == "real" and rule_text(item, "predict") == "c\nd"
    opening = replace(item, inp=WorldModelInput(task=task, history=[("agent", "hi")]))
    assert prompt_text(opening) == "hi"
    assert prompt_text(replace(item, inp=WorldModelInput(task=task))) == ""


def test_rules_with_the_same_items_and_gold_share_their_classifiers(data_dir: Path) -> None:
    fitted, _ = _fitted_on(data_dir)
    accuracy, f1 = (
        fitted[("emotion_accuracy", "understand")],
        fitted[("emotion_macro_f1", "understand")],
    )
    assert accuracy.text_model is not None and accuracy.text_model is f1.text_model
    assert accuracy.combined_model is f1.combined_model
    # Another mode reads other texts: its own models.
    assert fitted[("emotion_accuracy", "predict")].text_model is not accuracy.text_model


def test_validation_dialogues_that_repeat_a_train_line_are_not_validation_items(
    tmp_path: Path,
) -> None:
    root = tmp_path / "data" / "dailydialog" / "convlab3_unified" / "data"
    root.mkdir(parents=True)
    recalled = "My brother bought a red bicycle at the market last Sunday morning"
    dialogues = [
        _dd_dialogue("train", 0, [(recalled, "happiness"), ("Nice, how much?", "no emotion")]),
        _dd_dialogue("validation", 0, [("Hello there.", "no emotion"), (recalled, "happiness")]),
        _dd_dialogue("validation", 1, [("I am so sad today.", "sadness"), ("Why?", "no emotion")]),
        _dd_dialogue("test", 0, [("What a day.", "happiness"), ("Indeed.", "no emotion")]),
    ]
    (root / "dialogues.json").write_text(json.dumps(dialogues), encoding="utf-8")
    data = tmp_path / "data"
    split = split_dialogues("dailydialog", data, 0)
    assert {ld.dialogue.id.split("#")[0] for ld in split["val"]} == {"dailydialog:validation:1"}
    assert split["train"]
    sets = PARTS["dailydialog"].fit_sets(data, Heldout())  # type: ignore[misc]
    val_dialogues = {i.dialogue_id for i in sets["val"]["valence"]}
    assert val_dialogues and all("validation:0" not in d for d in val_dialogues)
