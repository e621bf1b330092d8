"""Turn tier: how faithfully one predicted turn (state + utterance) matches gold.

Per sample (one user turn):

- **E-Acc**: the predicted emotion label equals the gold one. Over the turns whose gold has an
  emotion; a prediction without an emotion is a miss (wrong, and counted in the miss rate).
- **E-MAE**: ``|predicted intensity - gold intensity|`` over the turns where both have an
  emotion (whether or not the labels agree) and the gold's intensity is known.
- **B-/D-/I-Sim**: cosine similarity between the sentence embedding of the predicted items'
  texts joined with ``"; "`` and that of the gold items' texts joined the same way.
- **B-/D-/I-MAE**: ``|mean predicted score - mean gold score|`` of the dimension.
- B/D/I metrics cover only the turns whose gold dimension has items. There, an empty
  prediction is a **miss**: Sim 0, left out of MAE, and counted in the miss rate. MAE also
  needs a scored item on both sides (corpus labels may carry text only).
- Utterance metrics (``cogwm.metrics.text``): ROUGE-L, BLEU-1, BLEU-4, LenR per sample, and
  Distinct-1 over all predictions; only for samples with both a gold and a predicted utterance
  (the state-understanding mode predicts no utterance).

Every aggregate reports its coverage ``n``; a metric with no covered sample is None, not 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from cogwm.metrics.aggregate import ReportedMean
from cogwm.metrics.embeddings import Embedder, cosine_rows, default_embedder
from cogwm.metrics.text import distinct_1, utterance_scores
from cogwm.schema import BDI, CognitiveState, Dimension
from cogwm.stats.means import (
    DEFAULT_RESAMPLES,
    MeanEstimate,
    optional_mean,
)

#: Separator between item texts before a dimension's items are embedded as one text.
ITEM_JOINER = "; "

#: Metric names of the turn tier, in report order.
TURN_METRICS: tuple[str, ...] = (
    "E-Acc",
    "E-MAE",
    "B-Sim",
    "D-Sim",
    "I-Sim",
    "B-MAE",
    "D-MAE",
    "I-MAE",
    "ROUGE-L",
    "BLEU-1",
    "BLEU-4",
    "LenR",
    "Distinct-1",
)

_LETTER = {Dimension.BELIEF: "B", Dimension.DESIRE: "D", Dimension.INTENTION: "I"}


@dataclass(frozen=True, slots=True)
class FidelitySample:
    """One user turn: the gold state/utterance and the prediction for it.

    ``prediction`` None means no state could be had (e.g. unparsable output): every applicable
    metric counts it as a miss. ``group`` (e.g. the dialogue id) makes the bootstrap resample
    whole dialogues. ``gold_intensity_known`` False: the gold gives the emotion label only (its
    intensity is a placeholder), so E-MAE leaves the turn out.
    """

    id: str
    gold: CognitiveState
    prediction: CognitiveState | None
    gold_utterance: str | None = None
    predicted_utterance: str | None = None
    group: str | None = None
    gold_intensity_known: bool = True


class DimensionScore(NamedTuple):
    """One B/D/I dimension of one turn; all None when the gold dimension is empty."""

    sim: float | None
    abs_error: float | None
    miss: bool | None


class TurnScores(NamedTuple):
    """All turn-tier metrics of one sample (None = not applicable to this sample)."""

    id: str
    emotion_correct: bool | None
    emotion_miss: bool | None
    intensity_error: float | None
    belief: DimensionScore
    desire: DimensionScore
    intention: DimensionScore
    rouge_l: float | None
    bleu1: float | None
    bleu4: float | None
    len_ratio: float | None

    def dimension(self, dim: Dimension) -> DimensionScore:
        """The score of one B/D/I dimension."""
        return {
            Dimension.BELIEF: self.belief,
            Dimension.DESIRE: self.desire,
            Dimension.INTENTION: self.intention,
        }[dim]


class MetricSummary(ReportedMean):
    """One aggregated metric with its coverage, CI and (for miss-aware metrics) the miss rate."""

    name: str
    misses: int | None = None
    miss_rate: float | None = None

    @classmethod
    def of(  # type: ignore[override]
        cls,
        name: str,
        estimate: MeanEstimate | None,
        *,
        n: int | None = None,
        misses: int | None = None,
        applicable: int | None = None,
    ) -> MetricSummary:
        """Build from a ``MeanEstimate`` (None = no covered sample)."""
        miss_rate = misses / applicable if misses is not None and applicable else None
        return cls(name=name, misses=misses, miss_rate=miss_rate, **cls.fields(estimate, n))


class FidelityReport(BaseModel):
    """The turn tier over a set of samples."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_samples: int
    embedding_model: str | None
    metrics: dict[str, MetricSummary]


def _joined(state: CognitiveState | None, dim: Dimension) -> str:
    if state is None:
        return ""
    return ITEM_JOINER.join(item.text.strip() for item in state.items(dim))


def _emotion(sample: FidelitySample) -> tuple[bool | None, bool | None, float | None]:
    gold = sample.gold.emotion
    if gold is None:
        return None, None, None
    pred = sample.prediction.emotion if sample.prediction is not None else None
    if pred is None:
        return False, True, None
    error = float(abs(pred.intensity - gold.intensity)) if sample.gold_intensity_known else None
    return pred.label == gold.label, False, error


def _dimension_error(sample: FidelitySample, dim: Dimension) -> float | None:
    assert sample.prediction is not None
    gold_value = sample.gold.dimension_value(dim)
    pred_value = sample.prediction.dimension_value(dim)
    if gold_value is None or pred_value is None:
        return None
    return abs(pred_value - gold_value)


