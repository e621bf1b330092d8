"""The run store: schema, pragmas, exactly-once conversations, atomic finishing, merge errors."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from cogwm.errors import InputError
from cogwm.models.types import CallRecord
from cogwm.store import SCHEMA_VERSION, RunStore, UnitRow, merge_stores
from cogwm.store.merge import missing_shards

UNIT = UnitRow("ESC|s1|a|no_cot", "ESC", "a", "no_cot", "s1", "builtin", "fake:a", "fake:s", 7)


def _store(path: Path) -> tuple[RunStore, int]:
    store = RunStore(path)
    run_id = store.create_run(
        name="t",
        config={"tasks": ["ESC"]},
        config_hash="h",
        prompts=[],
        git_revision=None,
        packages={"cogwm": "0"},
        seed=1,
        shard=None,
    )
    return store, run_id


def _call(call_id: str) -> CallRecord:
    return CallRecord(
        call_id=call_id,
        model="fake:a",
        endpoint="fake://a/0",
        tag="agent",
        started_at=0.0,
        latency_s=0.1,
        prompt_tokens=10,
        completion_tokens=5,
        cost_usd=0.001,
        cached=False,
        ok=True,
    )


def test_schema_and_pragmas(tmp_path: Path) -> None:
    store, _ = _store(tmp_path / "r.sqlite")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in store.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables >= {"runs", "scenario_preps", "conversations", "turns", "model_calls", "metrics"}
    with pytest.raises(InputError, match="already holds a run"):
        store.create_run(
            name="t",
            config={},
            config_hash="h",
            prompts=[],
            git_revision=None,
            packages={},
            seed=1,
            shard=None,
        )
    store.close()


def test_restarting_a_conversation_deletes_its_partial_rows_and_keeps_its_calls(
    tmp_path: Path,
) -> None:
    store, run_id = _store(tmp_path / "r.sqlite")
    cid = store.start_conversation(run_id, UNIT)
    store.add_turn(cid, idx=0, round=1, role="agent", phase="cold_start", text="hi")
    store.add_call(run_id, cid, _call("c1"))
    store.add_call(run_id, None, _call("shared"))
    store.finish_conversation(cid, status="failed", termination="error", rounds=1, error="boom")
    again = store.start_conversation(run_id, UNIT)
    assert again == cid
    row = store.conversations(run_id)[0]
    assert (row.status, row.termination, row.error, row.attempts) == ("running", None, None, 2)
    assert store.turns(cid) == []
    # The first attempt's call record is kept (cost is never undercounted), tagged attempt 1.
    assert store.call_totals(run_id).calls == 2
    tagged = store.db.execute(
        "SELECT call_id, conversation_attempt FROM model_calls WHERE conversation_id = ?", (cid,)
    ).fetchall()
    assert tagged == [("c1", 1)]
    assert len(store.conversations(run_id)) == 1
    store.close()


def test_finishing_writes_metrics_and_status_together(tmp_path: Path) -> None:
    store, run_id = _store(tmp_path / "r.sqlite")
    cid = store.start_conversation(run_id, UNIT)
    store.finish_conversation(
        cid,
        status="finished",
        termination="max_rounds",
        rounds=20,
        metrics={"cts": 0.5, "go": None},
        details={"go": "no verdict"},
    )
    assert store.metrics(run_id) == {cid: {"cts": 0.5, "go": None}}
    assert store.metric_details(cid)["go"] == "no verdict"
    with pytest.raises(sqlite3.IntegrityError):
        store.finish_conversation(cid, status="finished", termination="bored", rounds=1)
    # The failed transaction left the earlier state untouched.
    assert store.conversations(run_id)[0].termination == "max_rounds"
    assert store.metrics(run_id) == {cid: {"cts": 0.5, "go": None}}
    store.close()


def test_duplicate_turn_index_is_refused(tmp_path: Path) -> None:
    store, run_id = _store(tmp_path / "r.sqlite")
    cid = store.start_conversation(run_id, UNIT)
    store.add_turn(cid, idx=0, round=1, role="agent", phase="cold_start", text="hi")
    with pytest.raises(sqlite3.IntegrityError):
        store.add_turn(cid, idx=0, round=1, role="agent", phase="cold_start", text="hi")
    store.close()


def test_bad_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        RunStore(tmp_path / "missing.sqlite", create=False)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(InputError, match="not a cogwm run store"):
        RunStore(junk)
    future = tmp_path / "future.sqlite"
    with sqlite3.connect(future) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(InputError, match="store schema"):
        RunStore(future)


def test_merge_input_errors(tmp_path: Path) -> None:
    store, _ = _store(tmp_path / "a.sqlite")
    store.close()
    (tmp_path / "out.sqlite").write_text("")
    with pytest.raises(InputError, match="exists"):
        merge_stores(tmp_path / "out.sqlite", [tmp_path / "a.sqlite"])
    with pytest.raises(InputError, match="does not exist"):
        merge_stores(tmp_path / "new.sqlite", [tmp_path / "nope.sqlite"])
    RunStore(tmp_path / "empty.sqlite").close()
    with pytest.raises(InputError, match="holds no run"):
        merge_stores(tmp_path / "new.sqlite", [tmp_path / "empty.sqlite"])
    assert not (tmp_path / "new.sqlite").exists()


def test_background_checkpoints_move_the_wal_into_the_database_off_the_writer(
    tmp_path: Path,
) -> None:
    # Catches: the commit that found the WAL over 1,000 pages checkpointed it itself and waited
    # for the fsyncs, stalling the arena's event loop with it.
    db = tmp_path / "runs.sqlite"
    store, run_id = _store(db)
    conversation = store.start_conversation(run_id, UNIT)
    before = db.stat().st_size
    with store.background_checkpoints(every_s=0.01):
        assert store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        for i in range(1500):  # over 1,000 pages of WAL, one commit each
            store.add_turn(
                conversation, idx=i, round=1, role="agent", phase="simulated", text="x" * 3000
            )
        # The checkpoint thread copies the pages into the database file (this connection no
        # longer checkpoints at all).
        deadline = time.monotonic() + 10
        while db.stat().st_size < before + 1000 * 3000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert db.stat().st_size >= before + 1000 * 3000
    assert store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000  # restored
    store.close()


@pytest.mark.parametrize(
    ("labels", "missing"),
    [
        (["1/4", "3/4"], ("2/4", "4/4")),
        ([None], ()),
        # 1/3 is 1/6 and 4/6 (every third unit from the first): with the other sixths, complete.
        (["1/3", "2/6", "5/6", "3/6", "6/6"], ()),
        (["1/3", "2/6"], ("3/6", "5/6", "6/6")),
        (["1/2", "2/3"], ("4/6", "6/6")),
    ],
)
def test_missing_shards_counts_units_across_shard_counts(
    labels: list[str | None], missing: tuple[str, ...]
) -> None:
    assert missing_shards(labels) == missing
