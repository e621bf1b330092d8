"""The annotation store: one SQLite file (WAL) per annotation run.

A dialogue is written whole, in one transaction (its row, its turns, its failures), or not at
all: a process killed at any moment leaves only complete dialogues behind, and ``--resume`` skips
exactly those. The store records which model and prompt version wrote each dialogue, so that a
resumed run with another model or prompt is refused instead of mixed in.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from cogwm.annotate.outputs import Allocation, Summary
from cogwm.annotate.saa import DialogueAnnotation, Failure, TurnAnnotation
from cogwm.errors import InputError
from cogwm.schema import Dialogue, Profile
from cogwm.store.connections import (
    close_writer,
    connect_reader,
    connect_writer,
    record_version,
)
from cogwm.store.ownership import StoreKind, check_store, stamp
from cogwm.store.versions import Migration, migrate, read_format, refuse_newer, write_format

#: The format this code writes (``PRAGMA user_version``, see ``cogwm.store.versions``): bump it
#: with a step in ``MIGRATIONS`` when the tables change.
FORMAT_VERSION = 1
#: ``MIGRATIONS[v]`` takes a store of format ``v`` to ``v + 1`` (none yet).
MIGRATIONS: dict[int, Migration] = {}
#: Where stores made before ``user_version`` was used keep their format.
_LEGACY_FORMAT = ("meta", "format_version")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dialogues (
    id TEXT PRIMARY KEY,
    corpus TEXT NOT NULL,
    split TEXT,
    task TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    seed INTEGER NOT NULL,
    dialogue_json TEXT NOT NULL,
    summary_json TEXT,
    summary_repaired INTEGER NOT NULL,
    profile_json TEXT,
    profile_fields_json TEXT NOT NULL,
    truncated INTEGER NOT NULL,
    user_turns INTEGER NOT NULL,
    failed_turns INTEGER NOT NULL,
    elapsed_s REAL NOT NULL,
    calls INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS turns (
    dialogue_id TEXT NOT NULL REFERENCES dialogues(id),
    turn_index INTEGER NOT NULL,
    allocation_json TEXT,
    repaired INTEGER NOT NULL,
    PRIMARY KEY (dialogue_id, turn_index)
);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY,
    dialogue_id TEXT NOT NULL REFERENCES dialogues(id),
    stage TEXT NOT NULL,
    turn_index INTEGER,
    reason TEXT NOT NULL,
    message TEXT NOT NULL,
    raw TEXT
);
"""


class Usage(NamedTuple):
    """What annotating one dialogue cost."""

    elapsed_s: float
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


class StoredDialogue(NamedTuple):
    """A dialogue as stored: the dialogue, its annotation and what it cost."""

    dialogue: Dialogue
    annotation: DialogueAnnotation
    model: str
    prompt_version: str
    usage: Usage


class Totals(NamedTuple):
    """Counts over the whole store."""

    dialogues: int
    user_turns: int
    failed_turns: int
    failures: dict[str, int]
    summary_failed: int
    elapsed_s: float
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


