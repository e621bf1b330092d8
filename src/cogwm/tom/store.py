"""SQLite storage of DialToM evaluations: items, runs, answers, open answers, teacher reasoning.

One file holds any number of runs. A *run* is one (model, condition, seed, prompt version)
evaluation; its id is a hash of those, so ``--resume`` finds it again. Every answer keeps the
raw model output, the scoring path and the option permutation it was asked with.

The run's ``config_json`` also records what the statistics keep apart without a column of its
own: ``history`` (``window`` or ``full``, what retrospective items showed), ``circular`` and, for
people's answers (``human:lay``, ``human:expert``), the ``respondent``: one run per respondent.
A circular run stores the other rotations of the options of each item in ``tom_rotations``
(rotation 0 is the answer in ``tom_answers``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from cogwm.errors import InputError
from cogwm.store.connections import (
    close_writer,
    connect_reader,
    connect_writer,
    record_version,
)
from cogwm.store.ownership import StoreKind, check_store, stamp
from cogwm.store.versions import Migration, migrate, read_format, refuse_newer, write_format
from cogwm.tom.items import Domain, ToMItem

#: The format this code writes (``PRAGMA user_version``, see ``cogwm.store.versions``): bump it
#: with a step in ``MIGRATIONS`` when the tables change.
SCHEMA_VERSION = 1
#: ``MIGRATIONS[v]`` takes a store of format ``v`` to ``v + 1`` (none yet).
MIGRATIONS: dict[int, Migration] = {}
#: Where stores made before ``user_version`` was used keep their format.
_LEGACY_FORMAT = ("tom_meta", "schema_version")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tom_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tom_items (
    item_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    task TEXT NOT NULL,
    variant TEXT NOT NULL,
    domain TEXT NOT NULL,
    attribute TEXT,
    n_options INTEGER NOT NULL,
    source TEXT NOT NULL,
    parent_id TEXT,
    history_turns INTEGER,
    json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tom_runs (
    run_id TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    condition TEXT NOT NULL,
    teacher TEXT,
    seed INTEGER NOT NULL,
    prompt_version TEXT NOT NULL,
    config_json TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS tom_answers (
    run_id TEXT NOT NULL REFERENCES tom_runs(run_id),
    item_id TEXT NOT NULL REFERENCES tom_items(item_id),
    permutation TEXT NOT NULL,
    letters TEXT NOT NULL,
    gold_letter TEXT NOT NULL,
    choice TEXT,
    chosen_index INTEGER,
    correct INTEGER NOT NULL,
    parsed INTEGER NOT NULL,
    path TEXT NOT NULL,
    raw TEXT NOT NULL,
    probs TEXT NOT NULL,
    call_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, item_id)
);
CREATE TABLE IF NOT EXISTS tom_open_answers (
    run_id TEXT NOT NULL REFERENCES tom_runs(run_id),
    item_id TEXT NOT NULL REFERENCES tom_items(item_id),
    text TEXT NOT NULL,
    call_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, item_id)
);
CREATE TABLE IF NOT EXISTS tom_open_scores (
    run_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    bleu REAL,
    rouge_l REAL,
    embedding REAL,
    judge_model TEXT,
    agreement REAL,
    causal_attribution REAL,
    specificity REAL,
    judge_raw TEXT,
    PRIMARY KEY (run_id, item_id),
    FOREIGN KEY (run_id, item_id) REFERENCES tom_open_answers(run_id, item_id)
);
CREATE TABLE IF NOT EXISTS tom_reasoning (
    teacher TEXT NOT NULL,
    item_id TEXT NOT NULL REFERENCES tom_items(item_id),
    seed INTEGER NOT NULL,
    raw TEXT NOT NULL,
    masked TEXT NOT NULL,
    call_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (teacher, item_id, seed)
);
CREATE TABLE IF NOT EXISTS tom_rotations (
    run_id TEXT NOT NULL REFERENCES tom_runs(run_id),
    item_id TEXT NOT NULL REFERENCES tom_items(item_id),
    rotation INTEGER NOT NULL,
    permutation TEXT NOT NULL,
    letters TEXT NOT NULL,
    gold_letter TEXT NOT NULL,
    choice TEXT,
    chosen_index INTEGER,
    correct INTEGER NOT NULL,
    parsed INTEGER NOT NULL,
    path TEXT NOT NULL,
    raw TEXT NOT NULL,
    probs TEXT NOT NULL,
    call_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, item_id, rotation)
);
CREATE TABLE IF NOT EXISTS tom_reasoning_masks (
    teacher TEXT NOT NULL,
    item_id TEXT NOT NULL REFERENCES tom_items(item_id),
    seed INTEGER NOT NULL,
    masker TEXT NOT NULL,
    masked TEXT NOT NULL,
    path TEXT NOT NULL,
    call_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (teacher, item_id, seed, masker)
);
CREATE INDEX IF NOT EXISTS tom_answers_item ON tom_answers(item_id);
"""


