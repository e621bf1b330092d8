"""cogwm simulate: predictions over a samples split (modes, input switches, resume, errors),
and cogwm score fidelity on them in the paper's layout, per dataset."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cogwm import tasks
from cogwm.cli.score import app as score_app
from cogwm.models import load
from cogwm.models.fake import register_fake, unregister_fake
from cogwm.models.types import Message
from cogwm.schema import BigFive, CognitiveState, Emotion, Profile, StateItem
from cogwm.simulator.format import WorldModelInput, build_messages
from cogwm.simulator.samples import Sample, read_samples, write_samples
from cogwm.simulator.simulate import RunSettings, ablated_messages, run_predictions
from cogwm.validate.items import Item
from cogwm.validate.reader import world_model_input
from helpers_cli import cogwm

runner = CliRunner()


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory, fixtures_dir: Path) -> Path:
    """Samples (both modes) of three corpora's fixtures: the train split has the most."""
    out = tmp_path_factory.mktemp("samples")
    code = cogwm(
        "samples", "build", "--human", "esconv", "--human", "dailydialog", "--human",
        "persuasionforgood", "--data-dir", fixtures_dir, "--out", out, "--understand",
    )  # fmt: skip
    assert code == 0
    return out / "train.jsonl"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _state(label: str, belief: str) -> CognitiveState:
    return CognitiveState(
        emotion=Emotion(label=label, intensity=2),
        beliefs=[StateItem(text=belief, score=1.0)],
    )


# --- input switches: the prompt as if built without the part ---------------------------------

_PROFILE = Profile(
    big_five=BigFive(
        openness=3, conscientiousness=4, extraversion=2, agreeableness=5, neuroticism=1
    ),
    communication_style="terse",
)


def _input(initial: CognitiveState | None, previous: CognitiveState | None) -> WorldModelInput:
    return WorldModelInput(
        task="ESC",
        context="I lost my job.",
        profile=_PROFILE,
        initial_state=initial,
        history=[("user", "hi"), ("agent", "How are you feeling?")],
        previous_state=previous,
    )


def _sample(messages: list[Message]) -> Sample:
    return Sample(
        id="d:1", dialogue_id="d", corpus="esconv", split="test", turn_index=1,
        messages=messages, target="{}", target_spans=[], provenance={},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("initial", "previous"),
    [
        (_state("sadness", "no job"), _state("anxiety", "rent is due")),  # both lines shown
        (_state("sadness", "no job"), _state("sadness", "no job")),  # one line, start == previous
        (None, None),  # nothing shown
    ],
)
def test_no_previous_state_is_the_prompt_built_without_it(
    initial: CognitiveState | None, previous: CognitiveState | None
) -> None:
    task = tasks.get("ESC")
    full = _input(initial, previous)
    sample = _sample(build_messages(full, task))
    expected = build_messages(full.model_copy(update={"previous_state": None}), task)
    assert ablated_messages(sample, "no_previous_state") == expected


def test_no_profile_is_the_prompt_built_without_it() -> None:
    task = tasks.get("ESC")
    full = _input(_state("sadness", "no job"), _state("anxiety", "rent"))
    sample = _sample(build_messages(full, task))
    expected = build_messages(full.model_copy(update={"profile": None}), task)
    assert ablated_messages(sample, "no_profile") == expected
    assert ablated_messages(sample, "none") == sample.messages


@pytest.mark.parametrize("ablation", ["no_previous_state", "no_profile"])
def test_validate_and_simulate_switch_off_the_same_part(ablation: str) -> None:
    task = tasks.get("ESC")
    full = _input(_state("sadness", "no job"), _state("anxiety", "rent"))
    item = Item(id="d:1", dialogue_id="d", turn_index=1, inp=full, utterance="hm", gold="x")
    validated = build_messages(world_model_input(item, "predict", ablation), task)
    assert ablated_messages(_sample(build_messages(full, task)), ablation) == validated
    assert validated != build_messages(full, task)


# --- the command ------------------------------------------------------------------------------


@pytest.fixture
def seen() -> Iterator[list[str]]:
    """A fake recording the text of every message it is sent."""
    texts: list[str] = []
    answer = {"emotion": {"label": "sadness", "intensity": 2}, "beliefs": [], "desires": [],
              "intentions": [], "utterance": "ok", "leave": False}  # fmt: skip

    def reply(messages: list[Message]) -> str:
        texts.extend(m.content for m in messages)
        return json.dumps(answer)

    register_fake("recorder", reply)
    yield texts
    unregister_fake("recorder")


