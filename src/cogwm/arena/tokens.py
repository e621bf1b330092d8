"""Counting the tokens of an arena conversation's calls before it runs: the turns of the longest
conversation, the history each call shows and each call's fixed prompt. The spending estimate
(``cogwm.arena.budget``) and the history windows (``cogwm.arena.windows``) both count with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cogwm.arena.config import AgentConfig, ArenaConfig
from cogwm.arena.participants import (
    CHARS_PER_TOKEN,
    COT_OVERHEAD_TOKENS,
    UTTERANCE_CHARS,
    AgentParticipant,
)
from cogwm.arena.prompts import SIMULATOR_SYSTEM, SIMULATOR_TURN, Prompt
from cogwm.arena.scenarios import COLD_START_ROUNDS, OpeningTurn, Scenario
from cogwm.arena.termination import Condition

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]


def text_tokens(text: str) -> int:
    """At most how many tokens ``text`` takes (about four characters a token)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def user_turn_tokens(config: ArenaConfig) -> int:
    """At most how many tokens a simulated user turn adds to the history: its utterance, held
    to ``UTTERANCE_CHARS`` by the output schema (the state stays out of the history)."""
    return min(config.simulator.max_tokens, text_tokens("x" * UTTERANCE_CHARS))


def turn_tokens(
    config: ArenaConfig, agent: AgentConfig, opening: Sequence[OpeningTurn]
) -> list[int]:
    """Tokens of every turn of the longest conversation: the opening, then replies that use
    their whole budget (an agent's reply, never its reasoning, enters the history)."""
    rounds = config.max_rounds - COLD_START_ROUNDS
    replies = [agent.max_tokens, user_turn_tokens(config)]
    return [text_tokens(t.text) for t in opening] + replies * rounds


class HistoryTokens:
    """Tokens of every turn of the longest conversation (``turn_tokens``) with their running
    totals, so that the tokens of any stretch of history cost one subtraction: a conversation
    of n rounds makes about n calls, and summing each call's history afresh made the plan
    quadratic in ``max_rounds``. The calls of one conversation are asked at once (arrays)."""

    def __init__(self, turns: Sequence[int]) -> None:
        import numpy as np

        self.turns = list(turns)
        self._totals = np.concatenate(([0], np.cumsum(np.asarray(self.turns, dtype=np.int64))))

    def shown(self, seen: IntArray, limit: int | None) -> IntArray:
        """Tokens of the history each call shows: the last ``limit`` of its first ``seen``
        turns (``None``: all of them)."""
        import numpy as np

        seen = np.minimum(seen, len(self.turns))
        start = np.zeros_like(seen) if limit is None else np.maximum(0, seen - limit)
        shown: IntArray = self._totals[seen] - self._totals[start]
        return shown


def turns_seen(seen: range) -> IntArray:
    """``seen`` as an array of turn counts."""
    import numpy as np

    return np.arange(seen.start, seen.stop, seen.step, dtype=np.int64)


def agent_call_tokens(
    config: ArenaConfig, agent: AgentConfig, task: str, own_prompt: str, condition: Condition
) -> tuple[int, int]:
    """``(system prompt, reply budget)`` tokens of one call of a model or endpoint agent."""
    own = Prompt(id="own", version=1, text=own_prompt)
    system = text_tokens(AgentParticipant.system_text(config.catalog.get(task), own, condition))
    reply = agent.max_tokens
    if condition is Condition.COT:
        reply += agent.reasoning_max_tokens + COT_OVERHEAD_TOKENS
    return system, reply


def agent_turns_seen(config: ArenaConfig, opening: int) -> range:
    """How many turns the agent's calls of the longest conversation have seen, call by call."""
    return range(opening, opening + 2 * (config.max_rounds - COLD_START_ROUNDS), 2)


def simulator_fixed_tokens(scenario: Scenario) -> int:
    """Tokens of a simulated user turn's prompt besides the history."""
    return text_tokens(SIMULATOR_SYSTEM.text + SIMULATOR_TURN.text + scenario.context)
