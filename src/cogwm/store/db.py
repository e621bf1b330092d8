"""Reading and writing the run store.

Every turn is committed as it is written, so a killed process loses at most the turn being
written; multi-row changes (resetting or finishing a conversation) run in one transaction. Model
call records are held back and committed with the next turn (or finish) of the run, which halves
the commits; a crash can lose only the records of calls whose turn was lost too. The database is
in WAL mode with foreign keys on while written, and in rollback-journal mode once its writer has
closed it (see ``cogwm.store.connections``). A ``RunStore`` belongs to one thread (the event
loop's).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from cogwm.errors import InputError
from cogwm.schema.calls import CallRecord
from cogwm.store.connections import close_writer, connect_reader, connect_writer
from cogwm.store.ownership import StoreKind, check_store, stamp
from cogwm.store.schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION
from cogwm.store.versions import Migration, migrate, read_format, refuse_newer, write_format


class RunRow(NamedTuple):
    """A run: its config and provenance."""

    id: int
    name: str
    created_at: float
    updated_at: float
    config_json: str
    config_hash: str
    prompts_json: str
    git_revision: str | None
    packages_json: str
    seed: int
    shard: str | None


class UnitRow(NamedTuple):
    """What identifies a conversation and what it was run with."""

    unit_key: str
    task: str
    agent: str
    condition: str
    scenario: str
    scenario_source: str
    agent_model: str
    simulator_model: str
    seed: int
    trial: int = 0
    digest: str | None = None


class ConversationRow(NamedTuple):
    """A conversation as stored."""

    id: int
    run_id: int
    unit_key: str
    task: str
    agent: str
    condition: str
    scenario: str
    scenario_source: str
    agent_model: str
    simulator_model: str
    profile_source: str | None
    seed: int
    status: str
    termination: str | None
    error: str | None
    rounds: int | None
    attempts: int
    started_at: float
    finished_at: float | None
    trial: int
    digest: str | None
    failure_kind: str | None


class TurnRow(NamedTuple):
    """A turn as stored."""

    conversation_id: int
    idx: int
    round: int
    role: str
    phase: str
    text: str
    state_json: str | None
    reasoning: str | None
    call_id: str | None


class PrepRow(NamedTuple):
    """A scenario preparation: profile and initial state, shared by all agents on the scenario."""

    task: str
    scenario: str
    profile_json: str
    profile_source: str
    initial_state_json: str
    call_id: str | None
    digest: str | None = None


class StoreBusyError(InputError):
    """Another live process is writing the store."""


#: A lease whose heartbeat is older than this is stale (its writer died or hung).
LEASE_STALE_S = 30.0
#: How often a writer refreshes its lease.
HEARTBEAT_S = 5.0
#: How often ``RunStore.background_checkpoints`` checkpoints the WAL.
CHECKPOINT_EVERY_S = 0.25


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it is someone else's
    return True


class CallTotals(NamedTuple):
    """Totals over stored model calls."""

    calls: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


_CONVERSATION_COLUMNS = ", ".join(ConversationRow._fields)
_TURN_COLUMNS = ", ".join(TurnRow._fields)


class RunStore:
    """The SQLite run store of one arena run."""

    def __init__(self, path: Path, *, create: bool = True, read_only: bool = False) -> None:
        """Open (and, with ``create``, initialise) the store at ``path``.

        ``read_only`` opens an existing store without ever writing to it (``mode=ro``; a store
        of an older format is migrated in a copy in memory): for commands that only read.

        Raises:
            InputError: The file does not exist (``create=False`` or ``read_only``) or is not a
                cogwm run store.
        """
        # Checked before connecting: another tool's file is refused untouched.
        check_store(path, StoreKind.ARENA, create=create and not read_only)
        self.path = path
        self.read_only = read_only
        self._pending_calls: list[tuple[Any, ...]] = []
        self._lease: str | None = None
        self._closed = False
        try:
            if self.read_only:
                self.db = _open_read_only(path)
                self._migrate()
                return
            self.db = connect_writer(path, isolation_level=None)
            self.db.execute("PRAGMA foreign_keys=ON")
            # With WAL, NORMAL survives a killed process; an OS crash may lose the last commits.
            self.db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
            stamp(self.db, StoreKind.ARENA)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{path} is not a cogwm run store: {exc}") from None

    def _migrate(self) -> None:
        """Bring the store to ``SCHEMA_VERSION``: create a new one, or migrate step by step
        (the convention of every store: ``cogwm.store.versions``)."""
        version = read_format(self.db)
        refuse_newer(
            version,
            SCHEMA_VERSION,
            f"{self.path} has store schema {version}; this cogwm reads up to {SCHEMA_VERSION}",
        )
        if version == 0:
            if self.read_only:
                raise InputError(f"{self.path} is not an initialised cogwm run store")
            with self.transaction():
                for statement in _statements(SCHEMA):
                    self.db.execute(statement)
                write_format(self.db, SCHEMA_VERSION)
            return
        steps = {start: self._migration(start) for start in MIGRATIONS}
        migrate(self.db, version, SCHEMA_VERSION, steps, path=self.path, what="store schema")

    def _migration(self, start: int) -> Migration:
        return lambda _conn: self._migrate_from(start)

    def _migrate_from(self, version: int) -> None:
        """One migration step, atomic; foreign keys are off while tables are rebuilt."""
        self.db.execute("PRAGMA foreign_keys=OFF")
        try:
            with self.transaction():
                for statement in MIGRATIONS[version]:
                    self.db.execute(statement)
                broken = self.db.execute("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise InputError(
                        f"{self.path}: migration from store format {version} left "
                        f"{len(broken)} dangling reference(s); the store is unchanged"
                    )
                write_format(self.db, version + 1)
        finally:
            self.db.execute("PRAGMA foreign_keys=ON")

    @property
    def format_version(self) -> int:
        """The store format of the open file (``SCHEMA_VERSION`` once opened)."""
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    # ---------------------------------------------------------------------------------- lease

    def acquire_lease(self, *, stale_after_s: float = LEASE_STALE_S) -> str:
        """Become the store's one writer; returns the lease owner id.

        A lease held by a live process is refused with a one-line ``StoreBusyError``. A stale
        lease is taken over: its heartbeat is older than ``stale_after_s``, or its process (on
        this host) no longer exists, as after ``kill -9``.
        """
        now = time.time()
        host, pid = socket.gethostname(), os.getpid()
        owner = f"{host}:{pid}:{uuid.uuid4().hex[:8]}"
        with self.transaction():
            row = self.db.execute("SELECT owner, pid, host, heartbeat_at FROM lease").fetchone()
            if row is not None:
                _, other_pid, other_host, beat = row
                dead = other_host == host and not _pid_alive(int(other_pid))
                if not dead and now - float(beat) < stale_after_s:
                    where = "" if other_host == host else f" on {other_host}"
                    raise StoreBusyError(
                        f"{self.path} is being written by another cogwm process (pid "
                        f"{other_pid}{where}, heartbeat {now - float(beat):.0f} s ago); wait for "
                        "it to finish or use another --db"
                    )
            self.db.execute(
                "INSERT OR REPLACE INTO lease (id, owner, pid, host, acquired_at, heartbeat_at)"
                " VALUES (1, ?, ?, ?, ?, ?)",
                (owner, pid, host, now, now),
            )
        self._lease = owner
        return owner

    def heartbeat(self) -> bool:
        """Refresh this writer's lease; False if it was taken over (then stop writing)."""
        if self._lease is None:
            return False
        cursor = self.db.execute(
            "UPDATE lease SET heartbeat_at = ? WHERE owner = ?", (time.time(), self._lease)
        )
        return cursor.rowcount == 1

    def release_lease(self) -> None:
        """Give the lease up (done by ``close`` too)."""
        if self._lease is not None:
            self.db.execute("DELETE FROM lease WHERE owner = ?", (self._lease,))
            self._lease = None

    def close(self) -> None:
        """Write held-back call records, give up the lease and close the connection.

        A writer leaves the store in rollback-journal mode (when no other connection is open),
        so that reading it later creates no ``-shm`` or ``-wal`` file.
        """
        if self.read_only or self._closed:
            self.db.close()
            return
        self._closed = True
        if self._pending_calls:
            with self.transaction():
                pass
        self.release_lease()
        close_writer(self.db)

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def background_checkpoints(self, every_s: float = CHECKPOINT_EVERY_S) -> Iterator[None]:
        """Checkpoint the WAL from a thread of its own while the block runs.

        SQLite otherwise checkpoints in whichever commit finds the WAL over 1,000 pages, and that
        commit waits for the checkpoint's fsyncs (milliseconds to tens of them); on the event
        loop, so does every conversation in flight. A passive checkpoint on another connection
        never blocks this one's commits, and a killed process leaves the same behind (the WAL
        holds every commit).
        """
        if self.read_only:
            yield
            return
        stop = threading.Event()
        worker = threading.Thread(
            target=_checkpoint_until, args=(self.path, stop, every_s), name="cogwm-checkpoint"
        )
        (pages,) = self.db.execute("PRAGMA wal_autocheckpoint").fetchone()
        self.db.execute("PRAGMA wal_autocheckpoint=0")
        worker.start()
        try:
            yield
        finally:
            stop.set()
            worker.join()
            self.db.execute(f"PRAGMA wal_autocheckpoint={int(pages)}")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic change of several rows (held-back call records are written with it).

        Inside an open transaction this joins it.
        """
        if self.db.in_transaction:
            yield
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._write_pending_calls()
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")
        self._pending_calls.clear()

    def _write_pending_calls(self) -> None:
        if self._pending_calls:
            self.db.executemany(
                "INSERT INTO model_calls (run_id, conversation_id, call_id, purpose, model,"
                " endpoint, started_at, latency_s, prompt_tokens, completion_tokens, cost_usd,"
                " cached, ok, error, attempts, conversation_attempt)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                self._pending_calls,
            )

    # ---------------------------------------------------------------------------------- runs

    def run(self) -> RunRow | None:
        """The store's run (a store holds one), or None when empty."""
        row = self.db.execute(
            f"SELECT {', '.join(RunRow._fields)} FROM runs ORDER BY id"
        ).fetchone()
        return None if row is None else RunRow(*row)

    def create_run(
        self,
        *,
        name: str,
        config: Mapping[str, Any],
        config_hash: str,
        prompts: Sequence[Mapping[str, Any]],
        git_revision: str | None,
        packages: Mapping[str, str],
        seed: int,
        shard: str | None,
    ) -> int:
        """Insert the run; an error if the store already holds one."""
        if self.run() is not None:
            raise InputError(f"{self.path} already holds a run")
        now = time.time()
        cursor = self.db.execute(
            "INSERT INTO runs (name, created_at, updated_at, config_json, config_hash,"
            " prompts_json, git_revision, packages_json, seed, shard)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                name,
                now,
                now,
                _dumps(config),
                config_hash,
                _dumps(prompts),
                git_revision,
                _dumps(packages),
                seed,
                shard,
            ),
        )
        return int(cursor.lastrowid or 0)

    def update_run(
        self,
        run_id: int,
        *,
        config: Mapping[str, Any],
        config_hash: str,
        prompts: Sequence[Mapping[str, Any]],
        git_revision: str | None,
        packages: Mapping[str, str],
    ) -> None:
        """Replace the run's config (a forced resume with a changed config)."""
        self.db.execute(
            "UPDATE runs SET config_json = ?, config_hash = ?, prompts_json = ?, git_revision = ?,"
            " packages_json = ?, updated_at = ? WHERE id = ?",
            (
                _dumps(config),
                config_hash,
                _dumps(prompts),
                git_revision,
                _dumps(packages),
                time.time(),
                run_id,
            ),
        )

    # ------------------------------------------------------------------------- scenario preps

    def preps(self, run_id: int) -> dict[tuple[str, str], PrepRow]:
        """Stored scenario preparations by (task, scenario)."""
        rows = self.db.execute(
            f"SELECT {', '.join(PrepRow._fields)} FROM scenario_preps WHERE run_id = ?", (run_id,)
        )
        return {(r[0], r[1]): PrepRow(*r) for r in rows}

    def add_prep(self, run_id: int, prep: PrepRow, *, replace: bool = False) -> None:
        """Store a scenario preparation.

        An existing one for the same scenario is kept, or with ``replace`` (its digest changed)
        replaced.
        """
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self.transaction():
            self.db.execute(
                f"{verb} INTO scenario_preps (run_id, task, scenario, profile_json,"
                " profile_source, initial_state_json, call_id, digest)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, *prep),
            )

    def fill_digests(
        self, run_id: int, units: Mapping[str, str], preps: Mapping[tuple[str, str], str]
    ) -> int:
        """Set the digests of conversations and preparations stored without one.

        Used when resuming a store of format 1 under an unchanged config: what it holds was run
        with exactly this config, so it takes the current digests. Returns the rows filled.
        """
        filled = 0
        with self.transaction():
            for key, digest in units.items():
                filled += self.db.execute(
                    "UPDATE conversations SET digest = ?"
                    " WHERE run_id = ? AND unit_key = ? AND digest IS NULL",
                    (digest, run_id, key),
                ).rowcount
            for (task, scenario), digest in preps.items():
                filled += self.db.execute(
                    "UPDATE scenario_preps SET digest = ?"
                    " WHERE run_id = ? AND task = ? AND scenario = ? AND digest IS NULL",
                    (digest, run_id, task, scenario),
                ).rowcount
        return filled

    # -------------------------------------------------------------------------- conversations

    def conversations(self, run_id: int | None = None) -> list[ConversationRow]:
        """Conversations (of one run, or all), in id order."""
        where, args = ("WHERE run_id = ?", (run_id,)) if run_id is not None else ("", ())
        rows = self.db.execute(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations {where} ORDER BY id", args
        )
        return [ConversationRow(*r) for r in rows]

    def start_conversation(self, run_id: int, unit: UnitRow) -> int:
        """Mark a conversation running, from its beginning.

        A conversation already stored (unfinished, failed or stale) loses its turns and metrics
        and starts again under the same id, so each unit is stored exactly once. The call
        records of earlier attempts are kept (tagged with their attempt), so the cost of a run
        is never undercounted.
        """
        now = time.time()
        with self.transaction():
            row = self.db.execute(
                "SELECT id, attempts FROM conversations WHERE run_id = ? AND unit_key = ?",
                (run_id, unit.unit_key),
            ).fetchone()
            if row is None:
                cursor = self.db.execute(
                    "INSERT INTO conversations (run_id, unit_key, task, agent, condition, scenario,"
                    " scenario_source, agent_model, simulator_model, seed, trial, digest, status,"
                    " started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)",
                    (run_id, *unit, now),
                )
                return int(cursor.lastrowid or 0)
            conversation_id, attempts = int(row[0]), int(row[1])
            for table in ("turns", "metrics"):
                self.db.execute(
                    f"DELETE FROM {table} WHERE conversation_id = ?", (conversation_id,)
                )
            self.db.execute(
                "UPDATE model_calls SET conversation_attempt = ?"
                " WHERE conversation_id = ? AND conversation_attempt IS NULL",
                (attempts, conversation_id),
            )
            self.db.execute(
                "UPDATE conversations SET status = 'running', termination = NULL, error = NULL,"
                " rounds = NULL, finished_at = NULL, profile_source = NULL, failure_kind = NULL,"
                " started_at = ?, attempts = attempts + 1, agent_model = ?, simulator_model = ?,"
                " seed = ?, trial = ?, digest = ? WHERE id = ?",
                (
                    now,
                    unit.agent_model,
                    unit.simulator_model,
                    unit.seed,
                    unit.trial,
                    unit.digest,
                    conversation_id,
                ),
            )
            return conversation_id

    def set_profile_source(self, conversation_id: int, source: str) -> None:
        """Record where the conversation's user profile came from."""
        self.db.execute(
            "UPDATE conversations SET profile_source = ? WHERE id = ?", (source, conversation_id)
        )

    def finish_conversation(
        self,
        conversation_id: int,
        *,
        status: str,
        termination: str,
        rounds: int,
        error: str | None = None,
        failure_kind: str | None = None,
        metrics: Mapping[str, float | None] | None = None,
        details: Mapping[str, str] | None = None,
    ) -> None:
        """Close a conversation with its termination and metrics, atomically.

        ``failure_kind`` is ``agent`` (the agent broke its output format) or ``infrastructure``
        (a model call, the store or the code failed); None when nothing failed.
        """
        details = details or {}
        with self.transaction():
            self.db.execute("DELETE FROM metrics WHERE conversation_id = ?", (conversation_id,))
            self.db.executemany(
                "INSERT INTO metrics (conversation_id, name, value, detail) VALUES (?, ?, ?, ?)",
                [(conversation_id, k, v, details.get(k)) for k, v in (metrics or {}).items()],
            )
            self.db.execute(
                "UPDATE conversations SET status = ?, termination = ?, rounds = ?, error = ?,"
                " failure_kind = ?, finished_at = ? WHERE id = ?",
                (status, termination, rounds, error, failure_kind, time.time(), conversation_id),
            )

    # ---------------------------------------------------------------------------------- turns

    def add_turn(
        self,
        conversation_id: int,
        *,
        idx: int,
        round: int,
        role: str,
        phase: str,
        text: str,
        state_json: str | None = None,
        reasoning: str | None = None,
        call_id: str | None = None,
    ) -> None:
        """Store one turn (committed at once, with the call records held back so far)."""
        row = (conversation_id, idx, round, role, phase, text, state_json, reasoning, call_id)
        insert = f"INSERT INTO turns ({_TURN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        if not self._pending_calls:
            self.db.execute(insert, row)
            return
        with self.transaction():
            self.db.execute(insert, row)

    def add_turns(self, rows: Sequence[TurnRow]) -> None:
        """Store many turns (of any conversations) in one transaction: a group commit."""
        with self.transaction():
            self.db.executemany(
                f"INSERT INTO turns ({_TURN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
            )

    def turns(self, conversation_id: int) -> list[TurnRow]:
        """The turns of one conversation, in order."""
        rows = self.db.execute(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE conversation_id = ? ORDER BY idx",
            (conversation_id,),
        )
        return [TurnRow(*r) for r in rows]

    def all_turns(self, run_id: int | None = None) -> dict[int, list[TurnRow]]:
        """Turns of every conversation (of one run, or all), by conversation id."""
        query = f"SELECT {', '.join('t.' + c for c in TurnRow._fields)} FROM turns t"
        args: tuple[Any, ...] = ()
        if run_id is not None:
            query += " JOIN conversations c ON c.id = t.conversation_id WHERE c.run_id = ?"
            args = (run_id,)
        grouped: dict[int, list[TurnRow]] = {}
        for row in self.db.execute(query + " ORDER BY t.conversation_id, t.idx", args):
            grouped.setdefault(int(row[0]), []).append(TurnRow(*row))
        return grouped

    # ---------------------------------------------------------------------------- model calls

    def add_call(self, run_id: int, conversation_id: int | None, record: CallRecord) -> None:
        """Hold one model call record; it is committed with the next turn or finish.

        The record never holds a key (the model interface scrubs them).
        """
        self._pending_calls.append(
            (
                run_id,
                conversation_id,
                record.call_id,
                record.tag,
                record.model,
                record.endpoint,
                record.started_at,
                record.latency_s,
                record.prompt_tokens,
                record.completion_tokens,
                record.cost_usd,
                int(record.cached),
                int(record.ok),
                record.error,
                record.attempts,
            )
        )

    def call_totals(self, run_id: int | None = None) -> CallTotals:
        """Calls, failures, tokens and cost over the stored calls (held-back ones written first)."""
        if self._pending_calls:
            with self.transaction():
                pass
        where, args = ("WHERE run_id = ?", (run_id,)) if run_id is not None else ("", ())
        row = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(1 - ok), 0), COALESCE(SUM(prompt_tokens), 0),"
            " COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(cost_usd), 0)"
            f" FROM model_calls {where}",
            args,
        ).fetchone()
        return CallTotals(int(row[0]), int(row[1]), int(row[2]), int(row[3]), float(row[4]))

    # -------------------------------------------------------------------------------- metrics

    def metrics(self, run_id: int | None = None) -> dict[int, dict[str, float | None]]:
        """Stored per-conversation metrics by conversation id."""
        query = "SELECT m.conversation_id, m.name, m.value FROM metrics m"
        args: tuple[Any, ...] = ()
        if run_id is not None:
            query += " JOIN conversations c ON c.id = m.conversation_id WHERE c.run_id = ?"
            args = (run_id,)
        found: dict[int, dict[str, float | None]] = {}
        for conversation_id, name, value in self.db.execute(query, args):
            found.setdefault(int(conversation_id), {})[name] = value
        return found

    def metric_details(self, conversation_id: int) -> dict[str, str | None]:
        """Free-text details stored beside a conversation's metrics (e.g. the judge's reason)."""
        rows = self.db.execute(
            "SELECT name, detail FROM metrics WHERE conversation_id = ?", (conversation_id,)
        )
        return {name: detail for name, detail in rows}


