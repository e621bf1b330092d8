"""`cogwm arena export`: case-study transcripts with per-turn states in Markdown and LaTeX."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogwm.schema import CognitiveState
from cogwm.store import RunStore
from cogwm.web.export import md_escape, tex_escape
from helpers_web import XSS, cogwm, make_run

pytestmark = pytest.mark.usefixtures("fake_arena_models")


def test_markdown_has_every_turn_and_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = make_run(tmp_path / "run.sqlite")
    with RunStore(db, create=False) as store:
        conversation = store.conversations()[1]
        turns = store.turns(conversation.id)
    assert cogwm("arena", "export", "--db", str(db), "--conversation", str(conversation.id)) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == len(turns)
    for row, turn in zip(rows, turns, strict=True):
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells[2] == md_escape(turn.text)
        if turn.role == "user" and turn.state_json:
            state = CognitiveState.model_validate_json(turn.state_json)
            assert state.emotion is not None
            assert cells[3] == f"{state.emotion.label} ({state.emotion.intensity})"
            for item in state.beliefs:
                assert f"{item.text} ({item.score:g})" in cells[4]
            assert cells[7].startswith(("+", "-"))
        else:
            assert cells[3:] == ["", "", "", "", ""]
    assert f"Conversation {conversation.id}:" in out and conversation.agent in out


def test_markup_and_tex_specials_are_escaped(tmp_path: Path) -> None:
    db = make_run(tmp_path / "run.sqlite")
    with RunStore(db, create=False) as store:
        first = store.conversations()[0].id
    md, tex = tmp_path / "c.md", tmp_path / "c.tex"
    assert (
        cogwm("arena", "export", "--db", str(db), "--conversation", str(first), "--out", str(md))
        == 0
    )
    text = md.read_text()
    assert "<script>" not in text and "<img" not in text and "&lt;script&gt;" in text
    args = ("--conversation", str(first), "--format", "tex", "--out", str(tex))
    assert cogwm("arena", "export", "--db", str(db), *args) == 0
    latex = tex.read_text()
    assert latex.startswith(r"\begin{longtable}") and latex.rstrip().endswith(r"\end{longtable}")
    assert tex_escape(XSS[0]) in latex
    assert tex_escape("a_b & 50% #1 {x} ~ ^ \\") == (
        r"a\_b \& 50\% \#1 \{x\} \textasciitilde{} \textasciicircum{} \textbackslash{}"
    )


def test_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = make_run(tmp_path / "run.sqlite")
    assert cogwm("arena", "export", "--db", str(db), "--conversation", "999") == 2
    assert "has no conversation 999" in capsys.readouterr().err
    assert cogwm("arena", "export", "--db", str(db), "--conversation", "1", "--format", "pdf") == 2
    assert "--format must be" in capsys.readouterr().err