def test_simulate_writes_one_prediction_per_sample(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "pred.jsonl"
    assert cogwm("simulate", "--samples", split, "--model", "fake:schema", "--out", out) == 0
    predict = [s for s in read_samples(split) if s.mode == "predict"]
    lines = _lines(out)
    assert sorted(x["id"] for x in lines) == sorted(s.id for s in predict)
    first = lines[0]
    assert first["model"] == "fake:schema" and first["mode"] == "predict"
    assert first["state"] is not None and first["utterance"]
    assert {x["dataset"] for x in lines} == {s.corpus for s in predict}


def test_understand_mode_predicts_states_of_the_understanding_samples(
    split: Path, tmp_path: Path
) -> None:
    out = tmp_path / "u.jsonl"
    code = cogwm(
        "simulate", "--samples", split, "--model", "fake:schema", "--out", out,
        "--mode", "understand", "--limit", "3",
    )  # fmt: skip
    assert code == 0
    lines = _lines(out)
    assert len(lines) == 3
    assert all(x["id"].endswith(":understand") and x["utterance"] is None for x in lines)


def test_ablation_reaches_the_model(split: Path, tmp_path: Path, seen: list[str]) -> None:
    out = tmp_path / "a.jsonl"
    code = cogwm(
        "simulate", "--samples", split, "--model", "fake:recorder", "--out", out,
        "--ablation", "no_previous_state",
    )  # fmt: skip
    assert code == 0
    assert seen and not any("Your state before this:" in t for t in seen)
    # The full input does show previous states on these samples (else the check says nothing).
    full = [m.content for s in read_samples(split) for m in s.messages]
    assert any("Your state before this:" in t for t in full)


def test_resume_completes_a_cut_file_without_duplicates(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "pred.jsonl"
    assert cogwm("simulate", "--samples", split, "--model", "fake:schema", "--out", out) == 0
    whole = out.read_text().splitlines(keepends=True)
    # Two lines kept, the third cut mid-write (a run killed while writing).
    out.write_text("".join(whole[:2]) + whole[2][:25])
    args = ("simulate", "--samples", split, "--model", "fake:schema", "--out", out)
    assert cogwm(*args, "--resume") == 0
    ids = [x["id"] for x in _lines(out)]
    assert len(ids) == len(set(ids)) == len(whole)


def test_interrupted_run_keeps_what_it_wrote(split: Path) -> None:
    samples = [s for s in read_samples(split) if s.mode == "predict"]
    handle = io.StringIO()
    calls = 0

    def stop_after_two() -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise KeyboardInterrupt

    settings = RunSettings("fake:schema", "predict", "none")
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(
            run_predictions(
                load("fake:schema"), samples, settings, handle, concurrency=1,
                on_done=stop_after_two,
            )
        )  # fmt: skip
    assert len(handle.getvalue().splitlines()) == 2


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--ablation", "no_such"], "unknown ablation"),
        (["--mode", "guess"], "choose predict or understand"),
        (["--resume"], "does not exist"),
    ],
)
def test_bad_input_is_one_line(
    split: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    out = tmp_path / "p.jsonl"
    code = cogwm("simulate", "--samples", split, "--model", "fake:schema", "--out", out, *extra)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("error:") and message in err[-1]


def test_existing_file_and_other_settings_are_refused(
    split: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.jsonl"
    args = ("simulate", "--samples", split, "--model", "fake:schema", "--out", out, "--limit", "2")
    assert cogwm(*args) == 0
    before = out.read_bytes()
    assert cogwm(*args) == 2
    assert cogwm(*args, "--resume", "--ablation", "no_profile") == 2
    assert "ablation none" in capsys.readouterr().err
    assert out.read_bytes() == before


def test_understand_mode_without_such_samples_says_how_to_build_them(
    tmp_path: Path, fixtures_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = tmp_path / "s"
    assert cogwm("samples", "build", "--human", "esconv", "--data-dir", fixtures_dir,
                 "--out", samples) == 0  # fmt: skip
    code = cogwm(
        "simulate", "--samples", samples / "train.jsonl", "--model", "fake:schema",
        "--out", tmp_path / "u.jsonl", "--mode", "understand",
    )  # fmt: skip
    assert code == 2
    assert "--understand" in capsys.readouterr().err


# --- scoring against the samples' gold ----------------------------------------------------------


def _prompt_key(messages: list[Message]) -> str:
    return "\x1e".join(m.content for m in messages)


def _unique_prompts(split: Path, out: Path) -> Path:
    """The samples whose prompt no other sample shares (first turns with no history repeat):
    only there can a simulator that reads its prompt know which sample it answers."""
    samples = list(read_samples(split))
    counts = Counter(_prompt_key(s.messages) for s in samples)
    write_samples(out, [s for s in samples if counts[_prompt_key(s.messages)] == 1])
    return out


def _oracle_reply(split: Path) -> Any:
    """A simulator that answers each prompt with its sample's own target (made valid: unknown
    fields empty, text-only items scored 1, intensity inside 1-3, leave false)."""
    by_prompt: dict[str, dict[str, Any]] = {}
    for sample in read_samples(split):
        target = json.loads(sample.target)
        for key in ("beliefs", "desires", "intentions"):
            target[key] = [{**item, "score": item["score"] or 1} for item in target[key] or []]
        emotion = target.get("emotion") or {"label": "neutral", "intensity": 1}
        # Some corpora rate intensity on their own scale; the output grammar says 1-3.
        emotion["intensity"] = min(3, max(1, round(emotion["intensity"] or 1)))
        target["emotion"] = emotion
        if "utterance" in target:
            target["leave"] = bool(target.get("leave"))
        by_prompt[_prompt_key(sample.messages)] = target

    def reply(messages: list[Message]) -> str:
        return json.dumps(by_prompt[_prompt_key(messages)])

    return reply


def test_score_fidelity_on_samples_is_per_dataset_and_perfect_for_the_oracle(
    split: Path, tmp_path: Path
) -> None:
    split = _unique_prompts(split, tmp_path / "unique.jsonl")
    register_fake("oracle", _oracle_reply(split))
    try:
        out = tmp_path / "oracle.jsonl"
        assert cogwm("simulate", "--samples", split, "--model", "fake:oracle", "--out", out) == 0
    finally:
        unregister_fake("oracle")
    result = runner.invoke(
        score_app, ["fidelity", str(out), str(split), "--json", "--resamples", "50"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    predict = [s for s in read_samples(split) if s.mode == "predict"]
    assert report["n_samples"] == len(predict)
    by_dataset = report["by_dataset"]
    assert set(by_dataset) == {s.corpus for s in predict}
    assert sum(r["n_samples"] for r in by_dataset.values()) == len(predict)
    for row in [report, *by_dataset.values()]:
        assert row["metrics"]["ROUGE-L"]["mean"] == pytest.approx(1.0)
        if row["metrics"]["E-Acc"]["n"]:
            assert row["metrics"]["E-Acc"]["mean"] == pytest.approx(1.0)
    assert report["metrics"]["B-Sim"]["mean"] == pytest.approx(1.0, abs=1e-4)
    # DailyDialog labels carry no intensity: E-Acc covers its turns, E-MAE does not.
    daily = by_dataset["dailydialog"]["metrics"]
    assert daily["E-Acc"]["n"] > 0 and daily["E-MAE"]["n"] == 0


def test_score_fidelity_table_has_the_paper_columns_and_rows(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "u.jsonl"
    code = cogwm(
        "simulate", "--samples", split, "--model", "fake:schema", "--out", out,
        "--mode", "understand",
    )  # fmt: skip
    assert code == 0
    result = runner.invoke(score_app, ["fidelity", str(out), str(split), "--resamples", "50"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "fake:schema, understand mode, ablation none" in text
    for row in ("all", "esconv", "dailydialog"):
        assert f"│ {row}" in text
    # Understanding mode predicts no utterance: the utterance columns are left out, and said so.
    assert "no sample covers" in text and "ROUGE-L" in text.split("no sample covers")[1]


def test_a_limited_run_is_scored_only_with_predicted_only(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    args = ("simulate", "--samples", split, "--model", "fake:schema", "--out", out)
    assert cogwm(*args, "--limit", "3") == 0
    scoring = ["fidelity", str(out), str(split), "--json", "--resamples", "20"]
    refused = runner.invoke(score_app, scoring)
    assert refused.exit_code != 0 and "have no prediction" in str(refused.exception)
    result = runner.invoke(score_app, [*scoring, "--predicted-only"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_samples"] == 3


def test_extension_labels_of_the_targets_are_registered_in_a_fresh_process(split: Path) -> None:
    # DailyDialog's happiness and neutral are lexicon extensions: a process that only reads the
    # samples must register them, or the gold does not validate and the grammar omits them.
    code = (
        "import sys; from pathlib import Path\n"
        "from cogwm.schema.lexicon import is_known\n"
        "from cogwm.simulator.simulate import select_samples\n"
        "assert not is_known('neutral')\n"
        "select_samples(Path(sys.argv[1]), 'predict', None)\n"
        "assert is_known('neutral')\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(split)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_judge_columns_are_per_dataset(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    assert cogwm("simulate", "--samples", split, "--model", "fake:schema", "--out", out) == 0
    scoring = ["fidelity", str(out), str(split), "--resamples", "20", "--judge", "fake:schema"]
    result = runner.invoke(score_app, [*scoring, "--task", "ESC", "--json"])
    assert result.exit_code == 0, result.output
    judge = json.loads(result.stdout)["judge"]
    predict = [s for s in read_samples(split) if s.mode == "predict"]
    counts = Counter(s.corpus for s in predict)
    assert set(judge["by_dataset"]) == set(counts)
    # Every verdict is in exactly one dataset's row (a turn without a gold emotion is not
    # asked about emotion, so a row may have fewer than its samples).
    for metric, overall in judge["metrics"].items():
        asked = {
            k: m[metric]["n"] + m[metric]["n_failed"] if metric in m else 0
            for k, m in judge["by_dataset"].items()
        }
        assert all(asked[k] <= counts[k] for k in asked)
        assert sum(asked.values()) == overall["n"] + overall["n_failed"] > 0
    text = runner.invoke(score_app, [*scoring, "--task", "ESC"]).stdout
    judged = text.split("judge fake:schema")[1]
    assert all(f"│ {row}" in judged for row in ("all", *counts))
