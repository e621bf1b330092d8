"""The validity card's memorisation figure: predicted utterances that repeat training n-grams."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cogwm import models
from cogwm.cli.validate import validate
from cogwm.errors import InputError
from cogwm.models import Message, register_fake, unregister_fake
from cogwm.simulator.samples import Sample, write_samples
from cogwm.validate import Card, build_card
from cogwm.validate.figures import Scope, Settings, memorisation_figure
from cogwm.validate.memorisation import NGRAM, NgramIndex, training_index, words
from helpers_validate import write_corpora

SRC = Path(__file__).resolve().parents[1] / "src"

#: A training utterance of more than NGRAM words.
TRAINED = "Honestly I think we should all go to the beach together this weekend, my friend."
#: Text sharing no NGRAM words in a row with anything in the training file.
NOVEL = "Purple elephants calmly negotiate tax reforms beneath the flickering neon moon tonight."
STATE: dict[str, object] = {
    "emotion": {"label": "hope", "intensity": 2},
    "beliefs": [],
    "desires": [],
    "intentions": [],
}


def _sample(number: int, mode: str, target: Mapping[str, object]) -> Sample:
    return Sample(
        id=f"dailydialog-train-{number}:0" + (":understand" if mode == "understand" else ""),
        dialogue_id=f"dailydialog-train-{number}",
        corpus="dailydialog",
        split="train",
        turn_index=0,
        messages=[Message(role="user", content="prompt")],
        target=json.dumps(target),
        target_spans=[],
        provenance={"emotion": "human"},
        mode=mode,  # type: ignore[arg-type]
    )


def write_train(directory: Path, utterances: list[str]) -> Path:
    """A samples directory whose train.jsonl has one prediction and one understanding sample
    per utterance (the understanding samples have no utterance, as ``samples build`` writes)."""
    directory.mkdir(parents=True)
    samples = []
    for number, text in enumerate(utterances):
        samples.append(_sample(number, "predict", {**STATE, "utterance": text, "leave": False}))
        samples.append(_sample(number, "understand", STATE))
    write_samples(directory / "train.jsonl", samples)
    return directory


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    return write_corpora(tmp_path / "data")


@pytest.fixture()
def train_dir(tmp_path: Path) -> Path:
    return write_train(tmp_path / "samples", [TRAINED, "Short one."])


def _speaker(utterance: str, fail_on: str | None = None) -> Callable[[list[Message]], str]:
    """A simulator that always says ``utterance`` in prediction mode (and fails outright on
    prompts that contain ``fail_on``)."""

    def answer(messages: list[Message]) -> str:
        prompt = next(m.content for m in messages if m.role == "user")
        if fail_on is not None and fail_on in prompt:
            return "not json"
        return json.dumps({**STATE, "utterance": utterance, "leave": False})

    return answer


@pytest.fixture()
def fake() -> Iterator[Callable[[Callable[[list[Message]], str]], models.Model]]:
    def load(script: Callable[[list[Message]], str]) -> models.Model:
        register_fake("validate-memo", script)
        return models.load("fake:validate-memo")

    try:
        yield load
    finally:
        unregister_fake("validate-memo")


def _card(model: models.Model, data_dir: Path, train_dir: Path | None) -> Card:
    return build_card(model, address="fake:memo", data_dir=data_dir, parts=["dailydialog"],
                      modes=["predict"], resamples=50, progress=False,
                      train_samples=train_dir)  # fmt: skip


def test_parrot_scores_one_and_novel_text_zero(
    fake: Callable[..., models.Model], data_dir: Path, train_dir: Path
) -> None:
    parrot = _card(fake(_speaker(f"Well. {TRAINED.upper()} Bye.")), data_dir, train_dir)
    figure = parrot.figure("dailydialog.memorisation[predict]")
    assert figure is not None
    assert (figure.value, figure.n, figure.n_failed) == (1.0, 9, 0)
    assert figure.ci_low is not None and 0.6 < figure.ci_low < 1.0 and figure.ci_high == 1.0
    assert figure.higher_is_better is False
    # The DailyDialog test turns are all under 8 words: the real people repeat nothing.
    assert figure.baselines.random == 0.0
    assert figure.rows is not None and [r.answer for r in figure.rows] == [1.0] * 9

    novel = _card(fake(_speaker(NOVEL)), data_dir, train_dir)
    figure = novel.figure("dailydialog.memorisation[predict]")
    assert figure is not None and (figure.value, figure.n) == (0.0, 9)
    assert figure.ci_low == 0.0 and figure.ci_high is not None and 0.0 < figure.ci_high < 0.4


def test_eight_words_in_a_row_are_memorised_seven_are_not(tmp_path: Path) -> None:
    index = training_index(write_train(tmp_path / "samples", [TRAINED]))
    first = words(TRAINED)
    assert NGRAM == 8
    assert index.shares_ngram(" ".join(["Purple", *first[:8], "elephants"]))
    assert not index.shares_ngram(" ".join(["Purple", *first[:7], "elephants"]))
    # Case and punctuation do not hide a repeat.
    assert index.shares_ngram("HONESTLY, I think -- we should all go to the BEACH!")


def test_failed_calls_count_as_not_memorised(
    fake: Callable[..., models.Model], data_dir: Path, train_dir: Path
) -> None:
    card = _card(fake(_speaker(TRAINED, fail_on="angry")), data_dir, train_dir)
    figure = card.figure("dailydialog.memorisation[predict]")
    assert figure is not None and figure.n == 9
    assert 0 < figure.n_failed < 9
    assert figure.value == pytest.approx((9 - figure.n_failed) / 9)


def test_no_figure_without_training_samples_or_prediction_mode(
    fake: Callable[..., models.Model], data_dir: Path, train_dir: Path
) -> None:
    model = fake(_speaker(TRAINED))
    assert _card(model, data_dir, None).figure("dailydialog.memorisation[predict]") is None
    understood = build_card(model, address="fake:memo", data_dir=data_dir, parts=["dailydialog"],
                            resamples=50, progress=False, train_samples=train_dir)  # fmt: skip
    assert not [f for f in understood.figures if f.metric == "memorisation"]


def test_baseline_is_the_share_of_the_real_utterances(tmp_path: Path) -> None:
    index = training_index(write_train(tmp_path / "samples", [TRAINED]))
    gold = [f"So, {TRAINED}", NOVEL, NOVEL, "Hi."]
    scope = Scope("dailydialog", "predict", Settings(resamples=10, seed=0))
    figure = memorisation_figure(scope, gold, [NOVEL, NOVEL, None, NOVEL], ["a", "a", "b", "c"],
                                 index)  # fmt: skip
    assert (figure.value, figure.n, figure.n_failed) == (0.0, 4, 1)
    assert figure.baselines.random == pytest.approx(0.25)


def test_understand_samples_are_skipped(tmp_path: Path) -> None:
    index = training_index(write_train(tmp_path / "samples", [TRAINED, NOVEL]))
    # Two prediction-mode utterances; the understanding samples (no utterance) are not read.
    assert index.n_utterances == 2
    assert index.digests.size == sum(len(words(t)) - NGRAM + 1 for t in (TRAINED, NOVEL))
    assert index.shares_ngram(NOVEL.lower()) and not index.shares_ngram("Short one.")


def test_index_keeps_distinct_digests_only() -> None:
    index = NgramIndex.from_utterances([TRAINED, TRAINED, "two words"], source="mem")
    assert index.n_utterances == 3
    assert index.digests.size == len(words(TRAINED)) - NGRAM + 1


def test_training_file_without_utterance_is_an_input_error(tmp_path: Path) -> None:
    directory = tmp_path / "samples"
    directory.mkdir()
    write_samples(directory / "train.jsonl", [_sample(0, "predict", STATE)])
    with pytest.raises(InputError, match="no text 'utterance'"):
        training_index(directory)
    with pytest.raises(InputError, match=r"no train\.jsonl"):
        training_index(tmp_path)


def test_cli_adds_the_figure(
    fake: Callable[..., models.Model], data_dir: Path, train_dir: Path
) -> None:
    fake(_speaker(TRAINED))
    app = typer.Typer()
    app.command()(validate)
    result = CliRunner().invoke(
        app,
        ["--model", "fake:validate-memo", "--data-dir", str(data_dir), "--parts", "dailydialog",
         "--mode", "predict", "--train-samples", str(train_dir), "--json", "--resamples", "20"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout[result.stdout.index("{") :])
    memorised = [f for f in printed["figures"] if f["metric"] == "memorisation"]
    assert [(f["value"], f["n"]) for f in memorised] == [(1.0, 9)]


def test_cli_missing_directory_is_one_line(data_dir: Path, tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "cogwm.cli.main", "validate", "--model", "fake:schema",
         "--data-dir", str(data_dir), "--mode", "predict",
         "--train-samples", str(tmp_path / "nowhere")],
        capture_output=True, text=True, env={"PYTHONPATH": str(SRC), "PATH": ""}, check=False,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert run.stderr == f"error: --train-samples {tmp_path / 'nowhere'}: no such directory\n"
