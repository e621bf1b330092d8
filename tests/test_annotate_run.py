"""``cogwm annotate run``: kill -9 then --resume loses and duplicates nothing; export; refusals."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cogwm.annotate.io import read_labelled
from cogwm.cli.annotate import app
from cogwm.schema.partial import FieldKind

DIALOGUES = 16
# The real command line in a child process, on a schema fake that answers in 20 ms per call.
CHILD = (
    "import sys;"
    "from cogwm.models import register_fake; register_fake('annot-slow', latency_s=0.02);"
    "from cogwm.cli.main import main;"
    "sys.argv = ['cogwm', 'annotate', 'run', 'dailydialog', '--model', 'fake:annot-slow',"
    " *sys.argv[1:], '--no-progress']; main()"
)


def write_corpus(root: Path, count: int = DIALOGUES) -> Path:
    """A synthetic DailyDialog (ConvLab-3 unified format) with ``count`` dialogues."""
    rows = []
    for n in range(count):
        turns = []
        for i in range(2 + n % 5):
            turns.append(
                {
                    "speaker": "user" if i % 2 == 0 else "system",
                    "utterance": f"Dialogue {n} line {i}. I am fine, thanks! Are you {i}?",
                    "utt_idx": i,
                    "dialogue_acts": {
                        "binary": [{"intent": "inform", "domain": "", "slot": ""}],
                        "categorical": [],
                        "non-categorical": [],
                    },
                    "emotion": "no emotion",
                }
            )
        rows.append(
            {
                "dataset": "dailydialog",
                "data_split": "train",
                "dialogue_id": f"dailydialog-train-{n}",
                "original_id": f"train-{n}",
                "domains": ["Ordinary Life"],
                "turns": turns,
            }
        )
    folder = root / "data" / "dailydialog" / "convlab3_unified" / "data"
    folder.mkdir(parents=True)
    (folder / "dialogues.json").write_text(json.dumps(rows))
    return root / "data"


def _command(data: Path, db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-c", CHILD, "--db", str(db), "--data-dir", str(data), *extra]


def _env(tmp: Path, run: str) -> dict[str, str]:
    # A fresh model cache per process: equal results must not come from replaying a cache.
    return {**os.environ, "COGWM_CACHE_DIR": str(tmp / f"cache-{run}")}


def _stored(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM dialogues").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _kill_after(command: list[str], db: Path, count: int, env: dict[str, str]) -> None:
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while _stored(db) < count:
        assert child.poll() is None, f"the run ended before {count} dialogues"
        assert time.monotonic() < deadline
        time.sleep(0.002)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()


def _snapshot(db: Path) -> dict[str, Any]:
    with sqlite3.connect(db) as conn:
        snap: dict[str, Any] = {}
        for row in conn.execute(
            "SELECT id, summary_json, profile_json, user_turns, failed_turns FROM dialogues"
        ):
            turns = conn.execute(
                "SELECT turn_index, allocation_json FROM turns WHERE dialogue_id = ?"
                " ORDER BY turn_index",
                (row[0],),
            ).fetchall()
            failures = conn.execute(
                "SELECT stage, turn_index, reason, message FROM failures WHERE dialogue_id = ?"
                " ORDER BY id",
                (row[0],),
            ).fetchall()
            assert row[0] not in snap
            assert len(turns) == row[3], f"{row[0]}: a turn is missing"
            snap[row[0]] = (row[1:], turns, failures)
    return snap


def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    data = write_corpus(tmp_path)
    reference = tmp_path / "reference.sqlite"
    subprocess.run(
        _command(data, reference), env=_env(tmp_path, "ref"), check=True, capture_output=True
    )
    expected = _snapshot(reference)
    assert len(expected) == DIALOGUES

    db = tmp_path / "killed.sqlite"
    for i, count in enumerate((1, 6, 12)):
        extra = ("--resume",) if i else ()
        _kill_after(_command(data, db, *extra), db, count, _env(tmp_path, f"kill{i}"))
        assert count <= len(_snapshot(db)) < DIALOGUES  # only whole dialogues were kept
    done = subprocess.run(
        _command(data, db, "--resume"),
        env=_env(tmp_path, "last"),
        check=True,
        capture_output=True,
        text=True,
    )
    assert "already done" in done.stderr
    assert _snapshot(db) == expected


def test_run_export_and_refusals(tmp_path: Path) -> None:
    data = write_corpus(tmp_path, 4)
    db = tmp_path / "a.sqlite"
    runner = CliRunner()
    args = ["run", "dailydialog", "--model", "fake:schema", "--db", str(db)]
    args += ["--data-dir", str(data), "--no-progress", "--limit", "3"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    again = runner.invoke(app, args)
    assert again.exit_code != 0 and "--resume" in str(again.exception)
    other = runner.invoke(app, [*args, "--resume", "--model", "fake:echo"])
    assert other.exit_code != 0 and "fake:schema" in str(other.exception)
    more = runner.invoke(app, [*args[:-2], "--limit", "4", "--resume"])
    assert more.exit_code == 0 and "1 annotated, 3 already done" in more.output.replace("\n", " ")

    out = tmp_path / "a.jsonl"
    exported = runner.invoke(app, ["export", "--db", str(db), "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    items = list(read_labelled(out))
    assert len(items) == 4
    for item in items:
        user_turns = [t.index for t in item.dialogue.user_turns()]
        assert sorted(item.states) == user_turns
        for state in item.states.values():
            assert state.emotion.kind is FieldKind.VALUE
            assert state.emotion.origin is not None and state.emotion.origin.source == "llm"
        assert item.dialogue.profile is not None and item.dialogue.profile.source == "llm"


@pytest.mark.parametrize("limit", [2, 5])
def test_the_sample_is_seeded_and_a_larger_limit_extends_it(limit: int) -> None:
    from cogwm.annotate.runner import select
    from cogwm.corpora import load

    root = Path(__file__).resolve().parent / "fixtures"
    dialogues = load("esconv", root)
    small = select(dialogues, seed=3, limit=limit)
    assert small == select(dialogues, seed=3)[: len(small)]
    assert [d.id for d in select(dialogues, seed=3)] != [d.id for d in dialogues] or len(
        dialogues
    ) < 3


def test_labelled_only_keeps_the_300_annotated_p4g_dialogues(real_data_dir: Path) -> None:
    from cogwm.annotate.runner import has_fine_labels, select
    from cogwm.corpora import load

    dialogues = load("persuasionforgood", real_data_dir)
    chosen = select(dialogues, seed=0, labelled_only=True)
    assert len(chosen) == 300 and all(has_fine_labels(d) for d in chosen)
    assert select(dialogues, seed=0, limit=5, labelled_only=True) == chosen[:5]


def test_your_own_dialogues_and_task_file_are_annotated(tmp_path: Path) -> None:
    # Catches: the annotator taking corpus names only, so a user's own task cannot be annotated
    # without touching cogwm's code (the example task is read from its TOML file).
    examples = Path(__file__).resolve().parents[1] / "examples" / "custom_task"
    db = tmp_path / "own.sqlite"
    runner = CliRunner()
    args = ["run", str(examples / "dialogues.jsonl"), "--task", str(examples / "task.toml")]
    args += ["--model", "fake:schema", "--db", str(db), "--no-progress", "--limit", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = tmp_path / "own.jsonl"
    assert runner.invoke(app, ["export", "--db", str(db), "--out", str(out)]).exit_code == 0
    items = list(read_labelled(out))
    assert len(items) == 2 and all(i.dialogue.task == "TUTOR" for i in items)
    assert all(sorted(i.states) == [t.index for t in i.dialogue.user_turns()] for i in items)


def test_own_dialogues_naming_no_task_need_task(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    line = {
        "id": "mine:1",
        "corpus": "mine",
        "utterances": [
            {"index": 0, "speaker": "a", "role": "agent", "text": "Hi."},
            {"index": 1, "speaker": "b", "role": "user", "text": "Hello."},
        ],
    }
    path.write_text(json.dumps(line) + "\n")
    result = CliRunner().invoke(
        app, ["run", str(path), "--model", "fake:schema", "--db", str(tmp_path / "x.sqlite")]
    )
    assert result.exit_code != 0 and "give --task" in str(result.exception)