def stored_run(path: Path) -> RunRow | None:
    """The run held by the store at ``path``, read without writing anything; None when there
    is no store there yet (no file, an empty file or an empty database: a writer may create one).

    Raises:
        InputError: The file is not a cogwm run store (or one newer than this cogwm).
    """
    check_store(path, StoreKind.ARENA, create=True)
    if not path.exists() or path.stat().st_size == 0:
        return None
    try:
        db = connect_reader(path)
        try:
            version = read_format(db)
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{path} is not a cogwm run store: {exc}") from None
    if version == 0:
        return None
    with RunStore(path, read_only=True) as store:
        return store.run()


def _checkpoint_until(path: Path, stop: threading.Event, every_s: float) -> None:
    """Passive WAL checkpoints of the store at ``path`` every ``every_s`` until ``stop``."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout=10000")
        while not stop.wait(every_s):
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    finally:
        db.close()


def _open_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection; a store of an older format is migrated in a copy in memory,
    so reading never changes the file."""
    db = connect_reader(path, isolation_level=None)
    version = read_format(db)
    if version == 0 or version >= SCHEMA_VERSION:
        return db
    memory = sqlite3.connect(":memory:", isolation_level=None)
    db.backup(memory)
    db.close()
    memory.execute("PRAGMA foreign_keys=ON")
    return memory


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
