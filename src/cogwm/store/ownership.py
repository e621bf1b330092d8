"""Which SQLite files are cogwm's, and of which kind.

Every cogwm store carries an SQLite ``application_id`` that names its kind (arena run store,
DialToM store, annotation store, reply cache, embedding cache). A command checks a file *before*
it opens it for writing: a file of another kind, another tool's database or a file that is not
SQLite at all is refused with one line, and nothing is written to it. Stores written before the
id existed are recognised by their tables and stamped when next opened for writing.
"""

from __future__ import annotations

import sqlite3
from enum import StrEnum
from pathlib import Path

from cogwm.errors import InputError

_SQLITE_MAGIC = b"SQLite format 3\x00"


class StoreKind(StrEnum):
    """The kinds of SQLite files cogwm writes."""

    ARENA = "arena"
    TOM = "tom"
    ANNOTATIONS = "annotations"
    CACHE = "cache"
    EMBEDDINGS = "embeddings"


#: ``PRAGMA application_id`` per kind: 'CWM' followed by a letter for the kind.
APPLICATION_IDS: dict[StoreKind, int] = {
    StoreKind.ARENA: 0x43574D41,  # CWMA
    StoreKind.TOM: 0x43574D54,  # CWMT
    StoreKind.ANNOTATIONS: 0x43574D4E,  # CWMN
    StoreKind.CACHE: 0x43574D43,  # CWMC
    StoreKind.EMBEDDINGS: 0x43574D45,  # CWME
}

#: Tables that identify a store written before the application id (all must be present).
_LEGACY_TABLES: dict[StoreKind, frozenset[str]] = {
    StoreKind.ARENA: frozenset({"runs", "conversations", "turns", "model_calls"}),
    StoreKind.TOM: frozenset({"tom_meta", "tom_items", "tom_runs"}),
    StoreKind.CACHE: frozenset({"replies", "invalid"}),
    StoreKind.ANNOTATIONS: frozenset({"meta", "dialogues", "turns", "failures"}),
    StoreKind.EMBEDDINGS: frozenset({"embeddings"}),
}

_LABELS = {
    StoreKind.ARENA: "cogwm run store",
    StoreKind.TOM: "cogwm DialToM store",
    StoreKind.ANNOTATIONS: "cogwm annotation store",
    StoreKind.CACHE: "cogwm reply cache",
    StoreKind.EMBEDDINGS: "cogwm embedding cache",
}


def label(kind: StoreKind) -> str:
    """How messages name a kind of store ('cogwm run store', 'cogwm DialToM store', ...)."""
    return _LABELS[kind]


def read_only_uri(path: Path) -> str:
    """The ``file:`` URI that opens ``path`` read-only (nothing is created or changed)."""
    return f"{path.resolve().as_uri()}?mode=ro"


def check_store(path: Path, kind: StoreKind, *, create: bool) -> None:
    """Refuse ``path`` unless it is a cogwm store of ``kind`` (or, with ``create``, new or empty).

    Nothing is written: the file is read through a read-only connection.

    Raises:
        InputError: The path is missing (without ``create``), a directory, not an SQLite file,
            a cogwm store of another kind, another application's database, or (without
            ``create``) an empty database.
    """
    want = label(kind)
    if not path.exists():
        if create:
            return
        raise InputError(f"{want} {path} does not exist")
    if not path.is_file():
        raise InputError(f"{path} is a directory, not a {want}")
    if path.stat().st_size == 0:
        if create:
            return
        raise InputError(f"{path} is an empty file, not a {want}")
    with path.open("rb") as handle:
        magic = handle.read(len(_SQLITE_MAGIC))
    if magic != _SQLITE_MAGIC:
        raise InputError(f"{path} is not an SQLite file, so not a {want}; it was left unchanged")
    app_id, tables = _inspect(path, want)
    if app_id == APPLICATION_IDS[kind]:
        return
    other = next((k for k, v in APPLICATION_IDS.items() if v == app_id), None)
    if other is not None:
        raise InputError(f"{path} is a {label(other)}, not a {want}; it was left unchanged")
    if app_id != 0:
        raise InputError(
            f"{path} belongs to another application (SQLite application_id {app_id:#010x}), "
            f"not a {want}; it was left unchanged"
        )
    _check_legacy(path, kind, tables, create=create)


def _inspect(path: Path, want: str) -> tuple[int, set[str]]:
    try:
        conn = sqlite3.connect(read_only_uri(path), uri=True)
        try:
            app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
            tables = {
                row[0]
                for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{path} cannot be read as a {want}: {exc}") from None
    return app_id, tables


def _check_legacy(path: Path, kind: StoreKind, tables: set[str], *, create: bool) -> None:
    """A file without an application id: accept an older store of this kind, or an empty one."""
    want = label(kind)
    if not tables:
        if create:
            return
        raise InputError(f"{path} is an empty SQLite database, not a {want}")
    if _LEGACY_TABLES.get(kind, frozenset()) <= tables and kind in _LEGACY_TABLES:
        return
    for other, marks in _LEGACY_TABLES.items():
        if other is not kind and marks <= tables:
            raise InputError(f"{path} is a {label(other)}, not a {want}; it was left unchanged")
    shown = ", ".join(sorted(tables)[:4]) + (", ..." if len(tables) > 4 else "")
    raise InputError(
        f"{path} is another tool's SQLite database (tables: {shown}), not a {want}; "
        "it was left unchanged"
    )


def stamp(conn: sqlite3.Connection, kind: StoreKind) -> None:
    """Mark an open, writable store as cogwm's ``kind`` (idempotent)."""
    conn.execute(f"PRAGMA application_id={APPLICATION_IDS[kind]}")
