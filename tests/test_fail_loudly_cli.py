"""Failed runs say so, no command writes into a file that is not cogwm's, bad input is one line.

Every test runs the real entry point (``cogwm.cli.main.main``) and checks the exit status and,
for user errors, exactly one ``error:`` line on stderr and no traceback.
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogwm.cli.common import EXIT_UNITS_FAILED
from cogwm.cli.main import main
from cogwm.models import unregister_fake
from helpers_arena import FAKE_NAME, register

ARENA = """
name = "loud"
seed = 3
tasks = ["ESC"]
dialogues_per_task = 2
max_rounds = 4
intent_from_round = 3
history_turns = 20

[simulator]
model = "fake:arena-script"

[[agents]]
name = "warm"
model = "{agent}"
prompt = "builtin:empathetic"
"""


@pytest.fixture(autouse=True)
def _fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    register()
    yield
    unregister_fake(FAKE_NAME)


def cogwm(*args: str) -> int:
    old = sys.argv
    sys.argv = ["cogwm", *args]
    try:
        main()
    except SystemExit as exc:
        return int(exc.code or 0)
    finally:
        sys.argv = old
    return 0


def one_error(capsys: pytest.CaptureFixture[str], *args: str, code: int = 2) -> str:
    """Run ``cogwm ARGS``; assert the exit code and exactly one ``error:`` line, no traceback."""
    got = cogwm(*args)
    err = capsys.readouterr().err
    assert got == code, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def foreign_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    conn.execute("INSERT INTO notes (text) VALUES ('mine')")
    conn.commit()
    conn.close()
    return path


# --------------------------------------------------------------------- failed runs exit non-zero


def test_arena_run_with_failed_conversations_exits_1_with_causes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent="fake:no-such-fake"))
    db = tmp_path / "run.sqlite"
    assert cogwm("arena", "run", str(config), "--db", str(db), "--no-progress") == (
        EXIT_UNITS_FAILED
    )
    err = capsys.readouterr().err
    assert "Failed conversations by cause" in err and "infrastructure" in err
    assert "no-such-fake" in err and "--resume" in err
    # the report shows the same table
    assert cogwm("arena", "report", "--db", str(db)) == 0
    assert "Failed conversations by cause" in capsys.readouterr().out


def test_arena_run_without_failures_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent="fake:arena-script"))
    db = tmp_path / "run.sqlite"
    assert cogwm("arena", "run", str(config), "--db", str(db), "--no-progress") == 0
    assert "Failed conversations" not in capsys.readouterr().err


def test_arena_run_refused_by_validation_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    text = ARENA.format(agent="fake:arena-script").replace(
        'tasks = ["ESC"]', 'tasks = ["ESC"]\nscenarios = "corpus"\ndata_dir = "/nonexistent"'
    )
    config.write_text(text)
    db = tmp_path / "run.sqlite"
    one_error(capsys, "arena", "run", str(config), "--db", str(db), "--no-progress")
    assert not db.exists()


# -------------------------------------------------------------------- files that are not ours


@pytest.mark.parametrize(
    "command",
    [
        ("arena", "run", "{config}", "--no-progress", "--db", "{db}"),
        ("arena", "report", "--db", "{db}"),
        ("arena", "export", "--conversation", "1", "--db", "{db}"),
        ("tom", "stats", "--db", "{db}"),
        ("view", "--db", "{db}", "--out", "{tmp}/v.html"),
    ],
)
def test_foreign_sqlite_file_is_refused_and_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent="fake:arena-script"))
    db = foreign_db(tmp_path / "other.sqlite")
    before = digest(db)
    args = [a.format(config=config, db=db, tmp=tmp_path) for a in command]
    line = one_error(capsys, *args)
    assert "other.sqlite" in line and "not a cogwm" in line
    assert digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == [
        "arena.toml",
        "other.sqlite",
    ]


@pytest.mark.parametrize("command", [("arena", "report"), ("tom", "stats")])
def test_read_only_commands_never_turn_an_empty_file_into_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    empty = tmp_path / "notes.jsonl"
    empty.write_text("")
    line = one_error(capsys, *command, "--db", str(empty))
    assert "empty file" in line
    assert empty.read_bytes() == b""


def test_stores_of_the_other_kind_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent="fake:arena-script"))
    arena_db = tmp_path / "arena.sqlite"
    assert cogwm("arena", "run", str(config), "--db", str(arena_db), "--no-progress") == 0
    capsys.readouterr()
    before = digest(arena_db)
    line = one_error(capsys, "tom", "stats", "--db", str(arena_db))
    assert "is a cogwm run store, not a cogwm DialToM store" in line
    assert digest(arena_db) == before
    # a read-only command leaves a cogwm store byte-identical too
    assert cogwm("arena", "report", "--db", str(arena_db), "--json") == 0
    assert digest(arena_db) == before


def test_arena_and_tom_have_different_default_stores() -> None:
    import inspect

    from cogwm.cli import arena, tom

    arena_default = inspect.signature(arena.run_command).parameters["db"].default
    tom_default = inspect.signature(tom.stats_command).parameters["db"].default
    assert arena_default != tom_default
