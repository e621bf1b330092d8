"""Emotion labels beyond the paper's twelve, for human labels that the lexicon cannot express.

DailyDialog labels every utterance with happiness, surprise, disgust or "no emotion" far more
often than with the three labels the paper's lexicon shares with it (anger, sadness, fear).
Dropping them would teach a model trained on these labels only negative emotion, so they are
kept as lexicon extensions with the valences below. They are registered when a mapping that
uses them runs (never on import), and every ``cogwm.labels/1`` line that uses one carries its
valence, so a reader registers the same number.
"""

from __future__ import annotations

from typing import NamedTuple

from cogwm.schema.lexicon import register_emotion


class Extension(NamedTuple):
    """One extension label with its valence and why that valence."""

    label: str
    valence: float
    reason: str


EXTENSIONS: tuple[Extension, ...] = (
    Extension(
        "happiness",
        2.0,
        "clearly positive; as positive as the lexicon's most positive label (hope)",
    ),
    Extension(
        "surprise",
        0.0,
        "DailyDialog's surprise is as often dismay ('You can't be serious!') as delight "
        "('Wow! I'm impressed!'); in the circumplex model surprise is arousal without valence",
    ),
    Extension(
        "disgust",
        -1.5,
        "negative and rejecting, closest to anger (-1.5) among the lexicon's labels",
    ),
    Extension(
        "neutral",
        0.0,
        "DailyDialog's 'no emotion': the annotator saw no emotion, which is a value (calm), "
        "not a missing label",
    ),
)

_BY_LABEL = {e.label: e for e in EXTENSIONS}
#: The extension labels.
LABELS: frozenset[str] = frozenset(_BY_LABEL)


def register(*labels: str) -> None:
    """Register the named extension labels (all of them when none is named) in the lexicon."""
    for label in labels or tuple(_BY_LABEL):
        extension = _BY_LABEL[label]
        register_emotion(extension.label, extension.valence)
