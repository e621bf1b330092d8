"""The counterfactual bank: fixed agent lines per task and condition
(``cogwm/data/counterfactual_bank.json``).

The validity card's counterfactual check puts them in place of an agent turn; the transition
model's training holds them out. They live below both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from cogwm.errors import InputError

#: The bank's conditions, in the order a responsive simulator ranks them (best state first).
CONDITIONS: tuple[str, ...] = ("supportive", "dismissive", "hostile")
#: Tasks checked, with the corpus whose held-out histories they use.
TASK_CORPORA: dict[str, str] = {"ESC": "esconv", "PD": "persuasionforgood", "MI": "annomi"}


@dataclass(frozen=True)
class Bank:
    """Fixed agent lines per task and condition, and the bank's version (it names the run)."""

    version: str
    lines: Mapping[str, Mapping[str, tuple[str, ...]]]

    def pick(self, task: str, condition: str, history_id: str, seed: int) -> str:
        """The line of ``condition`` for one history: fixed by the seed and the history's id."""
        options = self.lines[task][condition]
        key = f"{seed}:{history_id}:{condition}".encode()
        return options[int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % len(options)]


def load_bank(path: Path | None = None) -> Bank:
    """The bank shipped with cogwm, or the one at ``path``.

    Raises:
        InputError: An unreadable file, or one without a version or without lines for every task
            of :data:`TASK_CORPORA` and every condition of :data:`CONDITIONS`.
    """
    where = str(path) if path is not None else "the counterfactual bank"
    try:
        text = (
            path.read_text(encoding="utf-8")
            if path is not None
            else (resources.files("cogwm") / "data" / "counterfactual_bank.json").read_text(
                encoding="utf-8"
            )
        )
        data = json.loads(text)
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{where}: cannot read it ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("version"), str):
        raise InputError(f"{where}: expected an object with a 'version' string")
    tables = data.get("tasks")
    lines: dict[str, dict[str, tuple[str, ...]]] = {}
    for task in TASK_CORPORA:
        by_condition = tables.get(task) if isinstance(tables, dict) else None
        lines[task] = {}
        for condition in CONDITIONS:
            found = by_condition.get(condition) if isinstance(by_condition, dict) else None
            if (
                not isinstance(found, list)
                or not found
                or not all(isinstance(line, str) and line.strip() for line in found)
            ):
                raise InputError(f"{where}: tasks.{task}.{condition} must be a list of lines")
            lines[task][condition] = tuple(line.strip() for line in found)
    return Bank(version=data["version"], lines=lines)
