"""DialToM statistics on hand-made answers, checked against scipy/statsmodels and by hand."""

from __future__ import annotations

import math

import pytest
from scipy.stats import chi2_contingency, mannwhitneyu, pearsonr, spearmanr
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from cogwm.tom.stats import compute_stats, correctness_rate
from cogwm.tom.store import ScoredAnswer


def _answers(
    model: str,
    domain: str,
    task: str,
    outcomes: list[int],
    *,
    variant: str = "hard",
    attribute: str | None = "desire",
    n_options: int = 4,
    condition: str = "plain",
    history_turns: int | None = None,
    prefix: str = "i",
) -> list[ScoredAnswer]:
    return [
        ScoredAnswer(
            run_id=f"{model}/{condition}",
            model=model,
            condition=condition,
            item_id=f"{prefix}{k}",
            parent_id=None,
            task=task,
            variant=variant,
            domain=domain,
            attribute=attribute,
            n_options=n_options,
            history_turns=history_turns,
            source="template",
            correct=o == 1,
            parsed=o >= 0,  # -1 marks an unparsed (wrong) answer
        )
        for k, o in enumerate(outcomes)
    ]


def test_correctness_rate_wilson_interval_and_baseline() -> None:
    answers = _answers("m", "MI", "retrospective", [1] * 8 + [0, -1], n_options=4)
    answers += _answers("m", "MI", "retrospective", [1, 0], n_options=3, prefix="j")
    rate = correctness_rate(answers)
    # 9 correct of 12; one unparsed answer counts as wrong and is counted on its own.
    assert (rate.n, rate.correct, rate.unparsed) == (12, 9, 1)
    assert rate.rate == pytest.approx(0.75)
    assert rate.baseline == pytest.approx((10 * 1 / 4 + 2 * 1 / 3) / 12)
    # Wilson: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    z, n, p = 1.959963984540054, 12, 0.75
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert rate.ci_low == pytest.approx((centre - half) / (1 + z * z / n))
    assert rate.ci_high == pytest.approx((centre + half) / (1 + z * z / n))
    empty = correctness_rate([])
    assert empty.n == 0 and empty.rate is None and empty.ci_low is None


def test_retro_prosp_gap_matches_scipy() -> None:
    answers = _answers("m", "MI", "retrospective", [1] * 16 + [0] * 4)
    answers += _answers("m", "MI", "prospective", [1] * 6 + [0] * 14, attribute=None, prefix="p")
    gap = compute_stats(answers).table3_gap
    assert len(gap) == 1
    expected = chi2_contingency([[16, 4], [6, 14]], correction=False)
    assert gap[0].test == "pearson"  # every expected count is at least 5
    assert gap[0].chi2 == pytest.approx(expected.statistic)
    assert gap[0].p_value == pytest.approx(expected.pvalue)
    assert gap[0].cramers_v == pytest.approx(math.sqrt(expected.statistic / 40))
    assert (gap[0].retrospective, gap[0].prospective) == (0.8, 0.3)


def test_gap_is_none_with_a_note_when_undefined() -> None:
    answers = _answers("m", "MI", "retrospective", [1] * 5)
    answers += _answers("m", "MI", "prospective", [1] * 5, attribute=None, prefix="p")
    (row,) = compute_stats(answers).table3_gap
    assert row.chi2 is None and row.cramers_v is None and row.note  # all correct: no test


def test_easy_hard_gap_matches_scipy() -> None:
    hard = [1, 0, 0, 1, 0, 0, 0, 1, 0, 0]
    easy = [1, 1, 1, 0, 1, 1, 1, 1, 1, 0]
    answers = _answers("m", "ESC", "prospective", hard, attribute=None)
    answers += _answers("m", "ESC", "prospective", easy, variant="easy", attribute=None,
                        prefix="e")  # fmt: skip
    (row,) = compute_stats(answers).table6_easy_hard
    expected = mannwhitneyu(hard, easy, alternative="two-sided")
    assert row.u == pytest.approx(expected.statistic)
    assert row.p_value == pytest.approx(expected.pvalue)
    assert row.rank_biserial == pytest.approx(2 * expected.statistic / 100 - 1)
    assert row.rank_biserial is not None and row.rank_biserial < 0  # hard is harder
    assert row.delta == pytest.approx(0.8 - 0.3)


def test_injection_probe_matches_statsmodels_mcnemar() -> None:
    before = [0, 0, 0, 0, 0, 0, 1, 1, 0, 1]
    after = [1, 1, 1, 1, 1, 0, 1, 0, 0, 1]
    answers = _answers("student", "MI", "prospective", before, attribute=None)
    answers += _answers("student", "MI", "prospective", after, attribute=None,
                        condition="injected:teacher")  # fmt: skip
    (row,) = compute_stats(answers).table8_injection
    # pairs (before, after): yes/yes 2, yes/no 1, no/yes 5, no/no 2
    table = [[2, 1], [5, 2]]
    expected = sm_mcnemar(table, exact=True)
    assert row.n_pairs == 10 and row.exact is True
    assert row.statistic == pytest.approx(expected.statistic)
    assert row.p_value == pytest.approx(expected.pvalue)
    assert (row.baseline, row.injected) == (0.3, 0.7)
    assert row.student == "student" and row.teacher == "teacher"


