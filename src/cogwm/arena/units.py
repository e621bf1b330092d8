"""Units of a run: one conversation each (task, scenario, agent, condition), and shards."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from cogwm.arena.config import AgentConfig, ArenaConfig
from cogwm.arena.scenarios import Scenario, select_scenarios
from cogwm.arena.termination import Condition
from cogwm.arena.transcript import derive_seed
from cogwm.errors import ConfigError


class Shard(NamedTuple):
    """Part ``part`` (1-based) of ``parts`` equal parts of a run."""

    part: int
    parts: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/4"`` -> ``Shard(2, 4)``; a ``ConfigError`` for anything else."""
        left, sep, right = text.partition("/")
        try:
            shard = cls(int(left), int(right))
        except ValueError:
            shard = None
        if not sep or shard is None or not 1 <= shard.part <= shard.parts:
            raise ConfigError(f"--shard: expected i/n with 1 <= i <= n, got {text!r}")
        return shard

    def __str__(self) -> str:
        return f"{self.part}/{self.parts}"


class Unit(NamedTuple):
    """One conversation to run: task, scenario, agent, condition and trial (repeat index)."""

    task: str
    scenario: Scenario
    agent: AgentConfig
    condition: Condition
    trial: int = 0

    @property
    def key(self) -> str:
        """Stable identity of the unit in the store (trial 0 keeps the format-1 key)."""
        key = f"{self.task}|{self.scenario.id}|{self.agent.name}|{self.condition.value}"
        return key if self.trial == 0 else f"{key}|t{self.trial}"

    def seed(self, run_seed: int) -> int:
        """The agent's seed, from (run seed, task, scenario, agent, condition, trial)."""
        trial = () if self.trial == 0 else (self.trial,)
        return derive_seed(
            run_seed, self.task, self.scenario.id, self.agent.name, self.condition, *trial
        )

    def user_seed(self, run_seed: int) -> int:
        """The seed of the simulated user's side (user, intent detector, judge) under paired
        seeds: from (run seed, task, scenario, trial) only, the same for every agent."""
        return derive_seed(run_seed, self.task, self.scenario.id, "user", self.trial)

    def seeds(self, config: ArenaConfig) -> tuple[int, int]:
        """``(agent seed, user seed)``; without ``paired_seeds`` the user's follows the agent's."""
        agent = self.seed(config.seed)
        return agent, self.user_seed(config.seed) if config.paired_seeds else agent


def plan_units(config: ArenaConfig, scenarios: dict[str, list[Scenario]]) -> list[Unit]:
    """Every unit of the config, in a fixed order (task, scenario, trial, agent, condition)."""
    return [
        Unit(task, scenario, agent, condition, trial)
        for task in config.tasks
        for scenario in scenarios[task]
        for trial in range(config.trials)
        for agent in config.agents
        for condition in agent.conditions
    ]


def shard_units(units: list[Unit], shard: Shard | None) -> list[Unit]:
    """The units of one shard: every ``parts``-th unit, starting at ``part - 1``."""
    if shard is None:
        return units
    return units[shard.part - 1 :: shard.parts]


def planned_units(config: ArenaConfig, shard: Shard | None = None) -> list[Unit]:
    """The units of ``config`` (of one shard), with their scenarios selected."""
    data_dir = Path(config.data_dir) if config.data_dir else None
    scenarios = {
        task: select_scenarios(
            config.catalog.get(task),
            config.dialogues_per_task,
            config.scenarios,
            data_dir=data_dir,
            seed=config.seed,
            split=config.scenario_split,
            split_seed=config.scenario_split_seed,
        )
        for task in config.tasks
    }
    return shard_units(plan_units(config, scenarios), shard)
