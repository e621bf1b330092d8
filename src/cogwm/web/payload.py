"""What the HTML report shows of an arena run, as JSON-ready records.

The tables come from the report layer (``cogwm.report``); the transcripts are read from the
store directly, because the report keeps only finished conversations and the viewer shows every
conversation (failed and unfinished ones with their error). Columns that older stores lack
(``failure_kind``, ``trial``) read as None.
"""

from __future__ import annotations

import json
from typing import Any

from cogwm import tasks
from cogwm.arena.run_data import RunData, arm_name
from cogwm.errors import CogwmError
from cogwm.metrics.trajectory import EmptyPolicy, composite_series
from cogwm.report.tables import PLAY_KIND
from cogwm.schema import CognitiveState, StateItem
from cogwm.store.db import ConversationRow, RunStore, TurnRow

#: Digits kept for numbers in the inlined data (the page shows at most three).
DIGITS = 4


def is_play_config(config: Any) -> bool:
    """Whether a run's stored config is a play store's (people playing the agent)."""
    return isinstance(config, dict) and config.get("kind") == PLAY_KIND


def rounded(value: float | None) -> float | None:
    """``value`` rounded for the page (None stays None)."""
    return None if value is None else round(float(value), DIGITS)


def _items(items: list[StateItem]) -> list[list[Any]]:
    return [[i.text, rounded(i.score), i.evidence] for i in items]


def state_record(state: CognitiveState) -> dict[str, Any]:
    """A state as the page draws it: emotion [label, intensity, valence, evidence] and B/D/I."""
    record: dict[str, Any] = {
        "e": None
        if state.emotion is None
        else [
            state.emotion.label,
            state.emotion.intensity,
            rounded(state.emotion.valence),
            state.emotion.evidence,
        ],
        "b": _items(state.beliefs),
        "d": _items(state.desires),
        "i": _items(state.intentions),
    }
    return record


def composite_or_none(
    states: list[CognitiveState], task: str, empty: EmptyPolicy
) -> list[float | None]:
    """``s_t`` per state, or all None where it is undefined (no emotion, a task without weights)."""
    try:
        return [rounded(v) for v in composite_series(states, tasks.get(task), empty)]
    except CogwmError:
        return [None] * len(states)


def failure_kind(row: ConversationRow) -> str | None:
    """The stored failure kind (agent, infrastructure), None where the store has no such column."""
    value = getattr(row, "failure_kind", None)
    return None if value is None else str(value)


def trial(row: ConversationRow) -> int | None:
    """The stored trial number, None where the store has no such column."""
    value = getattr(row, "trial", None)
    return None if value is None else int(value)


def conversation_record(
    row: ConversationRow,
    turns: list[TurnRow],
    metrics: dict[str, float | None],
    go: float | None,
    empty: EmptyPolicy,
) -> dict[str, Any]:
    """One conversation with its turns, states and ``s_t`` series."""
    states: list[CognitiveState] = []
    rendered: list[list[Any]] = []
    for turn in turns:
        state = None
        if turn.role == "user" and turn.state_json is not None:
            parsed = CognitiveState.model_validate_json(turn.state_json)
            states.append(parsed)
            state = state_record(parsed)
        rendered.append(
            [
                turn.role,
                turn.phase,
                turn.round,
                turn.text,
                state,
                turn.reasoning,
            ]
        )
    series = composite_or_none(states, row.task, empty)
    # Each state carries its own s_t so the transcript can show it beside the turn.
    k = 0
    for entry in rendered:
        if entry[4] is not None:
            entry[4]["s"] = series[k]
            k += 1
    return {
        "id": row.id,
        "task": row.task,
        "agent": row.agent,
        "condition": row.condition,
        "arm": arm_name(row.agent, row.condition),
        "scenario": row.scenario,
        "source": row.scenario_source,
        "trial": trial(row),
        "status": row.status,
        "termination": row.termination or row.status,
        "failure_kind": failure_kind(row),
        "error": row.error,
        "rounds": row.rounds,
        "agent_model": row.agent_model,
        "simulator_model": row.simulator_model,
        "metrics": {k: rounded(v) for k, v in metrics.items()},
        "go": None if go is None else bool(go),
        "s": series,
        "turns": rendered,
    }


def conversation_records(store: RunStore, data: RunData) -> list[dict[str, Any]]:
    """Every conversation of the run in id order (finished ones with their metrics)."""
    finished = {c.id: c for c in data.conversations}
    stored = store.metrics(data.run.id)
    all_turns = store.all_turns(data.run.id)
    records = []
    for row in store.conversations(data.run.id):
        mine = finished.get(row.id)
        records.append(
            conversation_record(
                row,
                all_turns.get(row.id, []),
                mine.metrics if mine is not None else {},
                stored.get(row.id, {}).get("go"),
                data.empty,
            )
        )
    return records


def run_meta(data: RunData) -> dict[str, Any]:
    """The run's provenance: name, config, hash, revision, packages."""
    run = data.run
    return {
        "name": run.name,
        "config_hash": run.config_hash,
        "git_revision": run.git_revision,
        "seed": run.seed,
        "created_at": run.created_at,
        "config": json.loads(run.config_json),
        "packages": json.loads(run.packages_json),
    }
