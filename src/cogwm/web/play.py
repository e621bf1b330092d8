"""The wind tunnel: a person plays the agent against the cognitive user simulator.

A session takes a scenario's cold start, has the simulator read the initial state from it, then,
for every turn the person types, plays a round of the arena's ``Conversation`` with that turn as
the agent's reply. Every turn is committed to a run store as it happens, as a
conversation of agent ``human:<name>``, so the dialogue appears in reports like any agent's.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogwm import tasks
from cogwm.arena.cast import Cast
from cogwm.arena.config import ModelConfig
from cogwm.arena.conversation import Conversation, Limits
from cogwm.arena.participants import SimulatorParticipant
from cogwm.arena.scenarios import COLD_START_ROUNDS, Scenario, builtin_scenarios
from cogwm.arena.scoring import finished_metrics
from cogwm.arena.termination import Termination
from cogwm.arena.transcript import ArenaTurn
from cogwm.errors import InputError
from cogwm.metrics.trajectory import EmptyPolicy
from cogwm.models import Model
from cogwm.report.tables import PLAY_KIND
from cogwm.store import RunStore, UnitRow
from cogwm.web.payload import composite_or_none, state_record

#: A player's name: letters, digits, dot, dash, underscore.
NAME = re.compile(r"^[A-Za-z0-9._-]{1,40}$")
#: The longest agent turn accepted.
MAX_TEXT = 2000
#: Simulator sampling as in the arena's protocol.
SIMULATOR_TEMPERATURE = 0.3
SIMULATOR_MAX_TOKENS = 300
HISTORY_TURNS = 12


def play_run_id(store: RunStore) -> int:
    """The store's run, created as a ``play`` run when the store is empty."""
    run = store.run()
    if run is not None:
        return run.id
    return store.create_run(
        name="play",
        config={"kind": PLAY_KIND},
        config_hash="play",
        prompts=[],
        git_revision=None,
        packages={},
        seed=0,
        shard=None,
    )


def turn_json(turn: ArenaTurn, task: str, s_t: float | None) -> dict[str, Any]:
    """A turn as the page draws it (the report's transcript row)."""
    state = None
    if turn.state is not None:
        state = state_record(turn.state)
        state["s"] = s_t
    return {
        "row": [turn.role.value, turn.phase.value, turn.round, turn.text, state, turn.reasoning],
    }