def score_turns(
    samples: Sequence[FidelitySample], *, embedder: Embedder | None = None
) -> list[TurnScores]:
    """Per-sample turn-tier metrics; all similarity texts are embedded in one batched call.

    Args:
        samples: The samples.
        embedder: Sentence embedder for B/D/I-Sim (default: the cached MiniLM model). It is
            only called when some sample needs a similarity.
    """
    pending: list[tuple[int, Dimension, str, str]] = []
    dims: list[dict[Dimension, DimensionScore]] = []
    for i, sample in enumerate(samples):
        per_dim: dict[Dimension, DimensionScore] = {}
        for dim in BDI:
            gold_text = _joined(sample.gold, dim)
            if not gold_text:
                per_dim[dim] = DimensionScore(None, None, None)
                continue
            pred_text = _joined(sample.prediction, dim)
            if not pred_text:
                per_dim[dim] = DimensionScore(sim=0.0, abs_error=None, miss=True)
                continue
            pending.append((i, dim, pred_text, gold_text))
            per_dim[dim] = DimensionScore(None, _dimension_error(sample, dim), miss=False)
        dims.append(per_dim)
    if pending:
        model = embedder if embedder is not None else default_embedder()
        vectors = model.encode([p[2] for p in pending] + [p[3] for p in pending])
        sims = cosine_rows(vectors[: len(pending)], vectors[len(pending) :])
        for (i, dim, _, _), sim in zip(pending, sims, strict=True):
            dims[i][dim] = dims[i][dim]._replace(sim=float(sim))
    out: list[TurnScores] = []
    for sample, per_dim in zip(samples, dims, strict=True):
        correct, miss, intensity_error = _emotion(sample)
        text = None
        if sample.predicted_utterance is not None and sample.gold_utterance:
            text = utterance_scores(sample.predicted_utterance, sample.gold_utterance)
        out.append(
            TurnScores(
                id=sample.id,
                emotion_correct=correct,
                emotion_miss=miss,
                intensity_error=intensity_error,
                belief=per_dim[Dimension.BELIEF],
                desire=per_dim[Dimension.DESIRE],
                intention=per_dim[Dimension.INTENTION],
                rouge_l=text.rouge_l if text else None,
                bleu1=text.bleu1 if text else None,
                bleu4=text.bleu4 if text else None,
                len_ratio=text.len_ratio if text else None,
            )
        )
    return out


def summarize_turns(
    samples: Sequence[FidelitySample],
    scores: Sequence[TurnScores],
    *,
    embedding_model: str | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> FidelityReport:
    """Aggregate per-sample scores: mean, SE, bootstrap CI (over ``group`` clusters when the
    samples have groups), coverage and miss rates."""
    if len(samples) != len(scores):
        raise ValueError(f"{len(samples)} samples but {len(scores)} score rows")
    has_groups = any(s.group is not None for s in samples)
    groups = [s.group if s.group is not None else s.id for s in samples] if has_groups else None

    def summary(
        name: str, values: Sequence[float | None], *, misses: int | None = None
    ) -> MetricSummary:
        estimate = optional_mean(values, groups=groups, n_resamples=n_resamples, seed=seed)
        applicable = sum(1 for v in values if v is not None)
        return MetricSummary.of(name, estimate, misses=misses, applicable=applicable)

    metrics: dict[str, MetricSummary] = {}
    metrics["E-Acc"] = summary(
        "E-Acc",
        [None if s.emotion_correct is None else float(s.emotion_correct) for s in scores],
        misses=sum(1 for s in scores if s.emotion_miss),
    )
    metrics["E-MAE"] = summary("E-MAE", [s.intensity_error for s in scores])
    for dim in BDI:
        letter = _LETTER[dim]
        dim_scores = [s.dimension(dim) for s in scores]
        misses = sum(1 for d in dim_scores if d.miss)
        metrics[f"{letter}-Sim"] = summary(
            f"{letter}-Sim", [d.sim for d in dim_scores], misses=misses
        )
        metrics[f"{letter}-MAE"] = summary(f"{letter}-MAE", [d.abs_error for d in dim_scores])
    metrics["ROUGE-L"] = summary("ROUGE-L", [s.rouge_l for s in scores])
    metrics["BLEU-1"] = summary("BLEU-1", [s.bleu1 for s in scores])
    metrics["BLEU-4"] = summary("BLEU-4", [s.bleu4 for s in scores])
    metrics["LenR"] = summary("LenR", [s.len_ratio for s in scores])
    predictions = [
        s.predicted_utterance
        for s in samples
        if s.predicted_utterance is not None and s.gold_utterance
    ]
    distinct = distinct_1(predictions)
    metrics["Distinct-1"] = MetricSummary(
        name="Distinct-1", value=distinct.value, n=len(predictions)
    )
    return FidelityReport(
        n_samples=len(samples),
        embedding_model=embedding_model,
        metrics={name: metrics[name] for name in TURN_METRICS},
    )


def turn_fidelity(
    samples: Sequence[FidelitySample],
    *,
    embedder: Embedder | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> FidelityReport:
    """The whole turn tier (without the judge): ``score_turns`` then ``summarize_turns``."""
    model = embedder if embedder is not None else default_embedder()
    scores = score_turns(samples, embedder=model)
    return summarize_turns(
        samples, scores, embedding_model=model.model_id, n_resamples=n_resamples, seed=seed
    )
