"""Atomic training checkpoints: a run killed at any moment resumes from the last complete one.

A checkpoint is written into a temporary directory, renamed to ``checkpoints/step-NNNNNNN`` and only
then named in ``checkpoints/LATEST`` (replaced atomically); older checkpoints are removed after
that. A kill between any two of these steps leaves ``LATEST`` naming a complete checkpoint.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from cogwm.errors import InputError

LATEST = "LATEST"


def checkpoints_dir(out: Path) -> Path:
    """The checkpoint directory of an adapter output directory."""
    return out / "checkpoints"


def rng_state() -> dict[str, Any]:
    """Python's and torch's generator states (CUDA's too where present)."""
    import torch

    state: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` saved."""
    import torch

    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(
    out: Path, step: int, tensors: dict[str, Any], meta: dict[str, Any], keep: int = 1
) -> Path:
    """Write ``tensors`` (state dicts, saved with torch) and ``meta`` (JSON) atomically."""
    import torch

    root = checkpoints_dir(out)
    root.mkdir(parents=True, exist_ok=True)
    name = f"step-{step:07d}"
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    torch.save(tensors, tmp / "state.pt")
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    final = root / name
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    pointer = root / f".{LATEST}.tmp"
    pointer.write_text(name, encoding="utf-8")
    os.replace(pointer, root / LATEST)
    for old in sorted(root.glob("step-*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    for stale in root.glob(".step-*"):  # temporaries of killed writes
        shutil.rmtree(stale, ignore_errors=True)
    return final


def latest_checkpoint(out: Path) -> Path | None:
    """The checkpoint ``LATEST`` names, or None when there is none."""
    pointer = checkpoints_dir(out) / LATEST
    if not pointer.is_file():
        return None
    path = checkpoints_dir(out) / pointer.read_text(encoding="utf-8").strip()
    if not (path / "meta.json").is_file():
        raise InputError(f"checkpoint {path} named in {pointer} is missing")
    return path


def load_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tensors and meta of a checkpoint directory."""
    import torch

    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    tensors = torch.load(path / "state.pt", map_location="cpu", weights_only=False)
    return tensors, meta
