"""Card figures: point estimates with cluster-bootstrap CIs and their baselines.

Items of one dialogue are not independent (DailyDialog gives both speakers of a dialogue, AnnoMI
many client turns per session), so every interval resamples whole dialogues. Accuracy and MAE are
means and use :func:`cogwm.stats.means.mean_estimate`; macro-F1 and AUROC are not means of
per-item values, so they are recomputed on each resample (scikit-learn's ``f1_score`` and
``roc_auc_score``). A resample on which a statistic is undefined (one class only, for AUROC) is
left out of the percentiles. Distinct-1, a ratio over the whole corpus that resampling with
replacement biases downwards, takes a delete-one-dialogue jackknife interval instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

# Re-exported (``as``): the card's figures and comparisons share the one cluster bootstrap.
from cogwm.stats.bootstrap import IntArray as IntArray
from cogwm.stats.bootstrap import Settings as Settings
from cogwm.stats.bootstrap import Statistic as Statistic
from cogwm.stats.bootstrap import auroc_estimate, cluster_estimate, jackknife_estimate
from cogwm.stats.bootstrap import cluster_bootstrap as cluster_bootstrap
from cogwm.stats.means import (
    mean_estimate,
    optional_mean,
)
from cogwm.stats.pairs import macro_f1
from cogwm.stats.proportions import wilson_interval
from cogwm.validate.card import Baselines, Figure, ItemRow

if TYPE_CHECKING:
    from cogwm.metrics.text import UtteranceScores
    from cogwm.validate.memorisation import NgramIndex

#: Draws of the random baseline for statistics without a closed form (macro-F1).
RANDOM_DRAWS = 200


@dataclass(frozen=True)
class Scope:
    """Where figures belong (card part and mode) and how their intervals are drawn."""

    part: str
    mode: str
    settings: Settings

    def figure(self, **fields: Any) -> Figure:
        """A figure of this part and mode."""
        return Figure(part=self.part, mode=self.mode, **fields)


def accuracy_figure(
    scope: Scope,
    gold: Sequence[str],
    predicted: Sequence[str | None],
    groups: Sequence[Hashable],
    answer_space: int,
    *,
    ids: Sequence[str] | None = None,
) -> Figure:
    """Share of items whose predicted label equals the gold label.

    A failed call (``None``) counts as a wrong answer (the simulator did not give the right
    label) and is reported in ``n_failed``.

    Args:
        scope: Part, mode and bootstrap settings.
        gold: Gold labels.
        predicted: Predicted labels, None where the call failed.
        groups: Dialogue of each item.
        answer_space: How many labels the simulator may answer (the random baseline's 1/k).
        ids: Item ids; given, the items are kept on the figure for paired comparisons.
    """
    correct = [1.0 if p == g else 0.0 for p, g in zip(predicted, gold, strict=True)]
    majority = Counter(gold).most_common(1)[0][1] / len(gold) if gold else None
    baselines = Baselines(majority=majority, random=1.0 / answer_space)
    if not correct:
        return scope.figure(metric="emotion_accuracy", value=None, n=0, baselines=baselines)
    est = mean_estimate(correct, groups=list(groups), n_resamples=scope.settings.resamples,
                        confidence=scope.settings.confidence, seed=scope.settings.seed)  # fmt: skip
    return scope.figure(
        metric="emotion_accuracy",
        **est.interval(),
        n_failed=sum(p is None for p in predicted),
        baselines=baselines,
        note="failed calls count as wrong",
        **_rows("mean", ids, groups, [1.0] * len(correct), correct),
    )


def _rows(
    kind: str,
    ids: Sequence[str] | None,
    groups: Sequence[Hashable],
    truth: Sequence[float],
    answers: Sequence[float | None],
) -> dict[str, Any]:
    """The ``rows_kind`` and ``rows`` fields of a figure (nothing without ids)."""
    if ids is None:
        return {}
    rows = [
        ItemRow(id=i, group=str(g), truth=float(t), answer=None if a is None else float(a))
        for i, g, t, a in zip(ids, groups, truth, answers, strict=True)
    ]
    return {"rows_kind": kind, "rows": rows}


def macro_f1_figure(
    scope: Scope,
    gold: Sequence[str],
    predicted: Sequence[str | None],
    groups: Sequence[Hashable],
    answer_labels: Sequence[str],
) -> Figure:
    """Macro-F1 over the gold classes (a predicted label outside them is a miss for its item).

    Failed calls count as wrong answers, as in :func:`accuracy_figure`.
    """
    classes = sorted(set(gold))
    gold_arr = np.asarray(gold, dtype=object)
    pred_arr = np.asarray([p if p is not None else "(failed)" for p in predicted], dtype=object)

    def f1(g: npt.NDArray[np.object_], p: npt.NDArray[np.object_]) -> float:
        return macro_f1(g, p, classes)

    def statistic(idx: IntArray) -> float:
        return f1(gold_arr[idx], pred_arr[idx])

    majority_label = Counter(gold).most_common(1)[0][0] if gold else None
    rng = np.random.default_rng(scope.settings.seed)
    labels = np.asarray(list(answer_labels), dtype=object)
    random_value = (
        float(
            np.mean([f1(gold_arr, rng.choice(labels, size=len(gold))) for _ in range(RANDOM_DRAWS)])
        )
        if gold
        else None
    )
    baselines = Baselines(
        majority=f1(gold_arr, np.full(len(gold), majority_label, dtype=object)) if gold else None,
        random=random_value,
    )
    if not gold:
        return scope.figure(metric="emotion_macro_f1", value=None, n=0, baselines=baselines)
    return scope.figure(
        metric="emotion_macro_f1",
        **cluster_estimate(statistic, groups, scope.settings).interval(),
        n_failed=sum(p is None for p in predicted),
        baselines=baselines,
        note=f"macro over the gold classes {', '.join(classes)}; failed calls count as wrong",
    )


def auroc_figure(
    scope: Scope,
    metric: str,
    positive: Sequence[bool],
    scores: Sequence[float | None],
    groups: Sequence[Hashable],
    *,
    note: str = "",
    ids: Sequence[str] | None = None,
) -> Figure:
    """AUROC of ``scores`` for telling positive from negative items.

    Items without a score (a failed call, or no value to score) cannot be ranked: they are left
    out and counted in ``n_failed``. A constant answer and a random one both score 0.5, which are
    the baselines.
    """
    kept = [i for i, s in enumerate(scores) if s is not None]
    n_pos = sum(bool(positive[i]) for i in kept)
    return scope.figure(
        metric=metric,
        **auroc_estimate(positive, scores, groups, scope.settings).interval(),
        n_failed=len(scores) - len(kept),
        baselines=Baselines(majority=0.5, random=0.5),
        note=f"{n_pos} positive, {len(kept) - n_pos} negative; unscored items left out"
        + (f"; {note}" if note else ""),
        **_rows("auroc", ids, groups, [float(p) for p in positive], scores),
    )


def mae_figure(
    scope: Scope,
    metric: str,
    gold: Sequence[float],
    predicted: Sequence[float | None],
    groups: Sequence[Hashable],
    answer_space: Sequence[float],
) -> Figure:
    """Mean absolute error (lower is better); failed calls are left out and counted."""
    pairs = [
        (g, p, grp) for g, p, grp in zip(gold, predicted, groups, strict=True) if p is not None
    ]
    mode_value = Counter(gold).most_common(1)[0][0] if gold else None
    baselines = Baselines(
        majority=float(np.mean([abs(g - mode_value) for g in gold]))
        if mode_value is not None
        else None,
        random=float(np.mean([abs(g - a) for g in gold for a in answer_space])) if gold else None,
    )
    failed = len(gold) - len(pairs)
    if not pairs:
        return scope.figure(metric=metric, value=None, n=0, n_failed=failed,
                      baselines=baselines, higher_is_better=False)  # fmt: skip
    est = mean_estimate([abs(g - p) for g, p, _ in pairs], groups=[grp for *_, grp in pairs],
                        n_resamples=scope.settings.resamples, confidence=scope.settings.confidence,
                        seed=scope.settings.seed)  # fmt: skip
    return scope.figure(
        metric=metric,
        **est.interval(),
        n_failed=failed,
        baselines=baselines,
        higher_is_better=False,
        note="failed calls left out",
    )


def utterance_figures(
    scope: Scope,
    gold: Sequence[str],
    predicted: Sequence[str | None],
    groups: Sequence[Hashable],
) -> list[Figure]:
    """The utterance tier (prediction mode): ROUGE-L, BLEU-1, BLEU-4, LenR and Distinct-1.

    Per-item metrics are means over the items whose call gave an utterance (failed calls left
    out and counted). The random baseline scores each real utterance against the real utterance
    of the next item (someone else's turn in the same set), which says how much of a score
    plain topical and stylistic overlap earns; Distinct-1's is that of the real utterances.
    """
    from cogwm.metrics.text import utterance_scores

    kept = [i for i, p in enumerate(predicted) if p is not None]
    failed = len(predicted) - len(kept)
    if not kept:
        return []
    scores = [utterance_scores(str(predicted[i]), gold[i]) for i in kept]
    shuffled = [utterance_scores(gold[(i + 1) % len(gold)], gold[i]) for i in range(len(gold))]
    kept_groups = [groups[i] for i in kept]
    figures = [
        _overlap_figure(scope, metric, higher, scores, shuffled, kept_groups, failed)
        for metric, higher in UTTERANCE_METRICS
    ]
    texts = [str(predicted[i]) for i in kept]
    figures.append(_distinct_figure(scope, texts, gold, kept_groups, failed))
    return figures


#: The per-item utterance metrics and whether higher is better (None: 1 is ideal).
UTTERANCE_METRICS: tuple[tuple[str, bool | None], ...] = (
    ("rouge_l", True),
    ("bleu1", True),
    ("bleu4", True),
    ("len_ratio", None),
)


def _overlap_figure(
    scope: Scope,
    metric: str,
    higher: bool | None,
    scores: Sequence[UtteranceScores],
    shuffled: Sequence[UtteranceScores],
    groups: Sequence[Hashable],
    failed: int,
) -> Figure:
    """One per-item metric's mean over the kept items, against the shuffled-gold baseline."""
    values = [getattr(s, metric) for s in scores]
    est = optional_mean(
        values,
        groups=groups,
        n_resamples=scope.settings.resamples,
        confidence=scope.settings.confidence,
        seed=scope.settings.seed,
    )
    base = [getattr(s, metric) for s in shuffled if getattr(s, metric) is not None]
    return scope.figure(
        metric=metric,
        **({"value": None, "n": 0} if est is None else est.interval()),
        n_failed=failed,
        baselines=Baselines(random=float(np.mean(base)) if base else None),
        higher_is_better=higher,
        note="1 is ideal" if higher is None else "",
    )


def _distinct_figure(
    scope: Scope,
    texts: list[str],
    gold: Sequence[str],
    groups: Sequence[Hashable],
    failed: int,
) -> Figure:
    """Distinct-1 over all predictions (jackknife CI over dialogues), against the real
    utterances' own."""
    from cogwm.metrics.text import distinct_1

    def distinct(idx: IntArray) -> float | None:
        return distinct_1(texts[i] for i in idx).value

    return scope.figure(
        metric="distinct_1",
        **jackknife_estimate(distinct, groups, scope.settings).interval(),
        n_failed=failed,
        baselines=Baselines(random=distinct_1(gold).value),
        note="corpus ratio over all predictions; random: that of the real utterances",
    )


def memorisation_figure(
    scope: Scope,
    gold: Sequence[str],
    predicted: Sequence[str | None],
    groups: Sequence[Hashable],
    index: NgramIndex,
    *,
    ids: Sequence[str] | None = None,
) -> Figure:
    """Share of predicted utterances that share a word n-gram with a training utterance.

    A failed call counts as not memorised (it repeated nothing) and is reported in ``n_failed``.
    The interval is Wilson's (items are counted, not averaged over dialogues). The baseline,
    given as ``random`` like Distinct-1's, is the same share for the real held-out utterances of
    the same items: real people repeat stock phrases too, so only a share clearly above theirs
    says the simulator memorised its training set.
    """
    hits = [0.0 if p is None else float(index.shares_ngram(p)) for p in predicted]
    real = [index.shares_ngram(g) for g in gold]
    baselines = Baselines(random=sum(real) / len(real) if real else None)
    if not hits:
        return scope.figure(metric="memorisation", value=None, n=0, baselines=baselines,
                            higher_is_better=False)  # fmt: skip
    low, high = wilson_interval(int(sum(hits)), len(hits), confidence=scope.settings.confidence)
    return scope.figure(
        metric="memorisation",
        value=sum(hits) / len(hits),
        ci_low=low,
        ci_high=high,
        n=len(hits),
        n_failed=sum(p is None for p in predicted),
        baselines=baselines,
        higher_is_better=False,
        note=f"share of utterances sharing a word {index.n}-gram with any of "
        f"{index.n_utterances:,} training utterances ({index.source}); Wilson interval; failed "
        "calls count as not memorised; random: the real utterances' share",
        **_rows("mean", ids, groups, [1.0] * len(hits), hits),
    )
