"""Trivial baselines beside every state figure, change items, and the gate against the best rule.

A simulated user that copies the state shown in its prompt, or reads the sentiment of the turn's
words, models nobody; a state figure means something only where the simulator beats such rules
on the same items. Every state figure of the card therefore carries four model-free rules,
computed on exactly the simulator's items:

- ``carry_forward``: the value of the scored field in the state the prompt shows (the previous
  state, else the initial one); an item that shows none gets the neutral value (valence 0, the
  middle of the task's score range for B/D/I, the train split's most frequent answer for labels
  and intensities).
- ``lexicon``: VADER's compound score of the rule's text (a score, so AUROC figures only: a
  sentiment score names none of several negative emotion labels, nor an intensity).
- ``text_classifier``: TF-IDF + logistic regression fitted on the train split's texts of the
  same corpus with the same gold rule.
- ``combined``: logistic regression on [carry-forward value, VADER score, state-shown flag],
  fitted on the train split.

The rules' text is what the simulator is shown in the mode: the real turn in understanding
mode, and in prediction mode (where the real turn is the answer, never shown) the prompt's last
agent turn and the user's turn before it (:func:`prompt_text`). The rules are therefore fitted
and chosen per mode.

The best of them on the validation split's items (same gold rule), chosen there before any test
figure is computed, is the yardstick (``Baselines.best_trivial``); the gate is a paired bootstrap
over dialogues of (simulator - best rule) on the same items.

Each state figure is also given on its **change items** (the prompt shows a previous value of
the scored field and the gold differs from it, so copying is wrong on every one) and on its
**no_previous** items (the prompt shows no value of the field).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from cogwm.schema import CognitiveState
from cogwm.simulator.format import Mode
from cogwm.stats.bootstrap import IntArray, Settings, auroc_or_none, paired_difference
from cogwm.validate.card import Figure, Gate
from cogwm.validate.figures import (
    Scope,
    accuracy_figure,
    auroc_figure,
    macro_f1_figure,
    mae_figure,
)
from cogwm.validate.items import Item

if TYPE_CHECKING:
    from cogwm.validate.inputs import Reading

#: A figure's answer for one item: a score, a label or a number.
Answer = float | str
#: How a figure turns answers into its value.
Kind = Literal["auroc", "accuracy", "macro_f1", "mae"]
#: The trivial rules, in the order a tie is broken.
RULES: tuple[str, ...] = ("carry_forward", "lexicon", "text_classifier", "combined")
#: Item subsets each state figure is also given on (besides all items).
SUBSETS: tuple[str, ...] = ("change", "no_previous")
#: How a failed simulator call is written for label figures (never a gold label).
FAILED = "(failed)"
ItemSets = dict[str, list[Item]]


@dataclass(frozen=True)
class StateRule:
    """How one state figure reads its items.

    Attributes:
        metric: The figure's metric name.
        kind: ``auroc`` (gold 1.0 / 0.0, a score per item), ``accuracy`` and ``macro_f1``
            (labels), ``mae`` (numbers; lower is better).
        item_set: Which item set of the part the figure reads.
        gold: The item's gold answer.
        answer: The simulator's answer from its state (None: no usable answer).
        shown: The scored field's value in the state the prompt shows (None: none shown).
        changed: Whether the gold differs from a shown value (in the gold's space).
        answer_space: What the simulator may answer (labels or numbers; random baselines).
        keep: Which items of the set the figure reads.
        neutral: The carry-forward value of an item that shows none (score figures; label and
            number figures take the train split's most frequent gold answer).
        note: What the score is, for the figure's note.
    """

    metric: str
    kind: Kind
    item_set: str
    gold: Callable[[Item], Answer]
    answer: Callable[[Item, CognitiveState | None], Answer | None]
    shown: Callable[[Item], Answer | None]
    changed: Callable[[Item, Answer], bool]
    answer_space: Callable[[], Sequence[Answer]] = tuple
    keep: Callable[[Item], bool] = lambda _: True
    neutral: float = 0.0
    note: str = ""

    @property
    def higher_is_better(self) -> bool:
        """False for an error (MAE), True otherwise."""
        return self.kind != "mae"

    def items(self, sets: Mapping[str, Sequence[Item]]) -> list[Item]:
        """The rule's items among ``sets``."""
        return [i for i in sets.get(self.item_set, ()) if self.keep(i)]

    def subset(self, item: Item) -> str:
        """``no_previous``, ``change`` or ``same``."""
        value = self.shown(item)
        if value is None:
            return "no_previous"
        return "change" if self.changed(item, value) else "same"


# --- the simulator's figure ----------------------------------------------------------------------


def rule_figure(
    rule: StateRule, scope: Scope, items: Sequence[Item], readings: Mapping[str, Reading]
) -> Figure:
    """The simulator's figure of ``rule`` on ``items`` (its ``keep`` applied first)."""
    items = [i for i in items if rule.keep(i)]
    answers = [rule.answer(i, readings[i.id].state) for i in items]
    gold = [rule.gold(i) for i in items]
    groups = [i.dialogue_id for i in items]
    ids = [i.id for i in items]
    if rule.kind == "auroc":
        return auroc_figure(scope, rule.metric, [g == 1.0 for g in gold], _floats(answers),
                            groups, note=rule.note, ids=ids)  # fmt: skip
    if rule.kind == "mae":
        return mae_figure(scope, rule.metric, [float(g) for g in gold], _floats(answers), groups,
                          [float(a) for a in rule.answer_space()])  # fmt: skip
    labels = [str(a) for a in rule.answer_space()]
    if rule.kind == "accuracy":
        return accuracy_figure(scope, [str(g) for g in gold], _labels(answers), groups,
                               len(labels), ids=ids)  # fmt: skip
    return macro_f1_figure(scope, [str(g) for g in gold], _labels(answers), groups, labels)


def _floats(values: Sequence[Answer | None]) -> list[float | None]:
    return [None if v is None else float(v) for v in values]


def _labels(values: Sequence[Answer | None]) -> list[str | None]:
    return [None if v is None else str(v) for v in values]


# --- the metric on index arrays --------------------------------------------------------------


def _metric(
    kind: Kind, gold: npt.NDArray[Any], predicted: npt.NDArray[Any], classes: Sequence[str]
) -> float | None:
    """The figure's value of ``predicted`` against ``gold`` (None: undefined)."""
    if len(gold) == 0:
        return None
    if kind == "auroc":
        return auroc_or_none(gold, predicted)
    if kind == "mae":
        return float(np.mean(np.abs(gold.astype(np.float64) - predicted.astype(np.float64))))
    if kind == "accuracy":
        return float(np.mean(gold == predicted))
    from sklearn.metrics import f1_score

    return float(f1_score(gold, predicted, labels=list(classes), average="macro", zero_division=0))


def _statistic(
    kind: Kind, gold: Sequence[Answer], predicted: Sequence[Answer]
) -> Callable[[IntArray], float | None]:
    """The metric of ``predicted`` on a resample's indices (macro-F1 over the gold classes of
    all items, as the simulator's figure)."""
    gold_arr = np.asarray(gold, dtype=object)
    pred_arr = np.asarray(predicted, dtype=object)
    classes = sorted({str(g) for g in gold})

    def statistic(idx: IntArray) -> float | None:
        return _metric(kind, gold_arr[idx], pred_arr[idx], classes)

    return statistic


def rule_value(
    kind: Kind, gold: Sequence[Answer], predicted: Sequence[Answer | None]
) -> float | None:
    """A rule's value on all items; None when it has no answer for some item."""
    if any(p is None for p in predicted):
        return None
    answers = [p for p in predicted if p is not None]
    return _statistic(kind, gold, answers)(np.arange(len(gold), dtype=np.intp))


# --- text features -------------------------------------------------------------------------------


def vader(text: str) -> float:
    """VADER's compound sentiment score of ``text``, -1 to 1."""
    from cogwm.metrics.sentiment import vader_compound

    return vader_compound(text)


def prompt_text(item: Item) -> str:
    """What a prediction-mode prompt shows of the conversation's words for ``item``: its last
    agent turn and the user's turn before that, if any ("" when the user opens)."""
    history = item.inp.history
    agent = next((k for k in reversed(range(len(history))) if history[k][0] != "user"), None)
    if agent is None:
        return ""
    user = next((k for k in reversed(range(agent)) if history[k][0] == "user"), None)
    return "\n".join(history[k][1] for k in (user, agent) if k is not None)


def rule_text(item: Item, mode: Mode) -> str:
    """The text the trivial rules read for ``item`` in ``mode``: the real turn when
    understanding (the simulator is shown it), :func:`prompt_text` when predicting (it is not)."""
    return item.utterance if mode == "understand" else prompt_text(item)


# --- fitting on train, choosing on validation ---------------------------------------------------


@dataclass
class FittedRule:
    """The trivial rules of one state figure, fitted on train and ranked on validation.

    ``mode`` decides the text the lexicon and the classifiers read (:func:`rule_text`).
    ``best`` maps a subset (``all``, ``change``, ``no_previous``) to the rule that scored best on
    the validation split's items of that subset (None: none defined there); ``val`` holds every
    rule's validation value; ``notes`` say why a rule is undefined.
    """

    rule: StateRule
    fill: Answer
    mode: Mode = "understand"
    text_model: Any | None = None
    combined_model: Any | None = None
    carry_vocabulary: list[str] = field(default_factory=list)
    best: dict[str, str | None] = field(default_factory=dict)
    val: dict[str, dict[str, float | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    n_train: int = 0
    n_val: int = 0

    def carry(self, item: Item) -> Answer:
        """The carry-forward answer: the shown value, else the neutral fill."""
        value = self.rule.shown(item)
        return self.fill if value is None else value

    def predict(self, items: Sequence[Item]) -> dict[str, list[Answer | None]]:
        """Every rule's answer for each item (None: the rule is undefined here)."""
        carry = [self.carry(i) for i in items]
        texts = [rule_text(i, self.mode) for i in items]
        scores = [vader(t) for t in texts]
        out: dict[str, list[Answer | None]] = {
            "carry_forward": list(carry),
            "lexicon": list(scores) if self.rule.kind == "auroc" else [None] * len(items),
            "text_classifier": [None] * len(items),
            "combined": [None] * len(items),
        }
        if items and self.text_model is not None:
            out["text_classifier"] = self._answers(self.text_model, texts)
        if items and self.combined_model is not None:
            out["combined"] = self._answers(
                self.combined_model, self._features(items, carry, scores)
            )
        return out

    def _answers(self, model: Any, inputs: Any) -> list[Answer | None]:
        if self.rule.kind == "auroc":
            return [float(p) for p in model.predict_proba(inputs)[:, 1]]
        predicted = model.predict(inputs)
        return [float(p) if self.rule.kind == "mae" else str(p) for p in predicted]

    def _features(
        self, items: Sequence[Item], carry: Sequence[Answer], scores: Sequence[float]
    ) -> npt.NDArray[np.float64]:
        shown = [0.0 if self.rule.shown(i) is None else 1.0 for i in items]
        if self.rule.kind in ("auroc", "mae"):
            columns = [[float(c), s, f] for c, s, f in zip(carry, scores, shown, strict=True)]
        else:  # a label: one column per label seen in train
            columns = [
                [float(c == v) for v in self.carry_vocabulary] + [s, f]
                for c, s, f in zip(carry, scores, shown, strict=True)
            ]
        return np.asarray(columns, dtype=np.float64)


#: Fitted classifiers shared by rules that read the same items with the same gold in the same
#: mode (DailyDialog's emotion accuracy and macro-F1 fit one model): (text model, combined model,
#: carry vocabulary), keyed by :func:`_model_key`.
ModelCache = dict[tuple[Any, ...], tuple[Any, Any, list[str]]]


def fit_rule(
    rule: StateRule,
    train: Sequence[Item],
    val: Sequence[Item],
    mode: Mode = "understand",
    cache: ModelCache | None = None,
) -> FittedRule:
    """Fit the trivial rules of ``rule`` on ``train`` items and choose the best on ``val``,
    reading the texts of ``mode`` (:func:`rule_text`); ``cache`` shares classifiers between
    rules that would fit the same ones."""
    gold = [rule.gold(i) for i in train]
    fill: Answer = rule.neutral
    if rule.kind != "auroc":
        fill = Counter(gold).most_common(1)[0][0] if gold else rule.neutral
    fitted = FittedRule(rule=rule, fill=fill, mode=mode, n_train=len(train), n_val=len(val))
    if rule.kind == "auroc":
        fitted.notes.append(f"lexicon: VADER compound of {_TEXT_WORDS[mode]}")
    else:
        fitted.notes.append("lexicon undefined: a sentiment score names no label or intensity")
    if len(set(gold)) < 2:
        fitted.notes.append(
            f"classifiers undefined: the train split has {len(set(gold))} class(es)"
        )
    else:
        key = _model_key(rule, mode, train)
        if cache is None or key not in cache:
            _fit_classifiers(fitted, train, gold)
            if cache is not None:
                cache[key] = (fitted.text_model, fitted.combined_model, fitted.carry_vocabulary)
        else:
            fitted.text_model, fitted.combined_model, fitted.carry_vocabulary = cache[key]
    _choose(fitted, val)
    return fitted


#: What the lexicon reads in each mode, for the figures' notes.
_TEXT_WORDS: dict[str, str] = {
    "understand": "the real turn",
    "predict": "the prompt's last agent turn and the user's turn before it",
}


def _model_key(rule: StateRule, mode: Mode, train: Sequence[Item]) -> tuple[Any, ...]:
    """Rules with the same items, gold, shown value and target type fit the same classifiers."""
    target = "label" if rule.kind in ("accuracy", "macro_f1") else rule.kind
    ids = tuple(i.id for i in train)
    return (rule.item_set, rule.gold, rule.shown, rule.neutral, target, mode, ids)


def _fit_classifiers(fitted: FittedRule, train: Sequence[Item], gold: Sequence[Answer]) -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rule = fitted.rule
    target = [str(g) for g in gold] if rule.kind in ("accuracy", "macro_f1") else list(gold)
    text = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
        LogisticRegression(max_iter=2000),
    )
    texts = [rule_text(i, fitted.mode) for i in train]
    fitted.text_model = text.fit(texts, target)
    carry = [fitted.carry(i) for i in train]
    if rule.kind in ("accuracy", "macro_f1"):
        fitted.carry_vocabulary = sorted({str(c) for c in carry})
    features = fitted._features(train, carry, [vader(t) for t in texts])
    combined = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    fitted.combined_model = combined.fit(features, target)


def _choose(fitted: FittedRule, val: Sequence[Item]) -> None:
    """The best rule on each subset of the validation items (ties: the earlier in RULES)."""
    rule = fitted.rule
    predictions = fitted.predict(val)
    for subset in ("all", *SUBSETS):
        idx = [k for k, i in enumerate(val) if subset == "all" or rule.subset(i) == subset]
        gold = [rule.gold(val[k]) for k in idx]
        values = {
            name: rule_value(rule.kind, gold, [answers[k] for k in idx])
            for name, answers in predictions.items()
        }
        fitted.val[subset] = values
        defined = [(v, name) for name, v in values.items() if v is not None]
        if not defined:
            fitted.best[subset] = None
            continue
        sign = 1 if rule.higher_is_better else -1
        fitted.best[subset] = max(defined, key=lambda vn: (sign * vn[0], -RULES.index(vn[1])))[1]


#: Fitted trivial rules of a part, by (metric, mode).
Fitted = dict[tuple[str, str], FittedRule]


def fit_rules(
    rules: Sequence[StateRule],
    train: Mapping[str, Sequence[Item]],
    val: Mapping[str, Sequence[Item]],
    modes: Sequence[Mode] = ("understand",),
) -> Fitted:
    """Each rule fitted on its train items and ranked on its validation items in each mode,
    by (metric, mode); rules that would fit the same classifiers share them."""
    cache: ModelCache = {}
    return {
        (rule.metric, mode): fit_rule(rule, rule.items(train), rule.items(val), mode, cache)
        for mode in modes
        for rule in rules
    }


# --- the test figures ---------------------------------------------------------------------------


def state_figures(
    rules: Sequence[StateRule],
    scope: Scope,
    sets: Mapping[str, Sequence[Item]],
    readings: Mapping[str, Reading],
    fitted: Mapping[tuple[str, str], FittedRule] | None = None,
    *,
    fit_note: str = "",
) -> list[Figure]:
    """Each rule's figure on all its items, then on its change and no_previous items; with
    ``fitted``, every figure carries the trivial rules' values and the gate.

    Args:
        rules: The part's state figures.
        scope: Part, mode and bootstrap settings.
        sets: The part's item sets.
        readings: The simulator's reading of each item, by id.
        fitted: The part's fitted trivial rules by (metric, mode) (None: figures without
            them); the figures take those of ``scope.mode``.
        fit_note: Added to every figure with baselines (e.g. that the items overlap train).
    """
    figures = []
    for rule in rules:
        items = rule.items(sets)
        groups: dict[str, list[Item]] = {"all": items}
        for subset in SUBSETS:
            groups[subset] = [i for i in items if rule.subset(i) == subset]
        for subset, chosen in groups.items():
            figure = rule_figure(rule, scope, chosen, readings)
            if subset != "all":
                figure = figure.model_copy(update={"subset": subset})
            trivial = None if fitted is None else fitted.get((rule.metric, scope.mode))
            if trivial is not None:
                figure = with_trivial(figure, trivial, chosen, readings, scope.settings, fit_note)
            figures.append(figure)
    return figures


def with_trivial(
    figure: Figure,
    fitted: FittedRule,
    items: Sequence[Item],
    readings: Mapping[str, Reading],
    settings: Settings,
    fit_note: str = "",
) -> Figure:
    """``figure`` with the trivial rules' values on its own items and the gate against the best.

    The items are those the simulator's figure counts: for AUROC and MAE the ones it answered
    (the others are left out of its value), for label figures all of them (a failure is wrong).
    """
    rule = fitted.rule
    answers = [rule.answer(i, readings[i.id].state) for i in items]
    if rule.kind in ("auroc", "mae"):
        kept = [k for k, a in enumerate(answers) if a is not None]
        items, answers = [items[k] for k in kept], [answers[k] for k in kept]
    simulator = [FAILED if a is None else a for a in answers]
    gold = [rule.gold(i) for i in items]
    predictions = fitted.predict(items)
    values = {name: rule_value(rule.kind, gold, p) for name, p in predictions.items()}
    best = fitted.best.get(figure.subset)
    gate = None
    if best is not None:
        gate = _gate(rule, best, gold, simulator, predictions[best], items, settings)
    baselines = figure.baselines.model_copy(update={**values, "best_trivial": best})
    note = "; ".join(n for n in (figure.note, _trivial_note(fitted, figure.subset), fit_note) if n)
    return figure.model_copy(update={"baselines": baselines, "gate": gate, "note": note})


def _gate(
    rule: StateRule,
    best: str,
    gold: Sequence[Answer],
    simulator: Sequence[Answer],
    baseline: Sequence[Answer | None],
    items: Sequence[Item],
    settings: Settings,
) -> Gate:
    groups = [i.dialogue_id for i in items]
    if any(b is None for b in baseline) or not items:
        return Gate(baseline=best, value=None, n=len(items), passed=None)
    base = [b for b in baseline if b is not None]
    result = paired_difference(
        _statistic(rule.kind, gold, simulator), _statistic(rule.kind, gold, base), groups, settings
    )
    passed = None
    if result.ci_low is not None and result.ci_high is not None:
        passed = result.ci_low > 0 if rule.higher_is_better else result.ci_high < 0
    return Gate(
        baseline=best,
        value=result.difference,
        ci_low=result.ci_low,
        ci_high=result.ci_high,
        n=result.n,
        passed=passed,
    )


def _trivial_note(fitted: FittedRule, subset: str) -> str:
    val = fitted.val.get(subset, {})
    ranked = ", ".join(f"{name} {_num(v)}" for name, v in val.items())
    return (
        f"trivial rules fitted on {fitted.n_train} train items, best chosen on "
        f"{fitted.n_val} validation items ({ranked}); carry-forward fill for no shown value: "
        f"{fitted.fill!r}; {'; '.join(fitted.notes)}"
    )


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
