"""How every cogwm store says which format it holds, and how it reaches the current one.

One convention for the run store, the annotation store and the DialToM store: SQLite's
``PRAGMA user_version`` holds the store's format (0: a new, empty file), each kind of store names
its current format, and a store of an older format is brought forward by that kind's ordered
migrations (``migrations[v]`` takes format ``v`` to ``v + 1``, one step at a time). A store newer
than this cogwm is refused.

The annotation and DialToM stores were made, before this convention, with their format in their
key/value table (``meta.format_version``, ``tom_meta.schema_version``). Such a marker is read
where ``user_version`` is 0, a writer then stamps ``user_version`` from it, and the marker is
kept, so a store stays readable by the cogwm that made it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path

from cogwm.errors import InputError

#: One migration step of a store, given its connection (it runs in the caller's transaction).
Migration = Callable[[sqlite3.Connection], None]


def read_format(conn: sqlite3.Connection, legacy: tuple[str, str] | None = None) -> int:
    """The format of the store behind ``conn`` (0: none recorded, a new store).

    Args:
        conn: A connection to the store.
        legacy: ``(table, key)`` of a format kept in a key/value table before the convention,
            read where ``user_version`` is 0.
    """
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version or legacy is None:
        return version
    table, key = legacy
    found = conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name=?", (table,))
    if found.fetchone() is None:
        return 0
    row = conn.execute(f"SELECT value FROM {table} WHERE key=?", (key,)).fetchone()
    return 0 if row is None else int(row[0])


def write_format(conn: sqlite3.Connection, version: int) -> None:
    """Record ``version`` as the store's format (the caller commits)."""
    conn.execute(f"PRAGMA user_version={int(version)}")


def refuse_newer(found: int, current: int, message: str) -> None:
    """Refuse a store whose format ``found`` is newer than ``current`` (``message`` says so)."""
    if found > current:
        raise InputError(message)


def migrate(
    conn: sqlite3.Connection,
    found: int,
    current: int,
    migrations: Mapping[int, Migration],
    *,
    path: Path,
    what: str,
) -> int:
    """Bring a store of format ``found`` to ``current`` one step at a time; returns ``current``.

    Each step records its new format (``write_format``) in the same transaction as its changes,
    so an interrupted migration leaves the store at a format it really holds.

    Raises:
        InputError: A step from some format is missing (the store cannot be read by this cogwm).
    """
    while found < current:
        step = migrations.get(found)
        if step is None:
            raise InputError(f"{path}: {what} {found} cannot be brought to {current}")
        step(conn)
        found += 1
    return found
