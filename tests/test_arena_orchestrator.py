"""The turn loop: cold start, round counting, termination reasons, CoT privacy, model failures."""

from __future__ import annotations

import asyncio

import pytest

from cogwm import tasks
from cogwm.arena.config import AgentConfig, ModelConfig, SimulatorConfig
from cogwm.arena.orchestrator import Limits, Opening, Orchestrator, Outcome
from cogwm.arena.participants import AgentParticipant, IntentDetector, SimulatorParticipant
from cogwm.arena.prompts import AGENT_PERSONAS
from cogwm.arena.scenarios import builtin_scenarios
from cogwm.arena.termination import Condition, Phase, Termination
from cogwm.arena.transcript import ArenaTurn, UserSetup
from cogwm.models import Model, load, unregister_fake
from cogwm.schema import CognitiveState, Emotion, Profile, Role
from helpers_arena import Script, register

NAME = "arena-orchestrator"
INITIAL = CognitiveState(emotion=Emotion(label="sadness", intensity=2))


class ListSink:
    def __init__(self) -> None:
        self.turns: list[ArenaTurn] = []

    def add_turn(self, turn: ArenaTurn) -> None:
        self.turns.append(turn)


def _play(
    script: Script,
    *,
    max_rounds: int = 6,
    intent_from_round: int = 4,
    condition: Condition = Condition.NO_COT,
    task_name: str = "ESC",
) -> tuple[Outcome, ListSink, Model]:
    register(script, name=NAME)
    try:
        model = load(f"fake:{NAME}", max_attempts=1)
        task = tasks.get(task_name)
        spec = f"fake:{NAME}"
        agent = AgentParticipant(
            model,
            AgentConfig(name="a", model=spec),
            task,
            AGENT_PERSONAS["empathetic"],
            condition,
            history_turns=20,
        )
        simulator = SimulatorParticipant(model, SimulatorConfig(model=spec), task, history_turns=20)
        detector = IntentDetector(model, ModelConfig(model=spec), task)
        scenario = builtin_scenarios(task_name)[0]
        opening = Opening(
            scenario=scenario,
            setup=UserSetup(context=scenario.context, profile=Profile.neutral()),
            initial_state=INITIAL,
            reading_call_id="opening-call",
        )
        sink = ListSink()
        limits = Limits(max_rounds=max_rounds, intent_from_round=intent_from_round)
        outcome = asyncio.run(
            Orchestrator(agent, simulator, detector, limits).run(opening, sink, seed=5)
        )
    finally:
        unregister_fake(NAME)
    return outcome, sink, model


def test_max_rounds_counts_the_cold_start() -> None:
    script = Script()
    outcome, sink, _ = _play(script, max_rounds=6, intent_from_round=4)
    assert outcome.termination is Termination.MAX_ROUNDS
    assert outcome.rounds == 6
    # ESC scenario 1 opens with a user greeting: U | A U | A U, then 4 simulated rounds.
    assert len(outcome.turns) == 5 + 2 * 4
    assert sink.turns == outcome.turns
    assert [t.index for t in sink.turns] == list(range(len(sink.turns)))
    assert [t.round for t in outcome.turns] == [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]
    assert [t.phase for t in outcome.turns[:5]] == [Phase.COLD_START] * 5
    assert all(t.phase is Phase.SIMULATED for t in outcome.turns[5:])
    # The initial state sits on the last cold-start user turn; every simulated user turn has one.
    assert outcome.turns[4].state == INITIAL and outcome.turns[4].call_id == "opening-call"
    assert all(t.state is not None for t in outcome.turns[5:] if t.role is Role.USER)
    assert all(t.state is None for t in outcome.turns if t.role is Role.AGENT)
    # The detector runs after rounds 4 and 5; at round 6 the limit ends the conversation anyway.
    assert script.calls["intent"] == 2
    assert script.calls["simulator"] == 4 and script.calls["agent"] == 4


def test_user_leaving_ends_the_conversation() -> None:
    outcome, _, _ = _play(Script(leave_at=2), max_rounds=10, intent_from_round=8)
    assert outcome.termination is Termination.USER_LEFT
    assert outcome.rounds == 4  # 2 cold-start rounds + 2 simulated
    assert outcome.turns[-1].role is Role.USER


def test_detector_starts_at_its_round() -> None:
    script = Script(detector_ends=True)
    outcome, _, _ = _play(script, max_rounds=20, intent_from_round=8)
    assert outcome.termination is Termination.NATURAL_END
    assert outcome.rounds == 8
    assert script.calls["intent"] == 1


def test_detector_never_runs_when_it_starts_at_the_limit() -> None:
    script = Script(detector_ends=True)
    outcome, _, _ = _play(script, max_rounds=5, intent_from_round=5)
    assert outcome.termination is Termination.MAX_ROUNDS
    assert "intent" not in script.calls


def test_cot_reasoning_is_stored_but_never_shown_to_the_user() -> None:
    outcome, _, model = _play(Script(), max_rounds=5, condition=Condition.COT)
    agent_turns = [t for t in outcome.turns if t.role is Role.AGENT and t.phase is Phase.SIMULATED]
    assert agent_turns and all(
        t.reasoning and t.reasoning.startswith("secret plan") for t in agent_turns
    )
    assert all(t.text.startswith("agent says") for t in agent_turns)
    backend = model.backend
    prompts = [m.content for r in backend.requests for m in r.messages]  # type: ignore[attr-defined]
    simulator_prompts = [p for p in prompts if "Give your new state" in p]
    assert simulator_prompts
    assert not any("secret plan" in p for p in simulator_prompts)


def test_model_failure_ends_in_error_with_turns_kept() -> None:
    # Every call that sees the first simulated agent reply fails: the simulator's first turn.
    outcome, sink, _ = _play(Script(fail_when="agent says"), max_rounds=6)
    assert outcome.termination is Termination.ERROR
    assert outcome.error and "500" in outcome.error
    assert [t.role for t in sink.turns[5:]] == [Role.AGENT]
    assert outcome.rounds == 3


@pytest.mark.parametrize("task_name", ["PD", "CR"])
def test_openings_that_start_with_the_agent(task_name: str) -> None:
    outcome, _, _ = _play(Script(), max_rounds=3, intent_from_round=3, task_name=task_name)
    # A U A U (cold start) + one simulated round.
    assert [t.round for t in outcome.turns] == [1, 1, 2, 2, 3, 3]
    assert outcome.turns[3].state == INITIAL
