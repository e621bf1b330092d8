"""The one interface every participant of an arena conversation implements.

The orchestrator talks to the agent under test, the simulated user and the intent detector only
through ``Participant.next_turn``: given the conversation so far (and a seed), the participant's
next turn. A participant may answer synchronously or return an awaitable; ``take_turn`` accepts
both, so a plain Python object can stand in for any of them.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Sequence
from typing import Protocol, runtime_checkable

from cogwm.arena.transcript import ArenaTurn, TurnOutput, UserSetup


@runtime_checkable
class Participant(Protocol):
    """Anything that takes a turn: ``next_turn(history, *, seed) -> TurnOutput`` (or an awaitable
    of one).

    ``history`` is every turn so far, oldest first (the participant windows it itself); ``seed``
    is derived from the unit's seed and the round, so a replay asks the same question.
    ``TurnOutput.text`` is the turn's text, ``leave`` ends the conversation (the user leaving, or
    the intent detector's verdict), ``state`` is the user's state (simulator only).
    """

    def next_turn(
        self, history: Sequence[ArenaTurn], *, seed: int
    ) -> TurnOutput | Awaitable[TurnOutput]:
        """The participant's next turn given the history."""
        ...


class UserSimulator(Protocol):
    """What the orchestrator needs of the simulated user: a participant for one user."""

    def for_user(self, setup: UserSetup) -> Participant:
        """The simulated user with this situation and profile, as a participant."""
        ...


class AgentFailure(Exception):
    """The agent under test failed on its own (an empty reply, one over its budget, a broken
    format): the conversation ends, is scored and counts against the agent."""


async def take_turn(
    participant: Participant, history: Sequence[ArenaTurn], *, seed: int
) -> TurnOutput:
    """Ask ``participant`` for its turn, awaiting the answer when it is awaitable."""
    answer = participant.next_turn(history, seed=seed)
    if inspect.isawaitable(answer):
        answer = await answer
    if not isinstance(answer, TurnOutput):
        raise TypeError(
            f"{type(participant).__name__}.next_turn returned {type(answer).__name__}, "
            "not a TurnOutput"
        )
    return answer
