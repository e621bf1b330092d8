"""``arena export`` of a run on a task from a file reads the task stored with the run, as
``report`` and ``view`` do: a later process needs neither the task file nor its emotions."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogwm.models import unregister_fake
from cogwm.store import RunStore
from helpers_arena import FAKE_NAME, register
from helpers_web import cogwm
from test_custom_task import EXAMPLE, _fake_config

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture(autouse=True)
def _fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(EXAMPLE.parents[1])  # the example's paths are relative to the root
    register()
    yield
    unregister_fake(FAKE_NAME)


def _export(db: Path, conversation: int, fmt: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``cogwm arena export`` in a new process, away from the task file (as a user later)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "cogwm.cli.main", "arena", "export", "--db", str(db)]
    return subprocess.run(
        [*command, "--conversation", str(conversation), "--format", fmt],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


def test_export_of_the_custom_task_example_reads_the_stored_task(tmp_path: Path) -> None:
    db = tmp_path / "tutor.sqlite"
    config = _fake_config(tmp_path)
    assert cogwm("arena", "run", str(config), "--db", str(db), "--no-progress") == 0
    with RunStore(db, read_only=True) as store:
        rows = store.conversations()
        first = rows[0]
        turns = store.turns(first.id)
    away = tmp_path / "elsewhere"
    away.mkdir()
    done = _export(db, first.id, "md", away)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"**Conversation {first.id}: TUTOR, agent ")
    table = [line for line in lines if line.startswith("| ") and not line.startswith("| #")]
    assert len(table) == len(turns)  # one row per stored turn
    speakers = [row.split(" | ")[1] for row in table]
    assert speakers[:2] == ["agent (cold start)", "user (cold start)"]
    user_rows = [row for row in table if row.split(" | ")[1].startswith("user")]
    # every user turn carries its state: an emotion and s_t (the task's weights give s_t)
    assert user_rows and all(row.rstrip(" |").split(" | ")[-1] != "" for row in user_rows)
    tex = _export(db, first.id, "tex", away)
    assert tex.returncode == 0, tex.stderr
    assert r"\begin{longtable}" in tex.stdout and "TUTOR" in tex.stdout


def test_export_of_a_run_whose_stored_task_emotion_is_new(tmp_path: Path) -> None:
    """The example task adds 'boredom' to the lexicon; a state that uses it exports."""
    db = tmp_path / "tutor.sqlite"
    assert cogwm("arena", "run", str(_fake_config(tmp_path)), "--db", str(db), "--no-progress") == 0
    with RunStore(db) as store:
        conversation = store.conversations()[0].id
        store.db.execute(
            "UPDATE turns SET state_json = json_set(state_json, '$.emotion.label', 'boredom') "
            "WHERE conversation_id = ? AND role = 'user' AND state_json IS NOT NULL",
            (conversation,),
        )
        store.db.commit()
    done = _export(db, conversation, "md", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "boredom (" in done.stdout
