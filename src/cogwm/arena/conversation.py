"""One conversation between an agent and the simulated user, played round by round.

Counting: a round is an agent turn plus the user turn after it. Rounds 1-2 are copied from the
scenario (cold start); the simulated rounds follow; the intent detector runs after every round
from ``intent_from_round`` on (never at the last one); at most ``max_rounds`` rounds in all.

``Conversation`` is the only place that plays rounds. The arena runner lets the cast's own agent
speak (``run``); the reinforcement-learning environment and the play page pass the reply of an
agent from outside (``step(text)``) and read what the round did.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, NamedTuple, Protocol

from pydantic import Field

from cogwm.arena.judging import NOT_JUDGED, Verdict
from cogwm.arena.opening import Opening, cold_start_turns
from cogwm.arena.protocol import AgentFailure, Participant, take_turn
from cogwm.arena.scenarios import COLD_START_ROUNDS
from cogwm.arena.termination import Phase, Termination
from cogwm.arena.transcript import ArenaTurn, SeedSeries, TurnOutput, derive_seed
from cogwm.errors import InputError
from cogwm.models.types import ModelCallError, StructuredOutputError
from cogwm.schema import Record, Role

if TYPE_CHECKING:  # the cast module builds on this one (its openings, its turns)
    from cogwm.arena.cast import Cast


class TurnSink(Protocol):
    """Where turns go as they happen (the run store commits them)."""

    def add_turn(self, turn: ArenaTurn) -> Awaitable[None] | None:
        """Persist one turn; an awaitable result is awaited before the conversation goes on
        (the run store resolves it when the turn's transaction has committed)."""


class Limits(Record):
    """Round limits of the protocol."""

    max_rounds: int = Field(default=20, ge=COLD_START_ROUNDS + 1)
    intent_from_round: int = Field(
        default=8, ge=COLD_START_ROUNDS + 1, description="Beyond max_rounds: never runs."
    )

    def asks_intent(self, round_number: int) -> bool:
        """Whether the intent detector is asked after ``round_number`` (at the last round the
        limit ends the conversation anyway)."""
        return self.intent_from_round <= round_number < self.max_rounds


class Outcome(Record):
    """How a conversation ended."""

    termination: Termination
    rounds: int = Field(description="Rounds completed, cold start included.")
    turns: list[ArenaTurn]
    error: str | None = None


class RoundResult(Record):
    """What one round did."""

    round: int = Field(description="The round's number (cold start included).")
    turns: list[ArenaTurn] = Field(description="The round's new turns: agent, then user.")
    termination: Termination | None = Field(
        default=None, description="Why the conversation ended with this round; None: it goes on."
    )
    intent_asked: bool = Field(
        default=False, description="Whether the intent detector was asked after this round."
    )
    error: str | None = None

    @property
    def truncated(self) -> bool:
        """Whether the round limit (not the user, detector or agent) ended the conversation."""
        return self.termination is Termination.MAX_ROUNDS


class _Played(NamedTuple):
    """What one round did: the fields of its ``RoundResult`` (a plain tuple, made every round)."""

    turns: list[ArenaTurn]
    termination: Termination | None
    intent_asked: bool = False
    error: str | None = None


class Conversation:
    """One conversation of a cast, stepped round by round.

    Args:
        cast: Who takes part (the agent may be absent when every reply comes from outside).
        limits: The round limits.
        seed: The agent's seed; each agent call's seed is derived from it and the round.
        user_seed: The seed of the user's side (simulator, intent detector, judge); the same
            for every agent on a scenario and trial under common random numbers. Default:
            ``seed``.
        sink: Receives every turn as soon as it exists (awaited before the next model call).
            Without one, the caller stores what ``start`` and ``step`` return.
    """

    def __init__(
        self,
        cast: Cast,
        limits: Limits,
        *,
        seed: int,
        user_seed: int | None = None,
        sink: TurnSink | None = None,
    ):
        self.cast = cast
        self.limits = limits
        self.seed = seed
        self.user_seed = seed if user_seed is None else user_seed
        # Every round's agent and user seeds share a prefix: hashed once per conversation.
        self._agent_seeds = SeedSeries(self.seed, "agent")
        self._user_seeds = SeedSeries(self.user_seed, "user")
        self.sink = sink
        self.turns: list[ArenaTurn] = []
        self.round = 0
        self.termination: Termination | None = None
        self.error: str | None = None
        self._rounds = 0
        self._user: Participant | None = None

    @property
    def finished(self) -> bool:
        """Whether the conversation has ended."""
        return self.termination is not None

    async def start(self, opening: Opening) -> list[ArenaTurn]:
        """Bind the simulated user and play the cold start; returns its turns (the last carries
        the initial state). All of them go to the sink at once, each awaited before going on."""
        self._user = self.cast.simulator.for_user(opening.setup)
        self.turns = cold_start_turns(
            opening.scenario, opening.initial_state, opening.reading_call_id
        )
        if self.sink is not None:
            pending = [s for turn in self.turns if (s := self.sink.add_turn(turn)) is not None]
            for stored in pending:
                await stored
        self.round = self._rounds = COLD_START_ROUNDS
        return list(self.turns)

    async def step(self, agent_reply: str | None = None) -> RoundResult:
        """Play one round: the agent's turn, the user's, and the check whether it has ended.

        Args:
            agent_reply: The reply of an agent from outside; None lets the cast's agent speak.

        An agent that breaks its format or limits ends the conversation with ``AGENT_FAILURE``
        (its failure, scored). A model call that fails raises ``ModelCallError`` and leaves the
        conversation as it was before the round (turns already given to the sink stay there),
        so the round can be tried again.

        Raises:
            InputError: The conversation has not started or has ended, the reply is empty, or
                there is neither a reply nor an agent of the cast's own.
            ModelCallError: A model call failed for good.
        """
        number = self._next_round(agent_reply)
        played = await self._play_round(number, agent_reply)
        return RoundResult(
            round=number,
            turns=played.turns,
            termination=played.termination,
            intent_asked=played.intent_asked,
            error=played.error,
        )

    async def run(self, opening: Opening) -> Outcome:
        """Play the whole conversation with the cast's own agent; a model call that fails for
        good ends it with ``ERROR`` (the turns stored up to it are kept)."""
        await self.start(opening)
        self._next_round(None)  # its checks once: nothing in the loop changes what they check
        while self.termination is None:  # ``finished``, without a property call per round
            try:
                # The rounds of ``step`` without their RoundResult records, which nobody reads.
                await self._play_round(self.round + 1, None)
            except ModelCallError as exc:
                self._end(Termination.ERROR, rounds=self.round + 1, error=str(exc))
        return self.result()

    def result(self) -> Outcome:
        """How the conversation ended.

        Raises:
            InputError: It has not ended yet.
        """
        if self.termination is None:
            raise InputError("the conversation has not ended yet")
        return Outcome(
            termination=self.termination, rounds=self._rounds, turns=self.turns, error=self.error
        )

    async def judge(self) -> Verdict:
        """GoodOutcome of the conversation so far from the cast's judge (undefined, not asked,
        without one).

        Raises:
            ModelCallError: The judge's call failed for good.
        """
        if self.cast.judge is None:
            return Verdict(None, NOT_JUDGED, None)
        return await self.cast.judge().verdict(
            self.turns, seed=derive_seed(self.user_seed, "judge")
        )

    # ------------------------------------------------------------------------------ internals

    def _next_round(self, agent_reply: str | None) -> int:
        if self._user is None:
            raise InputError("the conversation has not started: call start() first")
        if self.finished:
            raise InputError("the conversation has ended")
        if agent_reply is None and self.cast.agent is None:
            raise InputError("this conversation has no agent of its own: pass the agent's reply")
        if agent_reply is not None and not agent_reply.strip():
            raise InputError("the agent's reply is empty")
        return self.round + 1

    async def _play_round(self, number: int, agent_reply: str | None) -> _Played:
        """Round ``number``; anything raised leaves the conversation as it was before it (the
        agent's turn changes nothing until it is appended)."""
        assert self._user is not None  # checked by _next_round
        try:
            reply = await self._agent_turn(number, agent_reply)
        except (StructuredOutputError, AgentFailure) as exc:
            # The agent broke its own output format or limits: its failure, not the arena's.
            self._end(Termination.AGENT_FAILURE, rounds=number - 1, error=f"agent output: {exc}")
            return _Played([], self.termination, error=self.error)
        before = len(self.turns)
        try:
            agent = await self._append(reply, Role.AGENT, number)
            said = await take_turn(self._user, self.turns, seed=self._user_seeds(number))
            user = await self._append(said, Role.USER, number)
            self.round = self._rounds = number
            asked = not said.leave and self.limits.asks_intent(number)
            termination = await self._detector_ending(number) if asked else self._ending(said)
        except BaseException:
            del self.turns[before:]
            self.round = self._rounds = number - 1
            raise
        if termination is not None:
            self._end(termination, rounds=number)
        return _Played([agent, user], termination, intent_asked=asked)

    async def _agent_turn(self, number: int, agent_reply: str | None) -> TurnOutput:
        if agent_reply is not None:
            return TurnOutput(text=agent_reply.strip())
        assert self.cast.agent is not None  # checked by _next_round
        return await take_turn(self.cast.agent, self.turns, seed=self._agent_seeds(number))

    def _ending(self, said: TurnOutput) -> Termination | None:
        """Why the conversation ends after the current round when the intent detector is not
        asked (None: it goes on)."""
        if said.leave:
            return Termination.USER_LEFT
        return Termination.MAX_ROUNDS if self.round >= self.limits.max_rounds else None

    async def _detector_ending(self, number: int) -> Termination | None:
        """The intent detector's verdict after round ``number``: ``NATURAL_END`` or None."""
        detector = self.cast.detector
        if detector is None:  # a config that never asks one has no detector
            raise RuntimeError("this conversation has no intent detector, yet it was asked")
        verdict = await take_turn(
            detector, self.turns, seed=derive_seed(self.user_seed, "intent", number)
        )
        return Termination.NATURAL_END if verdict.leave else None

    def _end(self, termination: Termination, *, rounds: int, error: str | None = None) -> None:
        self.termination = termination
        self._rounds = rounds
        self.error = error

    async def _append(self, output: TurnOutput, role: Role, round_number: int) -> ArenaTurn:
        turn = ArenaTurn(
            index=len(self.turns),
            round=round_number,
            role=role,
            phase=Phase.SIMULATED,
            text=output.text,
            state=output.state,
            reasoning=output.reasoning,
            call_id=output.call_id,
        )
        if self.sink is not None:
            stored = self.sink.add_turn(turn)
            if stored is not None:
                await stored  # the turn is committed before the next model call
        self.turns.append(turn)
        return turn
