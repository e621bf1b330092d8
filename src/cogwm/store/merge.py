"""Merging the stores of a sharded run into one."""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

from cogwm.errors import ConfigError, InputError
from cogwm.store.db import ConversationRow, RunStore

_FINISHED = "finished"


class MergeSummary(NamedTuple):
    """What a merge copied."""

    shards: int
    conversations: int
    duplicates: int
    unfinished: int
    missing: tuple[str, ...] = ()  # shards ('2/4') of the run that were not given


def missing_shards(labels: list[str | None]) -> tuple[str, ...]:
    """The shards (``i/n``) of a sharded run that ``labels`` (the stores' shard fields) lack.

    Shard ``i/n`` holds every ``n``-th unit from the ``i``-th, so shards of different ``n`` may
    together cover the run (``1/3`` is ``1/6`` and ``4/6``): coverage is counted in units modulo
    the least common multiple ``m`` of the ``n`` given, and what is missing is named as ``i/m``.
    """
    parsed = [tuple(int(x) for x in label.split("/")) for label in labels if label]
    if not parsed:
        return ()
    period = math.lcm(*(n for _, n in parsed))
    covered = {r for i, n in parsed for r in range(i - 1, period, n)}
    return tuple(f"{r + 1}/{period}" for r in range(period) if r not in covered)


def merge_stores(out: Path, shards: list[Path]) -> MergeSummary:
    """Copy the runs in ``shards`` into a new store at ``out``.

    The shards must hold the same config (same config hash). A unit present in several shards is
    copied once, preferring a finished copy. The merged run has no shard, so ``--resume`` on it
    runs whatever is still missing.

    Raises:
        InputError: ``out`` exists, a shard is missing or empty.
        ConfigError: The shards were run with different configs.
    """
    if out.exists():
        raise InputError(f"{out} exists; merge into a new file")
    if not shards:
        raise InputError("no shard stores given")
    sources: list[RunStore] = []
    try:
        sources.extend(RunStore(path, read_only=True) for path in shards)
        runs = [s.run() for s in sources]
        for path, run in zip(shards, runs, strict=True):
            if run is None:
                raise InputError(f"{path} holds no run")
        hashes = {run.config_hash for run in runs if run is not None}
        if len(hashes) > 1:
            raise ConfigError(f"the shards were run with different configs ({len(hashes)} hashes)")
        with RunStore(out) as target:
            summary = _copy_all(target, sources)
        return summary._replace(missing=missing_shards([r.shard for r in runs if r is not None]))
    except BaseException:
        for leftover in (out, out.with_name(out.name + "-wal"), out.with_name(out.name + "-shm")):
            leftover.unlink(missing_ok=True)
        raise
    finally:
        for source in sources:
            source.close()


def _copy_all(target: RunStore, sources: list[RunStore]) -> MergeSummary:
    first = sources[0].run()
    assert first is not None
    with target.transaction():
        target.db.execute(
            "INSERT INTO runs (id, name, created_at, updated_at, config_json, config_hash,"
            " prompts_json, git_revision, packages_json, seed, shard)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
            first[:-1],
        )
        chosen = _choose(sources)
        for source in sources:
            _copy_preps(target, source, first.id)
        for source, row in chosen.values():
            _copy_conversation(target, source, row, first.id)
        _copy_run_calls(target, sources, first.id)
    total = sum(len(s.conversations()) for s in sources)
    unfinished = sum(1 for _, row in chosen.values() if row.status != _FINISHED)
    return MergeSummary(len(sources), len(chosen), total - len(chosen), unfinished)


def _choose(sources: list[RunStore]) -> dict[str, tuple[RunStore, ConversationRow]]:
    chosen: dict[str, tuple[RunStore, ConversationRow]] = {}
    for source in sources:
        for row in source.conversations():
            kept = chosen.get(row.unit_key)
            if kept is None or (kept[1].status != _FINISHED and row.status == _FINISHED):
                chosen[row.unit_key] = (source, row)
    return chosen


def _copy_preps(target: RunStore, source: RunStore, run_id: int) -> None:
    for prep in source.preps(_run_id(source)).values():
        target.add_prep(run_id, prep)


def _copy_conversation(
    target: RunStore, source: RunStore, row: ConversationRow, run_id: int
) -> None:
    columns = ConversationRow._fields[2:]
    cursor = target.db.execute(
        f"INSERT INTO conversations (run_id, {', '.join(columns)})"
        f" VALUES (?, {', '.join('?' for _ in columns)})",
        (run_id, *row[2:]),
    )
    new_id = int(cursor.lastrowid or 0)
    turns = source.db.execute(
        "SELECT idx, round, role, phase, text, state_json, reasoning, call_id FROM turns"
        " WHERE conversation_id = ? ORDER BY idx",
        (row.id,),
    ).fetchall()
    target.db.executemany(
        "INSERT INTO turns (conversation_id, idx, round, role, phase, text, state_json, reasoning,"
        " call_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(new_id, *t) for t in turns],
    )
    metrics = source.db.execute(
        "SELECT name, value, detail FROM metrics WHERE conversation_id = ?", (row.id,)
    ).fetchall()
    target.db.executemany(
        "INSERT INTO metrics (conversation_id, name, value, detail) VALUES (?, ?, ?, ?)",
        [(new_id, *m) for m in metrics],
    )
    _copy_calls(target, source, run_id, "conversation_id = ?", (row.id,), new_id)


_CALL_COLUMNS = (
    "call_id, purpose, model, endpoint, started_at, latency_s, prompt_tokens, completion_tokens,"
    " cost_usd, cached, ok, error, attempts"
)


def _copy_calls(
    target: RunStore,
    source: RunStore,
    run_id: int,
    where: str,
    args: tuple[object, ...],
    conversation_id: int | None,
) -> None:
    calls = source.db.execute(f"SELECT {_CALL_COLUMNS} FROM model_calls WHERE {where}", args)
    target.db.executemany(
        f"INSERT INTO model_calls (run_id, conversation_id, {_CALL_COLUMNS})"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(run_id, conversation_id, *c) for c in calls.fetchall()],
    )


def _copy_run_calls(target: RunStore, sources: list[RunStore], run_id: int) -> None:
    for source in sources:
        _copy_calls(target, source, run_id, "conversation_id IS NULL", (), None)


def _run_id(store: RunStore) -> int:
    run = store.run()
    if run is None:
        raise InputError(f"{store.path} holds no run")
    return run.id
