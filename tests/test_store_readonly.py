"""Commands that only read a store change nothing in its folder.

A store opened read-only in WAL mode makes SQLite create ``-shm`` and ``-wal`` files beside it
(the directory being writable), so ``arena report`` or ``view`` left a 32 KB ``-shm`` and an empty
``-wal`` behind, and a refused ``--resume`` took the lease and rewrote two header bytes. Writers
now leave their stores in rollback-journal mode when they close, and refusals are decided before
anything is opened for writing. Each test lists and hashes the store's folder (names, sizes,
SHA-256) before and after.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cogwm.store import RunStore
from helpers_cli import cogwm

ARENA = """
name = "read-only"
tasks = ["ESC"]
dialogues_per_task = 1
max_rounds = {rounds}
intent_from_round = 3

[simulator]
model = "fake:schema"

[[agents]]
name = "a"
model = "fake:schema"
prompt = "builtin:empathetic"
"""

Snapshot = dict[str, tuple[int, str]]


def snapshot(folder: Path) -> Snapshot:
    """Every file in ``folder``: name -> (size, sha256)."""
    return {
        p.name: (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.iterdir())
    }


@pytest.fixture()
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory; outputs (pages, exports) are written there, stores in ``runs/``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    return tmp_path


def _config(work: Path, rounds: int = 3) -> Path:
    path = work / f"arena-{rounds}.toml"
    path.write_text(ARENA.format(rounds=rounds))
    return path


@pytest.fixture()
def run_db(work: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    db = work / "runs" / "r.sqlite"
    assert cogwm("arena", "run", _config(work), "--db", db, "--no-progress") == 0
    capsys.readouterr()
    return db


def test_a_finished_run_leaves_only_its_store(run_db: Path) -> None:
    assert list(snapshot(run_db.parent)) == ["r.sqlite"]
    with run_db.open("rb") as handle:
        header = handle.read(20)
    assert header[18:20] == b"\x01\x01"  # rollback journal, not WAL: readers need no -shm


READERS: dict[str, Callable[[Path, Path], list[object]]] = {
    "arena report": lambda w, db: ["arena", "report", "--db", db],
    "arena report --json": lambda w, db: ["arena", "report", "--db", db, "--json"],
    "arena export": lambda w, db: [
        "arena", "export", "--conversation", "1", "--db", db, "--out", w / "c.jsonl",
    ],
    "view": lambda w, db: ["view", "--db", db, "--out", w / "report.html"],
    "refused --resume: config changed": lambda w, db: [
        "arena", "run", _config(w, rounds=4), "--db", db, "--resume", "--no-progress",
    ],
    "refused: store holds a run, no --resume": lambda w, db: [
        "arena", "run", _config(w), "--db", db, "--no-progress",
    ],
    "refused --resume: another shard": lambda w, db: [
        "arena", "run", _config(w), "--db", db, "--resume", "--shard", "1/2", "--no-progress",
    ],
    "refused quickstart: another run's store": lambda w, db: [
        "quickstart", "--db", db, "--no-progress", "--model", "fake:schema", "--out", w / "p",
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(READERS))
def test_reading_or_refusing_changes_no_file(
    name: str, work: Path, run_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(run_db.parent)
    code = cogwm(*READERS[name](work, run_db))
    err = capsys.readouterr().err
    assert code == (2 if name.startswith("refused") else 0), err
    assert snapshot(run_db.parent) == before


def test_serve_pages_change_no_file(work: Path, run_db: Path) -> None:
    from starlette.testclient import TestClient

    from cogwm.web.server import ServerConfig, create_app

    before = snapshot(run_db.parent)
    play = work / "play.sqlite"
    config = ServerConfig(stores=[run_db, play], models=["fake:schema"], play_store=play)
    with TestClient(create_app(config), base_url="http://127.0.0.1:8765") as client:
        for url in ("/", "/runs/0", "/runs/0/live", "/api/runs/0/progress"):
            assert client.get(url).status_code == 200, url
    assert snapshot(run_db.parent) == before


@pytest.fixture()
def writer(run_db: Path) -> Iterator[RunStore]:
    """The run's store held open by a writer with the lease (as a run in progress)."""
    store = RunStore(run_db)
    store.acquire_lease()
    yield store
    store.close()


def test_while_a_writer_runs_readers_create_nothing_more(
    writer: RunStore, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = writer.path.parent
    names = set(snapshot(folder))
    assert cogwm("arena", "report", "--db", writer.path) == 0
    assert cogwm("view", "--db", writer.path, "--out", work / "report.html") == 0
    assert set(snapshot(folder)) == names
    writer.close()
    assert list(snapshot(folder)) == ["r.sqlite"]  # the writer cleans up after itself


def test_a_writer_still_open_elsewhere_keeps_wal_mode(run_db: Path) -> None:
    # Leaving WAL needs the only connection; while another is open the closing writer leaves
    # the mode as it is (and the last writer to close switches it).
    first, second = RunStore(run_db), RunStore(run_db)
    first.close()
    assert (run_db.parent / "r.sqlite-wal").exists()
    assert second.run() is not None
    second.close()
    assert list(snapshot(run_db.parent)) == ["r.sqlite"]


# ------------------------------------------------------------------ the other cogwm stores


@pytest.fixture()
def annotations_db(work: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    db = work / "runs" / "a.sqlite"
    fixtures = Path(__file__).resolve().parent / "fixtures"
    args: list[object] = ["annotate", "run", "esconv", "--model", "fake:schema", "--limit", "1"]
    args += ["--no-progress", "--data-dir", fixtures, "--db", db]
    assert cogwm(*args) == 0
    capsys.readouterr()
    return db


@pytest.mark.parametrize(
    "args",
    [
        ["annotate", "export", "--out", "a.jsonl"],
        ["annotate", "quality-export", "--out", "q.csv"],
        ["annotate", "quality", "--data-dir", Path(__file__).resolve().parent / "fixtures"],
    ],
    ids=["export", "quality-export", "quality"],
)
def test_annotation_readers_change_no_file(
    args: list[object], annotations_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = annotations_db.parent
    assert list(snapshot(folder)) == ["a.sqlite"]
    before = snapshot(folder)
    assert cogwm(*args, "--db", annotations_db) == 0, capsys.readouterr().err
    assert snapshot(folder) == before


def test_tom_stats_changes_no_file(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cogwm.tom.items import write_items
    from helpers_tom import mc_item

    items, db = work / "items.jsonl", work / "runs" / "t.sqlite"
    write_items(items, [mc_item("x:1#w0:retro:t")])
    assert cogwm("tom", "eval", items, "--model", "fake:schema", "--db", db) == 0
    assert list(snapshot(db.parent)) == ["t.sqlite"]
    before = snapshot(db.parent)
    assert cogwm("tom", "stats", "--db", db) == 0
    assert cogwm("view", "--tom-db", db, "--out", work / "tom.html") == 0
    capsys.readouterr()
    assert snapshot(db.parent) == before
