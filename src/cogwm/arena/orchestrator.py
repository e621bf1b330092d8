"""The turn loop of one conversation: cold start, agent and user turns, termination.

Counting (docs/architecture.md, "Arena"): a round is an agent turn plus the user turn after it.
Rounds 1-2 are copied from the scenario (cold start); the simulated rounds follow; the intent
detector runs after every round from ``intent_from_round`` on; at most ``max_rounds`` rounds in all.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

from pydantic import Field

from cogwm.arena.protocol import AgentFailure, Participant, UserSimulator, take_turn
from cogwm.arena.scenarios import COLD_START_ROUNDS, Scenario
from cogwm.arena.termination import Phase, Termination
from cogwm.arena.transcript import ArenaTurn, TurnOutput, UserSetup, derive_seed
from cogwm.models.types import ModelCallError, StructuredOutputError
from cogwm.schema import CognitiveState, Record, Role


class TurnSink(Protocol):
    """Where turns go as they happen (the run store commits them)."""

    def add_turn(self, turn: ArenaTurn) -> Awaitable[None] | None:
        """Persist one turn; an awaitable result is awaited before the conversation goes on
        (the run store resolves it when the turn's transaction has committed)."""


class Opening(Record):
    """What a conversation starts from: scenario, user, and the state read from the opening."""

    scenario: Scenario
    setup: UserSetup
    initial_state: CognitiveState
    reading_call_id: str | None = None


class Limits(Record):
    """Round limits of the protocol."""

    max_rounds: int = Field(default=20, ge=COLD_START_ROUNDS + 1)
    intent_from_round: int = Field(
        default=8, ge=COLD_START_ROUNDS + 1, description="Beyond max_rounds: never runs."
    )


class Outcome(Record):
    """How a conversation ended."""

    termination: Termination
    rounds: int = Field(description="Rounds completed, cold start included.")
    turns: list[ArenaTurn]
    error: str | None = None


def cold_start_turns(
    scenario: Scenario, initial_state: CognitiveState | None = None, call_id: str | None = None
) -> list[ArenaTurn]:
    """The scenario's opening as turns; the last (a user turn) carries the initial state."""
    turns: list[ArenaTurn] = []
    round_number = 0
    last = len(scenario.opening) - 1
    for index, turn in enumerate(scenario.opening):
        if turn.role is Role.AGENT:
            round_number += 1
        turns.append(
            ArenaTurn(
                index=index,
                round=round_number,
                role=turn.role,
                phase=Phase.COLD_START,
                text=turn.text,
                state=initial_state if index == last else None,
                call_id=call_id if index == last else None,
            )
        )
    return turns


class Orchestrator:
    """Runs one conversation between an agent and the simulated user.

    It knows its participants only through the ``Participant`` protocol: any agent (a model and
    prompt, an HTTP service, a Python object), any user simulator that binds to a user, any
    intent detector.
    """

    def __init__(
        self,
        agent: Participant,
        simulator: UserSimulator,
        detector: Participant,
        limits: Limits,
    ):
        self.agent = agent
        self.simulator = simulator
        self.detector = detector
        self.limits = limits

    async def run(
        self, opening: Opening, sink: TurnSink, *, seed: int, user_seed: int | None = None
    ) -> Outcome:
        """Play the conversation; a model call that fails for good ends it with ``ERROR``, an
        agent reply that breaks its format (after the repair attempt) with ``AGENT_FAILURE``.

        Args:
            opening: Scenario, user setup and initial state.
            sink: Receives every turn as soon as it exists.
            seed: The agent's seed; each agent call's seed is derived from it and its position.
            user_seed: The seed of the user's side (simulator, intent detector); the same for
                every agent on a scenario and trial under common random numbers. Default:
                ``seed``.
        """
        user = seed if user_seed is None else user_seed
        simulated = self.simulator.for_user(opening.setup)
        turns = cold_start_turns(opening.scenario, opening.initial_state, opening.reading_call_id)
        # All cold-start turns go into one group commit; each is awaited before going on.
        pending = [stored for turn in turns if (stored := sink.add_turn(turn)) is not None]
        for stored in pending:
            await stored
        round_number = COLD_START_ROUNDS
        try:
            while round_number < self.limits.max_rounds:
                round_number += 1
                try:
                    reply = await take_turn(
                        self.agent, turns, seed=derive_seed(seed, "agent", round_number)
                    )
                except (StructuredOutputError, AgentFailure) as exc:
                    # The agent broke its own output format or limits: its failure, not the
                    # arena's.
                    return Outcome(
                        termination=Termination.AGENT_FAILURE,
                        rounds=round_number - 1,
                        turns=turns,
                        error=f"agent output: {exc}",
                    )
                await self._append(turns, sink, reply, Role.AGENT, round_number)
                said = await take_turn(
                    simulated, turns, seed=derive_seed(user, "user", round_number)
                )
                await self._append(turns, sink, said, Role.USER, round_number)
                if said.leave:
                    return Outcome(
                        termination=Termination.USER_LEFT, rounds=round_number, turns=turns
                    )
                if await self._ended(turns, round_number, user):
                    return Outcome(
                        termination=Termination.NATURAL_END, rounds=round_number, turns=turns
                    )
        except ModelCallError as exc:
            return Outcome(
                termination=Termination.ERROR, rounds=round_number, turns=turns, error=str(exc)
            )
        return Outcome(termination=Termination.MAX_ROUNDS, rounds=round_number, turns=turns)

    async def _ended(self, turns: list[ArenaTurn], round_number: int, seed: int) -> bool:
        # At the last round the limit ends the conversation anyway; no detector call is needed.
        if round_number < self.limits.intent_from_round or round_number >= self.limits.max_rounds:
            return False
        verdict = await take_turn(
            self.detector, turns, seed=derive_seed(seed, "intent", round_number)
        )
        return verdict.leave

    @staticmethod
    async def _append(
        turns: list[ArenaTurn], sink: TurnSink, output: TurnOutput, role: Role, round_number: int
    ) -> None:
        turn = ArenaTurn(
            index=len(turns),
            round=round_number,
            role=role,
            phase=Phase.SIMULATED,
            text=output.text,
            state=output.state,
            reasoning=output.reasoning,
            call_id=output.call_id,
        )
        stored = sink.add_turn(turn)
        if stored is not None:
            await stored  # the turn is committed before the next model call
        turns.append(turn)
