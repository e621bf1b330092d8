"""Metrics are computed once, when a conversation finishes, and stored; the report, the pages and
the case-study export read the stored values (computing them, by the same function, only for
another empty-state policy or where a store holds none)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from cogwm import tasks
from cogwm.arena.run_data import states_of
from cogwm.arena.scoring import CONVERSATION_METRICS, conversation_metrics
from cogwm.report import load_run
from cogwm.store import RunStore
from cogwm.web.export import export_conversation
from cogwm.web.payload import conversation_records
from helpers_arena import Script, config, register, run_recording
from helpers_cli import cogwm

pytestmark = pytest.mark.usefixtures("fake_arena_models")

#: Written by the format-1 code, before this change (metrics stored by its runner).
STORE_V1 = Path(__file__).resolve().parent / "data" / "store_v1.sqlite"
#: A value no trajectory of the scripted fake has: seen in a report only if read from the store.
PLANTED = 7.25


def _run(db: Path, script: Script | None = None) -> Path:
    """A small run (ESC and PD, three arms); ``script`` changes how the fake behaves."""
    if script is not None:
        register(script)
    run_recording(db, config(dialogues_per_task=2))
    return db


@pytest.fixture()
def run_db(tmp_path: Path) -> Path:
    return _run(tmp_path / "run.sqlite")


def _copy(db: Path, name: str) -> Path:
    target = db.with_name(name)
    shutil.copyfile(db, target)
    return target


def _report_json(db: Path, capsys: pytest.CaptureFixture[str], *options: str) -> str:
    capsys.readouterr()
    assert cogwm("arena", "report", "--db", db, "--json", "--resamples", 50, *options) == 0
    return capsys.readouterr().out


def _delete_stored(db: Path, names: tuple[str, ...] = CONVERSATION_METRICS) -> int:
    """Delete the stored metrics ``names`` (GoodOutcome stays); rows deleted."""
    with sqlite3.connect(db) as raw:
        marks = ",".join("?" * len(names))
        return int(raw.execute(f"DELETE FROM metrics WHERE name IN ({marks})", names).rowcount)


@pytest.mark.parametrize(
    "script",
    [Script(), Script(leave_at=2), Script(cot_invalid_from=2), Script(garble=True)],
    ids=["max-rounds", "user-leaves", "agent-failure", "garbled-user"],
)
def test_the_stored_metrics_are_the_computed_ones(tmp_path: Path, script: Script) -> None:
    db = _run(tmp_path / "run.sqlite", script)
    with RunStore(db, read_only=True) as store:
        stored = store.metrics()
        finished = [r for r in store.conversations() if r.status == "finished"]
        assert finished
        for row in finished:
            expected = conversation_metrics(states_of(store.turns(row.id)), tasks.get(row.task))
            mine = {k: v for k, v in stored[row.id].items() if k != "go"}
            # Exact (floats survive SQLite's REAL bit for bit), types and names included.
            assert list(mine) == list(CONVERSATION_METRICS)
            assert {k: (type(v), v) for k, v in mine.items()} == {
                k: (type(v), v) for k, v in expected.items()
            }


def test_the_report_the_pages_and_the_export_read_the_stored_metrics(
    run_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = _copy(run_db, "planted.sqlite")
    with sqlite3.connect(planted) as raw:
        arm = ("warm", "no_cot")
        ids = [
            r[0]
            for r in raw.execute(
                "SELECT id FROM conversations WHERE agent = ? AND condition = ?"
                " AND status = 'finished'",
                arm,
            )
        ]
        raw.executemany(
            "UPDATE metrics SET value = ? WHERE conversation_id = ? AND name = 'cts'",
            [(PLANTED, i) for i in ids],
        )
    report = json.loads(_report_json(planted, capsys))
    (warm,) = [a for a in report["agents"] if a["arm"] == "warm/no_cot"]
    assert warm["metrics"]["cts"]["mean"] == pytest.approx(PLANTED)
    honest = json.loads(_report_json(run_db, capsys))
    (before,) = [a for a in honest["agents"] if a["arm"] == "warm/no_cot"]
    assert before["metrics"]["cts"]["mean"] != pytest.approx(PLANTED)
    with RunStore(planted, read_only=True) as store:
        records = {r["id"]: r for r in conversation_records(store, load_run(store))}
        assert all(records[i]["metrics"]["cts"] == PLANTED for i in ids)
        assert f"CTS {PLANTED:+.3f}" in export_conversation(store, ids[0], "md")


def test_another_empty_policy_computes_the_metrics(
    run_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = _copy(run_db, "planted.sqlite")
    with sqlite3.connect(planted) as raw:
        raw.execute("UPDATE metrics SET value = ? WHERE name = 'cts'", (PLANTED,))
    # Stored under the default policy: 'carry' computes them from the stored states.
    assert _report_json(planted, capsys, "--empty", "carry") == _report_json(
        run_db, capsys, "--empty", "carry"
    )
    with RunStore(planted, read_only=True) as store:
        data = load_run(store, empty="carry")
        for c in data.conversations:
            assert c.metrics == conversation_metrics(c.states, tasks.get(c.task), "carry")
        (first, *_) = data.conversations
        assert f"CTS {PLANTED:+.3f}" not in export_conversation(
            store, first.id, "md", empty="carry"
        )


@pytest.mark.parametrize("missing", [CONVERSATION_METRICS, ("nz",)], ids=["all", "one"])
def test_a_store_without_stored_metrics_reports_the_same(
    run_db: Path, capsys: pytest.CaptureFixture[str], missing: tuple[str, ...]
) -> None:
    bare = _copy(run_db, "bare.sqlite")
    assert _delete_stored(bare, missing) > 0
    assert _report_json(bare, capsys) == _report_json(run_db, capsys)
    with RunStore(run_db, read_only=True) as full, RunStore(bare, read_only=True) as thin:
        assert conversation_records(thin, load_run(thin)) == conversation_records(
            full, load_run(full)
        )
        first = full.conversations()[0].id
        assert export_conversation(thin, first, "tex") == export_conversation(full, first, "tex")


def test_a_store_written_before_the_change_reports_byte_identically(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The format-1 fixture's stored metrics give the report its computed ones gave."""
    stored = tmp_path / "v1.sqlite"
    shutil.copyfile(STORE_V1, stored)
    computed = _copy(stored, "v1-computed.sqlite")
    assert _delete_stored(computed) == 22
    for options in ((), ("--empty", "carry")):
        assert _report_json(stored, capsys, *options) == _report_json(computed, capsys, *options)


def test_turns_cut_after_the_end_are_scored_from_what_is_left(
    run_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stored metrics over more states than the store now holds are not read stale."""
    cut = _copy(run_db, "cut.sqlite")
    with sqlite3.connect(cut) as raw:
        first = raw.execute("SELECT MIN(id) FROM conversations WHERE status = 'finished'")
        (conversation,) = first.fetchone()
        last = raw.execute("SELECT MAX(idx) FROM turns WHERE conversation_id = ?", (conversation,))
        raw.execute(
            "DELETE FROM turns WHERE conversation_id = ? AND idx >= ?",
            (conversation, last.fetchone()[0] - 1),
        )
    computed = _copy(cut, "cut-computed.sqlite")
    _delete_stored(computed)
    assert _report_json(cut, capsys) == _report_json(computed, capsys)
    with RunStore(cut, read_only=True) as store:
        (mine,) = [c for c in load_run(store).conversations if c.id == conversation]
        assert mine.metrics == conversation_metrics(mine.states, tasks.get(mine.task))
        assert mine.metrics != {k: store.metrics()[conversation][k] for k in CONVERSATION_METRICS}
