"""The participant protocol: the orchestrator plays any object with ``next_turn``, sync or async."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from cogwm import tasks
from cogwm.arena.orchestrator import Limits, Opening, Orchestrator
from cogwm.arena.protocol import AgentFailure, Participant, take_turn
from cogwm.arena.scenarios import builtin_scenarios
from cogwm.arena.termination import Termination
from cogwm.arena.transcript import ArenaTurn, TurnOutput, UserSetup
from cogwm.schema import CognitiveState, Emotion, Profile, Role

STATE = CognitiveState(emotion=Emotion(label="sadness", intensity=2))


class EchoAgent:
    """A synchronous agent: repeats the user's last words."""

    def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
        last = next(t.text for t in reversed(history) if t.role is Role.USER)
        return TurnOutput(text=f"you said: {last}")


class User:
    """An asynchronous scripted user that leaves at its third turn."""

    def __init__(self) -> None:
        self.setups: list[UserSetup] = []
        self.said = 0

    def for_user(self, setup: UserSetup) -> User:
        self.setups.append(setup)
        return self

    async def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
        self.said += 1
        return TurnOutput(text=f"user {self.said}", state=STATE, leave=self.said >= 3)


class NeverEnds:
    def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
        return TurnOutput(text="", leave=False)


class Sink:
    def __init__(self) -> None:
        self.turns: list[ArenaTurn] = []

    def add_turn(self, turn: ArenaTurn) -> None:
        self.turns.append(turn)


def _opening() -> Opening:
    scenario = builtin_scenarios("ESC")[0]
    return Opening(
        scenario=scenario,
        setup=UserSetup(context=scenario.context, profile=Profile.neutral()),
        initial_state=STATE,
    )


def _run(agent: Participant, user: User | None = None) -> tuple[Termination, list[ArenaTurn]]:
    user = user or User()
    limits = Limits(max_rounds=10, intent_from_round=4)
    outcome = asyncio.run(
        Orchestrator(agent, user, NeverEnds(), limits).run(_opening(), Sink(), seed=3)
    )
    return outcome.termination, outcome.turns


def test_plain_objects_play_a_conversation() -> None:
    user = User()
    termination, turns = _run(EchoAgent(), user)
    assert termination is Termination.USER_LEFT
    # The user is bound to the opening's setup once per conversation.
    assert [s.context for s in user.setups] == [_opening().setup.context]
    simulated = [t for t in turns if t.phase.value == "simulated"]
    assert [t.text for t in simulated if t.role is Role.USER] == ["user 1", "user 2", "user 3"]
    # The sync agent saw the history: it echoes the user turn before it.
    first_agent = simulated[0]
    assert first_agent.text == f"you said: {turns[first_agent.index - 1].text}"


def test_agent_failure_ends_as_the_agents_failure() -> None:
    class Silent:
        async def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
            raise AgentFailure("empty reply")

    termination, _ = _run(Silent())
    assert termination is Termination.AGENT_FAILURE


def test_take_turn_rejects_a_non_turn() -> None:
    class Wrong:
        def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> str:
            return "hello"

    with pytest.raises(TypeError, match="not a TurnOutput"):
        asyncio.run(take_turn(Wrong(), [], seed=0))  # type: ignore[arg-type]


def test_builtin_participants_satisfy_the_protocol() -> None:
    from cogwm.arena.config import AgentConfig, ModelConfig
    from cogwm.arena.participants import AgentParticipant, IntentDetector, SimulatorParticipant
    from cogwm.arena.prompts import AGENT_PERSONAS
    from cogwm.arena.termination import Condition
    from cogwm.models import load

    task = tasks.get("ESC")
    model = load("fake:schema")
    agent = AgentParticipant(
        model,
        AgentConfig(name="a", model="fake:schema"),
        task,
        AGENT_PERSONAS["plain"],
        Condition.NO_COT,
        history_turns=4,
    )
    simulator = SimulatorParticipant(model, ModelConfig(model="fake:schema"), task, history_turns=4)
    detector = IntentDetector(model, ModelConfig(model="fake:schema"), task)
    bound = simulator.for_user(_opening().setup)
    for participant in (agent, bound, detector):
        assert isinstance(participant, Participant)
    assert simulator.setup is None  # binding copies, the shared simulator stays unbound
