"""Content-addressed reply cache in SQLite.

The key is a hash over what decides a reply — the model's identity, the messages, the schema, the
sampling parameters (seed included), the sample index and which outputs were asked for (token
log-probabilities, candidate scores) — and over nothing else: not the endpoint that answered, not
timeouts, retries or concurrency. Repeated samples at temperature > 0 differ by sample index.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from cogwm.models.types import BackendReply, Message, Sampling
from cogwm.store.ownership import StoreKind, check_store, stamp

CACHE_DIR_ENV = "COGWM_CACHE_DIR"
_KEY_VERSION = 1


def default_cache_path() -> Path:
    """``$COGWM_CACHE_DIR/models.sqlite``, else ``$XDG_CACHE_HOME/cogwm/...``, else ``~/.cache``."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env) / "models.sqlite"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cogwm" / "models.sqlite"


def cache_key(
    *,
    identity: str,
    messages: list[Message],
    sampling: Sampling,
    sample: int,
    json_schema: dict[str, Any] | None = None,
    logprobs: int | None = None,
    candidates: list[str] | None = None,
    mode: str | None = None,
) -> str:
    """The hex SHA-256 content address of one request.

    Args:
        identity: The model's identity (``Backend.identity``), never an endpoint.
        messages: The caller's messages (before any mode-specific schema hint is added).
        sampling: The effective sampling parameters, seed included.
        sample: Index of the sample (distinct samples of one prompt get distinct keys).
        json_schema: The requested output schema, if any.
        logprobs: Top-k token log-probabilities asked for, if any.
        candidates: Candidate strings scored from the full distribution, if any.
        mode: The structured-output mode the reply was produced under (a grammar-constrained
            reply and one that only read the schema in its prompt are not interchangeable).
    """
    payload = {
        "v": _KEY_VERSION,
        "model": identity,
        "messages": [[m.role, m.content] for m in messages],
        "schema": json_schema,
        "sampling": sampling.model_dump(mode="json"),
        "sample": sample,
        "logprobs": logprobs,
        "candidates": candidates,
    }
    if mode is not None:
        payload["mode"] = mode
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ReplyCache:
    """A SQLite table of replies by content address (WAL, so several processes can share it)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Another tool's file (or another kind of cogwm store) is refused untouched.
        check_store(path, StoreKind.CACHE, create=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        stamp(self._db, StoreKind.CACHE)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS replies ("
            " key TEXT PRIMARY KEY, model TEXT NOT NULL, reply TEXT NOT NULL,"
            " created_at REAL NOT NULL)"
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS invalid (key TEXT PRIMARY KEY, count INTEGER NOT NULL)"
        )
        # Small (only structured calls that failed for good), read once: a lookup per call
        # would cost a query on the hot path.
        self._invalid: dict[str, int] = dict(
            self._db.execute("SELECT key, count FROM invalid").fetchall()
        )

    def get(self, key: str) -> BackendReply | None:
        """The stored reply for ``key``, or None."""
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else BackendReply.model_validate_json(row[0])

    def put(self, key: str, model: str, reply: BackendReply) -> None:
        """Store ``reply`` under ``key`` (replacing an older one)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies (key, model, reply, created_at)"
                " VALUES (?, ?, ?, ?)",
                (key, model, reply.model_dump_json(), time.time()),
            )

    def invalid_count(self, key: str) -> int:
        """How many times the structured call with cache key ``key`` failed validation for good.

        The model answers such a request with a fresh sample (its sample index moved on by this
        count), so a cached invalid reply is never replayed.
        """
        return self._invalid.get(key, 0)

    def mark_invalid(self, key: str) -> int:
        """Record that the structured call ``key`` failed validation; returns the new count."""
        with self._lock:
            count = self._invalid.get(key, 0) + 1
            self._invalid[key] = count
            self._db.execute(
                "INSERT OR REPLACE INTO invalid (key, count) VALUES (?, ?)", (key, count)
            )
        return count

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        """Close the database connection; a later ``open_cache`` of this path opens a new one."""
        with _open_lock:
            if _open_caches.get(self.path) is self:
                del _open_caches[self.path]
        with self._lock:
            self._db.close()


_open_caches: dict[Path, ReplyCache] = {}
_open_lock = threading.Lock()


def open_cache(path: Path | None = None) -> ReplyCache:
    """The shared ``ReplyCache`` for ``path`` (default: ``default_cache_path()``)."""
    resolved = (path or default_cache_path()).expanduser().resolve()
    with _open_lock:
        cache = _open_caches.get(resolved)
        if cache is None:
            cache = _open_caches[resolved] = ReplyCache(resolved)
        return cache