class RunInfo(NamedTuple):
    """One stored evaluation run."""

    run_id: str
    model: str
    condition: str
    teacher: str | None
    seed: int
    prompt_version: str


class AnswerRow(NamedTuple):
    """One stored multiple-choice answer."""

    run_id: str
    item_id: str
    permutation: list[int]
    letters: list[str]
    gold_letter: str
    choice: str | None
    chosen_index: int | None
    correct: bool
    parsed: bool
    path: str
    raw: str
    probs: dict[str, float]
    call_id: str


class ScoredAnswer(NamedTuple):
    """An answer joined with what the statistics group by."""

    run_id: str
    model: str
    condition: str
    item_id: str
    parent_id: str | None
    task: str
    variant: str
    domain: str
    attribute: str | None
    n_options: int
    history_turns: int | None
    source: str
    correct: bool
    parsed: bool
    seed: int = 0
    respondent: str | None = None
    history: str = "window"
    circular: bool | None = None  # every rotation correct; None when not asked circularly
    chosen_index: int | None = None  # the stored index of the option chosen (None: unparsed)


class RunConfig(NamedTuple):
    """What a run's ``config_json`` records beside the run's columns (see the module doc)."""

    history: str = "window"
    respondent: str | None = None
    circular: bool = False


class OpenScoreRow(NamedTuple):
    """Scores of one open-ended answer (None where a score was not computed)."""

    run_id: str
    item_id: str
    bleu: float | None
    rouge_l: float | None
    embedding: float | None
    judge_model: str | None
    agreement: float | None
    causal_attribution: float | None
    specificity: float | None
    judge_raw: str | None


