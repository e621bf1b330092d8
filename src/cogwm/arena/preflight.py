"""Checks made before an arena run starts, so that a run cannot fail the same way hundreds of
times: every model address parses, every ``openai:`` model has a base URL it was given (an
option or ``$COGWM_BASE_URL``), never the public API by accident, and each distinct endpoint
(model servers and endpoint agents) answers one cheap request.
"""

from __future__ import annotations

from collections.abc import Iterator

from cogwm.arena.config import AgentKind, ArenaConfig, ModelConfig
from cogwm.models.preflight import ModelUse, check_address, check_endpoints


def model_roles(config: ArenaConfig) -> Iterator[tuple[str, ModelConfig]]:
    """Every model the run calls, named by its role (``agents.warm``, ``simulator``, ...)."""
    for agent in config.agents:
        if agent.kind is AgentKind.MODEL:
            yield f"agents.{agent.name}", agent
    if config.simulator.python is None:  # a Python simulator calls no model
        yield "simulator", config.simulator
    roles = {
        "intent_detector": config.intent_model,
        "judge": config.judge_model,
        "profile_annotator": config.annotator_model if config.annotate_profiles else None,
    }
    for role, spec in roles.items():
        if spec is not None:  # None: a Python simulator's run that never asks the role
            yield role, spec


def preflight(config: ArenaConfig) -> None:
    """Refuse a config whose models cannot be called as written (no network).

    Raises:
        ConfigError: One line naming the role and the address: an address that does not parse,
            or an ``openai:`` model without a base URL.
    """
    for role, spec in model_roles(config):
        check_address(ModelUse(role, spec.model, spec.options))


def preflight_network(config: ArenaConfig) -> None:
    """Ask each distinct endpoint the run will call (``openai:`` models and endpoint agents)
    for its model list once; call after ``preflight``.

    Raises:
        ConfigError: One line naming the role, the address and the endpoint that did not answer.
    """
    uses = [ModelUse(role, spec.model, spec.options) for role, spec in model_roles(config)]
    for agent in config.agents:
        if agent.kind is AgentKind.ENDPOINT:
            backend = agent.backend()
            uses.append(ModelUse(f"agents.{agent.name}", backend.model, backend.options))
    check_endpoints(uses)
