"""The tasks one run knows: the built-in specs plus the tasks it read from files.

A :class:`TaskCatalog` is an immutable value, built from a config (``read``) or from what a run
stored (``from_recorded``) and handed to whoever needs it. Nothing is registered process-wide:
reading a task file in one config leaves every other config (and every later process) as it was.
Code that looks tasks up by name without a catalog at hand (``cogwm.tasks.get``) sees the
catalog put in force for a block with ``active``, and the emotion labels its tasks add.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from cogwm.errors import ConfigError, InputError
from cogwm.schema import TaskSpec
from cogwm.schema.lexicon import Lexicon, active_lexicon, using_lexicon
from cogwm.tasks.custom import FileTask, is_task_path, read_task_file
from cogwm.tasks.specs import BUILTIN

_BUILTIN: Mapping[str, TaskSpec] = MappingProxyType({spec.name: spec for spec in BUILTIN})
#: Other spellings of a task name, read as the task (DialToM called persuasion ``PFG``).
_ALIASES = {"PFG": "PD"}


@dataclass(frozen=True)
class TaskCatalog:
    """The built-in tasks plus ``files``: the tasks read from TOML files, by name."""

    files: Mapping[str, FileTask] = field(default_factory=dict)

    def get(self, name: str) -> TaskSpec:
        """The task called ``name`` (case-insensitive), or the task in a ``.toml`` path.

        Raises:
            InputError: No task has that name (the message lists the known ones).
            ConfigError: The file cannot be read or is not a valid task.
        """
        if is_task_path(name):
            path = Path(name.strip())
            return _checked(read_task_file(path), path, self.files).spec
        key = name.strip().upper()
        key = _ALIASES.get(key, key)
        found = self.files.get(key)
        spec = found.spec if found is not None else _BUILTIN.get(key)
        if spec is None:
            raise InputError(f"unknown task {name!r}; known tasks: {', '.join(self.names())}")
        return spec

    def read(self, names: list[str]) -> TaskCatalog:
        """This catalog with the tasks of the ``.toml`` paths among ``names`` added.

        Raises:
            ConfigError: A file is unreadable or invalid, or names a task that is already a
                different one (one name must mean one task in a run: the store keeps names).
        """
        files = dict(self.files)
        for name in names:
            if not is_task_path(name):
                continue
            path = Path(name.strip())
            task = _checked(read_task_file(path), path, files)
            files[task.spec.name] = task
        return TaskCatalog(files)

    def names(self) -> list[str]:
        """Names of all tasks of the catalog."""
        return sorted({*_BUILTIN, *self.files})

    def for_corpus(self, corpus: str) -> TaskSpec | None:
        """The task whose corpus is ``corpus``, if any."""
        specs = [*_BUILTIN.values(), *(t.spec for t in self.files.values())]
        return next((s for s in specs if s.corpus == corpus), None)

    def lexicon(self, base: Lexicon | None = None) -> Lexicon:
        """``base`` (the lexicon in force by default) extended with the labels of the tasks.

        Raises:
            ConfigError: A task's label already has another valence.
        """
        lexicon = active_lexicon() if base is None else base
        for task in self.files.values():
            try:
                lexicon = lexicon.extended(task.emotions)
            except ValueError as exc:
                raise ConfigError(f"task {task.spec.name}: task.emotions: {exc}") from None
        return lexicon

    def recorded(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """Of ``names``, the tasks read from files, as a run stores them (empty for built-ins)."""
        found = {n: self.files.get(n.strip().upper()) for n in names}
        return {n: task.recorded() for n, task in found.items() if task is not None}

    @classmethod
    def from_recorded(cls, recorded: Mapping[str, Mapping[str, Any]]) -> TaskCatalog:
        """The catalog of the file tasks a run stored (``recorded``): its reports need no files.

        Raises:
            ConfigError: A stored task differs from a built-in of the same name.
        """
        files = {}
        for data in recorded.values():
            task = FileTask.restore(data)
            builtin = _BUILTIN.get(task.spec.name)
            if builtin is not None and builtin != task.spec:
                raise ConfigError(f"the run's task {task.spec.name} differs from the built-in one")
            files[task.spec.name] = task
        return cls(files)

    @contextmanager
    def active(self) -> Iterator[TaskCatalog]:
        """Put this catalog, and the lexicon its tasks extend, in force for the block."""
        token = _ACTIVE.set(self)
        try:
            with using_lexicon(self.lexicon()):
                yield self
        finally:
            _ACTIVE.reset(token)


def _checked(task: FileTask, path: Path, files: Mapping[str, FileTask]) -> FileTask:
    """``task``, unless its name is already a different task (built-in or read before)."""
    name = task.spec.name
    known = files[name].spec if name in files else _BUILTIN.get(name)
    if known is not None and known != task.spec:
        # One name must mean one task in a run (the store keeps names, not files).
        raise ConfigError(f"task {path}: task.name: {name} is already a different task")
    return task


#: The built-in tasks alone.
BUILTIN_CATALOG = TaskCatalog()

_ACTIVE: ContextVar[TaskCatalog] = ContextVar("cogwm_tasks", default=BUILTIN_CATALOG)


def active_catalog() -> TaskCatalog:
    """The catalog in force in the current context (the built-in tasks unless one is active)."""
    return _ACTIVE.get()
