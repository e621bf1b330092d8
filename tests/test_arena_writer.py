"""The run's group commit: turns and a conversation's other small writes (its start, its
profile's source) go into one transaction per event-loop turn; each caller learns of the commit
(or of its own write's failure) through its future, and one failing write fails alone."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from cogwm.arena.runner import TurnWriter
from cogwm.store import RunStore, UnitRow
from cogwm.store.db import TurnRow


def _unit(key: str) -> UnitRow:
    return UnitRow(key, "ESC", "a", "no_cot", f"s-{key}", "builtin", "m", "m", 1)


def _turn(conversation_id: int, idx: int) -> TurnRow:
    return TurnRow(conversation_id, idx, 1, "agent", "simulated", f"t{idx}", None, None, None)


def test_starts_turns_and_a_failing_write_share_one_commit(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        run_id = store.create_run(
            name="w",
            config={},
            config_hash="x",
            prompts=[],
            git_revision=None,
            packages={},
            seed=0,
            shard=None,
        )
        commits: list[str] = []
        store.db.set_trace_callback(
            lambda sql: commits.append(sql) if sql.strip().upper() == "COMMIT" else None
        )
        writer = TurnWriter(store)

        def broken() -> None:
            store.start_conversation(run_id, _unit("c"))  # written, then rolled back alone
            raise sqlite3.IntegrityError("no such thing")

        async def first_flush() -> tuple[int, int]:
            a = writer.submit(lambda: store.start_conversation(run_id, _unit("a")))
            b = writer.submit(lambda: store.start_conversation(run_id, _unit("b")))
            bad = writer.submit(broken)
            with pytest.raises(sqlite3.IntegrityError, match="no such thing"):
                await bad
            return await a, await b

        async def second_flush(a: int, b: int) -> None:
            turns = [writer.add(_turn(a, 0)), writer.add(_turn(b, 0))]
            source = writer.submit(lambda: store.set_profile_source(a, "annotator"))
            await asyncio.gather(*turns, source)

        async def both() -> None:
            a, b = await first_flush()
            assert a != b
            await second_flush(a, b)

        asyncio.run(both())
        assert len(commits) == 2  # one transaction per flush, not one per write
    with sqlite3.connect(db) as conn:
        keys = [k for (k,) in conn.execute("SELECT unit_key FROM conversations ORDER BY id")]
        assert keys == ["a", "b"]  # the failing write left nothing behind
        assert conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == 2
        sources = [s for (s,) in conn.execute("SELECT profile_source FROM conversations")]
        assert sources == ["annotator", None]
