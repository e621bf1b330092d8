"""Tasks by name: ``cogwm.tasks.get("ESC")``, or ``get("path/to/task.toml")`` for your own task.

Lookups are pure: they see the built-in specs and the catalog in force
(:meth:`cogwm.tasks.catalog.TaskCatalog.active`, put in force by a run for its own tasks); a
task file's path gives that file's task without registering it anywhere, so a task read for one
config is never visible to another.
"""

from __future__ import annotations

from cogwm.schema import TaskSpec
from cogwm.tasks.catalog import BUILTIN_CATALOG, TaskCatalog, active_catalog


def get(name: str) -> TaskSpec:
    """The task spec called ``name`` (case-insensitive) in the catalog in force, or the task
    in a ``.toml`` file; an ``InputError`` naming the choices."""
    return active_catalog().get(name)


def files_catalog(names: list[str]) -> TaskCatalog:
    """The built-in tasks plus the tasks of the ``.toml`` paths among ``names``: put it in force
    (``.active()``) where a command works on its own task files."""
    return BUILTIN_CATALOG.read(names)


def names() -> list[str]:
    """Names of all tasks in the catalog in force."""
    return active_catalog().names()


def for_corpus(corpus: str) -> TaskSpec | None:
    """The task whose corpus is ``corpus``, if any."""
    return active_catalog().for_corpus(corpus)


__all__ = [
    "BUILTIN_CATALOG",
    "TaskCatalog",
    "active_catalog",
    "files_catalog",
    "for_corpus",
    "get",
    "names",
]
