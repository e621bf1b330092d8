"""``cogwm validate``: the validity card on tiny synthetic corpora with scripted fake simulators.

The scripted simulator reads the user's last turn and answers by keyword, so every figure of the
card can be worked out by hand; the numbers asserted here are those hand counts.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from cogwm import models
from cogwm.cli.validate import validate
from cogwm.errors import InputError
from cogwm.models import Message, register_fake, unregister_fake
from cogwm.schema import CognitiveState, Dialogue, Emotion, Role, StateItem, Utterance
from cogwm.simulator.format import WorldModelInput
from cogwm.validate import (
    Card,
    build_card,
    compare,
    read_card,
    to_csv,
    write_card,
)
from cogwm.validate import run as run_module
from cogwm.validate.compare import paired_differences
from cogwm.validate.figures import Scope, Settings, utterance_figures
from cogwm.validate.items import (
    Heldout,
    Item,
    annomi_population,
    dailydialog_population,
)
from cogwm.validate.judges import (
    JudgedDialogue,
    intent_probes,
    judge_all,
    judge_figures,
    judged_transcript,
)
from cogwm.validate.parts import NOT_YET, _score_esconv, _score_p4g
from cogwm.validate.reader import Reading
from helpers_validate import write_corpora

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    return write_corpora(tmp_path / "data")


# --- the scripted simulator ----------------------------------------------------------------------

#: Keyword in the user's last turn -> (emotion, intensity).
EMOTIONS = [("angry", "anger", 3), ("sad", "sadness", 3), ("scared", "fear", 3),
            ("glad", "hope", 2), ("awful", "frustration", 3)]  # fmt: skip
#: Keyword -> intention score (no keyword: no items, so the state cannot be scored).
INTENTIONS = [("don't", 0), ("like", 0), ("want", 2), ("could", 2)]


def _last_user_turn(messages: list[Message]) -> str:
    # The first user message holds the conversation (a repair request appends more messages).
    prompt = next(m.content for m in messages if m.role == "user")
    found = re.findall(r"^You: (.*)$", prompt, flags=re.MULTILINE)
    return found[-1] if found else ""


def scripted(messages: list[Message]) -> str:
    prompt = next(m.content for m in messages if m.role == "user")
    if "Write only what you say next" in prompt:  # the dual baseline's generator (plain text)
        return "I am scared now."
    if "your reply" in prompt:  # prediction mode: a state and the turn after the history
        state = json.loads(_state(_last_user_turn(messages)))
        return json.dumps({**state, "utterance": "I am glad, really glad.", "leave": False})
    return _state(_last_user_turn(messages))


def _state(text: str) -> str:
    label, intensity = next(
        ((lab, i) for word, lab, i in EMOTIONS if word in text.lower()), ("confusion", 1)
    )
    score = next((s for word, s in INTENTIONS if word in text.lower()), None)
    intentions = [] if score is None else [{"text": "about change", "score": score}]
    return json.dumps(
        {
            "emotion": {"label": label, "intensity": intensity},
            "beliefs": [],
            "desires": [],
            "intentions": intentions,
        }
    )


@pytest.fixture()
def scripted_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[models.Model]:
    # The answer labels are the process's lexicon: start from the paper's twelve, so labels that
    # other tests registered (a custom task's emotions) do not change the random baseline.
    from cogwm.schema import lexicon

    monkeypatch.setattr(lexicon, "_ACTIVE", ContextVar("lexicon", default=lexicon.DEFAULT_LEXICON))
    register_fake("validate-script", scripted)
    try:
        yield models.load("fake:validate-script")
    finally:
        unregister_fake("validate-script")


def _card(model: models.Model, data_dir: Path, **kwargs: Any) -> Card:
    # The synthetic corpora have DailyDialog and AnnoMI only.
    options: dict[str, Any] = {
        "resamples": 200,
        "progress": False,
        "parts": ["dailydialog", "annomi"],
        **kwargs,
    }
    return build_card(model, address="fake:test", data_dir=data_dir, **options)


# --- items ---------------------------------------------------------------------------------------


def test_dailydialog_items_are_valenced_test_turns(data_dir: Path) -> None:
    population = dailydialog_population(data_dir)
    golds = sorted(item.gold for item in population.items)
    # Only test turns; surprise and "no emotion" turns carry no valence sign.
    assert golds == sorted(["anger", "happiness", "disgust", "sadness", "fear", "happiness",
                            "anger", "happiness", "sadness"])  # fmt: skip
    assert "official test, clean: 4 of 4 dialogues" in population.split
    second_speaker = next(i for i in population.items if i.utterance == "I am scared of that dog.")
    # The second speaker is the user of its own items: its turns are "user", the other "agent".
    assert second_speaker.inp.history == [("agent", "I am sad today.")]
    glad = next(i for i in population.items if i.utterance == "Let's go out, I am glad.")
    # As in the training samples, the latest human-known state before the turn is shown.
    assert glad.inp.previous_state is not None and glad.inp.previous_state.emotion is not None
    assert glad.inp.previous_state.emotion.label == "sadness"


def test_annomi_items_are_test_split_directions_without_ties(data_dir: Path) -> None:
    items = annomi_population(data_dir, Heldout()).items
    assert [(i.utterance, i.gold) for i in items] == [
        ("Maybe I could cut down.", "change"),
        ("I like drinking too much.", "sustain"),
        ("I want to change, I will quit.", "change"),
        ("I don't see a problem.", "sustain"),
    ]


# --- the card ------------------------------------------------------------------------------------


def test_scripted_card_has_the_hand_counted_figures(
    scripted_model: models.Model, data_dir: Path
) -> None:
    card = _card(scripted_model, data_dir)
    accuracy = card.figure("dailydialog.emotion_accuracy[understand]")
    assert accuracy is not None
    # anger ok, sadness ok, fear ok, "awful" anger read as frustration, "cat died" sadness read
    # as confusion: 3 of 5.
    assert accuracy.value == pytest.approx(0.6)
    assert accuracy.n == 5
    assert accuracy.baselines.majority == pytest.approx(0.4)  # anger and sadness 2 of 5 each
    # The paper's 12 labels and DailyDialog's 4 extensions (happiness, surprise, disgust, neutral).
    assert accuracy.baselines.random == pytest.approx(1 / 16)
    assert len(card.answer_labels) == 16
    assert accuracy.ci_low is not None and accuracy.ci_high is not None
    assert accuracy.ci_low <= 0.75 <= accuracy.ci_high
    f1 = card.figure("dailydialog.emotion_macro_f1[understand]")
    assert f1 is not None
    # anger P 1 R 1/2 -> 2/3; fear 1; sadness P 1 R 1/2 -> 2/3.
    assert f1.value == pytest.approx((2 / 3 + 1 + 2 / 3) / 3)
    # Always "anger" (first of the tied majority classes): anger P 2/5 R 1 -> 4/7.
    assert f1.baselines.majority == pytest.approx((4 / 7 + 0 + 0) / 3)
    valence = card.figure("dailydialog.valence_auroc[understand]")
    assert valence is not None
    # Positives score +4, +4, -1 (unlabelled "nice day": confusion 1); negatives -4.5, -6, -6,
    # -4.5, -1 (disgust read as confusion) and -1 ("cat died"): 17 of 18 pairs ordered, 2 ties.
    assert valence.value == pytest.approx(17 / 18)
    assert (valence.n, valence.n_failed) == (9, 0)
    change = card.figure("annomi.change_auroc[understand]")
    assert change is not None
    assert (change.value, change.n) == (1.0, 4)
    assert [(p.name, p.n_population) for p in card.parts] == [
        ("dailydialog.emotion", 5),
        ("dailydialog.valence", 9),
        ("annomi.direction", 4),
    ]
    assert card.left_out == {}


def test_card_depends_on_the_seed_and_repeats_with_it(data_dir: Path) -> None:
    schema = models.load("fake:schema")  # schema-valid answers drawn from prompt and seed
    first = _card(schema, data_dir, seed=3)
    again = _card(schema, data_dir, seed=3)
    other = _card(schema, data_dir, seed=4)
    values = [f.value for f in first.figures]
    assert values == [f.value for f in again.figures]
    assert values != [f.value for f in other.figures]


def test_limit_samples_each_part_with_the_seed(
    scripted_model: models.Model, data_dir: Path
) -> None:
    card = _card(scripted_model, data_dir, limit=2, seed=1)
    emotion, valence, annomi = card.parts
    assert annomi.n_items == 2 and annomi.n_population == 4
    # Two emotion items and two valence items, each its own sample.
    assert (emotion.n_items, valence.n_items) == (2, 2)
    accuracy = card.figure("dailydialog.emotion_accuracy[understand]")
    assert accuracy is not None and accuracy.n == 2
    assert _card(scripted_model, data_dir, limit=2, seed=1).parts == card.parts


def test_failed_calls_count_as_wrong_and_are_reported(data_dir: Path) -> None:
    def broken_on_sadness(messages: list[Message]) -> str:
        # Broken on the repair request too, so the call fails for good.
        return "not json" if "sad" in _last_user_turn(messages) else scripted(messages)

    register_fake("validate-broken", broken_on_sadness)
    try:
        card = _card(models.load("fake:validate-broken"), data_dir, parts=["dailydialog"])
    finally:
        unregister_fake("validate-broken")
    accuracy = card.figure("dailydialog.emotion_accuracy[understand]")
    valence = card.figure("dailydialog.valence_auroc[understand]")
    assert accuracy is not None and valence is not None
    assert (accuracy.value, accuracy.n, accuracy.n_failed) == (0.4, 5, 1)
    assert (valence.n, valence.n_failed) == (8, 1)
    assert [p.n_failed for p in card.parts] == [1, 1]


def test_unmeasured_parts_are_named_as_left_out(
    scripted_model: models.Model, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(NOT_YET, "tomorrow", "not implemented yet")
    card = _card(scripted_model, data_dir, parts=["annomi", "tomorrow"])
    assert [p.name for p in card.parts] == ["annomi.direction"]
    assert card.left_out == {"tomorrow": "not implemented yet"}


def test_predict_mode_adds_the_utterance_tier(scripted_model: models.Model, data_dir: Path) -> None:
    card = _card(scripted_model, data_dir, parts=["dailydialog"], modes=["understand", "predict"])
    assert [(p.name, p.mode) for p in card.parts] == [
        ("dailydialog.emotion", "understand"),
        ("dailydialog.valence", "understand"),
        ("dailydialog.emotion", "predict"),
        ("dailydialog.valence", "predict"),
    ]
    distinct = card.figure("dailydialog.distinct_1[predict]")
    assert distinct is not None
    # All 9 predictions are "I am glad, really glad." (13a tokens: i am glad , really glad .):
    # 6 distinct of 63.
    assert distinct.value == pytest.approx(6 / 63)
    rouge = card.figure("dailydialog.rouge_l[predict]")
    assert rouge is not None and rouge.n == 9 and rouge.baselines.random is not None
    len_ratio = card.figure("dailydialog.len_ratio[predict]")
    assert len_ratio is not None and len_ratio.higher_is_better is None
    # In prediction mode the simulator has not seen the turn: the state comes from the history.
    understood = card.figure("dailydialog.emotion_accuracy[understand]")
    predicted = card.figure("dailydialog.emotion_accuracy[predict]")
    assert understood is not None and predicted is not None
    assert understood.value != predicted.value
    assert card.figure("dailydialog.rouge_l[understand]") is None


def test_distinct_1_interval_holds_its_estimate() -> None:
    """Distinct-1 is a corpus ratio: a percentile bootstrap, which draws dialogues twice and so
    repeats their words, put every replicate below the estimate and the interval beside it."""
    # 40 dialogues of two predictions each; each dialogue adds two words no other one has.
    predicted = [f"I feel word{i}a {'and so on' if i % 3 else 'today'}" for i in range(40)] + [
        f"Yes word{i}b" for i in range(40)
    ]
    groups = [f"d{i}" for i in range(40)] * 2
    figures = utterance_figures(
        Scope(part="esconv", mode="predict", settings=Settings(resamples=500, seed=0)),
        gold=["I am fine."] * 80,
        predicted=predicted,
        groups=groups,
    )
    distinct = next(f for f in figures if f.metric == "distinct_1")
    low, value, high = distinct.ci_low, distinct.value, distinct.ci_high
    assert low is not None and value is not None and high is not None
    assert low < value < high
    assert high - low < 0.1


def test_dual_pipeline_reads_the_state_from_its_own_utterance(
    scripted_model: models.Model, data_dir: Path
) -> None:
    card = _card(
        scripted_model, data_dir, parts=["dailydialog"], modes=["predict"], pipeline="dual"
    )
    accuracy = card.figure("dailydialog.emotion_accuracy[predict]")
    # The generator always says "I am scared now.", which the verifier reads as fear: right on
    # the one fear turn of five.
    assert accuracy is not None and accuracy.value == pytest.approx(0.2)
    assert card.pipeline == "dual" and card.label == "fake:test (dual)"
    distinct = card.figure("dailydialog.distinct_1[predict]")
    assert distinct is not None
    assert distinct.value == pytest.approx(5 / 45)  # i am scared now . (5 of 9 x 5 tokens)


def test_heldout_all_takes_every_annomi_transcript(
    scripted_model: models.Model, data_dir: Path
) -> None:
    card = _card(scripted_model, data_dir, parts=["annomi"], heldout=Heldout("all"))
    # Transcript 0 (train in the samples' split) joins: one more change turn, read as 2.
    assert card.parts[0].n_items == 5
    assert card.heldout.startswith("all")


def test_p4g_figures_from_intention_scores() -> None:
    scope = Scope("persuasionforgood", "understand", Settings(resamples=50, seed=0))
    inp = WorldModelInput(task="PD")

    def item(n: int, dialogue: str, gold: str) -> Item:
        return Item(f"{dialogue}:{n}", dialogue, n, inp, "text", gold)

    def reading(score: float | None) -> Reading:
        intentions = [] if score is None else [StateItem(text="donate", score=score)]
        return Reading(CognitiveState(intentions=intentions), None, None)

    commitment = [item(1, "a", "commits"), item(3, "a", "refuses"), item(1, "b", "commits"),
                  item(3, "b", "refuses"), item(5, "b", "commits")]  # fmt: skip
    final = [item(3, "a", "none"), item(5, "b", "donated")]
    readings = {"a:1": reading(2), "a:3": reading(1), "b:1": reading(1), "b:3": reading(0),
                "b:5": reading(None)}  # fmt: skip
    figures = _score_p4g(scope, {"commitment": commitment, "final": final}, readings)
    by_metric = {f.metric: f for f in figures}
    # Commits 2, 1 (b:5 unscored) against refuses 1, 0: 3.5 of 4 pairs.
    assert by_metric["commitment_auroc"].value == pytest.approx(3.5 / 4)
    assert (by_metric["commitment_auroc"].n, by_metric["commitment_auroc"].n_failed) == (4, 1)
    # The donor's last turn is unscored: one class left, AUROC undefined (None, never 0).
    assert by_metric["donation_auroc"].value is None


def test_esconv_figures_from_readings() -> None:
    scope = Scope("esconv", "understand", Settings(resamples=50, seed=0))
    inp = WorldModelInput(task="ESC")

    def item(dialogue: str, n: int, gold: str, **facts: float) -> Item:
        return Item(f"{dialogue}:{n}", dialogue, n, inp, "text", gold, facts)

    def reading(label: str, intensity: int) -> Reading:
        state = CognitiveState(emotion=Emotion(label=label, intensity=intensity))
        return Reading(state, None, None)

    start = [item("a", 4, "sadness", initial=3), item("b", 4, "anxiety", initial=2)]
    end = [
        item("a", 20, "improved", initial_e=-6.0, final=1),  # read hope 1: +2 - (-6) = 8
        item("b", 20, "improved", initial_e=-4.0),  # read sadness 1: -2 - (-4) = 2
        item("c", 20, "failed", initial_e=-4.0),  # read anxiety 3: -6 - (-4) = -2
    ]
    readings = {"a:4": reading("sadness", 2), "b:4": reading("sadness", 3),
                "a:20": reading("hope", 1), "b:20": reading("sadness", 1),
                "c:20": reading("anxiety", 3)}  # fmt: skip
    figures = {f.metric: f for f in _score_esconv(scope, {"start": start, "end": end}, readings)}
    assert figures["emotion_accuracy"].value == pytest.approx(0.5)
    assert figures["initial_intensity_mae"].value == pytest.approx((1 + 1) / 2)
    assert figures["initial_intensity_mae"].higher_is_better is False
    # Only a has a final self-report: |1 - 1| = 0.
    assert (figures["final_intensity_mae"].value, figures["final_intensity_mae"].n) == (0.0, 1)
    assert figures["known_groups_auroc"].value == pytest.approx(1.0)


def test_judges_score_verdicts_against_the_human_record() -> None:
    def say_yes_when_thanked(messages: list[Message]) -> str:
        good = "thank" in messages[-1].content.lower()
        return json.dumps({"reason": "as read", "good_outcome": good})

    dialogues = [
        JudgedDialogue("a", "ESC", (("user", "I feel low."), ("user", "Thank you!")), True),
        JudgedDialogue("b", "ESC", (("user", "I feel low."), ("user", "Whatever.")), False),
        JudgedDialogue("c", "ESC", (("user", "Thanks, bye."),), False),
        JudgedDialogue("d", "ESC", (("user", "Ok thank you."),), True),
    ]
    register_fake("validate-judge", say_yes_when_thanked)
    try:
        model = models.load("fake:validate-judge")
        verdicts = asyncio.run(judge_all(model, dialogues, seed=0))
    finally:
        unregister_fake("validate-judge")
    assert verdicts == [True, False, True, True]
    scope = Scope("judges", "judge", Settings(resamples=50, seed=0))
    figures = {f.metric: f for f in judge_figures(scope, "go", dialogues, verdicts)}
    # Good ones: 2 of 2 said yes; bad ones: 1 of 2 said no -> (1 + 0.5) / 2.
    assert figures["go_balanced_accuracy"].value == pytest.approx(0.75)
    assert figures["go_yes_rate"].value == pytest.approx(0.75)
    assert figures["go_balanced_accuracy"].baselines.majority == 0.5


def test_intent_detector_probes_at_the_end_and_half_way() -> None:
    def ended_on_goodbye(messages: list[Message]) -> str:
        # A transcript line ("Seeker: ...") saying bye; the instruction itself mentions goodbyes.
        said = re.search(r"^\w+: .*\bbye\b", messages[-1].content, flags=re.MULTILINE)
        return json.dumps({"ended": said is not None})

    texts = ["hi", "hello", "I feel low", "why", "work", "I see", "ok", "thanks, bye", "bye"]
    utterances = [
        Utterance(index=i, speaker="s" if i % 2 else "u", role=Role.AGENT if i % 2 else Role.USER,
                  text=t)
        for i, t in enumerate(texts)
    ]  # fmt: skip
    probes = intent_probes(
        Dialogue(id="esconv:test:1", corpus="esconv", utterances=utterances), "ESC"
    )
    # 5 user turns: the middle cut ends after the third (turn index 4).
    assert [(p.id, p.good, len(p.transcript)) for p in probes] == [
        ("esconv:test:1@end", True, 9),
        ("esconv:test:1@middle", False, 5),
    ]
    register_fake("validate-intent", ended_on_goodbye)
    try:
        verdicts = asyncio.run(judge_all(models.load("fake:validate-intent"), probes, seed=0))
    finally:
        unregister_fake("validate-intent")
    assert verdicts == [True, False]


def test_card_with_the_judges_part(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dialogues = [
        JudgedDialogue(f"d{i}", "ESC", (("user", "hello"),), i % 2 == 0, group=f"d{i}")
        for i in range(6)
    ]
    monkeypatch.setattr(run_module, "judge_sets", lambda *_: {"go": ("six", dialogues)})
    register_fake("validate-yes", lambda _: json.dumps({"reason": "r", "good_outcome": True}))
    try:
        card = _card(models.load("fake:validate-yes"), data_dir, parts=["judges"], limit=4)
    finally:
        unregister_fake("validate-yes")
    (info,) = card.parts
    assert (info.name, info.mode, info.n_items, info.split) == ("judges.go", "judge", 4, "six")
    # A judge that always says yes: balanced accuracy 0.5, yes rate 1.
    balanced = card.figure("judges.go_balanced_accuracy[judge]")
    yes = card.figure("judges.go_yes_rate[judge]")
    assert balanced is not None and yes is not None
    assert (balanced.value, yes.value, yes.n) == (0.5, 1.0, 4)


def test_judged_transcript_keeps_the_opening_and_the_end() -> None:
    utterances = [
        Utterance(index=i, speaker=s, role=Role.USER if s == "u" else Role.AGENT, text=str(i))
        for i, s in enumerate("au" * 12)
    ]
    dialogue = Dialogue(id="x:1", corpus="esconv", utterances=utterances)
    shown = judged_transcript(dialogue)
    assert [text for _, text in shown] == [str(i) for i in [0, 1, 2, 3, *range(12, 24)]]


def test_unknown_part_and_ablation_are_input_errors(
    scripted_model: models.Model, data_dir: Path
) -> None:
    with pytest.raises(InputError, match="unknown card part"):
        _card(scripted_model, data_dir, parts=["nope"])
    with pytest.raises(InputError, match="unknown ablation"):
        _card(scripted_model, data_dir, ablation="no_everything")


def test_card_file_round_trip_and_compare(
    scripted_model: models.Model, data_dir: Path, tmp_path: Path
) -> None:
    card = _card(scripted_model, data_dir, label="scripted")
    path = tmp_path / "card.json"
    write_card(card, path)
    assert json.loads(path.read_text())["schema"] == "cogwm.validity_card/1"
    assert read_card(path) == card
    small = _card(scripted_model, data_dir, label="scripted-2", limit=2)
    table = compare([card, small])
    assert table.columns == ["scripted", "scripted-2"]
    row = next(r for r in table.rows if r.key == "dailydialog.emotion_accuracy[understand]")
    assert [c.n for c in row.cells if c is not None] == [5, 2]
    assert not row.same_items
    lines = to_csv(table).splitlines()
    assert lines[0].startswith("metric,higher_is_better,majority,random,same_items,scripted,")
    assert lines[1].startswith("dailydialog.emotion_accuracy[understand],True,0.4,")


def test_paired_difference_on_shared_items(
    scripted_model: models.Model, data_dir: Path, tmp_path: Path
) -> None:
    def always_anger(messages: list[Message]) -> str:
        state = {"label": "anger", "intensity": 2}
        return json.dumps({"emotion": state, "beliefs": [], "desires": [], "intentions": []})

    register_fake("validate-anger", always_anger)
    try:
        anger = _card(models.load("fake:validate-anger"), data_dir, label="anger")
    finally:
        unregister_fake("validate-anger")
    scripted = _card(scripted_model, data_dir, label="scripted")
    differences = {d.key: d for d in paired_differences([anger, scripted], resamples=100)}
    accuracy = differences["dailydialog.emotion_accuracy[understand]"]
    # Scripted 3 of 5 right, always-anger 2 of 5: +0.2 on the same 5 items.
    assert (accuracy.difference, accuracy.n, accuracy.column) == (pytest.approx(0.2), 5, "scripted")
    valence = differences["dailydialog.valence_auroc[understand]"]
    # A constant score has AUROC 0.5; the scripted one 17/18.
    assert valence.difference == pytest.approx(17 / 18 - 0.5)
    assert valence.ci_low is not None and valence.ci_high is not None
    assert valence.ci_low <= valence.difference <= valence.ci_high
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    write_card(anger, first)
    write_card(scripted, second)
    result = CliRunner().invoke(
        _cli(), ["--compare", str(first), str(second), "--paired", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    paired = json.loads(result.stdout)["paired"]
    assert {p["key"] for p in paired} >= {"dailydialog.valence_auroc[understand]"}


def test_read_card_refuses_other_files(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"schema": "cogwm.labels/1"}')
    with pytest.raises(InputError, match="expected a validity card"):
        read_card(path)


# --- the command line ----------------------------------------------------------------------------


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.command()(validate)
    return app


def test_cli_writes_the_card_and_compares(
    scripted_model: models.Model, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogwm.validate.status import find_card

    monkeypatch.setenv("COGWM_CARDS_DIR", str(tmp_path / "cards"))
    runner = CliRunner()
    out = tmp_path / "card.json"
    result = runner.invoke(
        _cli(),
        ["--model", "fake:validate-script", "--data-dir", str(data_dir), "--out", str(out),
         "--json", "--resamples", "50", "--parts", "dailydialog,annomi"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout[result.stdout.index("{") :])
    assert printed["figures"][0]["value"] == pytest.approx(0.6)
    assert read_card(out).model == "fake:validate-script"
    # A copy is registered where arena reports look a simulator's card up by its identity.
    found = find_card(read_card(out).model_identity, shipped=tmp_path / "no-shipped")
    assert found is not None and found[0] == read_card(out) and found[2] == "registered"
    assert found[1].parent == tmp_path / "cards"
    result = runner.invoke(_cli(), ["--compare", str(out), str(out), "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert "fake:validate-script #1" in result.stdout.splitlines()[0]


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "cogwm.cli.main",
            "validate",
            "--compare",
            str(tmp_path / "no.json"),
        ],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": ""},
        check=False,
    )
    assert run.returncode == 2
    assert run.stderr.startswith("error: ") and run.stderr.count("\n") == 1
