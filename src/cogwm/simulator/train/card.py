"""What is saved beside a trained adapter: the training card (JSON) and the loss curve (PNG)."""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

CARD_FILE = "training_card.json"
CURVE_FILE = "loss.png"
CARD_SCHEMA = "cogwm.train_card/1"


def versions() -> dict[str, str]:
    """Versions of Python and of the libraries that shape the result."""
    found = {"python": platform.python_version()}
    for package in ("cogwm", "torch", "transformers", "peft", "accelerate"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "-"
    return found


def write_card(out: Path, card: dict[str, Any]) -> Path:
    """Write the card as ``training_card.json`` in ``out``."""
    path = out / CARD_FILE
    path.write_text(json.dumps({"schema": CARD_SCHEMA, **card}, indent=1) + "\n", encoding="utf-8")
    return path


def read_card(out: Path) -> dict[str, Any] | None:
    """The card of a finished run in ``out``, or None."""
    path = out / CARD_FILE
    if not path.is_file():
        return None
    card: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return card


def plot_loss(out: Path, history: list[dict[str, float]], title: str) -> Path:
    """The per-step loss and its running mean as ``loss.png`` in ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [h["step"] for h in history]
    losses = [h["loss"] for h in history]
    window = max(1, len(losses) // 20)
    smooth = [
        sum(losses[max(0, i - window + 1) : i + 1]) / len(losses[max(0, i - window + 1) : i + 1])
        for i in range(len(losses))
    ]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, losses, alpha=0.35, linewidth=0.8, label="loss per step")
    ax.plot(steps, smooth, linewidth=1.6, label=f"running mean ({window} steps)")
    ax.set_xlabel("step")
    ax.set_ylabel("weighted cross-entropy (target tokens)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / CURVE_FILE
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
