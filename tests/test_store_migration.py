"""Stores age well: a store written by an earlier format opens, migrates and reports."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.models import unregister_fake
from cogwm.report import build_report, load_run
from cogwm.store import SCHEMA_VERSION, RunStore
from helpers_arena import FAKE_NAME, Script, register

#: Written by the format-1 code: ESC, one scenario, warm (no_cot, cot) finished, cold failed.
STORE_V1 = Path(__file__).resolve().parent / "data" / "store_v1.sqlite"


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    copy = tmp_path / "v1.sqlite"
    shutil.copyfile(STORE_V1, copy)
    return copy


@pytest.fixture
def script() -> Iterator[Script]:
    yield register(Script())
    unregister_fake(FAKE_NAME)


def test_a_format_1_store_migrates_and_keeps_every_row(v1: Path) -> None:
    with sqlite3.connect(v1) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
        before = {t: raw.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in _TABLES}
    with RunStore(v1) as store:
        assert store.format_version == SCHEMA_VERSION == 2
        rows = {r.unit_key: r for r in store.conversations()}
        assert {r.trial for r in rows.values()} == {0}
        assert {k: r.failure_kind for k, r in rows.items()} == {
            "ESC|builtin:esc-01|warm|no_cot": None,
            "ESC|builtin:esc-01|warm|cot": None,
            "ESC|builtin:esc-01|cold|no_cot": "infrastructure",
        }
        assert all(r.digest is None for r in rows.values())
        assert store.db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert store.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        after = {t: store.db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in _TABLES}
        assert after == before
        data = load_run(store)
    report = build_report(data, n_resamples=20)
    assert (report.finished, report.errors) == (2, 1)
    # Opening it again is a no-op.
    with RunStore(v1) as store:
        assert len(store.conversations()) == 3


_TABLES = ("runs", "scenario_preps", "conversations", "turns", "model_calls", "metrics")


def test_a_format_1_run_resumes_under_the_current_code(v1: Path, script: Script) -> None:
    with RunStore(v1) as store:
        run = store.run()
        assert run is not None
        config = parse_config(json.loads(run.config_json))
        summary = asyncio.run(
            run_arena(config, store, resume=True, force=True, show_progress=False)
        )
        assert summary.planned == 3
        rows = store.conversations()
        assert len(rows) == 3 and all(r.digest for r in rows)
        # The failed conversation was tried again; the call records of its first try remain.
        cold = next(r for r in rows if r.agent == "cold")
        assert cold.attempts == 2
        kept = store.db.execute(
            "SELECT COUNT(*) FROM model_calls WHERE conversation_id = ? AND"
            " conversation_attempt = 1",
            (cold.id,),
        ).fetchone()[0]
        assert kept >= 1


def test_a_newer_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    with sqlite3.connect(path) as raw:
        raw.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    from cogwm.errors import InputError

    with pytest.raises(InputError, match="store schema"):
        RunStore(path)
