"""cogwm simulate --simulator: a Python simulator (the rule meter) over a samples split, its
input read back from each sample's prompt, written for cogwm score fidelity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cogwm.cli.score import app as score_app
from cogwm.simulator.format import build_messages
from cogwm.simulator.samples import read_samples, task_for_corpus
from cogwm.simulator.simulate import register_target_labels
from cogwm.validate.python_samples import parse_history, parse_state, sample_input
from helpers_cli import cogwm

RULE = "python:cogwm.simulator.rule:SentimentMeter"
runner = CliRunner()


def _build(data_dir: Path, out: Path, *corpora: str, limit: int | None = None) -> Path:
    args: list[Any] = ["samples", "build", "--data-dir", data_dir, "--out", out, "--understand"]
    for corpus in corpora:
        args += ["--human", corpus]
    if limit is not None:
        args += ["--limit", limit]
    assert cogwm(*args) == 0
    return out / "train.jsonl"


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory, fixtures_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("samples")
    return _build(fixtures_dir, out, "esconv", "dailydialog", "persuasionforgood")


@pytest.fixture(scope="module")
def real_split(tmp_path_factory: pytest.TempPathFactory, real_data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("real")
    return _build(real_data_dir, out, "esconv", limit=6)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("which", ["split", "real_split"])
def test_the_input_read_back_renders_the_same_prompt(which: str, request: Any) -> None:
    """Every predict sample's input, read back from its prompt, renders that prompt again (the
    states, history and situation; the profile is not read back)."""
    samples = [s for s in read_samples(request.getfixturevalue(which)) if s.mode == "predict"]
    register_target_labels(samples)
    with_state = 0
    for sample in samples:
        inp = sample_input(sample)
        with_state += inp.previous_state is not None
        rebuilt = build_messages(inp, task_for_corpus(sample.corpus))
        assert rebuilt[1].content == sample.messages[1].content, sample.id
    assert with_state > 0  # else the states were never read back


def test_parse_state_reads_scores_and_unscored_items() -> None:
    state = parse_state(
        "emotion sadness 3 | beliefs: it is hard (0.5); no way out | desires: x (2)"
    )
    assert state is not None and state.emotion is not None
    assert (state.emotion.label, state.emotion.intensity) == ("sadness", 3)
    assert [(b.text, b.score) for b in state.beliefs] == [("it is hard", 0.5), ("no way out", None)]
    assert state.desires[0].score == 2.0 and not state.intentions
    assert parse_state("none") is None


def test_rule_simulator_predictions_are_scored_per_dataset(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "rule.jsonl"
    assert cogwm("simulate", "--samples", split, "--simulator", RULE, "--out", out) == 0
    predict = [s for s in read_samples(split) if s.mode == "predict"]
    lines = _lines(out)
    assert sorted(x["id"] for x in lines) == sorted(s.id for s in predict)
    assert all(x["model"] == RULE and x["state"] is not None for x in lines)
    result = runner.invoke(
        score_app, ["fidelity", str(out), str(split), "--json", "--resamples", "20"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report["by_dataset"]) == {s.corpus for s in predict}


def test_rule_simulator_moves_from_the_previous_state_shown(
    real_split: Path, tmp_path: Path
) -> None:
    """On real samples, the meter's B/D/I items are those of the previous state the prompt
    shows (moved by the agent's turn), not its own opening reading."""
    out = tmp_path / "real.jsonl"
    assert cogwm("simulate", "--samples", real_split, "--simulator", RULE, "--out", out) == 0
    by_id = {x["id"]: x for x in _lines(out)}
    checked = 0
    for sample in read_samples(real_split):
        previous = sample_input(sample).previous_state if sample.mode == "predict" else None
        if previous is None or not previous.beliefs:
            continue
        beliefs = by_id[sample.id]["state"]["beliefs"]
        assert [b["text"] for b in beliefs] == [b.text for b in previous.beliefs]
        checked += 1
    assert checked > 0


def test_resume_and_refusals(
    split: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.jsonl"
    args = ("simulate", "--samples", split, "--simulator", RULE, "--out", out)
    assert cogwm(*args) == 0
    whole = out.read_text().splitlines(keepends=True)
    out.write_text("".join(whole[:2]) + whole[2][:25])
    assert cogwm(*args, "--resume") == 0
    assert sorted(x["id"] for x in _lines(out)) == sorted(json.loads(x)["id"] for x in whole)
    capsys.readouterr()
    assert cogwm(*args[:-2], "--out", tmp_path / "u.jsonl", "--mode", "understand") == 2
    assert "cannot read the state from a given user turn" in capsys.readouterr().err
    assert not (tmp_path / "u.jsonl").exists()
    both = ("simulate", "--samples", split, "--simulator", RULE, "--model", "fake:schema")
    assert cogwm(*both, "--out", tmp_path / "b.jsonl") == 2
    bad = ("simulate", "--samples", split, "--simulator", "rule", "--out", tmp_path / "x.jsonl")
    assert cogwm(*bad) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("error:")


def test_parse_history_keeps_a_turn_spanning_lines() -> None:
    text = "You: hi\nSupporter: line one\nline two\nYou: ok"
    assert parse_history(text, "Supporter: ") == [
        ("user", "hi"),
        ("agent", "line one\nline two"),
        ("user", "ok"),
    ]
    assert parse_history("(nothing said yet)", "Supporter: ") == []


def test_a_fitted_transition_model_predicts_a_split(tmp_path: Path) -> None:
    """transition:FILE, the other non-model address: trained on the split's own corpora, it
    writes one state per sample, and score fidelity scores them."""
    from helpers_validate import write_corpora

    data_dir = write_corpora(tmp_path / "data")
    samples = _build(data_dir, tmp_path / "samples", "dailydialog", "annomi")
    model = tmp_path / "transition.json"
    args = ["--samples", samples.parent, "--data-dir", data_dir, "--max-features", "50"]
    assert cogwm("train", "transition", *args, "--out", model) == 0
    out = tmp_path / "t.jsonl"
    address = f"transition:{model}"
    assert cogwm("simulate", "--samples", samples, "--simulator", address, "--out", out) == 0
    lines = _lines(out)
    predict = [s for s in read_samples(samples) if s.mode == "predict"]
    assert len(lines) == len(predict) and all(x["model"] == address for x in lines)
    assert any(x["state"] is not None for x in lines)
    result = runner.invoke(
        score_app, ["fidelity", str(out), str(samples), "--json", "--resamples", "20"]
    )
    assert result.exit_code == 0, result.output
