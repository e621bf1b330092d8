"""The arena's TOML configuration: validation, resolution of prompts, and the config hash.

Example (see ``examples/arena_esc.toml``)::

    seed = 7
    tasks = ["ESC"]            # or a task file: ["examples/custom_task/task.toml"]
    dialogues_per_task = 20
    # scenarios = "my_dialogues.jsonl"   # cold starts from your own dialogues
    # scenarios = "corpus"; scenario_split = "test"   # the task corpus's clean test split
    # scenario_split_seed = 1   # the samples' --seed, where the simulator was built with another

    [simulator]
    model = "llamacpp:smollm2"
    temperature = 0.3
    history_turns = 8          # the window the world model is trained on (the default)

    [[agents]]
    name = "empathetic"
    model = "llamacpp:smollm2"
    prompt = "builtin:empathetic"
    conditions = ["no_cot", "cot"]
    # history_turns: default the whole conversation where it fits (see cogwm.arena.windows)
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from cogwm import tasks
from cogwm.arena.factories import import_factory, python_simulator, python_version
from cogwm.arena.prompts import (
    Prompt,
    agent_task_prompt,
    fixed_prompts,
    judge_prompt,
    resolve_agent_prompt,
)
from cogwm.arena.scenarios import ScenarioSource, ScenarioSplit
from cogwm.arena.termination import Condition
from cogwm.errors import CogwmError, ConfigError
from cogwm.limits import (
    MAX_CONCURRENCY,
    MAX_CONTEXT_TOKENS,
    MAX_DIALOGUES_PER_TASK,
    MAX_HISTORY_TURNS,
    MAX_REPLY_TOKENS,
    MAX_ROUNDS,
    MAX_TRIALS,
)
from cogwm.models.types import Sampling
from cogwm.tasks.catalog import BUILTIN_CATALOG, TaskCatalog

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
#: Agent fields of endpoint and Python agents (not part of a model agent's hash).
_OTHER_KIND_FIELDS = ("endpoint", "headers", "version", "python", "system_message", "cache")
#: Top-level keys that do not change results (not hashed).
_OUTSIDE_HASH = frozenset({"name", "concurrency", "data_dir", "cache"})


#: The model id each ``openai:`` endpoint reported, by (model name, endpoint label): asked once
#: per run (``cogwm.arena.digests.ask_served_models``) and handed to the hash, never read from
#: process state, so a config's hash is a function of the config and these answers alone.
ServedModels = Mapping[tuple[str, str], str]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Section):
    """A model address, its backend options and its sampling parameters."""

    model: str = Field(min_length=3, description="Model address, e.g. 'llamacpp:smollm2'.")
    options: dict[str, Any] = Field(
        default_factory=dict, description="Backend options passed to cogwm.models.load."
    )
    temperature: float = Field(default=0.0, ge=0.0)
    max_tokens: int = Field(default=256, ge=1, le=MAX_REPLY_TOKENS)
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

    def hashed(self, served: ServedModels | None = None) -> dict[str, Any]:
        """What of this model changes results.

        For ``openai:`` models the endpoints count (from ``base_url`` or ``$COGWM_BASE_URL``,
        without credentials): two servers may serve different weights under one model name. So
        does the model id each endpoint reported, from ``served`` (see
        ``cogwm.arena.digests.ask_served_models``): the same server restarted with other weights
        under the same name changes it.
        """
        data = self.model_dump(mode="json")
        data["options"] = {k: v for k, v in self.options.items() if k not in _OPTIONS_OUTSIDE_HASH}
        if self.model.startswith("openai:"):
            from cogwm.models.openai_api import base_urls, endpoint_label

            urls = base_urls(self.options.get("base_url"))
            data["endpoints"] = sorted(endpoint_label(u) for u in urls)
            name = self.model.removeprefix("openai:")
            known = served or {}
            reported = {e: known[name, e] for e in data["endpoints"] if (name, e) in known}
            if reported:  # only then: a digest made without a model list stays what it was
                data["served"] = reported
        return data


#: Turns of history the simulator sees by default: the window the world model is trained on
#: (``cogwm samples build --history-turns``).
DEFAULT_SIMULATOR_WINDOW = 8


class SimulatorConfig(ModelConfig):
    """The user simulator (temperature 0.3 by default, as in the paper's protocol): a model
    address, or ``python = "package.module:factory"`` for a simulator written in Python (see
    ``cogwm.arena.simulators``; its ``options`` are the factory's keyword arguments)."""

    model: str = Field(default="", description="Model address, e.g. 'llamacpp:smollm2-wm'.")
    python: str | None = Field(
        default=None,
        description="'package.module:factory' of a Python simulator, e.g. "
        "'cogwm.simulator.rule:SentimentMeter' (instead of a model).",
    )
    temperature: float = Field(default=0.3, ge=0.0)
    max_tokens: int = Field(default=300, ge=1, le=MAX_REPLY_TOKENS)
    history_turns: int | None = Field(
        default=None,
        ge=2,
        le=MAX_HISTORY_TURNS,
        description="Turns of history the simulator sees (default: the top-level history_turns "
        f"of older configs, else {DEFAULT_SIMULATOR_WINDOW}, the window the world model is "
        "trained on).",
    )
    context_tokens: int | None = Field(
        default=None,
        ge=64,
        le=MAX_CONTEXT_TOKENS,
        description="The simulator model's context in tokens (default: a llamacpp: model's "
        "n_ctx; unknown for other backends).",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> SimulatorConfig:
        if self.python is None:
            if len(self.model) < 3:
                raise ValueError("model: a model address is required (or give python)")
            return self
        if self.model:
            raise ValueError("model: a python simulator has no model")
        module, sep, attr = self.python.partition(":")
        if not sep or not module or not attr:
            raise ValueError(f"python: expected 'package.module:factory', got {self.python!r}")
        return self

    def label(self) -> str:
        """What the simulator is, for the store and reports."""
        return self.model if self.python is None else f"python:{self.python}"

    def hashed(self, served: ServedModels | None = None) -> dict[str, Any]:
        """As any model's, with the window fields when set; a Python simulator's import path,
        options and ``identity`` (built here)."""
        if self.python is None:
            data = _without_windows(super().hashed(served))
            data.pop("python", None)  # a model simulator's hash is what it always was
            return data
        data = _without_windows(self.model_dump(mode="json"))
        data["identity"] = python_simulator(self.python, dict(self.options)).identity
        return data


class AgentKind(StrEnum):
    """What an agent under test is."""

    MODEL = "model"  # a model address and a system prompt
    ENDPOINT = "endpoint"  # a service speaking OpenAI chat completions
    PYTHON = "python"  # a Python object implementing the participant protocol


class AgentConfig(ModelConfig):
    """One agent under test: a model and prompt, an HTTP endpoint, or a Python object.

    Exactly one of ``model`` (an address), ``endpoint`` (``http://host:port/v1``; ``model`` is
    then the model name sent to it) or ``python`` (``package.module:factory``) says which.
    """

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    model: str = Field(
        default="",
        description="Model address; with 'endpoint', the model name sent to the service.",
    )
    endpoint: str | None = Field(
        default=None, description="Base URL of an OpenAI-compatible chat service (the agent)."
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Endpoint agents: HTTP header -> environment variable holding its value.",
    )
    version: str | None = Field(
        default=None,
        description="Endpoint agents: the version the service reports (enters the digests).",
    )
    python: str | None = Field(
        default=None, description="'package.module:factory' of a Python agent."
    )
    system_message: bool = Field(
        default=True,
        description="Endpoint and Python agents: send the task's system prompt (and the own "
        "prompt) as a system message.",
    )
    cache: bool | None = Field(
        default=None,
        description="Cache this agent's replies (default: the run's setting for model agents, "
        "off for endpoint and Python agents, which may be stateful or random).",
    )
    prompt: str = Field(default="builtin:plain", description="'builtin:<name>' or literal text.")
    conditions: list[Condition] = Field(default_factory=lambda: [Condition.NO_COT])
    temperature: float = Field(default=0.7, ge=0.0)
    max_tokens: int = Field(
        default=120,
        ge=1,
        le=MAX_REPLY_TOKENS,
        description="The reply's budget, the same with and without CoT.",
    )
    reasoning_max_tokens: int = Field(
        default=200,
        ge=1,
        le=MAX_REPLY_TOKENS,
        description="The reasoning's own budget under CoT (on top).",
    )
    history_turns: int | None = Field(
        default=None,
        ge=2,
        le=MAX_HISTORY_TURNS,
        description="Model and endpoint agents: turns of history shown (default: the whole "
        "conversation when the longest one fits context_tokens, else the most whole turns "
        "that fit; see cogwm.arena.windows).",
    )
    context_tokens: int | None = Field(
        default=None,
        ge=64,
        le=MAX_CONTEXT_TOKENS,
        description="The agent model's context in tokens (default: a llamacpp: model's n_ctx; "
        "unknown for other backends, whose agents then see the whole conversation).",
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

    @field_validator("headers")
    @classmethod
    def _header_variables(cls, value: dict[str, str]) -> dict[str, str]:
        for header, variable in value.items():
            if not variable.isidentifier():
                # A value here would be a secret written into the config: only names allowed.
                raise ValueError(
                    f"header {header!r}: give the name of an environment variable, not a value"
                )
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> AgentConfig:
        # Messages start with the field they concern ("model: ..."): parse_config adds it to
        # the key it names.
        given = [k for k in ("endpoint", "python") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"{given[1]}: give one of model, endpoint or python")
        if not given and len(self.model) < 3:
            raise ValueError("model: a model address is required (or give endpoint or python)")
        if self.python is not None and self.model:
            raise ValueError("model: a python agent has no model")
        if given and self.conditions != [Condition.NO_COT]:
            raise ValueError(
                "conditions: endpoint and python agents run under the no_cot condition only"
            )
        if self.endpoint is not None:
            from cogwm.models.openai_api import base_urls

            try:
                (_,) = base_urls(self.endpoint)
            except (CogwmError, ValueError) as exc:
                raise ValueError(f"endpoint: {exc}") from None
        if self.python is not None:
            module, sep, attr = self.python.partition(":")
            if not sep or not module or not attr:
                raise ValueError(f"python: expected 'package.module:factory', got {self.python!r}")
        if self.headers and self.endpoint is None:
            raise ValueError("headers: headers apply to endpoint agents only")
        if self.python is not None:
            for key in WINDOW_FIELDS:
                if getattr(self, key) is not None:
                    # A Python agent is handed every turn; a window set here would do nothing.
                    raise ValueError(f"{key}: a python agent is handed the whole conversation")
        return self

    @property
    def kind(self) -> AgentKind:
        """Model, endpoint or Python agent."""
        if self.endpoint is not None:
            return AgentKind.ENDPOINT
        if self.python is not None:
            return AgentKind.PYTHON
        return AgentKind.MODEL

    def backend(self) -> ModelConfig:
        """The model the agent's calls go through (model and endpoint agents).

        An endpoint agent is an ``openai:`` model on its URL; its replies are not cached unless
        ``cache`` says so.
        """
        if self.endpoint is None:
            if self.cache is None:
                return self
            return self.model_copy(update={"options": {**self.options, "cache": self.cache}})
        options = {
            **self.options,
            "base_url": self.endpoint,
            "cache": bool(self.cache),
        }
        if self.headers:
            options["headers_env"] = dict(self.headers)
        return ModelConfig(
            model=f"openai:{self.model or 'agent'}",
            options=options,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            top_p=self.top_p,
            repeat_penalty=self.repeat_penalty,
        )

    def label(self) -> str:
        """What the agent is, for the store and reports (never a credential)."""
        if self.endpoint is not None:
            from cogwm.models.openai_api import endpoint_label

            named = f" {self.model}" if self.model else ""
            return f"endpoint:{endpoint_label(self.endpoint)}{named}"
        if self.python is not None:
            return f"python:{self.python}"
        return self.model

    def hashed(self, served: ServedModels | None = None) -> dict[str, Any]:
        """What of this agent changes results.

        A model agent: as any model. An endpoint agent: its URL (without credentials), model
        name, reported version and sampling; header names, never values. A Python agent: its
        import path and the factory's ``version`` attribute (imported here).
        """
        if self.kind is AgentKind.MODEL:
            data = _without_windows(super().hashed(served))
            # Fields of the other kinds stay out, so a model agent's hash is what it always was.
            for key in _OTHER_KIND_FIELDS:
                data.pop(key, None)
            return data
        data = self.model_dump(mode="json", exclude={"options", "endpoint", "headers", "cache"})
        data = _without_windows(data)
        if self.endpoint is not None:
            from cogwm.models.openai_api import endpoint_label

            data["endpoint"] = endpoint_label(self.endpoint)
            data["headers"] = sorted(self.headers)
        else:
            data["version"] = python_version(str(self.python))
        return data


class ArenaConfig(_Section):
    """A whole arena run."""

    name: str = "arena"
    seed: int = 0
    tasks: list[str] = Field(min_length=1)
    dialogues_per_task: int = Field(ge=1, le=MAX_DIALOGUES_PER_TASK)
    max_rounds: int = Field(
        default=20, ge=3, le=MAX_ROUNDS, description="Rounds in all, cold start included."
    )
    intent_from_round: int = Field(
        default=8,
        ge=3,
        le=MAX_ROUNDS,
        description="First round after which the intent detector runs (at most max_rounds; "
        "equal to it: never).",
    )
    history_turns: int | None = Field(
        default=None,
        ge=2,
        le=MAX_HISTORY_TURNS,
        description="Older configs' one window: sets the simulator's and every agent's "
        "history_turns where they set none (prefer those).",
    )
    trials: int = Field(
        default=1,
        ge=1,
        le=MAX_TRIALS,
        description="Conversations per scenario and arm, each with its own seeds (pass^k).",
    )
    paired_seeds: bool = Field(
        default=True,
        description="Common random numbers: the simulated user's, intent detector's and judge's "
        "seeds depend on scenario and trial, never on the agent, so every agent meets the same "
        "user draws and paired differences lose that noise.",
    )
    concurrency: int = Field(
        default=16, ge=1, le=MAX_CONCURRENCY, description="Conversations in flight."
    )
    scenarios: ScenarioSource | str = Field(
        default=ScenarioSource.BUILTIN,
        union_mode="left_to_right",
        description="'builtin', 'corpus', or a JSONL file of your own dialogues (cold starts).",
    )
    scenario_split: ScenarioSplit = Field(
        default=ScenarioSplit.TEST,
        description="With scenarios = 'corpus': the split cold starts come from ('test', 'val', "
        "'train' or 'all'); test and val keep clean dialogues only. 'all' is what corpus runs "
        "drew from before this setting existed: it resumes them (their config hash stays).",
    )
    scenario_split_seed: int = Field(
        default=0,
        ge=0,
        description="With scenarios = 'corpus': the seed of the split of corpora without an "
        "official one (P4G), the --seed the simulator's samples were built with (cogwm samples "
        "build), so its test cold starts are none it was trained on.",
    )
    data_dir: str | None = None
    annotate_profiles: bool = Field(
        default=False,
        description="Ask the profile annotator when neither scenario nor corpus gives a profile "
        "(else the neutral default).",
    )
    cache: bool = Field(default=True, description="Cache model replies (resume replays them).")
    good_outcome: bool = Field(
        default=True,
        description="Ask the judge for GoodOutcome at the end of each conversation (false: "
        "GoodOutcome is not judged and stays undefined; no judge is needed).",
    )
    simulator: SimulatorConfig
    intent_detector: ModelConfig | None = None
    judge: ModelConfig | None = None
    profile_annotator: ModelConfig | None = None
    agents: list[AgentConfig] = Field(min_length=1)
    #: The tasks this config knows: the built-ins plus those its ``tasks`` read from files.
    _catalog: TaskCatalog = PrivateAttr(default=BUILTIN_CATALOG)

    @property
    def catalog(self) -> TaskCatalog:
        """The built-in tasks plus the tasks this config read from files (by their names)."""
        # From pydantic's private-attribute dict (always set: the attribute has a default):
        # ``self._catalog`` goes through BaseModel.__getattr__, some 30 times slower, and the
        # plan reads this for every unit.
        private = self.__pydantic_private__
        assert private is not None
        catalog: TaskCatalog = private["_catalog"]
        return catalog

    @model_validator(mode="wrap")
    @classmethod
    def _with_catalog(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> ArenaConfig:
        config: ArenaConfig = handler(data)
        entries = data.get("tasks") if isinstance(data, dict) else None
        if isinstance(entries, list) and all(isinstance(e, str) for e in entries):
            # The files were read and checked by the field validator; this keeps their tasks
            # with the config (and nowhere else), so later lookups by name find them.
            config._catalog = BUILTIN_CATALOG.read(entries)
        return config

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

    @field_validator("scenarios")
    @classmethod
    def _scenario_file(cls, value: ScenarioSource | str) -> ScenarioSource | str:
        if not isinstance(value, ScenarioSource) and not value.endswith(".jsonl"):
            raise ValueError(f"expected 'builtin', 'corpus' or a .jsonl file, got {value!r}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ArenaConfig:
        names = [a.name for a in self.agents]
        if len(set(names)) != len(names):
            raise ValueError("agents: names must be unique")
        if self.scenario_split is not ScenarioSplit.TEST and self.scenarios != "corpus":
            raise ValueError(
                'scenario_split: applies only to scenarios = "corpus" (leave it out or set "test")'
            )
        if self.scenario_split_seed != 0 and self.scenarios != "corpus":
            raise ValueError(
                'scenario_split_seed: applies only to scenarios = "corpus" (leave it out or set 0)'
            )
        if self.intent_from_round > self.max_rounds:
            # Quietly accepted, the detector would never run and every conversation would last
            # max_rounds: a typo that changes what the run measures.
            raise ValueError(
                f"intent_from_round: {self.intent_from_round} is beyond max_rounds "
                f"{self.max_rounds} (the intent detector would never run); give at most "
                f"{self.max_rounds}"
            )
        if self.simulator.python is not None:
            # A Python simulator is no model the other roles could default to.
            needed = {
                "intent_detector": self.intent_from_round < self.max_rounds,
                "judge": self.good_outcome,
                "profile_annotator": self.annotate_profiles,
            }
            for role, used in needed.items():
                if used and getattr(self, role) is None:
                    raise ValueError(
                        f"{role}: a python simulator has no model for the {role} to default "
                        f"to; give [{role}]" + _ROLE_OFF.get(role, "")
                    )
        return self

    @property
    def simulator_window(self) -> int:
        """Turns of history the simulator sees (its own setting, the old top-level one, or 8)."""
        for turns in (self.simulator.history_turns, self.history_turns):
            if turns is not None:
                return turns
        return DEFAULT_SIMULATOR_WINDOW

    def agent_window_setting(self, agent: AgentConfig) -> int | None:
        """The window an agent's config asks for (its own or the old top-level one); None:
        chosen by ``cogwm.arena.windows`` (the whole conversation where it fits)."""
        return agent.history_turns if agent.history_turns is not None else self.history_turns

    @property
    def intent_model(self) -> ModelConfig | None:
        """The intent detector (default: the simulator's model at temperature 0; None with a
        Python simulator and no detector, which the config then never asks)."""
        return self.intent_detector or deterministic(self.simulator, max_tokens=16)

    @property
    def judge_model(self) -> ModelConfig | None:
        """The GoodOutcome judge (default: the simulator's model at temperature 0; None with a
        Python simulator and no judge, which the config then never asks)."""
        return self.judge or deterministic(self.simulator, max_tokens=300)

    @property
    def annotator_model(self) -> ModelConfig | None:
        """The profile annotator (default: the simulator's model at temperature 0; None with a
        Python simulator and no annotator, which the config then never asks)."""
        return self.profile_annotator or deterministic(self.simulator, max_tokens=160)

    @property
    def asks_intent(self) -> bool:
        """Whether the intent detector is ever asked (from ``intent_from_round`` on, never at
        the last round)."""
        return self.intent_from_round < self.max_rounds

    def agent_prompts(self) -> dict[str, Prompt]:
        """Each agent's own prompt, resolved (built-in personas or literal text)."""
        return {
            a.name: resolve_agent_prompt(a.prompt, key=f"agents.{i}.prompt")
            for i, a in enumerate(self.agents)
        }

    def prompts(self) -> list[Prompt]:
        """Every prompt text the run uses (stored with the run and hashed)."""
        return [*fixed_prompts(), judge_prompt(), *self.agent_prompts().values()]


#: Fields that decide a model's history window: in the config hash when set, never in the
#: digests, which hold the window that was used (see ``cogwm.arena.windows``).
WINDOW_FIELDS = ("history_turns", "context_tokens")


def _without_windows(data: dict[str, Any]) -> dict[str, Any]:
    """A model's hashed fields without its unset window fields, so hashes made before these
    fields existed stay what they were."""
    for key in WINDOW_FIELDS:
        if data.get(key) is None:
            data.pop(key, None)
    return data


#: How a config can do without a role (in the message asking for it).
_ROLE_OFF = {
    "intent_detector": " or set intent_from_round = max_rounds",
    "judge": " or set good_outcome = false",
    "profile_annotator": " or leave annotate_profiles off",
}


def deterministic(base: ModelConfig, *, max_tokens: int) -> ModelConfig | None:
    """``base``'s model at temperature 0 with ``max_tokens`` (the default detector, judge and
    annotator); None for a Python simulator, which has no model."""
    if isinstance(base, SimulatorConfig) and base.python is not None:
        return None
    return ModelConfig(
        model=base.model, options=base.options, temperature=0.0, max_tokens=max_tokens
    )


def _hashed(model: ModelConfig | None, served: ServedModels | None) -> dict[str, Any] | None:
    return None if model is None else model.hashed(served)


def load_config(path: Path) -> ArenaConfig:
    """Read and validate a TOML config.

    Raises:
        ConfigError: One line naming the file and the offending key.
    """
    if path.is_dir():
        raise ConfigError(f"config {path} is a directory; give the TOML file")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config {path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config {path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"config {path}: cannot read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {path}: not valid TOML: {exc}") from None
    return parse_config(raw, source=str(path))


def parse_config(raw: dict[str, Any], *, source: str = "config") -> ArenaConfig:
    """Validate a config mapping; errors become one-line ``ConfigError`` naming the key."""
    try:
        config = ArenaConfig.model_validate(raw)
        config.agent_prompts()  # unknown built-in prompt names fail here, with their key
        for i, agent in enumerate(config.agents):
            if agent.python is not None:
                try:
                    import_factory(agent.python)
                except ConfigError as exc:
                    raise ConfigError(f"agents.{i}.python: {exc}") from None
        if config.simulator.python is not None:
            try:
                python_simulator(config.simulator.python, dict(config.simulator.options))
            except ConfigError as exc:
                raise ConfigError(f"simulator.python: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(top level)"
        message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
        field, sep, rest = message.partition(": ")
        if sep and field.isidentifier() and first.get("type") == "value_error":
            # A check of the whole config names its field alone, not "(top level).field".
            where = field if not first.get("loc") else f"{where}.{field}"
            message = rest
        raise ConfigError(f"{source}: {where}: {message}") from None
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    for task in config.tasks:
        agent_task_prompt(config.catalog.get(task))
    return config


def config_hash(config: ArenaConfig, served: ServedModels | None = None) -> str:
    """SHA-256 over what changes results: agents, models, prompts, tasks, counts, seed, sampling,
    and the model ids the ``openai:`` endpoints reported (``served``; none when not asked).

    Concurrency, paths, caching and display settings are left out, so changing them does not
    block ``--resume``.
    """
    view = hashed_view(config, served)
    return hashlib.sha256(_canonical(view).encode("utf-8")).hexdigest()


def hashed_view(config: ArenaConfig, served: ServedModels | None = None) -> dict[str, Any]:
    """The part of the config that the hash covers (prompt texts resolved)."""
    data = {k: v for k, v in config.model_dump(mode="json").items() if k not in _OUTSIDE_HASH}
    data["simulator"] = config.simulator.hashed(served)
    data["intent_detector"] = _hashed(config.intent_model, served)
    data["judge"] = _hashed(config.judge_model, served)
    data["profile_annotator"] = _hashed(config.annotator_model, served)
    if config.good_outcome:  # the default: the hash of a run made before the switch stays
        del data["good_outcome"]
    data["agents"] = [a.hashed(served) for a in config.agents]
    data["prompts"] = [p.model_dump(mode="json") for p in config.prompts()]
    recorded = config.catalog.recorded(config.tasks)
    if recorded:  # only then: the hash of a run on built-in tasks stays what it was
        data["task_files"] = recorded
    if config.scenarios != ScenarioSource.CORPUS or config.scenario_split is ScenarioSplit.ALL:
        # The split decides nothing without corpus cold starts, and "all" is what corpus runs
        # drew from before the field existed: such runs keep the hash they had then (an old
        # corpus run resumes with scenario_split = "all"). Any other split is hashed.
        data.pop("scenario_split")
    if config.scenario_split_seed == 0:  # the default: hashes made before the field stay
        del data["scenario_split_seed"]
    return data


def stored_config(config: ArenaConfig, windows: dict[str, Any] | None = None) -> dict[str, Any]:
    """The config as a run stores it: with the tasks read from files, so reports need no files,
    and the history windows used (``cogwm.arena.windows.Windows.to_json``)."""
    data = config.model_dump(mode="json")
    if windows is not None:
        data["windows"] = windows
    recorded = config.catalog.recorded(config.tasks)
    if recorded:
        data["task_files"] = recorded
    return data


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
