"""Your own task: a TaskSpec read from a TOML file, with optional extra emotion labels.

The file holds one ``[task]`` table (see ``examples/custom_task/task.toml``)::

    [task]
    name = "TUTOR"
    title = "Maths tutoring"
    user_role = "student"
    agent_role = "tutor"
    scenario = "A tutor helps a student who is stuck on a maths problem."
    good_outcome = "the student solved the problem or states the next step"
    score_range = [0, 2]                       # optional (default 0..2)

    [task.weights]                             # w_E, w_B, w_D, w_I; they sum to 1
    emotion = 0.25
    belief = 0.25
    desire = 0.25
    intention = 0.25

    [task.dimensions.belief]                   # and desire, intention
    name = "understanding"
    meaning = "how well the student thinks they understand the method"

    [task.emotions]                            # optional: new labels and their valences
    boredom = -1.0
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cogwm.errors import ConfigError
from cogwm.schema import TaskSpec
from cogwm.schema.lexicon import DEFAULT_LEXICON

#: Keys of ``[task]`` besides the TaskSpec's own fields.
_EXTRA_KEYS = ("emotions",)


@dataclass(frozen=True)
class FileTask:
    """A task read from a file: its spec and the emotion labels it adds (label -> valence)."""

    spec: TaskSpec
    emotions: Mapping[str, float] = field(default_factory=dict)

    def recorded(self) -> dict[str, Any]:
        """What a run stores of the task, so a later process can use the run alone."""
        return {"spec": self.spec.model_dump(mode="json"), "emotions": dict(self.emotions)}

    @classmethod
    def restore(cls, data: Mapping[str, Any]) -> FileTask:
        """The task of ``recorded``'s output."""
        emotions = {str(k): float(v) for k, v in data.get("emotions", {}).items()}
        spec = TaskSpec.model_validate(data["spec"], strict=False)
        return cls(spec, emotions)


def is_task_path(name: str) -> bool:
    """Whether a task name given by the user is a path to a TOML task file."""
    return name.strip().lower().endswith(".toml")


def read_task_file(path: Path) -> FileTask:
    """Read and validate the task in ``path`` with the emotion labels it adds.

    Nothing is registered: the caller decides where the task and its labels are known
    (``cogwm.tasks.catalog.TaskCatalog``).

    Raises:
        ConfigError: One line naming the file and the offending key.
    """
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"task {path}: file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"task {path} is a directory; give the TOML file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"task {path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"task {path}: cannot read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"task {path}: not valid TOML: {exc}") from None
    return parse_file_task(raw, source=f"task {path}")


def load_task_file(path: Path) -> TaskSpec:
    """The spec of the task in ``path`` (see ``read_task_file``)."""
    return read_task_file(path).spec


def parse_task(raw: dict[str, Any], *, source: str = "task") -> TaskSpec:
    """Validate a ``{"task": {...}}`` mapping; errors are one line naming the key."""
    return parse_file_task(raw, source=source).spec


def parse_file_task(raw: dict[str, Any], *, source: str = "task") -> FileTask:
    """As ``parse_task``, with the emotion labels the task adds."""
    table = raw.get("task")
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [task]: a [task] table is required")
    unknown = sorted(set(raw) - {"task"})
    if unknown:
        raise ConfigError(f"{source}: {unknown[0]}: unknown top-level key (only [task])")
    fields = {k: v for k, v in table.items() if k not in _EXTRA_KEYS}
    name = fields.get("name")
    if isinstance(name, str):
        # Names are looked up upper-case (cogwm.tasks.get), so they are stored that way.
        fields["name"] = name.strip().upper()
        fields.setdefault("corpus", name.strip().lower())
    if "agent_role" in fields:
        fields.setdefault("initiator_role", fields["agent_role"])
    for key in ("weights", "good_outcome"):
        if key not in fields:
            # An arena task needs both; DAILY-like tasks without them are training data only.
            raise ConfigError(f"{source}: task.{key}: required")
    try:
        # Not strict: TOML gives lists where the spec has tuples, strings for dimension names.
        spec = TaskSpec.model_validate(fields, strict=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in ("task", *first.get("loc", ())))
        message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
        raise ConfigError(f"{source}: {where}: {message}") from None
    emotions = _checked_emotions(table.get("emotions", {}), source)
    return FileTask(spec, emotions)


def _checked_emotions(emotions: Any, source: str) -> dict[str, float]:
    if not isinstance(emotions, dict):
        raise ConfigError(f"{source}: task.emotions: expected a table of label = valence")
    for label, valence in emotions.items():
        where = f"{source}: task.emotions.{label}"
        if isinstance(valence, bool) or not isinstance(valence, int | float):
            raise ConfigError(f"{where}: the valence must be a number")
        if not -3.0 <= float(valence) <= 3.0:
            raise ConfigError(f"{where}: the valence must lie in [-3, 3]")
        try:
            # Against the default labels here; against other extensions where they meet.
            DEFAULT_LEXICON.extended({str(label): float(valence)})
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return {str(label).strip().lower(): float(v) for label, v in emotions.items()}
