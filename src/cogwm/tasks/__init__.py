"""Task registry: ``cogwm.tasks.get("ESC")``, or ``get("path/to/task.toml")`` for your own task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cogwm.errors import ConfigError, InputError
from cogwm.schema import TaskSpec
from cogwm.tasks import custom
from cogwm.tasks.custom import is_task_path, load_task_file
from cogwm.tasks.specs import BUILTIN

_REGISTRY: dict[str, TaskSpec] = {spec.name: spec for spec in BUILTIN}


#: Other spellings of a task name, read as the task (DialToM called persuasion ``PFG``).
_ALIASES = {"PFG": "PD"}


def get(name: str) -> TaskSpec:
    """The task spec called ``name`` (case-insensitive); an ``InputError`` naming the choices.

    A name ending in ``.toml`` is a task file (see ``cogwm.tasks.custom``): it is read, registered
    under the name it gives (so later lookups by that name find it) and returned.
    """
    if is_task_path(name):
        return _load_file(Path(name.strip()))
    key = name.strip().upper()
    spec = _REGISTRY.get(_ALIASES.get(key, key))
    if spec is None:
        raise InputError(f"unknown task {name!r}; known tasks: {', '.join(sorted(_REGISTRY))}")
    return spec


def register(spec: TaskSpec, *, replace: bool = False) -> None:
    """Add a task spec; re-registering a name needs ``replace=True``."""
    if spec.name in _REGISTRY and not replace:
        raise ValueError(f"task {spec.name} is already registered")
    _REGISTRY[spec.name] = spec


def _load_file(path: Path) -> TaskSpec:
    spec = load_task_file(path)
    known = _REGISTRY.get(spec.name)
    if known is not None and known != spec:
        # One name must mean one task in a run (the store keeps names, not files).
        raise ConfigError(f"task {path}: task.name: {spec.name} is already a different task")
    _REGISTRY[spec.name] = spec
    return spec


def file_tasks(names: list[str]) -> dict[str, dict[str, Any]]:
    """Of ``names``, the tasks read from files, as a run records them (empty for built-ins)."""
    builtin = {spec.name for spec in BUILTIN}
    return {n: custom.recorded(get(n)) for n in names if n.strip().upper() not in builtin}


def register_recorded(recorded: dict[str, dict[str, Any]]) -> None:
    """Register the file tasks a run recorded (``file_tasks``), so its reports need no files."""
    for data in recorded.values():
        spec = custom.restore(data)
        known = _REGISTRY.get(spec.name)
        if known is not None and known != spec:
            raise ConfigError(f"the run's task {spec.name} differs from the one registered")
        _REGISTRY[spec.name] = spec


def names() -> list[str]:
    """Names of all registered tasks."""
    return sorted(_REGISTRY)


def for_corpus(corpus: str) -> TaskSpec | None:
    """The task whose corpus is ``corpus``, if any."""
    return next((s for s in _REGISTRY.values() if s.corpus == corpus), None)


__all__ = ["file_tasks", "for_corpus", "get", "names", "register", "register_recorded"]
