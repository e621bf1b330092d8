"""The arena's TOML configuration: validation, resolution of prompts, and the config hash.

Example (see ``examples/arena_esc.toml``)::

    seed = 7
    tasks = ["ESC"]
    dialogues_per_task = 20

    [simulator]
    model = "llamacpp:smollm2"
    temperature = 0.3

    [[agents]]
    name = "empathetic"
    model = "llamacpp:smollm2"
    prompt = "builtin:empathetic"
    conditions = ["no_cot", "cot"]
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cogwm import tasks
from cogwm.arena.prompts import Prompt, agent_task_prompt, fixed_prompts, resolve_agent_prompt
from cogwm.arena.scenarios import ScenarioSource
from cogwm.arena.termination import Condition
from cogwm.errors import CogwmError, ConfigError
from cogwm.models.types import Sampling

#: Backend options that never change a reply, so they stay out of the config hash.
_OPTIONS_OUTSIDE_HASH = frozenset(
    {
        "base_url",
        "timeout_s",
        "max_concurrency",
        "cache",
        "cache_path",
        "max_attempts",
        "backoff_base_s",
        "backoff_max_s",
        "cost_per_1k_prompt",
        "cost_per_1k_completion",
        # The fake backend's simulated latency and injected failures decide when and whether a
        # call fails, never what a reply says (a resume after an outage is the same config).
        "latency_s",
        "faults",
    }
)
#: Option names that would carry a secret: keys come from the environment, never the config.
_SECRET_WORDS = ("key", "token", "secret", "password")
#: Top-level keys that do not change results (not hashed).
_OUTSIDE_HASH = frozenset({"name", "concurrency", "data_dir", "cache"})


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Section):
    """A model address, its backend options and its sampling parameters."""

    model: str = Field(min_length=3, description="Model address, e.g. 'llamacpp:smollm2'.")
    options: dict[str, Any] = Field(
        default_factory=dict, description="Backend options passed to cogwm.models.load."
    )
    temperature: float = Field(default=0.0, ge=0.0)
    max_tokens: int = Field(default=256, ge=1)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    repeat_penalty: float | None = Field(default=None, gt=0.0)

    @field_validator("options")
    @classmethod
    def _no_secrets(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if any(word in name.lower() for word in _SECRET_WORDS):
                raise ValueError(
                    f"option {name!r} looks like a credential; API keys come from the "
                    "environment ($COGWM_API_KEY), never from the config"
                )
        return value

    def sampling(self, seed: int | None = None) -> Sampling:
        """The sampling parameters for one call."""
        return Sampling(
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            top_p=self.top_p,
            repeat_penalty=self.repeat_penalty,
            seed=seed,
        )

    def hashed(self) -> dict[str, Any]:
        """What of this model changes results.

        For ``openai:`` models the endpoints count (from ``base_url`` or ``$COGWM_BASE_URL``,
        without credentials): two servers may serve different weights under one model name.
        """
        data = self.model_dump(mode="json")
        data["options"] = {k: v for k, v in self.options.items() if k not in _OPTIONS_OUTSIDE_HASH}
        if self.model.startswith("openai:"):
            from cogwm.models.openai_api import base_urls, endpoint_label

            urls = base_urls(self.options.get("base_url"))
            data["endpoints"] = sorted(endpoint_label(u) for u in urls)
        return data


class SimulatorConfig(ModelConfig):
    """The user simulator (temperature 0.3 by default, as in the paper's protocol)."""

    temperature: float = Field(default=0.3, ge=0.0)
    max_tokens: int = Field(default=300, ge=1)


class AgentConfig(ModelConfig):
    """One agent under test."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    prompt: str = Field(default="builtin:plain", description="'builtin:<name>' or literal text.")
    conditions: list[Condition] = Field(default_factory=lambda: [Condition.NO_COT])
    temperature: float = Field(default=0.7, ge=0.0)
    max_tokens: int = Field(
        default=120, ge=1, description="The reply's budget, the same with and without CoT."
    )
    reasoning_max_tokens: int = Field(
        default=200, ge=1, description="The reasoning's own budget under CoT (on top)."
    )

    @model_validator(mode="before")
    @classmethod
    def _old_cot_budget(cls, data: Any) -> Any:
        # Format-1 configs gave one budget for reasoning and reply together.
        if isinstance(data, dict) and "cot_max_tokens" in data:
            data = dict(data)
            total = int(data.pop("cot_max_tokens"))
            reply = int(data.get("max_tokens", 120))
            data.setdefault("reasoning_max_tokens", max(1, total - reply))
        return data

    @field_validator("conditions")
    @classmethod
    def _conditions(cls, value: list[Condition]) -> list[Condition]:
        if not value:
            raise ValueError("at least one condition")
        if len(set(value)) != len(value):
            raise ValueError("conditions repeat")
        return value


class ArenaConfig(_Section):
    """A whole arena run."""

    name: str = "arena"
    seed: int = 0
    tasks: list[str] = Field(min_length=1)
    dialogues_per_task: int = Field(ge=1)
    max_rounds: int = Field(default=20, ge=3, description="Rounds in all, cold start included.")
    intent_from_round: int = Field(
        default=8,
        ge=3,
        description="First round after which the intent detector runs (beyond max_rounds: never).",
    )
    history_turns: int = Field(default=8, ge=2, description="Turns of history shown to models.")
    trials: int = Field(
        default=1,
        ge=1,
        description="Conversations per scenario and arm, each with its own seeds (pass^k).",
    )
    paired_seeds: bool = Field(
        default=True,
        description="Common random numbers: the simulated user's, intent detector's and judge's "
        "seeds depend on scenario and trial, never on the agent, so every agent meets the same "
        "user draws and paired differences lose that noise.",
    )
    concurrency: int = Field(default=16, ge=1, description="Conversations in flight.")
    scenarios: ScenarioSource = ScenarioSource.BUILTIN
    data_dir: str | None = None
    annotate_profiles: bool = Field(
        default=False,
        description="Ask the profile annotator when neither scenario nor corpus gives a profile "
        "(else the neutral default).",
    )
    cache: bool = Field(default=True, description="Cache model replies (resume replays them).")
    simulator: SimulatorConfig
    intent_detector: ModelConfig | None = None
    judge: ModelConfig | None = None
    profile_annotator: ModelConfig | None = None
    agents: list[AgentConfig] = Field(min_length=1)

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, value: list[str]) -> list[str]:
        names: list[str] = []
        for name in value:
            try:
                spec = tasks.get(name)
                # DAILY has no composite score and no GoodOutcome: it cannot be an arena task.
                spec.require_weights()
                spec.require_good_outcome()
            except CogwmError as exc:
                raise ValueError(str(exc)) from None
            names.append(spec.name)
        if len(set(names)) != len(names):
            raise ValueError("tasks repeat")
        return names

    @model_validator(mode="after")
    def _consistent(self) -> ArenaConfig:
        names = [a.name for a in self.agents]
        if len(set(names)) != len(names):
            raise ValueError("agents: names must be unique")
        return self

    @property
    def intent_model(self) -> ModelConfig:
        """The intent detector (default: the simulator's model at temperature 0)."""
        return self.intent_detector or _deterministic(self.simulator, max_tokens=16)

    @property
    def judge_model(self) -> ModelConfig:
        """The GoodOutcome judge (default: the simulator's model at temperature 0)."""
        return self.judge or _deterministic(self.simulator, max_tokens=300)

    @property
    def annotator_model(self) -> ModelConfig:
        """The profile annotator (default: the simulator's model at temperature 0)."""
        return self.profile_annotator or _deterministic(self.simulator, max_tokens=160)

    def agent_prompts(self) -> dict[str, Prompt]:
        """Each agent's own prompt, resolved (built-in personas or literal text)."""
        return {
            a.name: resolve_agent_prompt(a.prompt, key=f"agents.{i}.prompt")
            for i, a in enumerate(self.agents)
        }

    def prompts(self) -> list[Prompt]:
        """Every prompt text the run uses (stored with the run and hashed)."""
        from cogwm.arena.judging import judge_prompt

        return [*fixed_prompts(), judge_prompt(), *self.agent_prompts().values()]


def _deterministic(base: ModelConfig, *, max_tokens: int) -> ModelConfig:
    return ModelConfig(
        model=base.model, options=base.options, temperature=0.0, max_tokens=max_tokens
    )


def load_config(path: Path) -> ArenaConfig:
    """Read and validate a TOML config.

    Raises:
        ConfigError: One line naming the file and the offending key.
    """
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config {path}: file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {path}: not valid TOML: {exc}") from None
    return parse_config(raw, source=str(path))


def parse_config(raw: dict[str, Any], *, source: str = "config") -> ArenaConfig:
    """Validate a config mapping; errors become one-line ``ConfigError`` naming the key."""
    try:
        config = ArenaConfig.model_validate(raw)
        config.agent_prompts()  # unknown built-in prompt names fail here, with their key
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(top level)"
        message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
        raise ConfigError(f"{source}: {where}: {message}") from None
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    for task in config.tasks:
        agent_task_prompt(tasks.get(task))
    return config


def config_hash(config: ArenaConfig) -> str:
    """SHA-256 over what changes results: agents, models, prompts, tasks, counts, seed, sampling.

    Concurrency, paths, caching and display settings are left out, so changing them does not
    block ``--resume``.
    """
    return hashlib.sha256(_canonical(hashed_view(config)).encode("utf-8")).hexdigest()


def hashed_view(config: ArenaConfig) -> dict[str, Any]:
    """The part of the config that the hash covers (prompt texts resolved)."""
    data = {k: v for k, v in config.model_dump(mode="json").items() if k not in _OUTSIDE_HASH}
    data["simulator"] = config.simulator.hashed()
    data["intent_detector"] = config.intent_model.hashed()
    data["judge"] = config.judge_model.hashed()
    data["profile_annotator"] = config.annotator_model.hashed()
    data["agents"] = [a.hashed() for a in config.agents]
    data["prompts"] = [p.model_dump(mode="json") for p in config.prompts()]
    return data


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
