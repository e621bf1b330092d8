"""What the transition model reads at a user turn, and the numbers it turns that into.

A :class:`TurnView` is the part of the simulator's input the transition model uses: the task,
the agent's last turn, the user's own turn before it, and the previous state shown (or none).
The same view is built from a card item's :class:`~cogwm.simulator.format.WorldModelInput` (for
training rows) and from an arena conversation (when it plays the user), so the model is trained
on exactly what it later reads.

Text is turned into TF-IDF vectors with a fixed vocabulary and IDF (fitted by scikit-learn,
applied here with numpy: :class:`TfidfTable` reproduces ``TfidfVectorizer``'s default
tokenisation, n-grams, sublinear term frequency and L2 norm), so a fitted model is plain JSON.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from cogwm.metrics.sentiment import vader_compound
from cogwm.schema import BDI, CognitiveState, TaskSpec
from cogwm.schema.lexicon import INTENSITIES, valence

FloatArray = npt.NDArray[np.float64]

#: The text fields of a view that get a TF-IDF block each.
TEXT_FIELDS: tuple[str, ...] = ("agent", "user")
#: scikit-learn's default token pattern (two or more word characters).
TOKEN_PATTERN = re.compile(r"(?u)\b\w\w+\b")
#: Scale of valence x intensity in the lexicon (|valence| <= 2.5, intensity <= 3).
E_SCALE = 7.5
#: What the arena and the samples show for an empty turn (it carries no words).
EMPTY_TURN = "..."


@dataclass(frozen=True)
class TurnView:
    """What the transition model reads before a user turn.

    ``agent`` is the agent's last turn ("" when the user speaks first), ``user`` the user's own
    turn before it ("" when there is none), ``previous`` the latest state shown (None: none).
    """

    task: str
    agent: str
    user: str
    previous: CognitiveState | None


def view_of_history(
    task: str, history: Sequence[tuple[str, str]], previous: CognitiveState | None
) -> TurnView:
    """The view of a conversation shown as ``(role, text)`` turns (roles ``user``/``agent``).

    The agent's turn is the last agent turn; the user's the last user turn before it (or the
    last user turn at all, when no agent turn was shown)."""
    agent_at = max((i for i, (role, _) in enumerate(history) if role == "agent"), default=-1)
    agent = history[agent_at][1] if agent_at >= 0 else ""
    before = history[:agent_at] if agent_at >= 0 else history
    user = next((text for role, text in reversed(before) if role == "user"), "")
    return TurnView(task=task, agent=_words(agent), user=_words(user), previous=previous)


def _words(text: str) -> str:
    text = text.strip()
    return "" if text == EMPTY_TURN else text


def numeric_names(
    tasks: Sequence[str], labels: Sequence[str], *, per_task: bool = False
) -> list[str]:
    """Names of the numeric features, in column order; ``per_task`` adds each task's own copy
    of the VADER scores (so an agent turn's sentiment may move each task's users differently)."""
    names = [f"task={t}" for t in tasks]
    names += ["prev.emotion", "prev.valence", "prev.intensity", "prev.e"]
    names += [f"prev.label={label}" for label in labels]
    for dim in BDI:
        names += [f"prev.{dim}.known", f"prev.{dim}.score"]
    names += ["agent.present", "user.present", "vader.agent", "vader.user", "prev.e*vader.agent"]
    if per_task:
        names += [f"{v}|task={t}" for t in tasks for v in ("vader.agent", "vader.user")]
    return names


def normalised_score(value: float, score_range: tuple[float, float]) -> float:
    """A B/D/I score mapped from the task's range to [0, 1]."""
    low, high = score_range
    return (value - low) / (high - low) if high > low else 0.5


def numeric_features(view: TurnView, spec: TaskSpec, names: Sequence[str]) -> FloatArray:
    """The numeric features of ``view`` named ``names`` (from :func:`numeric_names`), in order."""
    values: dict[str, float] = {f"task={view.task}": 1.0}
    prev_e = 0.0
    emotion = view.previous.emotion if view.previous is not None else None
    if emotion is not None:
        prev_e = valence(emotion.label) * emotion.intensity / E_SCALE
        values.update(
            {
                "prev.emotion": 1.0,
                "prev.valence": valence(emotion.label) / 2.5,
                "prev.intensity": emotion.intensity / max(INTENSITIES),
                "prev.e": prev_e,
                f"prev.label={emotion.label}": 1.0,
            }
        )
    if view.previous is not None:
        for dim in BDI:
            score = view.previous.dimension_value(dim)
            if score is not None:
                values[f"prev.{dim}.known"] = 1.0
                values[f"prev.{dim}.score"] = normalised_score(score, spec.score_range) - 0.5
    agent_c = vader_compound(view.agent) if view.agent else 0.0
    values.update(
        {
            "agent.present": float(bool(view.agent)),
            "user.present": float(bool(view.user)),
            "vader.agent": agent_c,
            "vader.user": vader_compound(view.user) if view.user else 0.0,
            "prev.e*vader.agent": prev_e * agent_c,
        }
    )
    values[f"vader.agent|task={view.task}"] = values["vader.agent"]
    values[f"vader.user|task={view.task}"] = values["vader.user"]
    return np.array([values.get(name, 0.0) for name in names], dtype=np.float64)


def tokens(text: str, ngram_max: int) -> list[str]:
    """Word n-grams (1 to ``ngram_max``) of ``text`` as ``TfidfVectorizer`` forms them."""
    words = TOKEN_PATTERN.findall(text.lower())
    grams = list(words)
    for n in range(2, ngram_max + 1):
        grams += [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
    return grams


@dataclass(frozen=True)
class TfidfTable:
    """A fitted TF-IDF vocabulary: term → column, the columns' IDF, the n-gram range's top."""

    vocabulary: Mapping[str, int]
    idf: FloatArray
    ngram_max: int

    def vector(self, text: str) -> FloatArray:
        """The L2-normalised, sublinear TF-IDF vector of ``text``."""
        out = np.zeros(len(self.idf), dtype=np.float64)
        counts = Counter(t for t in tokens(text, self.ngram_max) if t in self.vocabulary)
        for term, count in counts.items():
            column = self.vocabulary[term]
            out[column] = (1.0 + math.log(count)) * self.idf[column]
        norm = float(np.linalg.norm(out))
        return out / norm if norm > 0 else out

    def to_json(self) -> dict[str, Any]:
        """The table as JSON (terms listed in column order)."""
        terms = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        return {
            "terms": terms,
            "idf": [round(float(v), 6) for v in self.idf],
            "ngram_max": self.ngram_max,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TfidfTable:
        """The table :meth:`to_json` wrote."""
        terms = list(data["terms"])
        return cls(
            vocabulary={t: i for i, t in enumerate(terms)},
            idf=np.asarray(data["idf"], dtype=np.float64),
            ngram_max=int(data["ngram_max"]),
        )


def text_of(view: TurnView, field: str) -> str:
    """The text of one of :data:`TEXT_FIELDS`."""
    return view.agent if field == "agent" else view.user
