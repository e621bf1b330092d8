"""``cogwm --version`` and the version every store records about the cogwm that wrote it."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import cogwm
from cogwm.arena.provenance import package_versions
from cogwm.version import UNKNOWN, version
from helpers_cli import cogwm as run_cli

ARENA = """
name = "versioned"
tasks = ["ESC"]
dialogues_per_task = 1
max_rounds = 3
intent_from_round = 3

[simulator]
model = "fake:schema"

[[agents]]
name = "a"
model = "fake:schema"
prompt = "builtin:empathetic"
"""


def test_version_is_the_installed_distributions() -> None:
    assert version() == metadata.version("cogwm") == cogwm.__version__


def test_version_flag_prints_it_and_exits_0() -> None:
    # A child process: --version must work before any command group is registered.
    done = subprocess.run(
        [sys.executable, "-m", "cogwm.cli.main", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"cogwm {metadata.version('cogwm')}\n"
    assert done.stderr == ""


def test_an_uninstalled_source_tree_says_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    version.cache_clear()
    monkeypatch.setattr(metadata, "version", missing)
    try:
        assert version() == UNKNOWN
        assert package_versions()["cogwm"] == UNKNOWN  # recorded as unknown, not left out
    finally:
        version.cache_clear()


def _meta(db: Path, table: str) -> dict[str, str]:
    with sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True) as conn:
        return dict(conn.execute(f"SELECT key, value FROM {table}").fetchall())


def test_each_store_records_the_cogwm_that_wrote_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cogwm.tom.items import write_items
    from helpers_tom import mc_item

    monkeypatch.chdir(tmp_path)
    expected = metadata.version("cogwm")
    config = tmp_path / "arena.toml"
    config.write_text(ARENA)
    assert run_cli("arena", "run", config, "--db", "r.sqlite", "--no-progress") == 0
    with sqlite3.connect(tmp_path / "r.sqlite") as conn:
        (packages,) = conn.execute("SELECT packages_json FROM runs").fetchone()
    assert json.loads(packages)["cogwm"] == expected

    fixtures = Path(__file__).resolve().parent / "fixtures"
    annotate = ["annotate", "run", "esconv", "--model", "fake:schema", "--limit", "1"]
    assert run_cli(*annotate, "--no-progress", "--data-dir", fixtures, "--db", "a.sqlite") == 0
    meta = _meta(tmp_path / "a.sqlite", "meta")
    assert meta["cogwm_version"] == meta["cogwm_version_last"] == expected

    write_items(tmp_path / "items.jsonl", [mc_item("x:1#w0:retro:t")])
    assert run_cli("tom", "eval", "items.jsonl", "--model", "fake:schema", "--db", "t.sqlite") == 0
    meta = _meta(tmp_path / "t.sqlite", "tom_meta")
    assert meta["cogwm_version"] == meta["cogwm_version_last"] == expected


def test_a_later_writer_is_recorded_beside_the_creator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogwm.tom.store import open_store

    db = tmp_path / "t.sqlite"
    with open_store(db):
        pass
    version.cache_clear()
    monkeypatch.setattr(metadata, "version", lambda name: "9.9.9")
    try:
        with open_store(db):
            pass
        with open_store(db, read_only=True):
            pass
    finally:
        version.cache_clear()
    meta = _meta(db, "tom_meta")
    assert meta["cogwm_version_last"] == "9.9.9"
    assert meta["cogwm_version"] != "9.9.9"  # the creator's is kept
