"""The emotion lexicon: labels and valences (paper Table 7). The one home of these numbers.

A :class:`Lexicon` is an immutable value: the default twelve labels plus the extensions a task
or a label file brings. The lexicon in force is scoped, never process-wide: ``using_lexicon``
puts one in force for a block (and for the asyncio tasks started in it), and
``register_emotion`` extends it in the current context only, so a label one run adds is not
seen by another run of the same process.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
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


class Lexicon:
    """Emotion labels and their valences: the default lexicon plus ``extra`` labels.

    Immutable and hashable (it keys caches of JSON schemas); ``extended`` returns a new one.
    """

    __slots__ = ("_extra", "_hash", "_key")

    def __init__(self, extra: Mapping[str, float] | None = None) -> None:
        self._extra: Mapping[str, float] = MappingProxyType(dict(extra or {}))
        self._key = tuple(sorted(self._extra.items()))
        # Hashed once (immutable): every structured model call looks its schema up by lexicon.
        self._hash = hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lexicon) and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Lexicon(extra={dict(self._extra)!r})"

    @property
    def extra(self) -> Mapping[str, float]:
        """The labels beyond the default lexicon, with their valences."""
        return self._extra

    def extended(self, labels: Mapping[str, float]) -> Lexicon:
        """This lexicon with ``labels`` added (names are stripped and lower-cased).

        Re-adding a label with the same valence changes nothing; a different valence is an
        error, because one label must mean one number everywhere.

        Raises:
            ValueError: A label already has another valence.
        """
        extra = dict(self._extra)
        for raw, value in labels.items():
            label = raw.strip().lower()
            known = DEFAULT_VALENCES.get(label, extra.get(label))
            if known is not None and known != value:
                raise ValueError(f"emotion {label!r} already has valence {known}, not {value}")
            if known is None:
                extra[label] = float(value)
        return self if len(extra) == len(self._extra) else Lexicon(extra)

    def table(self) -> dict[str, float]:
        """All labels (default plus extensions) with their valences."""
        return {**DEFAULT_VALENCES, **self._extra}

    def is_known(self, label: str) -> bool:
        """Whether ``label`` is in this lexicon."""
        return label in DEFAULT_VALENCES or label in self._extra

    def valence(self, label: str) -> float:
        """Valence of ``label``; raises ``KeyError`` naming the label if it is unknown."""
        # Looked up in place: this runs for every state of every trajectory.
        known = DEFAULT_VALENCES.get(label)
        if known is None:
            known = self._extra.get(label)
        if known is None:
            table = self.table()
            raise KeyError(f"emotion {label!r} is not in the lexicon ({', '.join(sorted(table))})")
        return known


#: The twelve labels of the paper, without extensions.
DEFAULT_LEXICON = Lexicon()

_ACTIVE: ContextVar[Lexicon] = ContextVar("cogwm_lexicon", default=DEFAULT_LEXICON)


def active_lexicon() -> Lexicon:
    """The lexicon in force in the current context (the default one unless extended)."""
    return _ACTIVE.get()


@contextmanager
def using_lexicon(lexicon: Lexicon) -> Iterator[Lexicon]:
    """Put ``lexicon`` in force for the block; the one before comes back afterwards."""
    token = _ACTIVE.set(lexicon)
    try:
        yield lexicon
    finally:
        _ACTIVE.reset(token)


def register_emotion(label: str, valence: float) -> None:
    """Extend the lexicon in force with a label (e.g. ``neutral`` with valence 0), in the
    current context only (see ``using_lexicon``).

    Re-registering a label with the same valence is a no-op; a different valence is an error,
    because one label must mean one number everywhere.
    """
    _ACTIVE.set(_ACTIVE.get().extended({label: valence}))


def valence_table() -> dict[str, float]:
    """All known labels (default lexicon plus extensions in force) with their valences."""
    return _ACTIVE.get().table()


def is_known(label: str) -> bool:
    """Whether ``label`` is in the lexicon in force."""
    return _ACTIVE.get().is_known(label)


def valence(label: str) -> float:
    """Valence of ``label``; raises ``KeyError`` naming the label if it is not in the lexicon."""
    return _ACTIVE.get().valence(label)
