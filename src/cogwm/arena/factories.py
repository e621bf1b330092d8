"""User code that the arena runs, named as ``package.module:factory``: the factories of Python
agents and Python simulators, and the protocol a Python simulator implements.

Loading lives here, below the config, so that checking a config can load what it names.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, Protocol, runtime_checkable

from cogwm.errors import ConfigError
from cogwm.schema import CognitiveState, TaskSpec
from cogwm.schema.transcript import ArenaTurn, TurnOutput, UserSetup


@cache
def import_factory(path: str) -> Callable[..., Any]:
    """The factory at ``package.module:factory`` (a class or a function).

    Raises:
        ConfigError: The module or the attribute cannot be imported.
    """
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"python agent {path!r}: cannot import {module_name}: {exc}") from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ConfigError(f"python agent {path!r}: {module_name} has no {attr!r}")
    if not callable(target):
        raise ConfigError(f"python agent {path!r}: {attr!r} is not callable")
    return target  # type: ignore[no-any-return]


def python_version(path: str) -> str | None:
    """The ``version`` attribute of a Python agent's factory, if it has one (for digests)."""
    version = getattr(import_factory(path), "version", None)
    return None if version is None else str(version)


@runtime_checkable
class PythonSimulator(Protocol):
    """A simulated user written in Python: the state after the opening, and each next turn.

    ``turns`` hold the whole conversation so far with the user's states (the last cold-start
    user turn carries the opening state). Both methods are synchronous and cheap (they run on
    the event loop).
    """

    identity: str

    def read_state(
        self, task: TaskSpec, setup: UserSetup, turns: Sequence[ArenaTurn]
    ) -> CognitiveState:
        """The user's state after the cold-start turns."""
        ...

    def respond(
        self, task: TaskSpec, setup: UserSetup, turns: Sequence[ArenaTurn], *, seed: int
    ) -> TurnOutput:
        """The user's next turn (text and state) after the agent's last turn."""
        ...


def python_simulator(path: str, options: dict[str, Any]) -> PythonSimulator:
    """The simulator object of ``path`` (``package.module:factory``) built with ``options``
    (one object per path and options).

    Raises:
        ConfigError: The factory cannot be imported, refuses the options, or returns an object
            without ``read_state``, ``respond`` and a string ``identity``.
    """
    return _built(path, json.dumps(options, sort_keys=True))


@cache
def _built(path: str, options_json: str) -> PythonSimulator:
    try:
        factory: Callable[..., Any] = import_factory(path)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("python agent", "python simulator", 1)) from None
    try:
        built = factory(**json.loads(options_json))
    except TypeError as exc:
        raise ConfigError(f"python simulator {path!r}: bad options: {exc}") from None
    missing = [m for m in ("read_state", "respond") if not callable(getattr(built, m, None))]
    if missing or not isinstance(getattr(built, "identity", None), str):
        lacks = ", ".join([*missing, *(["identity"] if not missing else [])])
        raise ConfigError(
            f"python simulator {path!r}: its object lacks {lacks} (see "
            "cogwm.arena.simulators.PythonSimulator)"
        )
    return built  # type: ignore[no-any-return]