class AnnotationStore:
    """Reading and writing one annotation store (belongs to one thread)."""

    def __init__(self, path: Path, *, create: bool = True, read_only: bool = False) -> None:
        """Open (with ``create``, make) the store at ``path``.

        ``read_only`` opens an existing store without writing anything, in it or beside it:
        for the commands that only read.

        Raises:
            InputError: The store is missing (without ``create``, or ``read_only``), its folder
                is missing, or the file is not an annotation store of this format.
        """
        create = create and not read_only
        if not create and not path.is_file():
            raise InputError(f"{path}: no such annotation store")
        if create and not path.parent.is_dir():
            raise InputError(f"{path}: directory {path.parent} does not exist")
        # Before connecting: WAL mode would change another tool's file even if it is refused.
        check_store(path, StoreKind.ANNOTATIONS, create=create)
        self.path = path
        self.read_only = read_only
        try:
            if read_only:
                self._conn = connect_reader(path, isolation_level=None)
            else:
                self._conn = connect_writer(path, timeout=30, isolation_level=None)
                stamp(self._conn, StoreKind.ANNOTATIONS)
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._check_format(create)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{path}: not an annotation store ({exc})") from None

    def _check_format(self, create: bool) -> None:
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master")}
        if "meta" not in tables:
            if tables or not create:
                raise InputError(f"{self.path}: not an annotation store")
            with self._transaction():
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                # The marker of the stores made before user_version, for the cogwm that made them.
                self._conn.execute(
                    "INSERT INTO meta VALUES ('format_version', ?)", (str(FORMAT_VERSION),)
                )
                write_format(self._conn, FORMAT_VERSION)
                record_version(self._conn, "meta", created=True)
            return
        found = read_format(self._conn, legacy=_LEGACY_FORMAT)
        message = f"{self.path}: annotation store format {found or 'none'}, "
        message += f"this cogwm reads {FORMAT_VERSION}"
        if found == 0:
            raise InputError(message)
        refuse_newer(found, FORMAT_VERSION, message)
        if self.read_only:
            if found != FORMAT_VERSION:  # a reader never writes: migrate with a writer first
                raise InputError(message)
            return
        with self._transaction():
            migrate(
                self._conn,
                found,
                FORMAT_VERSION,
                MIGRATIONS,
                path=self.path,
                what="annotation store format",
            )
            write_format(self._conn, FORMAT_VERSION)  # a store made before user_version
            record_version(self._conn, "meta", created=False)

    def close(self) -> None:
        """Close the connection (a writer leaves the store in rollback-journal mode)."""
        if self.read_only:
            self._conn.close()
        else:
            close_writer(self._conn)

    def __enter__(self) -> AnnotationStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    class _Tx:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def __enter__(self) -> None:
            self.conn.execute("BEGIN IMMEDIATE")

        def __exit__(self, exc_type: object, *rest: object) -> None:
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")

    def _transaction(self) -> AnnotationStore._Tx:
        return AnnotationStore._Tx(self._conn)

    # ------------------------------------------------------------------------------- writing

    def record_tasks(self, recorded: dict[str, dict[str, Any]]) -> None:
        """Keep the tasks read from files (``TaskCatalog.recorded``) with the annotations, so
        that a later process reads their labels without the files."""
        if not recorded:
            return
        known = self.recorded_tasks()
        with self._transaction():
            self._conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('task_files', ?)",
                (json.dumps({**known, **recorded}, sort_keys=True),),
            )

    def recorded_tasks(self) -> dict[str, dict[str, Any]]:
        """The tasks read from files that annotations of this store used (empty: none)."""
        row = self._conn.execute("SELECT value FROM meta WHERE key='task_files'").fetchone()
        found: dict[str, dict[str, Any]] = {} if row is None else json.loads(row[0])
        return found

    def add(
        self,
        dialogue: Dialogue,
        annotation: DialogueAnnotation,
        *,
        model: str,
        prompt_version: str,
        seed: int,
        usage: Usage,
    ) -> None:
        """Store one annotated dialogue whole, in one transaction.

        Raises:
            InputError: The dialogue is already stored.
        """
        row = _dialogue_row(dialogue, annotation, model, prompt_version, seed, usage)
        try:
            with self._transaction():
                self._conn.execute(
                    "INSERT INTO dialogues VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row
                )
                self._conn.executemany(
                    "INSERT INTO turns VALUES (?,?,?,?)",
                    [
                        (dialogue.id, t.turn_index, _json(t.allocation), int(t.repaired))
                        for t in annotation.turns
                    ],
                )
                self._conn.executemany(
                    "INSERT INTO failures (dialogue_id, stage, turn_index, reason, message, raw)"
                    " VALUES (?,?,?,?,?,?)",
                    [
                        (dialogue.id, f.stage, f.turn_index, f.reason, f.message, f.raw)
                        for f in annotation.failures
                    ],
                )
        except sqlite3.IntegrityError:
            raise InputError(f"{self.path}: dialogue {dialogue.id} is already stored") from None

    # ------------------------------------------------------------------------------- reading

    def done_ids(self) -> set[str]:
        """Ids of the dialogues already stored."""
        return {r[0] for r in self._conn.execute("SELECT id FROM dialogues")}

    def models(self) -> set[tuple[str, str]]:
        """The (model, prompt version) pairs the stored dialogues were written with."""
        rows = self._conn.execute("SELECT DISTINCT model, prompt_version FROM dialogues")
        return {(r[0], r[1]) for r in rows}

    def dialogues(self) -> Iterator[StoredDialogue]:
        """Every stored dialogue with its annotation, in the order they were stored."""
        rows = self._conn.execute(
            "SELECT id, task, model, prompt_version, dialogue_json, summary_json, "
            "summary_repaired, profile_json, profile_fields_json, truncated, elapsed_s, calls, "
            "prompt_tokens, completion_tokens, cost_usd FROM dialogues ORDER BY rowid"
        ).fetchall()
        for row in rows:
            yield self._stored(row)

    def _stored(self, row: tuple[Any, ...]) -> StoredDialogue:
        dialogue_id = str(row[0])
        turns = [
            TurnAnnotation(
                turn_index=int(t[0]),
                allocation=Allocation.model_validate_json(t[1]) if t[1] else None,
                repaired=bool(t[2]),
            )
            for t in self._conn.execute(
                "SELECT turn_index, allocation_json, repaired FROM turns WHERE dialogue_id = ?"
                " ORDER BY turn_index",
                (dialogue_id,),
            )
        ]
        failures = [
            Failure(stage=f[0], turn_index=f[1], reason=f[2], message=f[3], raw=f[4])
            for f in self._conn.execute(
                "SELECT stage, turn_index, reason, message, raw FROM failures"
                " WHERE dialogue_id = ? ORDER BY id",
                (dialogue_id,),
            )
        ]
        annotation = DialogueAnnotation(
            dialogue_id=dialogue_id,
            task=str(row[1]),
            summary=Summary.model_validate_json(str(row[5])) if row[5] else None,
            summary_repaired=bool(row[6]),
            turns=turns,
            profile=Profile.model_validate_json(str(row[7])) if row[7] else None,
            profile_fields=json.loads(str(row[8])),
            failures=failures,
            truncated=bool(row[9]),
        )
        usage = Usage(float(row[10]), int(row[11]), int(row[12]), int(row[13]), float(row[14]))
        dialogue = Dialogue.model_validate_json(str(row[4]))
        return StoredDialogue(dialogue, annotation, str(row[2]), str(row[3]), usage)

    def totals(self) -> Totals:
        """Counts and costs over every stored dialogue."""
        row = self._conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(user_turns),0), COALESCE(SUM(failed_turns),0),"
            " COALESCE(SUM(summary_json IS NULL),0), COALESCE(SUM(elapsed_s),0),"
            " COALESCE(SUM(calls),0), COALESCE(SUM(prompt_tokens),0),"
            " COALESCE(SUM(completion_tokens),0), COALESCE(SUM(cost_usd),0) FROM dialogues"
        ).fetchone()
        reasons = Counter(
            {
                str(r[0]): int(r[1])
                for r in self._conn.execute("SELECT reason, COUNT(*) FROM failures GROUP BY reason")
            }
        )
        return Totals(
            dialogues=int(row[0]),
            user_turns=int(row[1]),
            failed_turns=int(row[2]),
            failures=dict(reasons),
            summary_failed=int(row[3]),
            elapsed_s=float(row[4]),
            calls=int(row[5]),
            prompt_tokens=int(row[6]),
            completion_tokens=int(row[7]),
            cost_usd=float(row[8]),
        )

    def failures_by_dialogue(self) -> dict[str, dict[str, int]]:
        """Failure counts per dialogue and reason."""
        out: dict[str, dict[str, int]] = {}
        for dialogue_id, reason, count in self._conn.execute(
            "SELECT dialogue_id, reason, COUNT(*) FROM failures GROUP BY dialogue_id, reason"
        ):
            out.setdefault(str(dialogue_id), {})[str(reason)] = int(count)
        return out


def _json(value: BaseModel | None) -> str | None:
    return None if value is None else value.model_dump_json()


def _dialogue_row(
    dialogue: Dialogue,
    annotation: DialogueAnnotation,
    model: str,
    prompt_version: str,
    seed: int,
    usage: Usage,
) -> tuple[Any, ...]:
    """The ``dialogues`` table's row of one annotated dialogue, stamped with the time now."""
    return (
        dialogue.id,
        dialogue.corpus,
        dialogue.split,
        annotation.task,
        model,
        prompt_version,
        seed,
        dialogue.model_dump_json(),
        _json(annotation.summary),
        int(annotation.summary_repaired),
        _json(annotation.profile),
        json.dumps(annotation.profile_fields, sort_keys=True),
        int(annotation.truncated),
        len(annotation.turns),
        sum(1 for t in annotation.turns if t.allocation is None),
        usage.elapsed_s,
        usage.calls,
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.cost_usd,
        time.time(),
    )