class ToMStore:
    """A DialToM SQLite file. Use as a context manager, or call :meth:`close`."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        """Open (or create) the store; ``read_only`` opens an existing one without writing.

        Raises:
            InputError: The file is not a DialToM store (another kind of cogwm store, another
                tool's database, not SQLite) or, with ``read_only``, does not exist.
        """
        self.path = path
        self.read_only = read_only
        # Checked before connecting: another tool's file is refused untouched.
        check_store(path, StoreKind.TOM, create=not read_only)
        try:
            if read_only:
                self.conn = connect_reader(path)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.conn = connect_writer(path)
                self.conn.execute("PRAGMA foreign_keys=ON")
                self.conn.executescript(_SCHEMA)
                stamp(self.conn, StoreKind.TOM)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"database {path}: {exc}") from None
        except OSError as exc:
            raise InputError(f"database {path}: {exc.strerror or exc}") from None
        self._check_version()

    def _check_version(self) -> None:
        found = read_format(self.conn, legacy=_LEGACY_FORMAT)
        if found == 0:
            if self.read_only:
                raise InputError(f"database {self.path} is not an initialised DialToM store")
            with self.conn:
                # The marker of the stores made before user_version, for the cogwm that made them.
                self.conn.execute(
                    "INSERT INTO tom_meta(key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
                write_format(self.conn, SCHEMA_VERSION)
                record_version(self.conn, "tom_meta", created=True)
            return
        message = (
            f"database {self.path} has DialToM schema version {found}, "
            f"this version of cogwm reads {SCHEMA_VERSION}"
        )
        refuse_newer(found, SCHEMA_VERSION, message)
        if self.read_only:
            if found != SCHEMA_VERSION:  # a reader never writes: migrate with a writer first
                raise InputError(message)
            return
        with self.conn:
            what = "DialToM schema version"
            migrate(self.conn, found, SCHEMA_VERSION, MIGRATIONS, path=self.path, what=what)
            write_format(self.conn, SCHEMA_VERSION)  # a store made before user_version
            record_version(self.conn, "tom_meta", created=False)

    def __enter__(self) -> ToMStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (a writer leaves the store in rollback-journal mode)."""
        if self.read_only:
            self.conn.close()
        else:
            close_writer(self.conn)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A transaction that commits on success and rolls back on error."""
        with self.conn:
            yield self.conn

    # -- items ---------------------------------------------------------------------------

    def put_items(self, items: Iterable[ToMItem]) -> int:
        """Store items (idempotent); an ``InputError`` if an id is stored with other content."""
        rows = [_item_row(item) for item in items]
        known = self._stored_hashes([r[0] for r in rows])
        fresh = []
        for row in rows:
            stored = known.get(row[0])
            if stored is None:
                fresh.append(row)
                known[row[0]] = row[1]
            elif stored != row[1]:
                raise InputError(
                    f"item {row[0]!r} is already stored in {self.path} with different content; "
                    "item ids must be unique (rebuild the items or use another database)"
                )
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO tom_items VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                fresh,
            )
        return len(fresh)

    def _stored_hashes(self, ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT item_id, content_hash FROM tom_items WHERE item_id IN ({marks})"
            found.update(self.conn.execute(query, chunk).fetchall())
        return found

    def get_item(self, item_id: str) -> ToMItem | None:
        """A stored item, or None."""
        row = self.conn.execute("SELECT json FROM tom_items WHERE item_id=?", (item_id,)).fetchone()
        return ToMItem.model_validate_json(row[0]) if row else None

    def items(self) -> dict[str, ToMItem]:
        """Every stored item, by id."""
        rows = self.conn.execute("SELECT item_id, json FROM tom_items ORDER BY rowid")
        return {r[0]: ToMItem.model_validate_json(r[1]) for r in rows}

    # -- runs ----------------------------------------------------------------------------

    def ensure_run(self, run: RunInfo, config: dict[str, Any]) -> bool:
        """Create the run if new; returns True when it already existed."""
        existing = self.conn.execute(
            "SELECT run_id FROM tom_runs WHERE run_id=?", (run.run_id,)
        ).fetchone()
        if existing:
            return True
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO tom_runs VALUES (?,?,?,?,?,?,?,?)",
                (
                    run.run_id,
                    run.model,
                    run.condition,
                    run.teacher,
                    run.seed,
                    run.prompt_version,
                    json.dumps(config, sort_keys=True),
                    time.time(),
                ),
            )
        return False

    def runs(self) -> list[RunInfo]:
        """All stored runs, oldest first."""
        rows = self.conn.execute(
            "SELECT run_id, model, condition, teacher, seed, prompt_version FROM tom_runs "
            "ORDER BY created_at"
        ).fetchall()
        return [RunInfo(*row) for row in rows]

    def answered_ids(self, run_id: str) -> set[str]:
        """Ids of the items a run has answered (multiple-choice and open)."""
        rows = self.conn.execute(
            "SELECT item_id FROM tom_answers WHERE run_id=? "
            "UNION SELECT item_id FROM tom_open_answers WHERE run_id=?",
            (run_id, run_id),
        ).fetchall()
        return {r[0] for r in rows}

    # -- answers -------------------------------------------------------------------------

    def put_answer(self, answer: AnswerRow) -> None:
        """Store one answer (committed at once, so an interrupted run can resume)."""
        self.put_answers([answer])

    def put_answers(self, answers: Sequence[AnswerRow]) -> None:
        """Store answers in one transaction."""
        now = time.time()
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO tom_answers VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(*_answer_values(a), now) for a in answers],
            )

    def answers(self, run_id: str | None = None) -> list[AnswerRow]:
        """Stored answers, of one run or of all."""
        query = (
            "SELECT run_id, item_id, permutation, letters, gold_letter, choice, chosen_index, "
            "correct, parsed, path, raw, probs, call_id FROM tom_answers"
        )
        params: tuple[str, ...] = ()
        if run_id is not None:
            query += " WHERE run_id=?"
            params = (run_id,)
        return [_answer_row(r) for r in self.conn.execute(query + " ORDER BY rowid", params)]

    def run_configs(self) -> dict[str, RunConfig]:
        """The :class:`RunConfig` of every run, by run id."""
        configs = {}
        for run_id, raw in self.conn.execute("SELECT run_id, config_json FROM tom_runs"):
            data = json.loads(raw)
            configs[run_id] = RunConfig(
                history=data.get("history") or "window",
                respondent=data.get("respondent"),
                circular=bool(data.get("circular")),
            )
        return configs

    def scored_answers(self) -> list[ScoredAnswer]:
        """Every multiple-choice answer joined with its run and item (the input of the stats)."""
        rows = self.conn.execute(
            "SELECT a.run_id, r.model, r.condition, a.item_id, i.parent_id, i.task, i.variant, "
            "i.domain, i.attribute, i.n_options, i.history_turns, i.source, a.correct, a.parsed, "
            "r.seed, a.chosen_index FROM tom_answers a JOIN tom_runs r ON r.run_id = a.run_id "
            "JOIN tom_items i ON i.item_id = a.item_id"
        ).fetchall()
        configs = self.run_configs()
        rotations = self._rotation_outcomes()
        answers = []
        for r in rows:
            config = configs.get(r[0], RunConfig())
            circular = None
            if config.circular:
                others = rotations.get((r[0], r[3]))
                circular = None if others is None else bool(r[12]) and others
            columns = list(r[:12])
            columns[7] = Domain(columns[7]).value  # an older store's "PFG" reads as "PD"
            answers.append(
                ScoredAnswer(
                    *columns,  # type: ignore[misc]
                    correct=bool(r[12]),
                    parsed=bool(r[13]),
                    seed=int(r[14]),
                    respondent=config.respondent,
                    history=config.history,
                    circular=circular,
                    chosen_index=r[15],
                )
            )
        return answers

    def _rotation_outcomes(self) -> dict[tuple[str, str], bool]:
        """(run id, item id) -> whether every stored rotation of the item was answered right."""
        rows = self.conn.execute(
            "SELECT run_id, item_id, MIN(correct) FROM tom_rotations GROUP BY run_id, item_id"
        )
        return {(r[0], r[1]): bool(r[2]) for r in rows}

    def choice_records(self) -> list[tuple[str, str, str | None, str]]:
        """(model, condition, chosen letter, gold letter) of every asked order, rotations too."""
        query = (
            "SELECT r.model, r.condition, a.choice, a.gold_letter FROM {} a "
            "JOIN tom_runs r ON r.run_id = a.run_id"
        )
        rows = self.conn.execute(query.format("tom_answers")).fetchall()
        rows += self.conn.execute(query.format("tom_rotations")).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    # -- circular evaluation -------------------------------------------------------------

    def put_rotations(self, answers: Sequence[AnswerRow]) -> None:
        """Store the answers to rotations 1, 2, ... of one item's options, all at once.

        An item's rotations are stored together or not at all, so an item in
        :meth:`rotated_ids` has every rotation.
        """
        now = time.time()
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO tom_rotations VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (a.run_id, a.item_id, k, *_answer_values(a)[2:], now)
                    for k, a in enumerate(answers, start=1)
                ],
            )

    def mark_circular(self, run_id: str) -> None:
        """Record in a run's config that it is asked circularly (its rotations are stored)."""
        row = self.conn.execute(
            "SELECT config_json FROM tom_runs WHERE run_id=?", (run_id,)
        ).fetchone()
        config = json.loads(row[0])
        if not config.get("circular"):
            config["circular"] = True
            with self.transaction() as conn:
                conn.execute(
                    "UPDATE tom_runs SET config_json=? WHERE run_id=?",
                    (json.dumps(config, sort_keys=True), run_id),
                )

    def rotations(self, run_id: str | None = None) -> list[tuple[int, AnswerRow]]:
        """Stored (rotation, answer) pairs of the other rotations, of one run or of all."""
        query = (
            "SELECT rotation, run_id, item_id, permutation, letters, gold_letter, choice, "
            "chosen_index, correct, parsed, path, raw, probs, call_id FROM tom_rotations"
        )
        params: tuple[str, ...] = ()
        if run_id is not None:
            query += " WHERE run_id=?"
            params = (run_id,)
        rows = self.conn.execute(query + " ORDER BY rowid", params).fetchall()
        return [(int(r[0]), _answer_row(r[1:])) for r in rows]

    def rotated_ids(self, run_id: str) -> set[str]:
        """Ids of the items of a run that have their other rotations stored."""
        rows = self.conn.execute(
            "SELECT DISTINCT item_id FROM tom_rotations WHERE run_id=?", (run_id,)
        )
        return {r[0] for r in rows}

    # -- people's answers ----------------------------------------------------------------

    def put_people(
        self, runs: Sequence[tuple[RunInfo, dict[str, Any]]], answers: Sequence[AnswerRow]
    ) -> None:
        """Store imported runs and answers of people in one transaction (all or nothing).

        Raises:
            InputError: A run already has answers (a sheet imported twice).
        """
        for run, config in runs:
            if self.answered_ids(run.run_id):
                raise InputError(
                    f"{run.model} respondent {config.get('respondent')!r} (seed {run.seed}) "
                    f"already has answers in {self.path}; nothing imported"
                )
        now = time.time()
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO tom_runs VALUES (?,?,?,?,?,?,?,?)",
                [(*run, json.dumps(config, sort_keys=True), now) for run, config in runs],
            )
            conn.executemany(
                "INSERT INTO tom_answers VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(*_answer_values(a), now) for a in answers],
            )

    # -- open-ended ----------------------------------------------------------------------

    def put_open_answer(self, run_id: str, item_id: str, text: str, call_id: str) -> None:
        """Store one open-ended answer."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO tom_open_answers VALUES (?,?,?,?,?)",
                (run_id, item_id, text, call_id, time.time()),
            )

    def open_answers(self) -> list[tuple[str, str, str]]:
        """(run id, item id, text) of every open-ended answer."""
        rows = self.conn.execute(
            "SELECT run_id, item_id, text FROM tom_open_answers ORDER BY rowid"
        ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def put_open_score(self, row: OpenScoreRow) -> None:
        """Store (or replace) the scores of one open-ended answer."""
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO tom_open_scores VALUES (?,?,?,?,?,?,?,?,?,?)", row)

    def open_scores(self) -> list[tuple[str, str, str, OpenScoreRow]]:
        """(model, condition, domain, scores) of every scored open-ended answer."""
        rows = self.conn.execute(
            "SELECT r.model, r.condition, i.domain, s.* FROM tom_open_scores s "
            "JOIN tom_runs r ON r.run_id = s.run_id JOIN tom_items i ON i.item_id = s.item_id"
        ).fetchall()
        return [(r[0], r[1], Domain(r[2]).value, OpenScoreRow(*r[3:])) for r in rows]

    def scored_open_ids(self) -> set[tuple[str, str]]:
        """(run id, item id) pairs that already have scores."""
        return {
            (r[0], r[1]) for r in self.conn.execute("SELECT run_id, item_id FROM tom_open_scores")
        }

    # -- teacher reasoning ---------------------------------------------------------------

    def put_reasoning(
        self, teacher: str, item_id: str, seed: int, raw: str, masked: str, call_id: str
    ) -> None:
        """Store a teacher's reasoning for one item, raw and masked."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO tom_reasoning VALUES (?,?,?,?,?,?,?)",
                (teacher, item_id, seed, raw, masked, call_id, time.time()),
            )

    def raw_reasoning(self, teacher: str, seed: int) -> dict[str, str]:
        """Unmasked reasoning of a teacher, by item id."""
        rows = self.conn.execute(
            "SELECT item_id, raw FROM tom_reasoning WHERE teacher=? AND seed=?", (teacher, seed)
        ).fetchall()
        return {r[0]: r[1] for r in rows}

    def put_mask(
        self, teacher: str, item_id: str, seed: int, masker: str, masked: str, path: str,
        call_id: str,
    ) -> None:  # fmt: skip
        """Store a teacher's reasoning as one masker masked it, with the masking path."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO tom_reasoning_masks VALUES (?,?,?,?,?,?,?,?)",
                (teacher, item_id, seed, masker, masked, path, call_id, time.time()),
            )

    def masks(self, teacher: str, seed: int, masker: str) -> dict[str, tuple[str, str]]:
        """(masked text, masking path) of a teacher's reasoning masked by ``masker``, by item."""
        rows = self.conn.execute(
            "SELECT item_id, masked, path FROM tom_reasoning_masks "
            "WHERE teacher=? AND seed=? AND masker=?",
            (teacher, seed, masker),
        ).fetchall()
        return {r[0]: (r[1], r[2]) for r in rows}

    def reasoning(self, teacher: str, seed: int) -> dict[str, str]:
        """Masked reasoning of a teacher (regular-expression masking), by item id."""
        rows = self.conn.execute(
            "SELECT item_id, masked FROM tom_reasoning WHERE teacher=? AND seed=?", (teacher, seed)
        ).fetchall()
        return {r[0]: r[1] for r in rows}


