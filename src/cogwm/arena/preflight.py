"""Checks made before an arena run starts, so that a run cannot fail the same way hundreds of
times: every model address parses, and every ``openai:`` model has a base URL it was given
(an option or ``$COGWM_BASE_URL``), never the public API by accident.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from cogwm.arena.config import AgentKind, ArenaConfig, ModelConfig
from cogwm.errors import ConfigError, InputError
from cogwm.models.openai_api import BASE_URL_ENV, DEFAULT_BASE_URL
from cogwm.models.spec import BackendKind, parse_spec


def model_roles(config: ArenaConfig) -> Iterator[tuple[str, ModelConfig]]:
    """Every model the run calls, named by its role (``agents.warm``, ``simulator``, ...)."""
    for agent in config.agents:
        if agent.kind is AgentKind.MODEL:
            yield f"agents.{agent.name}", agent
    yield "simulator", config.simulator
    yield "intent_detector", config.intent_model
    yield "judge", config.judge_model
    if config.annotate_profiles:
        yield "profile_annotator", config.annotator_model


def preflight(config: ArenaConfig) -> None:
    """Refuse a config whose models cannot be called as written.

    Raises:
        ConfigError: One line naming the role and the address: an address that does not parse,
            or an ``openai:`` model without a base URL.
    """
    for role, spec in model_roles(config):
        try:
            parsed = parse_spec(spec.model)
        except InputError as exc:
            raise ConfigError(f"{role}: {exc}") from None
        if parsed.kind is BackendKind.OPENAI and not _has_base_url(spec):
            raise ConfigError(
                f"{role}: model {spec.model!r} has no base_url and ${BASE_URL_ENV} is not set, "
                f"so it would call {DEFAULT_BASE_URL}; set options.base_url (that URL to use "
                "the public API on purpose) or the environment variable"
            )


def _has_base_url(spec: ModelConfig) -> bool:
    return bool(spec.options.get("base_url")) or bool(os.environ.get(BASE_URL_ENV))
