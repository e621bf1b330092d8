"""Where a conversation starts: the scenario, the user and the state read from its opening.

The cast prepares an :class:`Opening`; the conversation lays it out as turns with
:func:`cold_start_turns`. Both sit below the cast and the conversation so that either can use them.
"""

from __future__ import annotations

from cogwm.arena.scenarios import Scenario
from cogwm.arena.termination import Phase
from cogwm.arena.transcript import ArenaTurn, UserSetup
from cogwm.schema import CognitiveState, Record, Role


class Opening(Record):
    """What a conversation starts from: scenario, user, and the state read from the opening."""

    scenario: Scenario
    setup: UserSetup
    initial_state: CognitiveState
    reading_call_id: str | None = None


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
