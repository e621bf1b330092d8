"""Digests of what decides a unit's and a scenario preparation's output.

The config hash says whether a run's config changed at all; these digests say *which* stored
results it changes. A unit's digest covers its participants' model identities, options and
sampling, every prompt it meets (id, version and text), the output schemas the simulator is held
to, its seeds, the protocol limits and the scenario itself; a preparation's digest covers what
reads the scenario's opening. On ``--resume`` (with ``--force`` after a config change) a stored
conversation or preparation whose digest differs from the current one is run again, so old
results are never counted under a new config.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from cogwm.arena.config import (
    WINDOW_FIELDS,
    AgentConfig,
    AgentKind,
    ArenaConfig,
    ModelConfig,
    ServedModels,
)
from cogwm.arena.prompts import (
    AGENT_COT,
    INTENT_DETECTOR,
    PROFILE_ANNOTATOR,
    SIMULATOR_OPENING,
    SIMULATOR_SYSTEM,
    SIMULATOR_TURN,
    Prompt,
    agent_task_prompt,
    judge_prompt,
)
from cogwm.arena.scenarios import Scenario
from cogwm.arena.termination import Condition
from cogwm.arena.units import Unit
from cogwm.arena.windows import Windows, resolve_windows
from cogwm.models.model import Model
from cogwm.models.structured import schema_for
from cogwm.schema.lexicon import using_lexicon
from cogwm.simulator.format import format_version, state_output_models

#: Bumped when the meaning of a digest's parts changes (every stored digest goes stale).
DIGEST_VERSION = 1


async def ask_served_models(
    config: ArenaConfig, load_model: Callable[..., Model]
) -> dict[tuple[str, str], str]:
    """Ask every ``openai:`` endpoint of ``config`` once which model it serves, so that the config
    hash and these digests (``ModelConfig.hashed``) name it: results made by other weights
    behind the same name and URL are then run again, never relabelled.

    Returns:
        The model id by (model name, endpoint label) (``ServedModels``); endpoints without a
        model list add nothing.
    """
    from cogwm.arena.preflight import model_roles

    asked: set[str] = set()
    served: dict[tuple[str, str], str] = {}
    for _, spec in model_roles(config):
        key = json.dumps([spec.model, spec.options], sort_keys=True)
        if not spec.model.startswith("openai:") or key in asked:
            continue
        asked.add(key)
        try:
            model = load_model(spec.model, **spec.options)
        except Exception:  # a model that cannot load fails its conversations, as before
            continue
        try:
            served.update(await model.backend.served_models())
        finally:
            await model.aclose()
    return served


def _prompt(prompt: Prompt) -> list[Any]:
    return [prompt.id, prompt.version, prompt.text]


def _sha(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _simulator_schemas(config: ArenaConfig, task_name: str) -> list[Any]:
    """The simulator's output schemas for the task, with the labels of the config's lexicon
    (the lexicon in force extended by the labels its task files add)."""
    spec = config.catalog.get(task_name)
    lexicon = config.catalog.lexicon()
    labels = tuple(sorted(lexicon.table()))
    state, turn = state_output_models(spec.name, spec.score_range, labels)
    with using_lexicon(lexicon):
        return [schema_for(state), schema_for(turn)]


def _model(spec: ModelConfig, served: ServedModels | None) -> dict[str, Any]:
    """A model's hashed fields without its window settings: the digests hold the window that
    was used, so a setting that resolves to the same window reruns nothing."""
    return {k: v for k, v in spec.hashed(served).items() if k not in WINDOW_FIELDS}


def _hashed(spec: ModelConfig | None, served: ServedModels | None) -> dict[str, Any] | None:
    """A role's hashed model (None: the run has none for the role)."""
    return None if spec is None else spec.hashed(served)


