"""DialToM statistics over stored answers: the paper's Tables 3-8 and the degradation curve.

Pure functions of the stored answers (:meth:`ToMStore.scored_answers`); they never call a model.
The tests themselves come from :mod:`cogwm.stats`. A statistic that cannot be computed (an empty
row in a contingency table, fewer than 3 points for a correlation) is None with a ``note``,
never 0.

- Correctness Rate (CR) = correct / answered; unparsed answers count as wrong and are also
  counted on their own. Interval: Wilson 95 % (``statsmodels``). Random baseline: the mean of
  1/options over the answered items.
- Majority-answer baseline: beside the random baseline, the CR of always giving the most
  common gold answer of the cell (template items, whose golds are label values); a rate not
  above it is flagged.
- Table 3: CR per model x domain x task on the base items (LLM "hard" items and template
  "base" items, whose distractors are label contrasts rather than adversarial), and the
  retrospective-prospective gap per model x domain (Pearson chi-square on the 2 x 2 table
  task x correct, Cramér's V; the p-value from Fisher's exact test where an expected count is
  under 5, and the table says so).
- Table 4: cross-domain correlations per task (units: model x attribute cells present in both
  domains) and the cross-task correlation (units: model x domain), Pearson and Spearman.
- Table 5: CR per model x domain x attribute (retrospective).
- Table 6: Easy-Hard gap per model x domain: Mann-Whitney U on per-item correctness
  (hard first, so a negative rank-biserial r means the hard set is harder).
- Table 7: counterfactual probe: CR ("None of the above" chosen) per model x domain.
- Table 8: reasoning injection: per student x teacher x domain, the student's CR without and with
  the masked reasoning on the same items, McNemar's test on the pairs.
- Degradation: CR per model x domain x restored history turns.
- Errors (``--errors``): for the wrong answers of each model x task x attribute, the share that
  chose each kind of distractor (:mod:`cogwm.tom.distractors`), for models and people alike.
- Seeds: runs of one model and condition with different seeds (option orders) are kept apart:
  a rate cell over several seeds is the mean of the per-seed rates ± their standard deviation
  (``seeds``, ``seed_sd``), the ``seeds`` table lists every seed's rate, and the tests (Tables 3,
  4, 6, 8) are run on the lowest seed of each model x condition, so that an item counts once.
- Circular evaluation: on items asked in every rotation of their options, the plain CR (the
  seeded order) beside the circular CR (every rotation right); position bias: the letter a model
  chooses most often over every asked order, with how often the gold was there.
- People: answers imported from answer sheets (:mod:`cogwm.tom.people`) are a model named
  ``human:lay`` / ``human:expert`` in every table (each respondent's answer to an item is one
  answer). ``people_agreement`` gives Gwet's AC1 among the respondents of a group per
  task x domain (``respondent = "all"``) and, per respondent, AC1 between that respondent and the
  most common answer of the others (items where the others have one most common answer).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from itertools import combinations
from operator import attrgetter
from typing import Any, ClassVar, NamedTuple, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from cogwm.stats import (
    CorrelationResult,
    chi_square,
    gwet_ac1,
    mann_whitney,
    mcnemar,
    pearson,
    spearman,
)
from cogwm.stats._validate import StatsInputError
from cogwm.stats.contingency import MIN_EXPECTED, fisher_exact_p, min_expected_count
from cogwm.stats.estimate import Estimate
from cogwm.stats.proportions import wilson_intervals
from cogwm.tom.evaluate import PLAIN
from cogwm.tom.items import BASE_VARIANTS, Task, Variant
from cogwm.tom.store import OpenScoreRow, ScoredAnswer, ToMStore

CONFIDENCE = 0.95
#: Pearson and Spearman need at least this many paired cells.
MIN_CORRELATION_UNITS = 3
K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Rate(Estimate):
    """A Correctness Rate (``value``, written ``rate``) with its Wilson interval and random
    baseline."""

    json_fields = ("n", "correct", "unparsed", "value", "ci_low", "ci_high", "baseline")
    json_omitted = frozenset({"se", "confidence"})
    json_names: ClassVar[Mapping[str, str]] = {"value": "rate"}

    correct: int
    unparsed: int
    baseline: float | None

    @property
    def rate(self) -> float | None:
        """The Correctness Rate (``value``); None without answers."""
        return self.value


class RateRow(Rate):
    """A CR of one cell of a table.

    When the cell holds runs of several seeds, ``rate`` is the mean of the per-seed rates,
    ``seed_sd`` their sample standard deviation and ``seeds`` how many; the Wilson interval is
    then not given (the runs answer the same items, so pooling them would overstate n).
    """

    seeds: int = 1
    seed_sd: float | None = None
    majority: float | None = None  # always giving the most common gold answer (template items)

    model: str
    domain: str
    condition: str = PLAIN
    task: str | None = None
    attribute: str | None = None
    variant: str | None = None
    history_turns: int | None = None
    source: str | None = None
    seed: int | None = None


class GapRow(_Row):
    """Retrospective-prospective gap of one model x domain (Table 3, right part).

    ``test`` says where ``p_value`` comes from: ``pearson`` (chi-square), or ``fisher``
    (Fisher's exact test, used when an expected count is under 5 and the chi-square
    approximation does not hold; ``chi2`` and Cramér's V are still given as effect sizes).
    """

    model: str
    domain: str
    retrospective: float | None
    prospective: float | None
    chi2: float | None
    p_value: float | None
    cramers_v: float | None
    n: int
    test: str | None = None
    note: str = ""


class CorrelationRow(_Row):
    """A cross-domain or cross-task correlation (Table 4)."""

    task: str
    first: str
    second: str
    n: int
    pearson_r: float | None
    pearson_p: float | None
    spearman_rho: float | None
    spearman_p: float | None
    note: str = ""


class EasyHardRow(_Row):
    """Easy-Hard gap of one model x domain (Table 6)."""

    model: str
    domain: str
    hard: float | None
    easy: float | None
    delta: float | None
    u: float | None
    p_value: float | None
    rank_biserial: float | None
    n_hard: int
    n_easy: int
    note: str = ""


class InjectionRow(_Row):
    """Reasoning-injection probe of one student x teacher x domain (Table 8)."""

    student: str
    teacher: str
    domain: str
    n_pairs: int
    baseline: float | None
    injected: float | None
    delta: float | None
    statistic: float | None
    p_value: float | None
    exact: bool | None
    note: str = ""


class OpenRow(_Row):
    """Mean open-ended scores of one model x domain (BLEU, ROUGE-L, embedding, judge 1-3)."""

    model: str
    domain: str
    n: int
    bleu: float | None
    rouge_l: float | None
    embedding: float | None
    agreement: float | None
    causal_attribution: float | None
    specificity: float | None


class PeopleAgreementRow(_Row):
    """Agreement of people on the chosen option (Gwet's AC1; categories = option positions)."""

    model: str
    respondent: str
    task: str
    domain: str
    items: int
    respondents: int
    rate: float | None
    ac1: float | None
    note: str = ""


class CircularRow(_Row):
    """Plain vs circular CR of one model x condition x domain x task (circular runs only)."""

    model: str
    condition: str
    domain: str
    task: str
    n: int
    plain: float | None
    circular: float | None
    delta: float | None


class PositionBiasRow(_Row):
    """Which letter a model chooses, over every asked order (plain and rotations)."""

    model: str
    condition: str
    answers: int
    top_letter: str | None
    top_share: float | None
    gold_share: float | None  # how often the gold was under that letter
    letters: str  # "A:12 B:80 ..."


class ErrorRow(_Row):
    """Wrong answers of one model x task x attribute that chose one kind of distractor."""

    model: str
    task: str
    attribute: str
    kind: str
    n: int
    share: float  # of the wrong answers of this model x task x attribute
    wrong: int


class CrossModelRow(_Row):
    """One domain x task of the cross-model table: every model's CR side by side (base items).

    ``rates`` maps each model (and group of people) to its CR, None where it has no answers
    here; over several seeds the mean of the per-seed rates.
    """

    domain: str
    task: str
    n_items: int
    random: float | None
    majority: float | None
    rates: dict[str, float | None]


class ChoiceRecord(NamedTuple):
    """One asked order of an item: what the statistics of position bias need."""

    model: str
    condition: str
    choice: str | None
    gold_letter: str


class StatsReport(_Row):
    """Everything ``cogwm tom stats`` reports."""

    answers: int
    unparsed: int
    table3_rates: list[RateRow]
    table3_gap: list[GapRow]
    table4_correlations: list[CorrelationRow]
    table5_attributes: list[RateRow]
    table6_easy_hard: list[EasyHardRow]
    table7_counterfactual: list[RateRow]
    table8_injection: list[InjectionRow]
    degradation: list[RateRow]
    open_ended: list[OpenRow]
    people_agreement: list[PeopleAgreementRow] = []
    circular: list[CircularRow] = []
    position_bias: list[PositionBiasRow] = []
    seeds: list[RateRow] = []
    errors: list[ErrorRow] = []
    cross_model: list[CrossModelRow] = []
    all_cells: list[RateRow]


# -- rates ----------------------------------------------------------------


def correctness_rate(answers: Sequence[ScoredAnswer]) -> Rate:
    """CR, Wilson interval and random baseline of some answers (all None when there are none)."""
    return correctness_rates([answers])[0]


def correctness_rates(groups: Sequence[Sequence[ScoredAnswer]]) -> list[Rate]:
    """:func:`correctness_rate` of several groups, the intervals computed in one vector call."""
    counts = [
        (len(g), sum(a.correct for a in g), sum(not a.parsed for a in g),
         sum(1 / a.n_options for a in g))
        for g in groups
    ]  # fmt: skip
    filled = [(n, c) for n, c, _, _ in counts if n]
    intervals = iter(
        wilson_intervals([c for _, c in filled], [n for n, _ in filled], confidence=CONFIDENCE)
    )
    rates: list[Rate] = []
    for n, correct, unparsed, inverse_options in counts:
        if n == 0:
            rates.append(Rate(n=0, correct=0, unparsed=0, value=None, baseline=None))
            continue
        low, high = next(intervals)
        rates.append(
            Rate(
                n=n,
                correct=correct,
                unparsed=unparsed,
                value=correct / n,
                ci_low=low,
                ci_high=high,
                baseline=inverse_options / n,
            )
        )
    return rates


def group_by(answers: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    """Answers (or any records) grouped by ``key``, groups in sorted key order."""
    groups: dict[K, list[T]] = defaultdict(list)
    for answer in answers:
        groups[key(answer)].append(answer)
    return dict(sorted(groups.items(), key=lambda kv: tuple(str(x) for x in _as_tuple(kv[0]))))


def _as_tuple(key: Hashable) -> tuple[Hashable, ...]:
    return key if isinstance(key, tuple) else (key,)


def _fields_key(fields: Sequence[str]) -> Callable[[ScoredAnswer], tuple[Any, ...]]:
    getter = attrgetter(*fields)
    if len(fields) == 1:
        return lambda a: (getter(a),)
    return getter


def rate_rows(
    answers: Iterable[ScoredAnswer],
    fields: Sequence[str],
    classes: Mapping[str, AnswerClassesLike | None] | None = None,
    **fixed: str | None,
) -> list[RateRow]:
    """Correctness Rates grouped by some :class:`ScoredAnswer` fields (one row per group).

    Runs of one model with different seeds are not pooled: see :class:`RateRow`. ``classes``
    (item id -> the label values of gold and options) gives the majority-answer baseline.
    """
    groups = group_by(answers, _fields_key(fields))
    rows = []
    for key, rate in zip(groups, correctness_rates(list(groups.values())), strict=True):
        row = RateRow(**dict(zip(fields, key, strict=True)), **fixed, **rate.model_dump())
        if classes is not None:
            row = row.model_copy(update={"majority": majority_baseline(groups[key], classes)})
        rows.append(_across_seeds(row, groups[key]))
    return rows


class AnswerClassesLike(Protocol):
    """The label values of an item's gold and options (``templates.AnswerClasses``)."""

    @property
    def gold(self) -> str: ...

    @property
    def options(self) -> tuple[str, ...]: ...


def majority_baseline(
    answers: Sequence[ScoredAnswer], classes: Mapping[str, AnswerClassesLike | None]
) -> float | None:
    """The CR of always giving the most common answer (None unless every item has classes).

    The answers of the cell are ranked by how often each value is the gold; on every item the
    strategy picks the offered option whose value ranks highest. Where every value is offered
    (3-option items) this is the share of the most common gold. The random baseline (mean
    1/options) hides these priors: on PersuasionForGood reactions "positive" is the gold of most
    items, so always saying so beats chance without reading the dialogue.
    """
    found = [classes.get(a.item_id) for a in answers]
    known = [c for c in found if c is not None]
    if not known or len(known) < len(found):
        return None
    counts = _counts_of(c.gold for c in known)
    rank = {value: (-n, value) for value, n in counts.items()}
    right = 0
    for c in known:
        offered = [o for o in c.options if o in rank]
        right += min(offered, key=rank.__getitem__) == c.gold
    return right / len(known)


def not_above_majority(row: RateRow) -> bool:
    """Whether a rate is not above its majority-answer baseline."""
    return row.majority is not None and row.rate is not None and row.rate <= row.majority


def _across_seeds(row: RateRow, group: Sequence[ScoredAnswer]) -> RateRow:
    """``row`` as mean ± sample SD of per-seed rates when ``group`` has several seeds."""
    by_seed = group_by(group, attrgetter("seed"))
    if len(by_seed) < 2:
        return row
    rates = [_share(g) for g in by_seed.values()]
    return row.model_copy(
        update={
            "value": float(np.mean(rates)),
            "seed_sd": float(np.std(rates, ddof=1)),
            "seeds": len(rates),
            "ci_low": None,
            "ci_high": None,
        }
    )


def single_seed(answers: Iterable[ScoredAnswer]) -> list[ScoredAnswer]:
    """The answers of the lowest seed of each model x condition (what the tests are run on)."""
    answers = list(answers)
    lowest: dict[tuple[str, str], int] = {}
    for a in answers:
        key = (a.model, a.condition)
        lowest[key] = min(lowest.get(key, a.seed), a.seed)
    return [a for a in answers if a.seed == lowest[(a.model, a.condition)]]


# Enum ``.value`` lookups are slow in the inner loops over tens of thousands of answers.
_PLAIN, _RETRO, _PROSP = PLAIN, Task.RETROSPECTIVE.value, Task.PROSPECTIVE.value
_EASY = Variant.EASY.value
_BASE_VALUES = frozenset(v.value for v in BASE_VARIANTS)


def _share(group: Sequence[ScoredAnswer]) -> float:
    """The plain share correct of a non-empty group (no interval needed)."""
    return sum(a.correct for a in group) / len(group)


def _plain(answers: Iterable[ScoredAnswer]) -> list[ScoredAnswer]:
    return [a for a in answers if a.condition == _PLAIN]


def _of(
    answers: Iterable[ScoredAnswer], variant: Variant, task: Task | None = None
) -> list[ScoredAnswer]:
    """Answers to items of one variant; ``Variant.HARD`` means every base item (hard LLM items
    and template base items)."""
    wanted = _BASE_VALUES if variant is Variant.HARD else frozenset({variant.value})
    task_value = task.value if task is not None else None
    return [
        a for a in answers if a.variant in wanted and (task_value is None or a.task == task_value)
    ]


def seed_rates(answers: Sequence[ScoredAnswer]) -> list[RateRow]:
    """CR per seed of every model x condition x domain x task that was run with several seeds."""
    several = {
        key
        for key, group in group_by(answers, lambda a: (a.model, a.condition)).items()
        if len({a.seed for a in group}) > 1
    }
    chosen = [a for a in answers if (a.model, a.condition) in several]
    return rate_rows(chosen, ("model", "condition", "domain", "task", "seed"))


# -- Table 3: retrospective vs prospective -------------------------------------


def retro_prosp_gap(answers: Sequence[ScoredAnswer]) -> list[GapRow]:
    """Chi-square test of the retrospective-prospective gap per model x domain (hard items)."""
    rows = []
    hard = _of(_plain(answers), Variant.HARD)
    for (model, domain), group in group_by(hard, lambda a: (a.model, a.domain)).items():
        retro = [a for a in group if a.task == _RETRO]
        prosp = [a for a in group if a.task == _PROSP]
        if not retro or not prosp:
            continue  # no gap to test without both tasks
        table = [
            [sum(a.correct for a in retro), sum(not a.correct for a in retro)],
            [sum(a.correct for a in prosp), sum(not a.correct for a in prosp)],
        ]
        chi2 = p = v = None
        test: str | None = None
        note = ""
        try:
            result = chi_square(table)
            chi2, p, v, test = result.statistic, result.p_value, result.cramers_v, "pearson"
            if min_expected_count(table) < MIN_EXPECTED:
                p, test = fisher_exact_p(table), "fisher"
                note = f"an expected count is under {MIN_EXPECTED}: p from Fisher's exact test"
        except StatsInputError as exc:
            note = str(exc)
        rows.append(
            GapRow(
                model=model,
                domain=domain,
                retrospective=correctness_rate(retro).rate,
                prospective=correctness_rate(prosp).rate,
                chi2=chi2,
                p_value=p,
                cramers_v=v,
                n=len(group),
                test=test,
                note=note,
            )
        )
    return rows


# -- Table 4: correlations -----------------------------------------------------


def _correlate(
    task: str, first: str, second: str, x: list[float], y: list[float]
) -> CorrelationRow:
    def row(
        pr: CorrelationResult | None, sr: CorrelationResult | None, note: str
    ) -> CorrelationRow:
        return CorrelationRow(
            task=task,
            first=first,
            second=second,
            n=len(x),
            pearson_r=pr.r if pr else None,
            pearson_p=pr.p_value if pr else None,
            spearman_rho=sr.r if sr else None,
            spearman_p=sr.p_value if sr else None,
            note=note,
        )

    if len(x) < MIN_CORRELATION_UNITS:
        return row(None, None, f"needs {MIN_CORRELATION_UNITS} shared cells")
    try:
        pr, sr = pearson(x, y), spearman(x, y)
    except StatsInputError as exc:
        return row(None, None, str(exc))
    return row(pr, sr, "" if pr.r is not None else "a constant series has no correlation")


def correlations(answers: Sequence[ScoredAnswer]) -> list[CorrelationRow]:
    """Cross-domain correlations per task and the cross-task correlation (hard items)."""
    hard = _of(_plain(answers), Variant.HARD)
    rows: list[CorrelationRow] = []
    for task in Task:
        cells = {
            key: _share(group)
            for key, group in group_by(
                (a for a in hard if a.task == task.value),
                lambda a: (a.domain, a.model, a.attribute or ""),
            ).items()
        }
        domains = sorted({d for d, _, _ in cells})
        for first, second in combinations(domains, 2):
            units = sorted(
                {(m, at) for d, m, at in cells if d == first}
                & {(m, at) for d, m, at in cells if d == second}
            )
            x = [cells[(first, *u)] for u in units]
            y = [cells[(second, *u)] for u in units]
            rows.append(_correlate(task.value, first, second, x, y))
    by_task = {
        key: _share(group)
        for key, group in group_by(hard, lambda a: (a.task, a.model, a.domain)).items()
    }
    units = sorted(
        {(m, d) for t, m, d in by_task if t == _RETRO}
        & {(m, d) for t, m, d in by_task if t == _PROSP}
    )
    x = [by_task[(_RETRO, *u)] for u in units]
    y = [by_task[(_PROSP, *u)] for u in units]
    rows.append(_correlate("cross-task", _RETRO, _PROSP, x, y))
    return rows


# -- Table 6: easy vs hard -----------------------------------------------------


def easy_hard_gap(answers: Sequence[ScoredAnswer]) -> list[EasyHardRow]:
    """Mann-Whitney U on per-item correctness, hard vs easy, per model x domain."""
    plain = [a for a in _plain(answers) if a.task == _PROSP]
    rows = []
    for (model, domain), group in group_by(plain, lambda a: (a.model, a.domain)).items():
        hard = [float(a.correct) for a in group if a.variant in _BASE_VALUES]
        easy = [float(a.correct) for a in group if a.variant == _EASY]
        if not easy:
            continue
        hard_rate = sum(hard) / len(hard) if hard else None
        easy_rate = sum(easy) / len(easy)
        u = p = r = None
        note = ""
        try:
            result = mann_whitney(hard, easy)
            u, p, r = result.u, result.p_value, result.rank_biserial
        except StatsInputError as exc:
            note = str(exc)
        rows.append(
            EasyHardRow(
                model=model,
                domain=domain,
                hard=hard_rate,
                easy=easy_rate,
                delta=None if hard_rate is None else easy_rate - hard_rate,
                u=u,
                p_value=p,
                rank_biserial=r,
                n_hard=len(hard),
                n_easy=len(easy),
                note=note,
            )
        )
    return rows


# -- Table 8: reasoning injection ----------------------------------------------


def injection_probe(answers: Sequence[ScoredAnswer]) -> list[InjectionRow]:
    """McNemar's test: a student without vs with a teacher's masked reasoning, same items."""
    injected = [a for a in answers if a.condition.startswith("injected:")]
    students = {a.model for a in injected}
    plain = {
        (a.model, a.item_id): a for a in answers if a.condition == _PLAIN and a.model in students
    }
    rows = []
    groups = group_by(
        injected, lambda a: (a.model, a.condition.removeprefix("injected:"), a.domain)
    )
    for (student, teacher, domain), group in groups.items():
        pairs = [(plain[(student, a.item_id)], a) for a in group if (student, a.item_id) in plain]
        table = [[0, 0], [0, 0]]
        for before, after in pairs:
            table[0 if before.correct else 1][0 if after.correct else 1] += 1
        base = sum(b.correct for b, _ in pairs) / len(pairs) if pairs else None
        inj = sum(a.correct for _, a in pairs) / len(pairs) if pairs else None
        stat = p = exact = None
        note = "" if pairs else f"no plain answers of {student} on these items"
        if pairs:
            result = mcnemar(table)
            stat, p, exact = result.statistic, result.p_value, result.exact
        rows.append(
            InjectionRow(
                student=student,
                teacher=teacher,
                domain=domain,
                n_pairs=len(pairs),
                baseline=base,
                injected=inj,
                delta=None if base is None or inj is None else inj - base,
                statistic=stat,
                p_value=p,
                exact=exact,
                note=note,
            )
        )
    return rows


# -- open-ended ----------------------------------------------------------------


def _mean(values: Iterable[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None


def open_summary(scores: Sequence[tuple[str, str, str, OpenScoreRow]]) -> list[OpenRow]:
    """Mean open-ended scores per model x domain (plain condition)."""
    groups: dict[tuple[str, str], list[OpenScoreRow]] = defaultdict(list)
    for model, condition, domain, row in scores:
        if condition == PLAIN:
            groups[(model, domain)].append(row)
    return [
        OpenRow(
            model=model,
            domain=domain,
            n=len(rows),
            bleu=_mean(r.bleu for r in rows),
            rouge_l=_mean(r.rouge_l for r in rows),
            embedding=_mean(r.embedding for r in rows),
            agreement=_mean(r.agreement for r in rows),
            causal_attribution=_mean(r.causal_attribution for r in rows),
            specificity=_mean(r.specificity for r in rows),
        )
        for (model, domain), rows in sorted(groups.items())
    ]


# -- people --------------------------------------------------------------------


def _is_people(model: str) -> bool:
    return model.startswith("human:")


def people_agreement(answers: Sequence[ScoredAnswer]) -> list[PeopleAgreementRow]:
    """Gwet's AC1 among the respondents of each group of people (see the module docstring)."""
    people = [a for a in _plain(answers) if _is_people(a.model) and a.chosen_index is not None]
    rows: list[PeopleAgreementRow] = []
    for model, group in group_by(people, attrgetter("model")).items():
        for (task, domain), cell in group_by(group, lambda a: (a.task, a.domain)).items():
            rows.append(_group_ac1(model, task, domain, cell))
        for respondent, own in group_by(group, lambda a: a.respondent or "").items():
            rows.append(_respondent_ac1(model, respondent, own, group))
    return rows


def _categories(answers: Iterable[ScoredAnswer]) -> list[Hashable]:
    return list(range(max(a.n_options for a in answers)))


def _group_ac1(
    model: str, task: str, domain: str, cell: Sequence[ScoredAnswer]
) -> PeopleAgreementRow:
    respondents = sorted({a.respondent or "" for a in cell})
    by_item: dict[str, dict[str, int | None]] = defaultdict(dict)
    for a in cell:
        by_item[a.item_id][a.respondent or ""] = a.chosen_index
    table = [[choices.get(r) for r in respondents] for choices in by_item.values()]
    return _ac1_row(model, "all", task, domain, table, cell, len(respondents))


def _respondent_ac1(
    model: str, respondent: str, own: Sequence[ScoredAnswer], group: Sequence[ScoredAnswer]
) -> PeopleAgreementRow:
    others: dict[str, list[int]] = defaultdict(list)
    for a in group:
        if (a.respondent or "") != respondent and a.chosen_index is not None:
            others[a.item_id].append(a.chosen_index)
    table: list[list[int | None]] = []
    for a in own:
        counts = sorted(
            ((c, v) for v, c in _counts(others.get(a.item_id, [])).items()), reverse=True
        )
        if counts and (len(counts) == 1 or counts[0][0] > counts[1][0]):
            table.append([a.chosen_index, counts[0][1]])  # a unique most common answer
    n_respondents = len({a.respondent for a in group})
    return _ac1_row(model, respondent, "all", "all", table, own, n_respondents)


def _counts(values: Iterable[int]) -> dict[int, int]:
    counts: dict[int, int] = defaultdict(int)
    for v in values:
        counts[v] += 1
    return counts


def _ac1_row(
    model: str,
    respondent: str,
    task: str,
    domain: str,
    table: list[list[int | None]],
    answers: Sequence[ScoredAnswer],
    n_respondents: int,
) -> PeopleAgreementRow:
    ac1: float | None = None
    note = ""
    try:
        ac1 = gwet_ac1(table, categories=_categories(answers)).coefficient
    except StatsInputError as exc:
        note = str(exc)
    return PeopleAgreementRow(
        model=model,
        respondent=respondent,
        task=task,
        domain=domain,
        items=len(table),
        respondents=n_respondents,
        rate=_share(answers) if answers else None,
        ac1=ac1,
        note=note,
    )


# -- circular evaluation and position bias ---------------------------------------


def circular_rates(answers: Sequence[ScoredAnswer]) -> list[CircularRow]:
    """Plain and circular CR on the items asked in every rotation."""
    asked = [a for a in answers if a.circular is not None]
    rows = []
    keys = lambda a: (a.model, a.condition, a.domain, a.task)  # noqa: E731
    for (model, condition, domain, task), group in group_by(asked, keys).items():
        plain = _share(group)
        circular = sum(bool(a.circular) for a in group) / len(group)
        rows.append(
            CircularRow(model=model, condition=condition, domain=domain, task=task, n=len(group),
                        plain=plain, circular=circular, delta=circular - plain)
        )  # fmt: skip
    return rows


def position_bias(choices: Sequence[ChoiceRecord]) -> list[PositionBiasRow]:
    """Per model x condition: the most chosen letter, its share, and the gold's share there."""
    rows = []
    for (model, condition), group in group_by(choices, lambda c: (c.model, c.condition)).items():
        letters = _counts_of(c.choice for c in group if c.choice is not None)
        top = max(letters, key=lambda x: (letters[x], x)) if letters else None
        rows.append(
            PositionBiasRow(
                model=model,
                condition=condition,
                answers=len(group),
                top_letter=top,
                top_share=letters[top] / len(group) if top else None,
                gold_share=sum(c.gold_letter == top for c in group) / len(group) if top else None,
                letters=" ".join(f"{x}:{n}" for x, n in sorted(letters.items())),
            )
        )
    return rows


def _counts_of(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for v in values:
        counts[v] += 1
    return dict(counts)


# -- cross-model table ----------------------------------------------------------


def cross_model(rows: Sequence[RateRow]) -> list[CrossModelRow]:
    """Table 3's rates with the models as columns: one row per domain x task.

    Only made when at least two models (or groups of people) have answers.
    """
    models = sorted({r.model for r in rows})
    if len(models) < 2:
        return []
    table = []
    for (domain, task), cell in group_by(rows, lambda r: (r.domain, r.task or "")).items():
        by_model = {r.model: r for r in cell}
        first = max(cell, key=lambda r: r.n)  # every model answers the same items, ideally
        table.append(
            CrossModelRow(
                domain=domain,
                task=task,
                n_items=first.n // max(first.seeds, 1),
                random=first.baseline,
                majority=first.majority,
                rates={m: by_model[m].rate if m in by_model else None for m in models},
            )
        )
    return table


# -- error analysis ------------------------------------------------------------


def error_analysis(
    answers: Sequence[ScoredAnswer], kinds: Mapping[str, Sequence[str | None]]
) -> list[ErrorRow]:
    """Which kind of distractor the wrong answers chose, per model x task x attribute.

    ``kinds`` gives, per item id, the kind of each stored option (None for the gold;
    :func:`cogwm.tom.distractors.option_kinds`). Unparsed answers are the kind ``unparsed``.
    """
    wrong = [a for a in _plain(answers) if not a.correct]
    rows: list[ErrorRow] = []
    cells = group_by(wrong, lambda a: (a.model, a.task, a.attribute or "—"))
    for (model, task, attribute), group in cells.items():
        counted = _counts_of(_error_kind(a, kinds) for a in group)
        for kind, n in sorted(counted.items(), key=lambda kv: (-kv[1], kv[0])):
            rows.append(
                ErrorRow(model=model, task=task, attribute=attribute, kind=kind, n=n,
                         share=n / len(group), wrong=len(group))
            )  # fmt: skip
    return rows


def _error_kind(answer: ScoredAnswer, kinds: Mapping[str, Sequence[str | None]]) -> str:
    if answer.chosen_index is None:
        return "unparsed"
    known = kinds.get(answer.item_id)
    if known is None or answer.chosen_index >= len(known):
        return "unknown item"
    return known[answer.chosen_index] or "gold"


# -- everything ----------------------------------------------------------------


FULL_HISTORY_SUFFIX = " [full history]"


def _with_history(answer: ScoredAnswer) -> ScoredAnswer:
    if answer.history == "window":
        return answer
    return answer._replace(model=f"{answer.model}{FULL_HISTORY_SUFFIX}")


def compute_stats(
    answers: Sequence[ScoredAnswer],
    open_scores: Sequence[tuple[str, str, str, OpenScoreRow]] = (),
    choices: Sequence[ChoiceRecord] = (),
    kinds: Mapping[str, Sequence[str | None]] | None = None,
    classes: Mapping[str, AnswerClassesLike | None] | None = None,
) -> StatsReport:
    """Every table of ``cogwm tom stats``.

    ``choices`` (every asked order) gives the position-bias table; ``kinds`` (the kind of each
    option of each item) the error analysis; ``classes`` (each item's gold answer class,
    :func:`cogwm.tom.templates.answer_classes`) the majority-answer baseline.

    Runs with the full session history are kept apart from window runs of the same model: their
    model is shown as ``<model> [full history]``.
    """
    answers = [_with_history(a) for a in answers]
    plain = _plain(answers)
    hard = _of(plain, Variant.HARD)
    one_seed = single_seed(answers)
    table3 = rate_rows(hard, ("model", "domain", "task"), classes)
    return StatsReport(
        answers=len(answers),
        unparsed=sum(not a.parsed for a in answers),
        table3_rates=table3,
        cross_model=cross_model(table3),
        table3_gap=retro_prosp_gap(one_seed),
        table4_correlations=correlations(one_seed),
        table5_attributes=rate_rows(
            _of(hard, Variant.HARD, Task.RETROSPECTIVE), ("model", "domain", "attribute"), classes
        ),
        table6_easy_hard=easy_hard_gap(one_seed),
        table7_counterfactual=rate_rows(_of(plain, Variant.COUNTERFACTUAL), ("model", "domain")),
        table8_injection=injection_probe(one_seed),
        degradation=rate_rows(_of(plain, Variant.DEGRADED), ("model", "domain", "history_turns")),
        open_ended=open_summary(open_scores),
        people_agreement=people_agreement(answers),
        circular=circular_rates(answers),
        position_bias=position_bias(choices),
        seeds=seed_rates(answers),
        errors=error_analysis(answers, kinds) if kinds is not None else [],
        all_cells=rate_rows(
            answers,
            ("model", "condition", "domain", "task", "attribute", "variant", "source"),
            classes,
        ),
    )


def store_stats(store: ToMStore, *, errors: bool = True) -> StatsReport:
    """Every table of ``cogwm tom stats`` for a store: the one place that gathers the inputs
    (asked orders, option kinds, answer classes) so the CLI and the HTML report agree.

    ``errors=False`` skips the error analysis (its option kinds cost a pass over every item).
    """
    from cogwm.tom.distractors import option_kinds
    from cogwm.tom.templates import answer_classes

    choices = [ChoiceRecord(*c) for c in store.choice_records()]
    items = store.items()
    kinds = {i: option_kinds(item) for i, item in items.items()} if errors else None
    classes = {i: answer_classes(item) for i, item in items.items()}
    return compute_stats(store.scored_answers(), store.open_scores(), choices, kinds, classes)
