"""The emotion lexicon: labels and valences (paper Table 7). The one home of these numbers."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: Valence per emotion label. ``E_val = valence``; ``e = valence * intensity``
#: (docs/architecture.md, "Cognitive state").
DEFAULT_VALENCES: Mapping[str, float] = MappingProxyType(
    {
        "hope": 2.0,
        "relief": 1.5,
        "confusion": -1.0,
        "frustration": -1.5,
        "guilt": -1.5,
        "anger": -1.5,
        "loneliness": -1.5,
        "sadness": -2.0,
        "anxiety": -2.0,
        "fear": -2.0,
        "helplessness": -2.0,
        "shame": -2.5,
    }
)

#: Intensities: 1 weak, 2 moderate, 3 strong.
INTENSITIES: tuple[int, ...] = (1, 2, 3)

_extra: dict[str, float] = {}
_version = 0


def register_emotion(label: str, valence: float) -> None:
    """Extend the lexicon with a task-specific label (e.g. ``neutral`` with valence 0).

    Re-registering a label with the same valence is a no-op; a different valence is an error,
    because one label must mean one number everywhere.
    """
    label = label.strip().lower()
    known = valence_table().get(label)
    if known is not None and known != valence:
        raise ValueError(f"emotion {label!r} already has valence {known}, not {valence}")
    if known is None:
        global _version
        _extra[label] = float(valence)
        _version += 1


def lexicon_version() -> int:
    """A number that changes whenever the lexicon is extended (for caches of JSON schemas)."""
    return _version


def valence_table() -> dict[str, float]:
    """All known labels (default lexicon plus registered extensions) with their valences."""
    return {**DEFAULT_VALENCES, **_extra}


def is_known(label: str) -> bool:
    """Whether ``label`` is in the lexicon (without building the merged table)."""
    return label in DEFAULT_VALENCES or label in _extra


def valence(label: str) -> float:
    """Valence of ``label``; raises ``KeyError`` naming the label if it is not in the lexicon."""
    # Looked up in place: this runs for every state of every trajectory.
    known = DEFAULT_VALENCES.get(label)
    if known is None:
        known = _extra.get(label)
    if known is None:
        table = valence_table()
        raise KeyError(f"emotion {label!r} is not in the lexicon ({', '.join(sorted(table))})")
    return known
