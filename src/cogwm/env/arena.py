"""One arena conversation as a reinforcement-learning environment (Gymnasium's conventions).

``reset(seed, options) -> (observation, info)`` starts a conversation from a scenario's cold
start; ``step(reply) -> (observation, reward, terminated, truncated, info)`` plays the agent's
reply and the simulated user's answer. The observation is the user's utterance (a dict with the
state too when ``reveal_state``); the user's state is always in ``info["state"]``.

Reward: ``r_t = s_t - s_{t-1}``, the change in the task's composite score of the user's state
(``s_0`` is the state read from the cold start), so an episode's return is the
arena's Δ for the same conversation. ``info["components"]`` holds the state's parts (emotion
valence and the B/D/I values) and ``info["composite"]`` is ``s_t``. With
``good_outcome_bonus``, the judge's GoodOutcome verdict at the end adds that bonus (an
unparsed verdict adds nothing and is None in ``info["good_outcome"]``).

Termination: the user leaving or the intent detector's verdict (from ``intent_from_round``)
ends the episode (``terminated``); the round limit truncates it (``truncated``). Seeds follow
the arena's derivation, so ``reset(seed=run_seed, options={"scenario": id})`` meets the same
simulated user as a paired-seed arena run with that seed (trial 0).

``gymnasium`` is not required: observations are text, which its spaces do not describe, and
the interface follows its ``Env`` API so its wrappers' conventions carry over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Self

from cogwm import tasks
from cogwm.arena.cast import Cast, Judge
from cogwm.arena.config import ArenaConfig, ModelConfig, SimulatorConfig, deterministic
from cogwm.arena.conversation import Conversation, Limits
from cogwm.arena.participants import IntentDetector, SimulatorParticipant
from cogwm.arena.prompts import agent_task_prompt
from cogwm.arena.scenarios import COLD_START_ROUNDS, Scenario, builtin_scenarios, select_scenarios
from cogwm.arena.scoring import user_states
from cogwm.arena.transcript import ArenaTurn, derive_seed
from cogwm.errors import ConfigError, InputError
from cogwm.metrics.trajectory import composite_series
from cogwm.models import Model, load
from cogwm.schema import BDI, CognitiveState, Role, TaskSpec

Observation = str | dict[str, Any]


class Step(NamedTuple):
    """What ``step`` returns (Gymnasium's five-tuple)."""

    observation: Observation
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


class AsyncArenaEnv:
    """One conversation at a time with the simulated user; ``await`` its ``reset`` and ``step``.

    Args:
        task: The task (its weights define the reward): a name, a task file or a spec.
        simulator: The user simulator (a model address or its config).
        intent_detector: Default: the simulator's model at temperature 0.
        judge: The GoodOutcome judge (used only with ``good_outcome_bonus``).
        scenarios: The scenarios episodes start from (default: the task's built-in ones).
        max_rounds: Rounds in all, cold start included (the episode is truncated there).
        intent_from_round: First round after which the intent detector runs.
        history_turns: Turns of history the simulator sees.
        seed: The base seed of episodes reset without one.
        agent_prompt: Text added to the task's system prompt in ``info["messages"]``.
        good_outcome_bonus: Added to the last reward when the judge says the goal was reached.
        reveal_state: Observations carry the user's state as well as the utterance.
        load_model: How model addresses become models.
    """

    def __init__(
        self,
        task: str | TaskSpec,
        simulator: str | ModelConfig,
        *,
        intent_detector: ModelConfig | None = None,
        judge: ModelConfig | None = None,
        scenarios: Sequence[Scenario] | None = None,
        max_rounds: int = 20,
        intent_from_round: int = 8,
        history_turns: int = 8,
        seed: int = 0,
        agent_prompt: str = "",
        good_outcome_bonus: float | None = None,
        reveal_state: bool = False,
        load_model: Callable[..., Model] = load,
    ):
        self.task: TaskSpec = task if isinstance(task, TaskSpec) else tasks.get(task)
        self.task.require_weights()
        sim = SimulatorConfig(model=simulator) if isinstance(simulator, str) else simulator
        if isinstance(sim, SimulatorConfig) and sim.python is not None:
            raise ConfigError("the environment needs a model simulator, not a python simulator")
        self.simulator_config = sim
        self.intent_config = intent_detector or _model_of(deterministic(sim, max_tokens=16))
        self.judge_config = judge or _model_of(deterministic(sim, max_tokens=300))
        self.scenarios = list(
            scenarios if scenarios is not None else builtin_scenarios(self.task.name)
        )
        if not self.scenarios:
            raise ConfigError(f"task {self.task.name} has no scenarios: pass scenarios=")
        if max_rounds <= COLD_START_ROUNDS:
            raise ConfigError(f"max_rounds must exceed the {COLD_START_ROUNDS} cold-start rounds")
        self.max_rounds = max_rounds
        self.intent_from_round = intent_from_round
        self.history_turns = history_turns
        self.seed = seed
        self.good_outcome_bonus = good_outcome_bonus
        self.reveal_state = reveal_state
        self._system = "\n".join(p for p in (agent_task_prompt(self.task).text, agent_prompt) if p)
        self._models: dict[str, Model] = {}
        self._load = load_model
        self._episodes = 0
        self._conversation: Conversation | None = None

    @classmethod
    def from_config(cls, config: ArenaConfig, task: str | None = None, **kwargs: Any) -> Self:
        """An environment with an arena config's simulator, detector, judge, limits, seed and
        scenarios (the config's agents play no part)."""
        name = task or config.tasks[0]
        spec = config.catalog.get(name)
        scenarios = select_scenarios(
            spec,
            config.dialogues_per_task,
            config.scenarios,
            data_dir=None if config.data_dir is None else Path(config.data_dir),
            seed=config.seed,
            split=config.scenario_split,
            split_seed=config.scenario_split_seed,
        )
        return cls(
            spec,  # a task the config read from a file is known to the config alone
            config.simulator,
            intent_detector=config.intent_model,
            judge=config.judge_model,
            scenarios=scenarios,
            max_rounds=config.max_rounds,
            intent_from_round=config.intent_from_round,
            history_turns=config.simulator_window,
            seed=config.seed,
            **kwargs,
        )

    @property
    def turns(self) -> list[ArenaTurn]:
        """The episode's turns so far (none before the first ``reset``)."""
        return [] if self._conversation is None else self._conversation.turns

    @property
    def round(self) -> int:
        """Rounds completed in the episode, cold start included."""
        return 0 if self._conversation is None else self._conversation.round

    def _model(self, spec: ModelConfig) -> Model:
        if spec.model not in self._models:
            self._models[spec.model] = self._load(spec.model, **spec.options)
        return self._models[spec.model]

    # ------------------------------------------------------------------------------- the API

    async def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Start an episode: the scenario's cold start and the user's state after it.

        Args:
            seed: The episode's seed (as an arena run's seed); default: derived from the base
                seed and the episode count.
            options: ``scenario`` (an id or an index; default: drawn with the seed) and
                ``trial`` (as the arena's trials; default 0).
        """
        options = options or {}
        if seed is None:
            seed = derive_seed(self.seed, "episode", self._episodes)
        self._episodes += 1
        scenario = self._scenario(options.get("scenario"), seed)
        trial = int(options.get("trial", 0))
        self.scenario = scenario
        cast = self._cast(scenario)
        # The arena's derivations: the scenario's preparation, the user's side under paired seeds.
        opening = await cast.prepare(seed=derive_seed(seed, self.task.name, scenario.id))
        self.setup = opening.setup
        user_seed = derive_seed(seed, self.task.name, scenario.id, "user", trial)
        conversation = Conversation(cast, self._limits, seed=seed, user_seed=user_seed)
        turns = await conversation.start(opening)
        self._conversation = conversation
        self._scores = composite_series([opening.initial_state], self.task)
        info = self._info(opening.initial_state)
        return self._observation(turns[-1].text, opening.initial_state), info

    async def step(self, reply: str) -> Step:
        """Play the agent's ``reply`` and the user's answer.

        Raises:
            InputError: The episode is over (call ``reset``) or the reply is empty.
        """
        conversation = self._conversation
        if conversation is None or conversation.finished:
            raise InputError("the episode is over: call reset() first")
        played = await conversation.step(reply)
        said = played.turns[-1]
        states = user_states(conversation.turns)
        self._scores = composite_series(states, self.task)
        reward = self._scores[-1] - self._scores[-2]
        info = self._info(states[-1])
        info["termination"] = None if played.termination is None else played.termination.value
        info["reward_state"] = reward
        if played.termination is not None and self.good_outcome_bonus is not None:
            good = (await conversation.judge()).good
            info["good_outcome"] = good
            if good:
                reward += self.good_outcome_bonus
        return Step(
            self._observation(said.text, states[-1]),
            reward,
            played.termination is not None and not played.truncated,
            played.truncated,
            info,
        )

    async def aclose(self) -> None:
        """Release the models' clients."""
        for model in self._models.values():
            await model.aclose()

    # --------------------------------------------------------------------------- internals

    def _scenario(self, choice: Any, seed: int) -> Scenario:
        if choice is None:
            return self.scenarios[seed % len(self.scenarios)]
        if isinstance(choice, int):
            return self.scenarios[choice % len(self.scenarios)]
        found = next((s for s in self.scenarios if s.id == choice), None)
        if found is None:
            raise InputError(f"no scenario {choice!r} for task {self.task.name}")
        return found

    @property
    def _limits(self) -> Limits:
        # The detector never runs before the first simulated round, however early it is set.
        return Limits(
            max_rounds=self.max_rounds,
            intent_from_round=max(self.intent_from_round, COLD_START_ROUNDS + 1),
        )

    def _cast(self, scenario: Scenario) -> Cast:
        """The user's side of an episode on ``scenario`` (the agent's replies come from outside;
        the judge's model is loaded only when a verdict is asked)."""
        judge = self.judge_config
        return Cast(
            scenario=scenario,
            simulator=SimulatorParticipant(
                self._model(self.simulator_config),
                self.simulator_config,
                self.task,
                history_turns=self.history_turns,
            ),
            detector=IntentDetector(self._model(self.intent_config), self.intent_config, self.task),
            judge=lambda: Judge(self._model(judge), judge, self.task),
        )

    def _observation(self, text: str, state: CognitiveState) -> Observation:
        if self.reveal_state:
            return {"utterance": text, "state": state.model_dump(mode="json", exclude_none=True)}
        return text

    def _info(self, state: CognitiveState) -> dict[str, Any]:
        components: dict[str, float | None] = {
            "emotion": None if state.emotion is None else state.emotion.valence
        }
        for dim in BDI:
            components[str(dim)] = state.dimension_value(dim)
        return {
            "task": self.task.name,
            "scenario": self.scenario.id,
            "round": self.round,
            "state": state.model_dump(mode="json", exclude_none=True),
            "composite": self._scores[-1],
            "components": components,
            "messages": self.messages(),
        }

    def messages(self) -> list[dict[str, str]]:
        """The chat so far as the agent sees it (OpenAI format): the task's system prompt, the
        user's turns as ``user``, the agent's as ``assistant``."""
        chat = [{"role": "system", "content": self._system}]
        chat += [
            {"role": "assistant" if t.role is Role.AGENT else "user", "content": t.text}
            for t in self.turns
        ]
        return chat


def _model_of(config: ModelConfig | None) -> ModelConfig:
    if config is None:  # ruled out above: the environment refuses a python simulator
        raise ConfigError("the environment needs a model simulator, not a python simulator")
    return config


class ArenaEnv:
    """The synchronous environment (Gymnasium's ``reset``/``step``/``close``) over an
    ``AsyncArenaEnv``; takes the same arguments."""

    def __init__(self, *args: Any, **kwargs: Any):
        self.env = AsyncArenaEnv(*args, **kwargs)
        self._loop = asyncio.new_event_loop()

    @classmethod
    def from_config(cls, config: ArenaConfig, task: str | None = None, **kwargs: Any) -> ArenaEnv:
        """See ``AsyncArenaEnv.from_config``."""
        env = cls.__new__(cls)
        env.env = AsyncArenaEnv.from_config(config, task, **kwargs)
        env._loop = asyncio.new_event_loop()
        return env

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """See ``AsyncArenaEnv.reset``."""
        return self._loop.run_until_complete(self.env.reset(seed=seed, options=options))

    def step(self, reply: str) -> Step:
        """See ``AsyncArenaEnv.step``."""
        return self._loop.run_until_complete(self.env.step(reply))

    def close(self) -> None:
        """Release the models and the event loop."""
        if not self._loop.is_closed():
            self._loop.run_until_complete(self.env.aclose())
            self._loop.close()


async def reset_all(
    envs: Sequence[AsyncArenaEnv],
    *,
    seeds: Sequence[int | None] | None = None,
    options: Sequence[dict[str, Any] | None] | None = None,
) -> list[tuple[Observation, dict[str, Any]]]:
    """Reset many environments concurrently (a trainer's batch)."""
    seeds = seeds or [None] * len(envs)
    options = options or [None] * len(envs)
    return list(
        await asyncio.gather(
            *(e.reset(seed=s, options=o) for e, s, o in zip(envs, seeds, options, strict=True))
        )
    )


async def step_all(envs: Sequence[AsyncArenaEnv], replies: Sequence[str]) -> list[Step]:
    """Step many environments concurrently, one reply each."""
    return list(await asyncio.gather(*(e.step(r) for e, r in zip(envs, replies, strict=True))))


class Episode(NamedTuple):
    """A finished episode: its return, rewards and how it ended."""

    scenario: str
    rewards: list[float]
    termination: str
    good_outcome: bool | None

    @property
    def ret(self) -> float:
        """The (undiscounted) return."""
        return sum(self.rewards)


Policy = Callable[[list[dict[str, str]], int], Awaitable[str]]


async def rollout(
    env: AsyncArenaEnv,
    policy: Policy,
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
) -> Episode:
    """Play one episode with ``policy(messages, seed) -> reply`` (messages: ``info["messages"]``).

    The policy's seed per round is derived from the episode's seed, as the arena derives the
    agent's.
    """
    _, info = await env.reset(seed=seed, options=options)
    rewards: list[float] = []
    base = derive_seed(seed if seed is not None else env.seed, "agent", info["scenario"])
    while True:
        reply = await policy(info["messages"], derive_seed(base, env.round + 1))
        step = await env.step(reply)
        rewards.append(step.reward)
        info = step.info
        if step.terminated or step.truncated:
            return Episode(info["scenario"], rewards, info["termination"], info.get("good_outcome"))
