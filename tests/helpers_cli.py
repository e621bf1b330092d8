"""Running the command line in the test process."""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import sys
from pathlib import Path

from cogwm.cli.main import main


def cogwm(*args: object) -> int:
    """Run ``cogwm ARGS`` (each argument as ``str``) in this process; its exit status."""
    old = sys.argv
    sys.argv = ["cogwm", *(str(a) for a in args)]
    try:
        main()
    except SystemExit as exc:
        return int(exc.code or 0)
    finally:
        sys.argv = old
    return 0


def digest(path: Path) -> str:
    """SHA-256 of a file's bytes (to show a file was left byte-identical)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def foreign_db(path: Path) -> Path:
    """Another tool's SQLite database at ``path``: one table of its own, one row."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    conn.execute("INSERT INTO notes (text) VALUES ('mine')")
    conn.commit()
    conn.close()
    return path


def interruptible() -> None:
    """``preexec_fn`` for a child the test sends SIGINT: a shell that started the test run in the
    background (``cmd &``) leaves SIGINT ignored, the child inherits that, and Python then
    installs no KeyboardInterrupt handler, so the Ctrl-C under test would never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
