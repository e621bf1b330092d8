"""Who takes part in one conversation: the agent, the simulated user, the intent detector, the
GoodOutcome judge and the profile annotator, made from an arena config in one place.

The judge and the annotator are made only when asked for (a model that no conversation needs
is never loaded); the agent may be absent when its replies come from outside (the
reinforcement-learning environment, the play page).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from cogwm.arena.agents import build_agent
from cogwm.arena.config import AgentConfig, ArenaConfig, ModelConfig
from cogwm.arena.judging import Verdict, conversation_verdict
from cogwm.arena.opening import Opening, cold_start_turns
from cogwm.arena.participants import IntentDetector, ProfileAnnotator, StateReading
from cogwm.arena.protocol import Participant, UserSimulator
from cogwm.arena.scenarios import Scenario
from cogwm.arena.simulators import build_simulator
from cogwm.arena.termination import Condition
from cogwm.arena.transcript import ArenaTurn, UserSetup, derive_seed
from cogwm.arena.windows import Windows, resolve_windows
from cogwm.errors import ConfigError
from cogwm.models import Model
from cogwm.schema import Profile, TaskSpec

#: Gives the ``Model`` of a model config (callers share one per address and options).
ModelFactory = Callable[[ModelConfig], Model]


@runtime_checkable
class StateReader(Protocol):
    """A simulated user that can read the user's state from the cold start."""

    async def read_state(
        self, setup: UserSetup, turns: Sequence[ArenaTurn], *, seed: int
    ) -> StateReading:
        """The user's state after the cold-start turns."""
        ...


class Judge:
    """The GoodOutcome judge of one task (see ``cogwm.arena.judging``)."""

    def __init__(self, model: Model, config: ModelConfig, task: TaskSpec):
        self.model = model
        self.config = config
        self.task = task

    async def verdict(self, turns: list[ArenaTurn], *, seed: int) -> Verdict:
        """The verdict on ``turns``.

        Raises:
            ModelCallError: The judge's call failed for good.
        """
        return await conversation_verdict(self.model, self.config, self.task, turns, seed=seed)


class Roles:
    """What every cast of one config shares, derived once: the agents' prompts, backends and
    windows, the user's window, and the models of detector, judge and annotator.

    Args:
        config: The run's config.
        windows: The history windows (default: resolved from the config).
    """

    def __init__(self, config: ArenaConfig, windows: Windows | None = None):
        windows = windows or resolve_windows(config)
        self.config = config
        self.prompts = config.agent_prompts()
        # Built once: a config's properties build a new ModelConfig on every access, and the
        # runner's model cache is fastest for the same config object.
        self.backends = {a.name: a.backend() for a in config.agents}
        self.agent_windows = {n: w.turns for n, w in windows.agents.items()}
        self.user_window = windows.simulator.turns
        self.intent = config.intent_model
        self.judge = config.judge_model if config.good_outcome else None
        self.annotator = config.annotator_model


@dataclass
class Cast:
    """The participants of one conversation on ``scenario``.

    ``judge`` and ``annotator`` give the role when called (None: the conversation has none).
    """

    scenario: Scenario
    simulator: UserSimulator
    agent: Participant | None = None
    detector: Participant | None = None
    judge: Callable[[], Judge] | None = None
    annotator: Callable[[], ProfileAnnotator] | None = None

    @classmethod
    def from_config(
        cls,
        config: ArenaConfig,
        task: TaskSpec,
        scenario: Scenario,
        *,
        model: ModelFactory,
        agent: AgentConfig | None = None,
        condition: Condition = Condition.NO_COT,
        roles: Roles | None = None,
    ) -> Cast:
        """The cast of ``config`` for a conversation of ``agent`` on ``scenario`` (without an
        agent: the user's side only, as a scenario's preparation needs).

        Args:
            config: The run's config.
            task: The conversation's task.
            scenario: The scenario.
            model: Gives the model of a model config.
            agent: The agent under test (None: no agent of the cast's own).
            condition: The agent's condition.
            roles: What the casts of this config share (default: derived now).
        """
        roles = roles or Roles(config)
        user = config.simulator
        simulator = build_simulator(
            user, task, model=lambda: model(user), history_turns=roles.user_window
        )
        return cls(
            scenario=scenario,
            simulator=simulator,
            agent=None if agent is None else _agent(roles, agent, task, condition, model),
            detector=_detector(roles.intent, task, model),
            judge=None if roles.judge is None else _judge(roles.judge, task, model),
            annotator=_annotator(config, roles.annotator, task, model),
        )

    async def profile(self, turns: list[ArenaTurn], *, seed: int) -> Profile:
        """The user's profile: the scenario's own, else the annotator's reading of the cold
        start, else the neutral profile."""
        if self.scenario.profile is not None:
            return self.scenario.profile
        if self.annotator is None:
            return Profile.neutral()
        return await self.annotator().annotate(turns, seed=seed)

    async def prepare(self, *, seed: int) -> Opening:
        """The scenario's opening: the user's profile and the state read from the cold start.

        Args:
            seed: The preparation's seed; the profile's and the reading's derive from it.

        Raises:
            TypeError: The simulated user cannot read a state.
        """
        if not isinstance(self.simulator, StateReader):
            raise TypeError(f"{type(self.simulator).__name__} cannot read the user's state")
        turns = cold_start_turns(self.scenario)
        profile = await self.profile(turns, seed=derive_seed(seed, "profile"))
        setup = UserSetup(context=self.scenario.context, profile=profile)
        reading = await self.simulator.read_state(setup, turns, seed=derive_seed(seed, "opening"))
        return Opening(
            scenario=self.scenario,
            setup=setup,
            initial_state=reading.state,
            reading_call_id=reading.call_id,
        )


def _agent(
    roles: Roles, agent: AgentConfig, task: TaskSpec, condition: Condition, model: ModelFactory
) -> Participant:
    backend = roles.backends[agent.name]
    return build_agent(
        agent,
        task,
        roles.prompts[agent.name],
        condition,
        history_turns=roles.agent_windows[agent.name],
        model=lambda: model(backend),
    )


def _detector(
    config: ModelConfig | None, task: TaskSpec, model: ModelFactory
) -> Participant | None:
    # None: the config never asks a detector (its validation rules out asking one otherwise).
    return None if config is None else IntentDetector(model(config), config, task)


def _judge(config: ModelConfig, task: TaskSpec, model: ModelFactory) -> Callable[[], Judge]:
    return lambda: Judge(model(config), config, task)


def _annotator(
    config: ArenaConfig, annotator: ModelConfig | None, task: TaskSpec, model: ModelFactory
) -> Callable[[], ProfileAnnotator] | None:
    if not config.annotate_profiles:
        return None

    def made() -> ProfileAnnotator:
        if annotator is None:  # the config's validation rules this out
            raise ConfigError("annotate_profiles needs a [profile_annotator]")
        return ProfileAnnotator(model(annotator), annotator, task)

    return made
