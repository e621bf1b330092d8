"""Reading an arena run back from the store, ready for tables and plots.

Each finished conversation's metrics and GoodOutcome (an LLM verdict) are read from the metrics
table, where they were stored when the conversation finished; its states are read from its
stored turns for the trajectories. Under a non-default empty-state policy, or for a finished
conversation without stored metrics (or with metrics over another number of states than its
turns hold), the metrics are computed from those states by the function that stored them
(``arena.scoring.stored_metrics``), so the report reproduces every column from the store alone.
Conversations that ended in an infrastructure error, and unfinished ones, are left out and
counted; conversations that ended in an agent failure are kept (scored) and counted per arm.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import NamedTuple

from cogwm import tasks
from cogwm.arena.scoring import stored_metrics
from cogwm.arena.termination import ConversationStatus, FailureOrigin, Phase
from cogwm.errors import InputError
from cogwm.metrics.text import malformed_utterance
from cogwm.metrics.trajectory import EmptyPolicy
from cogwm.models.spec import runs_on_base_of
from cogwm.schema import CognitiveState
from cogwm.store.db import CallTotals, ConversationRow, RunRow, RunStore, TurnRow
from cogwm.tasks.catalog import BUILTIN_CATALOG, TaskCatalog


class ConversationData(NamedTuple):
    """One finished conversation with its trajectory and metrics."""

    id: int
    task: str
    agent: str
    condition: str
    scenario: str
    termination: str
    rounds: int
    states: list[CognitiveState]
    metrics: dict[str, float | None]
    go: bool | None
    failure_kind: str | None = None
    trial: int = 0
    user_turns: int = 0  # the simulated user's turns (not the cold start's real ones)
    malformed_turns: int = 0  # of those, the ones no person could have said (see below)

    @property
    def arm(self) -> str:
        """The agent x condition the conversation belongs to."""
        return arm_name(self.agent, self.condition)

    @property
    def scenario_key(self) -> str:
        """The scenario across tasks (bootstrap unit, shared by all arms)."""
        return f"{self.task}:{self.scenario}"


class RunData(NamedTuple):
    """A run's finished conversations and what was left out."""

    run: RunRow
    conversations: list[ConversationData]
    errors: Counter[str]
    unfinished: Counter[str]
    same_model_agents: list[str]
    calls: CallTotals
    empty: EmptyPolicy
    agent_failures: Counter[str]
    #: Agents on the model the simulator is a fine-tuned copy of (its LoRA's base).
    base_model_agents: list[str]
    #: The run's tasks (built-ins plus those it read from files, as it stored them); put it in
    #: force (``catalog.active()``) around code that looks the run's tasks up by name.
    catalog: TaskCatalog = BUILTIN_CATALOG


def arm_name(agent: str, condition: str) -> str:
    """``agent/condition``."""
    return f"{agent}/{condition}"


def states_of(turns: list[TurnRow]) -> list[CognitiveState]:
    """The trajectory's states: the initial state, then each simulated user turn's."""
    return [
        CognitiveState.model_validate_json(t.state_json)
        for t in turns
        if t.role == "user" and t.state_json is not None
    ]


def load_run(store: RunStore, *, empty: EmptyPolicy | str = EmptyPolicy.ZERO) -> RunData:
    """Read the run in ``store``.

    Raises:
        InputError: The store holds no run.
    """
    run = store.run()
    if run is None:
        raise InputError(f"{store.path} holds no run")
    catalog = run_catalog(run)
    with catalog.active():
        return _load(store, run, EmptyPolicy(empty), catalog)


def run_catalog(run: RunRow) -> TaskCatalog:
    """The tasks of ``run``: a run on a task read from a file carries the task (and the labels
    it adds to the lexicon), so its reports need no file."""
    return TaskCatalog.from_recorded(json.loads(run.config_json).get("task_files", {}))


def _load(store: RunStore, run: RunRow, policy: EmptyPolicy, catalog: TaskCatalog) -> RunData:
    rows = store.conversations(run.id)
    turns = store.all_turns(run.id)
    stored = store.metrics(run.id)
    errors: Counter[str] = Counter()
    unfinished: Counter[str] = Counter()
    agent_failures: Counter[str] = Counter()
    kept: list[ConversationData] = []
    for row in rows:
        arm = arm_name(row.agent, row.condition)
        if row.status == ConversationStatus.FAILED:
            errors[arm] += 1
        elif row.status != ConversationStatus.FINISHED:
            unfinished[arm] += 1
        else:
            if row.failure_kind == FailureOrigin.AGENT:
                agent_failures[arm] += 1
            kept.append(_conversation(row, turns.get(row.id, []), stored.get(row.id, {}), policy))
    same = sorted({r.agent for r in rows if r.agent_model == r.simulator_model})
    on_base = sorted({r.agent for r in rows if runs_on_base_of(r.agent_model, r.simulator_model)})
    calls = store.call_totals(run.id)
    return RunData(
        run, kept, errors, unfinished, same, calls, policy, agent_failures, on_base, catalog
    )


def _conversation(
    row: ConversationRow,
    turns: list[TurnRow],
    stored: dict[str, float | None],
    policy: EmptyPolicy,
) -> ConversationData:
    states = states_of(turns)
    go = stored.get("go")
    said = simulated_user_texts(turns)
    return ConversationData(
        id=row.id,
        task=row.task,
        agent=row.agent,
        condition=row.condition,
        scenario=row.scenario,
        termination=row.termination or "",
        rounds=row.rounds or 0,
        states=states,
        metrics=stored_metrics(stored, states, tasks.get(row.task), policy),
        go=None if go is None else bool(go),
        failure_kind=row.failure_kind,
        trial=row.trial,
        user_turns=len(said),
        malformed_turns=sum(malformed_utterance(text) is not None for text in said),
    )


def simulated_user_texts(turns: list[TurnRow]) -> list[str]:
    """What the simulated user said, turn by turn (the cold start's turns are real people's)."""
    return [t.text for t in turns if t.role == "user" and t.phase == Phase.SIMULATED]
