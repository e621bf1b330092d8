"""Packaging that ages well: no Python upper cap, torch pinned exactly."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _project() -> dict[str, object]:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]  # type: ignore[no-any-return]


def test_requires_python_has_no_upper_cap() -> None:
    # Catches: '>=3.11,<3.12' refused every newer Python although nothing forces the cap.
    spec = str(_project()["requires-python"])
    assert spec.startswith(">=3.11") and "<" not in spec


def test_torch_is_pinned_exactly_everywhere() -> None:
    # An open range pulls a multi-GB GPU build on a fresh machine.
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    torch = [r for group in extras.values() for r in group if re.match(r"torch\b", r)]
    assert torch and all(re.fullmatch(r"torch==[\w.]+", r) for r in torch)
