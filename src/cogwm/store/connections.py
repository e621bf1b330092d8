"""Opening and closing cogwm's SQLite stores so that reading one changes nothing.

A writer runs in WAL mode (readers and the writer do not block each other while a run is
watched) and switches its store back to a rollback journal when it closes. In WAL mode SQLite
needs a ``-shm`` and a ``-wal`` file even to read, and a read-only connection creates them
(empty, 32 KB of shared memory) when the folder is writable, leaving them behind. A store in
rollback mode is read through a ``mode=ro`` connection that creates and changes no file; while
a writer holds the store in WAL mode its readers share the files the writer already made.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from cogwm.store.ownership import read_only_uri

#: How long a writer waits for another connection's lock (opening, switching mode, writing).
BUSY_TIMEOUT_MS = 10_000


def connect_writer(path: Path, **options: Any) -> sqlite3.Connection:
    """A connection that may write ``path`` (created if missing), in WAL mode.

    The busy timeout is set before the journal mode: switching a store out of rollback mode
    waits for its readers instead of failing at once.

    Args:
        path: The store.
        **options: Passed to ``sqlite3.connect`` (``isolation_level``, ``check_same_thread``).
    """
    conn: sqlite3.Connection = sqlite3.connect(path, **options)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode=WAL")
    return conn


def close_writer(conn: sqlite3.Connection) -> None:
    """Close a writer's connection, leaving the store in rollback-journal mode when it can.

    Leaving WAL mode needs the only connection to the store; while another is open (a second
    writer, a page being served) the mode stays WAL and the last writer to close switches it.
    Nothing is lost either way: every commit is already in the store or its WAL.
    """
    try:
        if conn.in_transaction:
            conn.rollback()  # what close() does to an unfinished transaction anyway
        conn.execute("PRAGMA busy_timeout=0")  # another connection is open: do not wait for it
        conn.execute("PRAGMA journal_mode=DELETE").fetchall()
    except sqlite3.ProgrammingError:
        return  # closed already: closing again does nothing, as for any connection
    except sqlite3.OperationalError:
        pass  # still in use elsewhere: stays in WAL mode
    conn.close()


def connect_reader(path: Path, **options: Any) -> sqlite3.Connection:
    """A read-only connection to an existing store (``mode=ro``): it never writes the store,
    and creates no file beside one in rollback mode.

    Args:
        path: The store (must exist).
        **options: Passed to ``sqlite3.connect``.
    """
    conn: sqlite3.Connection = sqlite3.connect(read_only_uri(path), uri=True, **options)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return conn


def record_version(conn: sqlite3.Connection, meta_table: str, *, created: bool) -> None:
    """Note in a store's key/value table which cogwm wrote it.

    ``cogwm_version`` is the version that created the store (a store made before it was
    recorded has none: unknown, not guessed); ``cogwm_version_last`` the last version that
    opened it for writing. The caller commits.

    Args:
        conn: A writer's connection.
        meta_table: The store's ``(key, value)`` table.
        created: The store was created by this connection.
    """
    from cogwm.version import version

    if created:
        conn.execute(
            f"INSERT OR REPLACE INTO {meta_table} (key, value) VALUES ('cogwm_version', ?)",
            (version(),),
        )
    conn.execute(
        f"INSERT OR REPLACE INTO {meta_table} (key, value) VALUES ('cogwm_version_last', ?)",
        (version(),),
    )
