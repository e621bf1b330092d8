"""Task registry: ``cogwm.tasks.get("ESC")``."""

from __future__ import annotations

from cogwm.errors import InputError
from cogwm.schema import TaskSpec
from cogwm.tasks.specs import BUILTIN

_REGISTRY: dict[str, TaskSpec] = {spec.name: spec for spec in BUILTIN}


def get(name: str) -> TaskSpec:
    """The task spec called ``name`` (case-insensitive); an ``InputError`` naming the choices."""
    spec = _REGISTRY.get(name.strip().upper())
    if spec is None:
        raise InputError(f"unknown task {name!r}; known tasks: {', '.join(sorted(_REGISTRY))}")
    return spec


def register(spec: TaskSpec, *, replace: bool = False) -> None:
    """Add a task spec; re-registering a name needs ``replace=True``."""
    if spec.name in _REGISTRY and not replace:
        raise ValueError(f"task {spec.name} is already registered")
    _REGISTRY[spec.name] = spec


def names() -> list[str]:
    """Names of all registered tasks."""
    return sorted(_REGISTRY)


def for_corpus(corpus: str) -> TaskSpec | None:
    """The task whose corpus is ``corpus``, if any."""
    return next((s for s in _REGISTRY.values() if s.corpus == corpus), None)


__all__ = ["for_corpus", "get", "names", "register"]
