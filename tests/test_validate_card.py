"""``cogwm validate``: the validity card on tiny synthetic corpora with scripted fake simulators.

The scripted simulator reads the user's last turn and answers by keyword, so every figure of the
card can be worked out by hand; the numbers asserted here are those hand counts.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from cogwm import models
from cogwm.cli.validate import validate
from cogwm.errors import InputError
from cogwm.models import Message, register_fake, unregister_fake
from cogwm.simulator.validate import (
    Card,
    build_card,
    compare,
    read_card,
    to_csv,
    write_card,
)
from cogwm.simulator.validate.items import annomi_population, dailydialog_population

SRC = Path(__file__).resolve().parents[1] / "src"

# --- synthetic corpora ---------------------------------------------------------------------------


def _dd_dialogue(split: str, line: int, turns: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "dataset": "dailydialog",
        "data_split": split,
        "dialogue_id": f"dailydialog-{split}-{line}",
        "original_id": f"{split}-{line}",
        "domains": ["Ordinary Life"],
        "turns": [
            {
                "speaker": "user" if i % 2 == 0 else "system",
                "utterance": text,
                "utt_idx": i,
                "dialogue_acts": {
                    "binary": [{"intent": "inform", "domain": "", "slot": ""}],
                    "categorical": [],
                    "non-categorical": [],
                },
                "emotion": emotion,
            }
            for i, (text, emotion) in enumerate(turns)
        ],
    }


DD_DIALOGUES = [
    _dd_dialogue("train", 0, [("Hello, I am sad!", "sadness"), ("Why is that?", "no emotion")]),
    _dd_dialogue("validation", 0, [("Hi.", "no emotion"), ("Hello.", "no emotion")]),
    _dd_dialogue(
        "test",
        0,
        [
            ("I am so angry about this!", "anger"),
            ("Calm down.", "no emotion"),
            ("I feel glad now.", "happiness"),
            ("That smells disgusting.", "disgust"),
        ],
    ),
    _dd_dialogue(
        "test",
        1,
        [
            ("I am sad today.", "sadness"),
            ("I am scared of that dog.", "fear"),
            ("Let's go out, I am glad.", "happiness"),
            ("Wow, really?", "surprise"),
        ],
    ),
    _dd_dialogue(
        "test",
        2,
        [("This is awful, I hate it.", "anger"), ("What a nice day.", "happiness")],
    ),
    # Sadness said without the keyword: the scripted simulator misreads it.
    _dd_dialogue("test", 3, [("Hello! My cat died.", "sadness"), ("Oh no", "no emotion")]),
]

ANNOMI_HEADER = [
    "transcript_id", "mi_quality", "video_title", "video_url", "topic", "utterance_id",
    "interlocutor", "timestamp", "utterance_text", "main_therapist_behaviour", "client_talk_type",
]  # fmt: skip
ANNOMI_FULL_HEADER = [
    "transcript_id", "utterance_id", "interlocutor", "utterance_text", "annotator_id",
    "main_therapist_behaviour", "client_talk_type",
]  # fmt: skip
ANNOMI_ROWS = [
    # transcript, utterance id, speaker, text, talk type. Transcripts 1 and 16 fall in the
    # samples' seeded test split (seed 0), transcript 0 in train: its turns are never items.
    (0, 0, "therapist", "Why are you here?", "n/a"),
    (0, 1, "client", "I want to stop now.", "change"),
    (1, 0, "therapist", "Shall we talk about drinking?", "n/a"),
    (1, 1, "client", "Maybe I could cut down.", "change"),
    (1, 2, "therapist", "And?", "n/a"),
    (1, 3, "client", "I like drinking too much.", "sustain"),
    (1, 4, "therapist", "Anything else?", "n/a"),
    # Labelled change, but the annotators of the full file tie on it: never an item.
    (1, 5, "client", "I don't know, I like it.", "change"),
    (16, 0, "therapist", "How do you feel about smoking?", "n/a"),
    (16, 1, "client", "I want to change, I will quit.", "change"),
    (16, 2, "therapist", "What stops you?", "n/a"),
    (16, 3, "client", "I don't see a problem.", "sustain"),
    (16, 4, "therapist", "Tell me more.", "n/a"),
    (16, 5, "client", "Okay.", "neutral"),
]


def _write_corpora(root: Path) -> Path:
    unified = root / "dailydialog" / "convlab3_unified" / "data"
    unified.mkdir(parents=True)
    (unified / "dialogues.json").write_text(json.dumps(DD_DIALOGUES), encoding="utf-8")
    annomi = root / "annomi"
    annomi.mkdir()
    with (annomi / "AnnoMI-simple.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(ANNOMI_HEADER)
        for tid, uid, who, text, talk in ANNOMI_ROWS:
            behaviour = "question" if who == "therapist" else "n/a"
            video = (f"Video {tid}", f"https://example.org/{tid}", "smoking cessation")
            writer.writerow([tid, "high", *video, uid, who, "00:00:01", text, behaviour, talk])
    with (annomi / "AnnoMI-full.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(ANNOMI_FULL_HEADER)
        for tid, uid, who, text, talk in ANNOMI_ROWS:
            behaviour = "question" if who == "therapist" else "n/a"
            # The last client utterance: 2 annotators say change, 2 sustain (a tie).
            votes = ["change", "change", "sustain", "sustain"] if (tid, uid) == (1, 5) else [talk]
            for annotator, vote in enumerate(votes):
                writer.writerow([tid, uid, who, text, annotator, behaviour, vote])
    return root


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    return _write_corpora(tmp_path / "data")


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
    text = _last_user_turn(messages)
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
def scripted_model() -> Iterator[models.Model]:
    register_fake("validate-script", scripted)
    try:
        yield models.load("fake:validate-script")
    finally:
        unregister_fake("validate-script")


def _card(model: models.Model, data_dir: Path, **kwargs: Any) -> Card:
    options: dict[str, Any] = {"resamples": 200, "progress": False, **kwargs}
    return build_card(model, address="fake:test", data_dir=data_dir, **options)


# --- items ---------------------------------------------------------------------------------------


def test_dailydialog_items_are_valenced_test_turns(data_dir: Path) -> None:
    population = dailydialog_population(data_dir)
    golds = sorted(item.gold for item in population.items)
    # Only test turns; surprise and "no emotion" turns carry no valence sign.
    assert golds == sorted(["anger", "happiness", "disgust", "sadness", "fear", "happiness",
                            "anger", "happiness", "sadness"])  # fmt: skip
    assert "official test (4 dialogues" in population.split
    second_speaker = next(i for i in population.items if i.utterance == "I am scared of that dog.")
    # The second speaker is the user of its own items: its turns are "user", the other "agent".
    assert second_speaker.inp.history == [("agent", "I am sad today.")]
    glad = next(i for i in population.items if i.utterance == "Let's go out, I am glad.")
    # As in the training samples, the latest human-known state before the turn is shown.
    assert glad.inp.previous_state is not None and glad.inp.previous_state.emotion is not None
    assert glad.inp.previous_state.emotion.label == "sadness"


def test_annomi_items_are_test_split_directions_without_ties(data_dir: Path) -> None:
    items = annomi_population(data_dir).items
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
    assert [p.n_population for p in card.parts] == [9, 4]
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
    dd, annomi = card.parts
    assert annomi.n_items == 2 and annomi.n_population == 4
    # Two emotion items and two valence items, which may overlap.
    assert 2 <= dd.n_items <= 4
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
    assert card.parts[0].n_failed == 1


def test_unmeasured_parts_are_named_as_left_out(
    scripted_model: models.Model, data_dir: Path
) -> None:
    card = _card(scripted_model, data_dir, parts=["annomi", "p4g"])
    assert [p.name for p in card.parts] == ["annomi"]
    assert "not implemented" in card.left_out["p4g"]


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
    scripted_model: models.Model, data_dir: Path, tmp_path: Path
) -> None:
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
