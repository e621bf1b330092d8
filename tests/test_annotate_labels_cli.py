"""``cogwm annotate labels``: the file it writes and the counts it prints."""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cogwm.annotate.io import read_labelled
from cogwm.annotate.summary import summarize
from cogwm.cli.annotate_labels import labels
from cogwm.errors import InputError
from cogwm.schema import lexicon

runner = CliRunner()
app = typer.Typer()
app.command("labels")(labels)


@app.command("noop")
def _noop() -> None:  # a second command keeps 'labels' a subcommand
    """Nothing."""


@pytest.fixture(autouse=True)
def _isolated_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexicon, "_ACTIVE", ContextVar("lexicon", default=lexicon.DEFAULT_LEXICON))


def test_labels_writes_jsonl_and_prints_counts(fixtures_dir: Path, tmp_path: Path) -> None:
    # Catches: a summary that counts only user turns with an entry (the unknown column must
    # include user turns without any label) or a file that does not read back.
    out = tmp_path / "dd.jsonl"
    result = runner.invoke(
        app, ["labels", "dailydialog", "--data-dir", str(fixtures_dir), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    items = list(read_labelled(out))
    summary = summarize(items)
    assert summary.user_turns == sum(len(i.dialogue.user_turns()) for i in items)
    assert summary.fields["emotion"].value == summary.user_turns
    assert summary.fields["beliefs"].unknown == summary.user_turns
    assert "neutral" in result.stdout and "dailydialog.E7" in result.stdout
    assert f"wrote {len(items):,} labelled dialogues" in result.stdout


def test_labels_counts_unlabelled_user_turns_as_unknown(fixtures_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "esconv.jsonl"
    result = runner.invoke(
        app,
        [
            "labels",
            "esconv",
            "--data-dir",
            str(fixtures_dir),
            "--split",
            "train",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    summary = summarize(read_labelled(out))
    emotion = summary.fields["emotion"]
    assert emotion.value + emotion.empty + emotion.unknown == summary.user_turns
    assert emotion.unknown > 0  # middle seeker turns say nothing


def test_labels_refuses_a_missing_output_directory(fixtures_dir: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["labels", "esconv", "--data-dir", str(fixtures_dir), "--out", str(tmp_path / "x" / "o")],
    )
    assert isinstance(result.exception, InputError)
    assert "does not exist" in str(result.exception)


def test_summary_counts_constrained_turns_once_each() -> None:
    # Catches: a turn with two constraints counted twice in 'any', or not at all.
    from cogwm.schema import Dialogue, Role, Utterance
    from cogwm.schema.partial import Constraint, LabelledDialogue, Origin, PartialState, Source

    origin = Origin(source=Source.HUMAN, rule="t.C1", exact=False)
    both = [
        Constraint(target="desire", relation="at_least", value=0.5, origin=origin),
        Constraint(target="desire", relation="at_most", value=1.5, origin=origin),
    ]
    dialogue = Dialogue(
        id="t:1",
        corpus="t",
        utterances=[
            Utterance(index=0, speaker="a", role=Role.AGENT, text="Hi"),
            Utterance(index=1, speaker="u", role=Role.USER, text="Hm"),
            Utterance(index=2, speaker="a", role=Role.AGENT, text="So?"),
            Utterance(index=3, speaker="u", role=Role.USER, text="Fine"),
        ],
    )
    summary = summarize(
        [LabelledDialogue(dialogue=dialogue, states={1: PartialState(constraints=both)})]
    )
    assert (summary.user_turns, summary.labelled_turns, summary.constrained_turns) == (2, 1, 1)
    assert summary.constraints == {"desire at_least 0.5": 1, "desire at_most 1.5": 1}
    assert summary.rules == {"t.C1": 1}
    assert summary.fields["emotion"].unknown == 2
