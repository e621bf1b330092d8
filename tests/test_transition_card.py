"""State simulators that are not models on the validity card (``cogwm validate --simulator``),
and ``cogwm train transition`` end to end, on the tiny synthetic corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogwm.corpora.labels import extensions
from cogwm.errors import InputError
from cogwm.metrics.sentiment import vader_compound
from cogwm.schema import CognitiveState, Emotion, StateItem
from cogwm.simulator.build import Source, build_samples
from cogwm.simulator.format import WorldModelInput
from cogwm.simulator.rule import SentimentMeter, nearest_emotion
from cogwm.validate import build_card
from cogwm.validate.items import Item, dailydialog_population
from cogwm.validate.python_sim import load_simulator, read_python_items
from helpers_cli import cogwm
from helpers_validate import write_corpora

METER = "python:cogwm.simulator.rule:SentimentMeter"


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    return write_corpora(tmp_path / "data")


def test_meter_readings_are_the_shown_state_moved_by_the_agent_turn(data_dir: Path) -> None:
    extensions.register()
    items = dailydialog_population(data_dir).items
    readings = read_python_items(SentimentMeter(k=1.0), items, "predict", seed=0)
    shown = [(i, r) for i, r in zip(items, readings, strict=True) if i.inp.previous_state]
    assert shown, "the tiny corpus has items with a shown state"
    for item, reading in shown:
        previous = item.inp.previous_state
        assert previous is not None and previous.emotion is not None
        agent = [text for role, text in item.inp.history if role == "agent"][-1]
        expected = nearest_emotion(previous.emotion.quantified + vader_compound(agent))
        assert reading.state is not None and reading.state.emotion == expected, item.id
        assert reading.utterance == "I see."


def test_items_without_an_agent_turn_get_the_opening_reading(data_dir: Path) -> None:
    extensions.register()
    first = [i for i in dailydialog_population(data_dir).items if not i.inp.history]
    meter = SentimentMeter()
    for reading in read_python_items(meter, first, "predict", seed=0):
        assert reading.state is not None and reading.error is None


def test_card_of_a_python_simulator_in_prediction_mode(data_dir: Path) -> None:
    meter = load_simulator(METER)
    card = build_card(
        meter, address=METER, data_dir=data_dir, parts=["dailydialog", "annomi"],
        modes=["predict"], resamples=50, progress=False,
    )  # fmt: skip
    assert card.model_identity == SentimentMeter().identity
    valence = next(f for f in card.figures if f.key == "dailydialog.valence_auroc[predict]")
    assert valence.value is not None and valence.n > 0 and valence.n_failed == 0
    assert valence.baselines.carry_forward is not None  # the trivial rules stand beside it
    with pytest.raises(InputError, match="prediction mode only"):
        build_card(meter, address=METER, data_dir=data_dir, parts=["dailydialog"], progress=False)
    with pytest.raises(InputError, match="judges"):
        build_card(
            meter, address=METER, data_dir=data_dir, parts=["judges"], modes=["predict"],
            progress=False,
        )  # fmt: skip


def test_bad_simulator_addresses_are_one_line_errors(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (
        ["--simulator", "llamacpp:smollm2"],
        ["--simulator", "python:cogwm.nowhere:Thing"],
        ["--simulator", "transition:/no/such/file.json"],
        ["--simulator", METER, "--model", "fake:x"],
        ["--simulator", METER, "--mode", "understand"],
    ):
        assert cogwm("validate", *args, "--data-dir", data_dir, "--parts", "annomi") == 2, args
        err = capsys.readouterr().err.strip()
        assert err.startswith("error:") and "\n" not in err and "Traceback" not in err, err


def test_train_transition_then_card_it(
    data_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COGWM_CARDS_DIR", str(tmp_path / "cards"))
    samples = tmp_path / "samples"
    build_samples(
        samples, [Source("human", "dailydialog"), Source("human", "annomi")], data_dir=data_dir,
        count_tokens=lambda _: {},
    )  # fmt: skip
    model = tmp_path / "transition.json"
    args = ["--samples", samples, "--data-dir", data_dir, "--max-features", "50", "--json"]
    assert cogwm("train", "transition", *args, "--out", model) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["split"] == "train" and summary["rows"] > 0
    assert set(summary["rows_by_corpus"]) <= {"dailydialog", "annomi"}
    card = tmp_path / "card.json"
    code = cogwm(
        "validate", "--simulator", f"transition:{model}", "--data-dir", data_dir,
        "--parts", "dailydialog,annomi", "--resamples", "50", "--out", card, "--json",
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    written = json.loads(card.read_text(encoding="utf-8"))
    assert written["model_identity"].startswith("transition:transition.json@")
    assert any(f["metric"] == "valence_auroc" and f["n"] > 0 for f in written["figures"])


def test_train_transition_refuses_bad_input(
    tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.json"
    assert cogwm("train", "transition", "--samples", tmp_path / "none", "--out", out) == 2
    (tmp_path / "empty").mkdir()
    bad = ["--samples", tmp_path / "empty", "--out", out, "--data-dir", data_dir]
    assert cogwm("train", "transition", *bad) == 2
    assert "manifest.json" in capsys.readouterr().err
    assert cogwm("train", "transition", *bad, "--features", "words") == 2
    assert not out.exists()


def test_the_shown_state_sits_on_the_users_last_turn_before_the_agent() -> None:
    shown = CognitiveState(emotion=Emotion(label="sadness", intensity=2))
    history = [("user", "Hi."), ("agent", "You are wonderful!"), ("user", "Thanks."),
               ("agent", "That is terrible, awful news.")]  # fmt: skip
    item = Item(
        id="x:4", dialogue_id="x", turn_index=4, utterance="ok", gold="sadness",
        inp=WorldModelInput(task="ESC", history=history, previous_state=shown),
    )  # fmt: skip
    (reading,) = read_python_items(SentimentMeter(), [item], "predict", seed=0)
    # Only the agent turn after the shown state moves it (not the kind one before).
    expected = nearest_emotion(shown.emotion.quantified + vader_compound(history[-1][1]))  # type: ignore[union-attr]
    assert reading.state is not None and reading.state.emotion == expected


def test_a_shown_state_without_emotion_gets_the_opening_readings() -> None:
    shown = CognitiveState(intentions=[StateItem(text="donate", score=1.0)])
    history = [("user", "I am happy today."), ("agent", "Would you donate? It is wonderful.")]
    item = Item(
        id="y:2", dialogue_id="y", turn_index=2, utterance="ok", gold="",
        inp=WorldModelInput(task="PD", history=history, previous_state=shown),
    )  # fmt: skip
    (reading,) = read_python_items(SentimentMeter(), [item], "predict", seed=0)
    assert reading.error is None and reading.state is not None
    # The intention moved from the shown score; the emotion from the opening reading.
    assert reading.state.dimension_value("intention") == pytest.approx(
        1.0 + vader_compound(history[-1][1])
    )
    opening = nearest_emotion(vader_compound(history[0][1]) * 3.0)
    moved = nearest_emotion(opening.quantified + vader_compound(history[-1][1]))
    assert reading.state.emotion == moved