def prep_digest(
    config: ArenaConfig,
    task: str,
    scenario: Scenario,
    windows: Windows | None = None,
    served: ServedModels | None = None,
) -> str:
    """The digest of a scenario's preparation (profile and initial state); ``served`` as
    ``ask_served_models`` returned it."""
    annotated = config.annotate_profiles and scenario.profile is None
    simulator_window = config.simulator_window if windows is None else windows.simulator.turns
    return _sha(
        {
            "v": DIGEST_VERSION,
            "seed": config.seed,
            "task": task,
            "scenario": scenario.model_dump(mode="json"),
            "history_turns": simulator_window,
            "simulator": _model(config.simulator, served),
            "prompts": [_prompt(SIMULATOR_SYSTEM), _prompt(SIMULATOR_OPENING)],
            "format": format_version(),
            "schemas": _simulator_schemas(config, task)[:1],
            "annotator": [_hashed(config.annotator_model, served), _prompt(PROFILE_ANNOTATOR)]
            if annotated
            else None,
        }
    )


class Digests:
    """Digests of a config's units and preparations (computed once per run and cached)."""

    def __init__(
        self,
        config: ArenaConfig,
        windows: Windows | None = None,
        served: ServedModels | None = None,
    ):
        self.config = config
        #: The model ids the ``openai:`` endpoints reported (``ask_served_models``).
        self.served = served
        #: The history windows of the run (resolved over all its scenarios when not given).
        self.windows = windows or resolve_windows(config)
        self._prompts = config.agent_prompts()
        self._preps: dict[tuple[str, str], str] = {}
        self._shared: dict[str, str] = {}
        self._units: dict[str, str] = {}
        self._agents: dict[str, tuple[dict[str, Any], list[Any]]] = {}

    def prep(self, task: str, scenario: Scenario) -> str:
        """The preparation digest of ``scenario`` (see ``prep_digest``)."""
        key = (task, scenario.id)
        if key not in self._preps:
            self._preps[key] = prep_digest(self.config, task, scenario, self.windows, self.served)
        return self._preps[key]

    def _task_part(self, task: str) -> str:
        """What every unit of ``task`` shares: simulator, detector, judge, limits, prompts."""
        if task not in self._shared:
            config = self.config
            self._shared[task] = _sha(
                {
                    "simulator": [
                        _model(config.simulator, self.served),
                        _prompt(SIMULATOR_SYSTEM),
                        _prompt(SIMULATOR_TURN),
                        format_version(),
                        _simulator_schemas(config, task),
                    ],
                    "intent": [_hashed(config.intent_model, self.served), _prompt(INTENT_DETECTOR)],
                    "judge": [_hashed(config.judge_model, self.served), _prompt(judge_prompt())],
                    "limits": [
                        config.max_rounds,
                        config.intent_from_round,
                        self.windows.simulator.turns,
                    ],
                    "agent_task": _prompt(agent_task_prompt(config.catalog.get(task))),
                }
            )
        return self._shared[task]

    def unit(self, unit: Unit) -> str:
        """The digest of one unit: its preparation, participants, prompts, seeds and limits."""
        found = self._units.get(unit.key)
        if found is None:
            found = self._units[unit.key] = self._unit(unit)
        return found

    def _agent_part(self, agent: AgentConfig) -> tuple[dict[str, Any], list[Any]]:
        """An agent's hashed fields and prompt, shared by all its units."""
        found = self._agents.get(agent.name)
        if found is None:
            prompt = _prompt(self._prompts[agent.name])
            found = self._agents[agent.name] = (_model(agent, self.served), prompt)
        return found

    def _unit(self, unit: Unit) -> str:
        agent = unit.agent
        hashed, prompt = self._agent_part(agent)
        data = {
            "v": DIGEST_VERSION,
            "prep": self.prep(unit.task, unit.scenario),
            "task": self._task_part(unit.task),
            "agent": hashed,
            "agent_prompt": prompt,
            "cot": _prompt(AGENT_COT) if unit.condition is Condition.COT else None,
            "condition": unit.condition.value,
            "trial": unit.trial,
            "seeds": list(unit.seeds(self.config)),
        }
        window = self.windows.agents[agent.name].turns
        # Before the agents had a window of their own they saw the simulator's (in "limits"):
        # the same window adds nothing, so those digests stay what they were. A Python agent is
        # handed every turn, window or not.
        if agent.kind is not AgentKind.PYTHON and window != self.windows.simulator.turns:
            data["agent_window"] = "whole" if window is None else window
        return _sha(data)
