"""Kill -9 during a run, then --resume: every conversation exactly once, no turn lost or
duplicated, and (deterministic fake, cache on) the same turns and metrics as an uninterrupted run
made with a reply cache of its own (so the equality is not cache replay).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from helpers_cli import interruptible

TESTS = Path(__file__).resolve().parent
CONFIG = """
name = "kill-resume"
seed = 5
tasks = ["ESC", "PD"]
dialogues_per_task = 2
max_rounds = 6
intent_from_round = 4
history_turns = 20
concurrency = 3

[simulator]
model = "fake:arena-script"
options = { max_attempts = 1 }

[[agents]]
name = "warm"
model = "fake:arena-script"
prompt = "builtin:empathetic"
conditions = ["no_cot", "cot"]
options = { max_attempts = 1 }

[[agents]]
name = "cold"
model = "fake:arena-script"
prompt = "builtin:dismissive"
options = { max_attempts = 1 }
"""
UNITS = 12
# Run the real command line in a child process with the scripted fake (30 ms per call).
CHILD = (
    "import os, sys; sys.path.insert(0, sys.argv[1]);"
    "from helpers_arena import register;"
    "register(latency_s=float(os.environ.get('ARENA_TEST_LATENCY_S', '0.03')));"
    "from cogwm.cli.main import main;"
    "sys.argv = ['cogwm', 'arena', 'run', *sys.argv[2:], '--no-progress']; main()"
)


def _command(config: Path, db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-c", CHILD, str(TESTS), str(config), "--db", str(db), *extra]


def _turns(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # the schema is not created yet


def _kill_after(command: list[str], db: Path, turns: int, env: dict[str, str]) -> None:
    """Start the run and SIGKILL it once the store holds at least ``turns`` turns."""
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while _turns(db) < turns:
        assert child.poll() is None, f"the run ended before {turns} turns"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()


def _snapshot(db: Path) -> dict[str, Any]:
    with sqlite3.connect(db) as conn:
        conversations = conn.execute(
            "SELECT id, unit_key, status, termination, rounds FROM conversations"
        ).fetchall()
        snap: dict[str, Any] = {}
        for cid, key, status, termination, rounds in conversations:
            turns = conn.execute(
                "SELECT idx, round, role, phase, text, state_json, reasoning FROM turns"
                " WHERE conversation_id = ? ORDER BY idx",
                (cid,),
            ).fetchall()
            metrics = dict(
                conn.execute(
                    "SELECT name, value FROM metrics WHERE conversation_id = ?", (cid,)
                ).fetchall()
            )
            assert key not in snap, f"unit {key} stored twice"
            snap[key] = (status, termination, rounds, turns, metrics)
    return snap


def test_kill_and_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(CONFIG)
    env = {**os.environ, "COGWM_CACHE_DIR": str(tmp_path / "cache")}

    reference = tmp_path / "reference.sqlite"
    reference_env = {**env, "COGWM_CACHE_DIR": str(tmp_path / "reference-cache")}
    subprocess.run(_command(config, reference), env=reference_env, check=True, capture_output=True)
    expected = _snapshot(reference)
    assert len(expected) == UNITS
    total = sum(len(v[3]) for v in expected.values())

    db = tmp_path / "killed.sqlite"
    # Kill early (first turns), in the middle, and near the end; resume after each kill.
    for i, fraction in enumerate((0.02, 0.4, 0.85)):
        extra = ("--resume",) if i else ()
        _kill_after(_command(config, db, *extra), db, max(1, int(total * fraction)), env)
        partial = _snapshot(db)
        for _, _, _, turns, _ in partial.values():
            assert [t[0] for t in turns] == list(range(len(turns))), "a turn is missing"
    subprocess.run(_command(config, db, "--resume"), env=env, check=True, capture_output=True)

    resumed = _snapshot(db)
    assert resumed == expected
    with sqlite3.connect(db) as conn:
        restarted = conn.execute("SELECT COUNT(*) FROM conversations WHERE attempts > 1").fetchone()
        cached = conn.execute("SELECT COUNT(*) FROM model_calls WHERE cached = 1").fetchone()
    assert restarted[0] >= 1  # conversations cut by a kill were run again from their beginning
    assert cached[0] >= 1  # ... and their first calls came back from the cache


def _finished(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            row = conn.execute("SELECT COUNT(*) FROM conversations WHERE status = 'finished'")
            return int(row.fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_ctrl_c_stops_cleanly_and_keeps_what_finished(tmp_path: Path) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(CONFIG)
    env = {**os.environ, "COGWM_CACHE_DIR": str(tmp_path / "cache")}
    db = tmp_path / "runs.sqlite"
    child = subprocess.Popen(
        _command(config, db),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    deadline = time.monotonic() + 60
    while _finished(db) < 2:
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130
    assert "interrupted" in err and "Traceback" not in err
    kept = _finished(db)
    assert 2 <= kept < UNITS
    subprocess.run(_command(config, db, "--resume"), env=env, check=True, capture_output=True)
    snap = _snapshot(db)
    assert len(snap) == UNITS and all(v[0] == "finished" for v in snap.values())


def test_a_second_process_on_a_live_store_gets_a_one_line_error(tmp_path: Path) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(CONFIG)
    env = {**os.environ, "COGWM_CACHE_DIR": str(tmp_path / "cache")}
    db = tmp_path / "runs.sqlite"
    slow = {**env, "ARENA_TEST_LATENCY_S": "0.5"}  # alive long after the second one starts
    first = subprocess.Popen(_command(config, db), env=slow, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while _turns(db) < 1:
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)
        second = subprocess.run(
            _command(config, db, "--resume"), env=env, capture_output=True, text=True
        )
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ")
        assert f"pid {first.pid}" in lines[0] and "being written" in lines[0]
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    # The killed writer's lease is stale at once (its process is gone): a resume takes over.
    subprocess.run(_command(config, db, "--resume"), env=env, check=True, capture_output=True)
    assert len(_snapshot(db)) == UNITS
