"""Every interval behind a figure resamples whole dialogues, never single items.

The data: 20 dialogues of 10 items each, the items of one dialogue identical and the dialogues
different. A bootstrap over dialogues sees 20 independent values, one over items 200, so the
dialogue interval is about sqrt(10) ~ 3 times as wide. Each test computes the figure twice: with
the real dialogue ids, and with every item its own dialogue (which is what item resampling gives
whatever the ids). A call site that ignores its dialogue ids gives the same width both ways and
fails ``_assert_dialogue_level``.

Intervals that are not bootstraps are listed in the module of the figure: the ToM tables use
Wilson intervals over answers (each answer its own item, no dialogue).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from cogwm.annotate.quality import _figure
from cogwm.arena.run_data import ConversationData
from cogwm.metrics.task import good_outcome_rate
from cogwm.report.complementarity import Complementarity, complementarity
from cogwm.report.tables import _bootstrap as report_bootstrap
from cogwm.stats.bootstrap import (
    auroc_interval,
    bootstrap_ci_of_groups,
    cluster_bootstrap,
    paired_difference,
)
from cogwm.stats.means import mean_estimate, paired_bootstrap, scenario_table
from cogwm.stats.pairs import accuracy_of
from cogwm.validate.card import Figure
from cogwm.validate.compare import _paired
from cogwm.validate.figures import (
    Scope,
    Settings,
    accuracy_figure,
    auroc_figure,
    macro_f1_figure,
    mae_figure,
    utterance_figures,
)
from cogwm.validate.groups import gate_vs_best
from cogwm.validate.judges import JudgedDialogue, judge_figures

DIALOGUES = 20
ITEMS = 10
SETTINGS = Settings(resamples=1000, seed=0)
SCOPE = Scope(part="test", mode="understand", settings=SETTINGS)
#: The dialogue interval must be at least this many times the item interval (sqrt(10) expected).
RATIO = 2.0


def _dialogue_ids() -> list[str]:
    return [f"d{d}" for d in range(DIALOGUES) for _ in range(ITEMS)]


def _item_ids() -> list[str]:
    return [f"i{k}" for k in range(DIALOGUES * ITEMS)]


def _good(dialogue: int) -> bool:
    """Which dialogues go well: a mix, so that the dialogue means differ."""
    return dialogue % 5 in (0, 2, 3)


def _per_item(value: Callable[[int], object]) -> list[object]:
    return [value(d) for d in range(DIALOGUES) for _ in range(ITEMS)]


def _width(low: float | None, high: float | None) -> float:
    assert low is not None and high is not None
    return high - low


def _assert_dialogue_level(by_dialogue: float, by_item: float) -> None:
    assert by_dialogue > 0
    assert by_dialogue > RATIO * by_item, (by_dialogue, by_item)


def _figure_width(figure: Figure) -> float:
    return _width(figure.ci_low, figure.ci_high)


def _compare_figures(make: Callable[[Sequence[str]], Figure]) -> None:
    _assert_dialogue_level(_figure_width(make(_dialogue_ids())), _figure_width(make(_item_ids())))


# --- the resampling functions themselves ---------------------------------------------------


def test_cluster_bootstrap_resamples_dialogues() -> None:
    values = np.asarray(_per_item(lambda d: float(_good(d))))

    def width(groups: Sequence[str]) -> float:
        return _width(*cluster_bootstrap(lambda idx: float(values[idx].mean()), groups, SETTINGS))

    _assert_dialogue_level(width(_dialogue_ids()), width(_item_ids()))


def test_mean_estimate_resamples_dialogues() -> None:
    values = [float(v) for v in _per_item(lambda d: float(_good(d)))]

    def width(groups: Sequence[str]) -> float:
        est = mean_estimate(values, groups=groups, n_resamples=1000, seed=0)
        return _width(est.ci_low, est.ci_high)

    _assert_dialogue_level(width(_dialogue_ids()), width(_item_ids()))


def test_bootstrap_ci_over_item_groups_resamples_dialogues() -> None:
    items = _per_item(lambda d: float(_good(d)))

    def width(size: int) -> float:
        groups = [items[k : k + size] for k in range(0, len(items), size)]
        ci = bootstrap_ci_of_groups(groups, lambda xs: float(np.mean(xs)), resamples=1000, seed=0)
        assert ci is not None
        return _width(*ci)

    _assert_dialogue_level(width(ITEMS), width(1))


def test_paired_differences_resample_dialogues() -> None:
    first = np.asarray(_per_item(lambda d: float(_good(d))))
    second = np.zeros_like(first)

    def width(groups: Sequence[str]) -> float:
        result = paired_difference(
            lambda idx: float(first[idx].mean()),
            lambda idx: float(second[idx].mean()),
            groups,
            SETTINGS,
        )
        return _width(result.ci_low, result.ci_high)

    _assert_dialogue_level(width(_dialogue_ids()), width(_item_ids()))


def test_paired_bootstrap_resamples_scenarios_not_trials() -> None:
    values = _per_item(lambda d: 100.0 * _good(d))

    def width(scenarios: Sequence[str]) -> float:
        rows = [("agent", s, float(str(v))) for s, v in zip(scenarios, values, strict=True)]
        estimate = paired_bootstrap(scenario_table(rows), n_resamples=1000).estimates["agent"]
        return _width(estimate.ci_low, estimate.ci_high)

    _assert_dialogue_level(width(_dialogue_ids()), width(_item_ids()))


# --- validity card figures ------------------------------------------------------------------


def _labels() -> tuple[list[str], list[str | None]]:
    gold = [str(g) for g in _per_item(lambda d: "joy" if d % 2 else "sadness")]
    right = _per_item(_good)
    predicted: list[str | None] = [
        g if r else ("sadness" if g == "joy" else "joy") for g, r in zip(gold, right, strict=True)
    ]
    return gold, predicted


def test_accuracy_figure_resamples_dialogues() -> None:
    gold, predicted = _labels()
    _compare_figures(lambda groups: accuracy_figure(SCOPE, gold, predicted, groups, 7))


def test_macro_f1_figure_resamples_dialogues() -> None:
    gold, predicted = _labels()
    labels = ["joy", "sadness"]
    _compare_figures(lambda groups: macro_f1_figure(SCOPE, gold, predicted, groups, labels))


def test_mae_figure_resamples_dialogues() -> None:
    gold = [0.0] * (DIALOGUES * ITEMS)
    predicted: list[float | None] = [float(str(v)) for v in _per_item(lambda d: d % 4)]
    _compare_figures(
        lambda groups: mae_figure(SCOPE, "intensity_mae", gold, predicted, groups, [0, 1, 2, 3])
    )


def _auroc_items() -> tuple[list[bool], list[float | None]]:
    """Half the items of each dialogue positive; good dialogues rank them first, bad ones last."""
    positive = [k % 2 == 0 for k in range(DIALOGUES * ITEMS)]
    good = _per_item(_good)
    scores: list[float | None] = [
        float(p) if g else float(not p) for p, g in zip(positive, good, strict=True)
    ]
    return positive, scores


def test_auroc_figure_resamples_dialogues() -> None:
    positive, scores = _auroc_items()
    _compare_figures(lambda groups: auroc_figure(SCOPE, "valence_auroc", positive, scores, groups))


def test_known_groups_auroc_resamples_dialogues() -> None:
    positive, scores = _auroc_items()

    def width(groups: Sequence[str]) -> float:
        _, low, high = auroc_interval(positive, scores, groups, SETTINGS)
        return _width(low, high)

    _assert_dialogue_level(width(_dialogue_ids()), width(_item_ids()))


def test_known_groups_gate_resamples_dialogues() -> None:
    positive, scores = _auroc_items()
    # A rule that scores every item alike: AUROC 0.5 on any resample.
    trivial: dict[str, Sequence[float | None]] = {"constant": [0.0] * len(scores)}

    def width(groups: Sequence[str]) -> float:
        gate = gate_vs_best(positive, scores, trivial, groups, SETTINGS)
        return _width(gate.result.ci_low, gate.result.ci_high)

    _assert_dialogue_level(width(_dialogue_ids()), width(_item_ids()))


def test_utterance_figures_resample_dialogues() -> None:
    """The means (ROUGE-L and the others) and Distinct-1's delete-one-dialogue jackknife."""
    gold = [str(t) for t in _per_item(lambda d: f"we talked about topic {d} today")]

    # Good dialogues repeat the real turn; the others say words of their own, a few per dialogue.
    def own_words(dialogue: int) -> str:
        return " ".join(f"w{dialogue}x{j}" for j in range(1 + dialogue % 4))

    predicted: list[str | None] = [
        g if _good(k // ITEMS) else own_words(k // ITEMS) for k, g in enumerate(gold)
    ]

    def widths(groups: Sequence[str]) -> dict[str, float]:
        figures = utterance_figures(SCOPE, gold, predicted, groups)
        return {f.metric: _figure_width(f) for f in figures}

    by_dialogue, by_item = widths(_dialogue_ids()), widths(_item_ids())
    for metric in ("rouge_l", "bleu1", "distinct_1"):
        _assert_dialogue_level(by_dialogue[metric], by_item[metric])


def test_judge_figures_resample_dialogues() -> None:
    truth = [bool(t) for t in _per_item(lambda d: d % 2 == 0)]
    verdicts: list[bool | None] = [
        t if g else not t for t, g in zip(truth, _per_item(_good), strict=True)
    ]

    def widths(groups: Sequence[str]) -> list[float]:
        dialogues = [
            JudgedDialogue(id=f"c{k}", task="t", transcript=(), good=t, group=g)
            for k, (t, g) in enumerate(zip(truth, groups, strict=True))
        ]
        return [_figure_width(f) for f in judge_figures(SCOPE, "judge", dialogues, verdicts)]

    for by_dialogue, by_item in zip(widths(_dialogue_ids()), widths(_item_ids()), strict=True):
        _assert_dialogue_level(by_dialogue, by_item)


def test_card_comparison_resamples_dialogues() -> None:
    gold, predicted = _labels()
    ids = [f"item{k}" for k in range(len(gold))]

    def width(groups: Sequence[str]) -> float:
        base = accuracy_figure(SCOPE, gold, gold, groups, 7, ids=ids)
        other = accuracy_figure(SCOPE, gold, predicted, groups, 7, ids=ids)
        result = _paired(base, other, "other", SETTINGS)
        return _width(result.ci_low, result.ci_high)

    _assert_dialogue_level(width(_dialogue_ids()), width(_item_ids()))


# --- arena report and annotation quality ----------------------------------------------------


def _conversation(k: int, scenario: str, go: bool) -> ConversationData:
    return ConversationData(
        id=k,
        task="t",
        agent="a",
        condition="c",
        scenario=scenario,
        termination="done",
        rounds=1,
        states=[],
        metrics={},
        go=go,
        trial=k % ITEMS,
    )


def test_report_cells_resample_scenarios_not_trials() -> None:
    """The report's cells (Table 6, GO by task) average the trials of a scenario and resample
    scenarios: the trials of one scenario are the items of one dialogue here."""
    goes = _per_item(_good)

    def width(scenarios: Sequence[str]) -> float:
        conversations = [
            _conversation(k, scenario, bool(go))
            for k, (scenario, go) in enumerate(zip(scenarios, goes, strict=True))
        ]
        cells = report_bootstrap(
            conversations, lambda c: 100.0 * float(bool(c.go)), n_resamples=1000, seed=0
        )
        return _width(cells["a/c"].ci_low, cells["a/c"].ci_high)

    _assert_dialogue_level(width(_dialogue_ids()), width(_item_ids()))


def test_annotation_quality_figures_resample_dialogues() -> None:
    gold, predicted = _labels()
    pairs = list(zip(gold, predicted, strict=True))

    def width(groups: Sequence[str]) -> float:
        by_group: dict[str, list[object]] = {}
        for g, pair in zip(groups, pairs, strict=True):
            by_group.setdefault(g, []).append(pair)
        figure = _figure("emotion accuracy", "corpus", by_group, accuracy_of, valid=len(pairs))
        assert figure.ci is not None
        return _width(*figure.ci)

    _assert_dialogue_level(width(_dialogue_ids()), width(_item_ids()))


def test_good_outcome_rate_resamples_scenarios_not_trials() -> None:
    """``cogwm score``'s GO rate: the trials of one scenario are the items of one dialogue."""
    verdicts: list[bool | None] = [bool(v) for v in _per_item(_good)]

    def width(groups: Sequence[str]) -> float:
        rate = good_outcome_rate(verdicts, groups=groups, n_resamples=1000).rate
        assert rate is not None
        return _width(rate.ci_low, rate.ci_high)

    _assert_dialogue_level(width(_dialogue_ids()), width(_item_ids()))


def _arena_conversation(
    k: int, agent: str, scenario: str, cts: float, go: bool
) -> ConversationData:
    """A conversation whose CTS is also its composite Δ."""
    return _conversation(k, scenario, go)._replace(agent=agent, metrics={"cts": cts, "delta": cts})


def test_cts_go_complementarity_resamples_scenarios_not_trials() -> None:
    """``arena report``'s CTS-GoodOutcome figures: tau-b of the arms' mean CTS against their GO
    rate, and the share of discordant conversations; the trials of one scenario are the items
    of one dialogue here, the same for every arm."""
    agents = ("a", "b", "c", "d")
    # Per scenario and agent: CTS with agent means 0.4 SD apart, GO with rates 0.2 to 0.8, each
    # agent's values a rotation of one set over the scenarios (so the means are exact). Twenty
    # scenarios leave the order of neighbouring agents uncertain, 200 items hardly.
    spread = np.random.default_rng(0).standard_normal(DIALOGUES)
    spread = (spread - spread.mean()) / spread.std()
    rotation = [[(d + 7 * i) % DIALOGUES for i in range(len(agents))] for d in range(DIALOGUES)]
    cts = spread[rotation] + 0.4 * np.arange(len(agents))
    go = np.asarray(rotation) < 4 * (1 + np.arange(len(agents)))

    def figures(scenarios: Sequence[str]) -> Complementarity:
        conversations = [
            _arena_conversation(
                len(agents) * k + i,
                agent,
                scenario,
                float(cts[k // ITEMS, i]),
                bool(go[k // ITEMS, i]),
            )
            for k, scenario in enumerate(scenarios)
            for i, agent in enumerate(agents)
        ]
        return complementarity(conversations, n_resamples=1000)[-1]

    by_dialogue, by_item = figures(_dialogue_ids()), figures(_item_ids())
    assert by_dialogue.tau.n_clusters == DIALOGUES and by_item.tau.n_clusters == DIALOGUES * ITEMS
    _assert_dialogue_level(
        _width(by_dialogue.tau.ci_low, by_dialogue.tau.ci_high),
        _width(by_item.tau.ci_low, by_item.tau.ci_high),
    )
    shares = [f.table.discordant for f in (by_dialogue, by_item)]
    _assert_dialogue_level(*(_width(s.ci_low, s.ci_high) for s in shares))