def test_cross_domain_correlation_matches_scipy() -> None:
    # Three models; per domain one retrospective cell each (attribute desire).
    rates = {"MI": [9, 5, 2], "ESC": [8, 6, 1]}
    answers = []
    for domain, correct in rates.items():
        for k, c in enumerate(correct):
            answers += _answers(f"m{k}", domain, "retrospective", [1] * c + [0] * (10 - c),
                                prefix=f"{domain}{k}-")  # fmt: skip
    rows = [r for r in compute_stats(answers).table4_correlations if r.task == "retrospective"]
    (row,) = rows
    x, y = [0.8, 0.6, 0.1], [0.9, 0.5, 0.2]  # ESC first (sorted domains), then MI
    assert (row.first, row.second, row.n) == ("ESC", "MI", 3)
    assert row.pearson_r == pytest.approx(pearsonr(x, y).statistic)
    assert row.pearson_p == pytest.approx(pearsonr(x, y).pvalue)
    assert row.spearman_rho == pytest.approx(spearmanr(x, y).statistic)


def test_tables_7_degradation_and_attributes_group_the_right_answers() -> None:
    answers = _answers("m", "PD", "prospective", [1, 1, 0, 0], variant="counterfactual",
                       attribute=None, n_options=5)  # fmt: skip
    for k, outcomes in enumerate([[0, 0, 1], [0, 1, 1], [1, 1, 1]]):
        answers += _answers("m", "PD", "prospective", outcomes, variant="degraded",
                            attribute=None, history_turns=k, prefix=f"d{k}-")  # fmt: skip
    answers += _answers("m", "PD", "retrospective", [1, 0], attribute="trust", prefix="t")
    report = compute_stats(answers)
    (cf,) = report.table7_counterfactual
    assert (cf.rate, cf.baseline) == (0.5, 0.2)
    assert [(r.history_turns, r.correct) for r in report.degradation] == [(0, 1), (1, 2), (2, 3)]
    (trust,) = report.table5_attributes
    assert (trust.attribute, trust.rate) == ("trust", 0.5)
    assert report.answers == len(answers)


def test_seeds_are_kept_apart_and_reported_as_mean_and_spread() -> None:
    answers = []
    for seed, correct in enumerate([5, 7, 6]):  # 10 items each: 0.5, 0.7, 0.6
        outcomes = [1] * correct + [0] * (10 - correct)
        answers += [a._replace(seed=seed, run_id=f"m/{seed}")
                    for a in _answers("m", "MI", "retrospective", outcomes)]  # fmt: skip
    prosp = _answers("m", "MI", "prospective", [1, 0], attribute=None, prefix="p")
    answers += [a._replace(seed=seed, run_id=f"m/{seed}") for seed in (0, 1) for a in prosp]
    report = compute_stats(answers)
    retro = next(r for r in report.table3_rates if r.task == "retrospective")
    assert retro.seeds == 3 and retro.rate == pytest.approx(0.6)
    assert retro.seed_sd == pytest.approx(0.1)  # sample SD of 0.5, 0.7, 0.6
    assert retro.ci_low is None  # no interval pooled over seeds
    assert [(r.seed, r.rate) for r in report.seeds if r.task == "retrospective"] == [
        (0, 0.5), (1, 0.7), (2, 0.6)
    ]  # fmt: skip
    (gap,) = report.table3_gap  # the test counts each item once: seed 0 only
    assert gap.n == 12 and gap.retrospective == 0.5
    single = compute_stats([a for a in answers if a.seed == 0])
    assert single.table3_rates[1].seeds == 1 and single.table3_rates[1].ci_low is not None
    assert single.seeds == []


def test_small_gap_tables_use_fishers_exact_test() -> None:
    from scipy.stats import fisher_exact

    answers = _answers("m", "MI", "retrospective", [1, 1, 1, 0])
    answers += _answers("m", "MI", "prospective", [1, 0, 0, 0], attribute=None, prefix="p")
    (gap,) = compute_stats(answers).table3_gap
    assert gap.test == "fisher" and "Fisher" in gap.note
    assert gap.p_value == pytest.approx(fisher_exact([[3, 1], [1, 3]]).pvalue)
    big = _answers("m", "MI", "retrospective", [1] * 30 + [0] * 10)
    big += _answers("m", "MI", "prospective", [1] * 15 + [0] * 25, attribute=None, prefix="p")
    (row,) = compute_stats(big).table3_gap
    assert row.test == "pearson" and row.note == ""


def test_majority_answer_baseline_and_the_flag_when_a_model_is_not_above_it() -> None:
    from cogwm.tom.stats import not_above_majority
    from cogwm.tom.templates import AnswerClasses

    answers = _answers("m", "PD", "retrospective", [1, 0, 1, 0], n_options=3)
    golds = ["positive", "positive", "positive", "negative"]
    classes = {
        a.item_id: AnswerClasses(gold=g, options=("negative", "neutral", "positive"))
        for a, g in zip(answers, golds, strict=True)
    }
    (row,) = compute_stats(answers, classes=classes).table3_rates
    assert row.majority == 0.75 and row.rate == 0.5 and not_above_majority(row)
    assert row.baseline == pytest.approx(1 / 3)  # the random baseline stays beside it
    # 4 options offered, "anxiety" most common: picked whenever offered, else the next value
    esc = _answers("m", "ESC", "retrospective", [1, 1, 1], attribute="emotion")
    offered = [("anxiety", "anger", "shame"), ("anxiety", "sadness", "shame"),
               ("sadness", "anger", "shame")]  # fmt: skip
    esc_classes = {
        a.item_id: AnswerClasses(gold=g, options=o)
        for a, g, o in zip(esc, ["anxiety", "anxiety", "sadness"], offered, strict=True)
    }
    (cell,) = compute_stats(esc, classes=esc_classes).table3_rates
    assert cell.majority == 1.0 and not not_above_majority(cell.model_copy(update={"rate": 1.01}))
    assert compute_stats(answers).table3_rates[0].majority is None  # no classes: no baseline
