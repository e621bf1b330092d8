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
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cogwm.errors import ConfigError
from cogwm.schema import TaskSpec
from cogwm.schema.lexicon import register_emotion

#: Keys of ``[task]`` besides the TaskSpec's own fields.
_EXTRA_KEYS = ("emotions",)
#: The extra emotions each task read from a file brought (recorded with runs, see ``recorded``).
_EMOTIONS: dict[str, dict[str, float]] = {}


def is_task_path(name: str) -> bool:
    """Whether a task name given by the user is a path to a TOML task file."""
    return name.strip().lower().endswith(".toml")


def load_task_file(path: Path) -> TaskSpec:
    """Read, validate and return the task in ``path``; its extra emotions join the lexicon.

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
    return parse_task(raw, source=f"task {path}")


def parse_task(raw: dict[str, Any], *, source: str = "task") -> TaskSpec:
    """Validate a ``{"task": {...}}`` mapping; errors are one line naming the key."""
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
    _EMOTIONS[spec.name] = _register_emotions(table.get("emotions", {}), source)
    return spec


def recorded(spec: TaskSpec) -> dict[str, Any]:
    """What a run stores of a task read from a file, so a later process can use the run alone."""
    return {"spec": spec.model_dump(mode="json"), "emotions": _EMOTIONS.get(spec.name, {})}


def restore(data: dict[str, Any]) -> TaskSpec:
    """The task of ``recorded``'s output, its emotions registered in the lexicon."""
    for label, valence in data.get("emotions", {}).items():
        register_emotion(label, float(valence))
    spec = TaskSpec.model_validate(data["spec"], strict=False)
    _EMOTIONS[spec.name] = dict(data.get("emotions", {}))
    return spec


def _register_emotions(emotions: Any, source: str) -> dict[str, float]:
    if not isinstance(emotions, dict):
        raise ConfigError(f"{source}: task.emotions: expected a table of label = valence")
    for label, valence in emotions.items():
        where = f"{source}: task.emotions.{label}"
        if isinstance(valence, bool) or not isinstance(valence, int | float):
            raise ConfigError(f"{where}: the valence must be a number")
        if not -3.0 <= float(valence) <= 3.0:
            raise ConfigError(f"{where}: the valence must lie in [-3, 3]")
        try:
            register_emotion(str(label), float(valence))
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return {str(label).strip().lower(): float(v) for label, v in emotions.items()}