@dataclass
class PlaySession:
    """One dialogue between a person (the agent) and the simulator."""

    id: str
    name: str
    task: str
    scenario: Scenario
    model_address: str
    conversation: Conversation
    store_path: Path
    max_rounds: int
    seed: int
    conversation_id: int = 0
    run_id: int = 0
    finished: str | None = None

    @property
    def turns(self) -> list[ArenaTurn]:
        """The dialogue's turns so far."""
        return self.conversation.turns

    @property
    def round(self) -> int:
        """Rounds completed (cold start included)."""
        return self.conversation.round

    def series(self) -> list[float | None]:
        """``s_t`` per state so far."""
        states = [t.state for t in self.turns if t.state is not None]
        return composite_or_none(states, self.task, EmptyPolicy.ZERO)

    def view(self) -> dict[str, Any]:
        """Everything the page shows: turns with states, the s_t series, whether it ended."""
        series = self.series()
        rows, k = [], 0
        for turn in self.turns:
            s_t = None
            if turn.state is not None:
                s_t, k = series[k], k + 1
            rows.append(turn_json(turn, self.task, s_t)["row"])
        return {
            "id": self.id,
            "conversation": self.conversation_id,
            "task": self.task,
            "scenario": self.scenario.id,
            "title": self.scenario.title,
            "round": self.round,
            "max_rounds": self.max_rounds,
            "turns": rows,
            "s": series,
            "finished": self.finished,
        }

    def _commit(self, turn: ArenaTurn) -> None:
        with RunStore(self.store_path) as store:
            store.add_turn(
                self.conversation_id,
                idx=turn.index,
                round=turn.round,
                role=turn.role.value,
                phase=turn.phase.value,
                text=turn.text,
                state_json=None
                if turn.state is None
                else turn.state.model_dump_json(exclude_none=True),
            )

    async def start(self) -> None:
        """Store the conversation, the cold start and the initial state read from it."""
        opening = await self.conversation.cast.prepare(seed=self.seed)
        with RunStore(self.store_path) as store:
            self.run_id = play_run_id(store)
            self.conversation_id = store.start_conversation(
                self.run_id,
                UnitRow(
                    unit_key=f"play:{self.id}",
                    task=self.task,
                    agent=f"human:{self.name}",
                    condition="no_cot",
                    scenario=self.scenario.id,
                    scenario_source=self.scenario.source,
                    agent_model="human",
                    simulator_model=self.model_address,
                    seed=self.seed,
                ),
            )
        for turn in await self.conversation.start(opening):
            self._commit(turn)

    async def say(self, text: str) -> None:
        """The person's turn, then the simulated user's reply with its state.

        Raises:
            InputError: The dialogue has ended, or the text is empty or too long.
        """
        if self.finished is not None:
            raise InputError("this dialogue has ended")
        text = text.strip()
        if not text or len(text) > MAX_TEXT:
            raise InputError(f"a turn needs 1 to {MAX_TEXT} characters")
        # The conversation has no sink: the round's turns are stored only once the user has
        # replied, so a failed simulator call leaves the dialogue as it was and the person can
        # try again.
        played = await self.conversation.step(text)
        for turn in played.turns:
            self._commit(turn)
        if played.termination is not None:
            self.finish(played.termination)

    def finish(self, termination: Termination = Termination.NATURAL_END) -> None:
        """Close the conversation in the store (a person ending it counts as a natural end)."""
        if self.finished is not None:
            return
        # Scored once, here, like an arena conversation: reports read the stored metrics.
        metrics = finished_metrics(self.turns, tasks.get(self.task))
        self.finished = termination.value
        with RunStore(self.store_path) as store:
            store.finish_conversation(
                self.conversation_id,
                status="finished",
                termination=termination.value,
                rounds=self.round,
                metrics=metrics,
            )


def find_scenario(task: str, scenario_id: str, extra: dict[str, list[Scenario]]) -> Scenario:
    """A scenario of ``task`` from the built-in ones or the corpus ones the server loaded.

    Raises:
        InputError: No such scenario (only listed scenarios can be played).
    """
    for scenario in (*builtin_scenarios(task), *extra.get(task, [])):
        if scenario.id == scenario_id:
            return scenario
    raise InputError(f"no scenario {scenario_id!r} for task {task}")


def new_session(
    *,
    name: str,
    task: str,
    scenario: Scenario,
    model: Model,
    model_address: str,
    store_path: Path,
    max_rounds: int = 20,
) -> PlaySession:
    """A session (call :meth:`PlaySession.start` next).

    Raises:
        InputError: A bad name or task.
    """
    if not NAME.match(name):
        raise InputError("a name has 1 to 40 letters, digits, '.', '-' or '_'")
    spec = tasks.get(task)
    config = ModelConfig(
        model=model_address, temperature=SIMULATOR_TEMPERATURE, max_tokens=SIMULATOR_MAX_TOKENS
    )
    simulator = SimulatorParticipant(model, config, spec, history_turns=HISTORY_TURNS)
    seed = int(time.time()) & 0x7FFFFFFF
    rounds = max(max_rounds, COLD_START_ROUNDS + 1)
    # No intent detector: the person ends the dialogue (or the user leaves, or the limit).
    limits = Limits(max_rounds=rounds, intent_from_round=rounds)
    conversation = Conversation(Cast(scenario=scenario, simulator=simulator), limits, seed=seed)
    return PlaySession(
        id=secrets.token_urlsafe(12),
        name=name,
        task=task,
        scenario=scenario,
        model_address=model_address,
        conversation=conversation,
        store_path=store_path,
        max_rounds=rounds,
        seed=seed,
    )
