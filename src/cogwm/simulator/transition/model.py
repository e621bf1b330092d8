"""A fitted transition model as plain JSON, and its prediction of the next state with numpy.

The file (schema ``cogwm.transition/1``) holds the feature layout (tasks, emotion labels,
numeric feature names, TF-IDF tables) and three heads, all linear:

- ``label``: a multinomial logistic regression over the emotion labels seen in training;
- ``valence``: a ridge regression of the next valence x intensity;
- ``bdi``: per dimension, a ridge regression of the next score mapped to [0, 1] (absent where
  training had too few scored turns of that dimension).

The next emotion is the most probable label whose valence has the sign of the predicted
valence x intensity (no sign inside :data:`NEUTRAL_BAND`), at the intensity nearest to the
predicted magnitude; so the label head says *which* emotion, the valence head *how good or bad*.
A model fitted with ``pleasant_weight`` w above 0 predicts the valence x intensity as
``(1 - w) * valence head + w * 3 * (2 * pleasant share - 1)``, where the pleasant share is the
label head's probability on labels of positive valence among the signed labels (3 the highest
intensity): on DailyDialog's validation turns that share ranked pleasant against unpleasant turns
better than the valence head.
(Reading the sign from the label head instead ranked DailyDialog's validation turns better but
left the counterfactual valence ordering at 0.5: sure of the sign, it never moved.)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cogwm import tasks
from cogwm.errors import InputError
from cogwm.schema import BDI, CognitiveState, Emotion, StateItem
from cogwm.schema.lexicon import INTENSITIES, is_known, register_emotion, valence
from cogwm.simulator.transition.features import (
    TEXT_FIELDS,
    FloatArray,
    TfidfTable,
    TurnView,
    numeric_features,
    text_of,
)

#: The tag of a transition model file.
SCHEMA = "cogwm.transition/1"
#: |valence x intensity| below this is shown as a label without valence sign where one exists
#: (0.3: on DailyDialog's validation turns, AUROC 0.69 against 0.65 at 0.5 and 0.61 at 0.2).
NEUTRAL_BAND = 0.3
_ITEM_FIELDS = ("beliefs", "desires", "intentions")


@dataclass(frozen=True)
class LinearHead:
    """``coef @ x + intercept``; ``coef`` has one row per output (one for a regression)."""

    coef: FloatArray
    intercept: FloatArray

    def scores(self, x: FloatArray) -> FloatArray:
        """The head's raw outputs for one feature vector."""
        return np.asarray(self.coef @ x + self.intercept, dtype=np.float64)

    def to_json(self) -> dict[str, Any]:
        """The head as JSON numbers (6 significant digits)."""
        return {
            "coef": np.round(self.coef, 6).tolist(),
            "intercept": np.round(self.intercept, 6).tolist(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LinearHead:
        """The head :meth:`to_json` wrote."""
        coef = np.asarray(data["coef"], dtype=np.float64)
        return cls(
            coef=coef.reshape(1, -1) if coef.ndim == 1 else coef,
            intercept=np.atleast_1d(np.asarray(data["intercept"], dtype=np.float64)),
        )


@dataclass(frozen=True)
class TransitionModel:
    """A fitted transition model (see the module doc)."""

    tasks: list[str]
    labels: list[str]
    label_valences: dict[str, float]
    numeric: list[str]
    text: dict[str, TfidfTable]
    label_head: LinearHead
    valence_head: LinearHead
    bdi_heads: dict[str, LinearHead | None]
    settings: dict[str, Any]
    training: dict[str, Any]

    def features(self, view: TurnView) -> FloatArray:
        """The feature vector of ``view`` (numeric block, then one TF-IDF block per text)."""
        spec = tasks.get(view.task)
        blocks = [numeric_features(view, spec, self.numeric)]
        blocks += [self.text[f].vector(text_of(view, f)) for f in TEXT_FIELDS if f in self.text]
        return np.concatenate(blocks)

    def label_probabilities(self, x: FloatArray) -> FloatArray:
        """Probability of each of :attr:`labels` (softmax; a two-class head is a logistic)."""
        logits = self.label_head.scores(x)
        if len(self.labels) == 2 and logits.shape[0] == 1:
            logits = np.array([0.0, logits[0]])
        exp = np.exp(logits - logits.max())
        return np.asarray(exp / exp.sum(), dtype=np.float64)

    def predict(self, view: TurnView) -> CognitiveState:
        """The next state: emotion from the label and valence heads, B/D/I from their heads."""
        x = self.features(view)
        probabilities = self.label_probabilities(x)
        emotion = self._emotion(probabilities, self.valence_value(x, probabilities))
        spec = tasks.get(view.task)
        low, high = spec.score_range
        lists: dict[str, list[StateItem]] = {}
        for field, dim in zip(_ITEM_FIELDS, BDI, strict=True):
            shown = view.previous.items(dim) if view.previous is not None else []
            head = self.bdi_heads.get(dim.value)
            if head is None:
                lists[field] = list(shown)
                continue
            share = min(1.0, max(0.0, float(head.scores(x)[0])))
            score = low + share * (high - low)
            lists[field] = [i.model_copy(update={"score": score}) for i in shown] or [
                StateItem(text=spec.dimensions[dim].meaning, score=score)
            ]
        return CognitiveState(emotion=emotion, **lists)

    def valence_value(self, x: FloatArray, probabilities: FloatArray) -> float:
        """The predicted valence x intensity: the valence head's, mixed with the label head's
        pleasant share by the ``pleasant_weight`` setting (0, the default: the head alone)."""
        head = float(self.valence_head.scores(x)[0])
        weight = float(self.settings.get("pleasant_weight", 0.0))
        if weight == 0.0:
            return head
        signs = np.sign([self.label_valences[label] for label in self.labels])
        signed = float(probabilities[signs != 0].sum())
        if signed <= 0.0:
            return (1.0 - weight) * head
        share = float(probabilities[signs > 0].sum()) / signed
        return (1.0 - weight) * head + weight * max(INTENSITIES) * (2.0 * share - 1.0)

    def _emotion(self, probabilities: FloatArray, value: float) -> Emotion:
        sign = 0 if abs(value) < NEUTRAL_BAND else (1 if value > 0 else -1)
        order = np.argsort(-probabilities, kind="stable")
        matching = [i for i in order if np.sign(self.label_valences[self.labels[i]]) == sign]
        label = self.labels[matching[0] if matching else order[0]]
        size = abs(self.label_valences[label])
        intensity = round(abs(value) / size) if size > 0 else min(INTENSITIES)
        return Emotion(
            label=label, intensity=min(max(INTENSITIES), max(min(INTENSITIES), intensity))
        )

    def to_json(self) -> dict[str, Any]:
        """The model as a JSON object (schema :data:`SCHEMA`)."""
        return {
            "schema": SCHEMA,
            "settings": self.settings,
            "tasks": self.tasks,
            "labels": [{"label": x, "valence": self.label_valences[x]} for x in self.labels],
            "numeric": self.numeric,
            "text": {name: table.to_json() for name, table in self.text.items()},
            "heads": {
                "label": self.label_head.to_json(),
                "valence": self.valence_head.to_json(),
                "bdi": {d: h.to_json() if h else None for d, h in self.bdi_heads.items()},
            },
            "training": self.training,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TransitionModel:
        """The model :meth:`to_json` wrote; registers labels the lexicon lacks (with their
        valence), as the training data's labels were."""
        labels = [(str(x["label"]), float(x["valence"])) for x in data["labels"]]
        for label, val in labels:
            if not is_known(label):
                register_emotion(label, val)
        heads = data["heads"]
        return cls(
            tasks=list(data["tasks"]),
            labels=[label for label, _ in labels],
            label_valences={label: valence(label) for label, _ in labels},
            numeric=list(data["numeric"]),
            text={name: TfidfTable.from_json(t) for name, t in data["text"].items()},
            label_head=LinearHead.from_json(heads["label"]),
            valence_head=LinearHead.from_json(heads["valence"]),
            bdi_heads={
                d: LinearHead.from_json(h) if h is not None else None
                for d, h in heads["bdi"].items()
            },
            settings=dict(data["settings"]),
            training=dict(data.get("training", {})),
        )


def save_model(model: TransitionModel, path: Path) -> None:
    """Write ``model`` as JSON (atomically: a stopped write leaves no partial file).

    Raises:
        InputError: The file cannot be written.
    """
    temporary = path.with_name(path.name + ".partial")
    try:
        temporary.write_text(json.dumps(model.to_json(), separators=(",", ":")), encoding="utf-8")
        temporary.replace(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the transition model ({exc})") from None


def load_model(path: Path) -> TransitionModel:
    """Read a transition model file.

    Raises:
        InputError: A missing or unreadable file, not JSON, another schema, or missing fields.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read a transition model ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise InputError(f"{path}: not a transition model (expected schema {SCHEMA})")
    try:
        return TransitionModel.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: a broken transition model ({exc!r})") from None


def file_digest(path: Path) -> str:
    """The first 12 hex digits of the file's SHA-256 (names the model in identities)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]