def _answer_values(a: AnswerRow) -> tuple[Any, ...]:
    """An answer as the columns of ``tom_answers`` (without ``created_at``)."""
    return (
        a.run_id,
        a.item_id,
        json.dumps(a.permutation),
        json.dumps(a.letters),
        a.gold_letter,
        a.choice,
        a.chosen_index,
        int(a.correct),
        int(a.parsed),
        a.path,
        a.raw,
        json.dumps(a.probs),
        a.call_id,
    )


def _answer_row(r: Sequence[Any]) -> AnswerRow:
    return AnswerRow(
        run_id=r[0],
        item_id=r[1],
        permutation=json.loads(r[2]),
        letters=json.loads(r[3]),
        gold_letter=r[4],
        choice=r[5],
        chosen_index=r[6],
        correct=bool(r[7]),
        parsed=bool(r[8]),
        path=r[9],
        raw=r[10],
        probs=json.loads(r[11]),
        call_id=r[12],
    )


def _item_row(item: ToMItem) -> tuple[Any, ...]:
    return (
        item.id,
        item.content_hash(),
        item.task.value,
        item.variant.value,
        item.domain.value,
        item.attribute.value if item.attribute else None,
        item.n_options,
        item.provenance.source.value,
        item.provenance.parent_id,
        item.history_turns,
        item.model_dump_json(),
    )


def open_store(path: Path, *, must_exist: bool = False, read_only: bool = False) -> ToMStore:
    """Open (or create) a DialToM database; ``must_exist`` makes a missing file an error and
    ``read_only`` opens an existing one without ever writing to it."""
    if (must_exist or read_only) and not path.is_file():
        raise InputError(f"database {path} does not exist")
    return ToMStore(path, read_only=read_only)
