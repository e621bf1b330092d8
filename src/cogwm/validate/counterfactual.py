"""The counterfactual check: does the simulated user's state follow how the agent treats it?

Held-out histories are cut just before a user turn that follows an agent turn. The last agent
turn is replaced by a supportive (or helpful), a dismissive and a hostile line from a fixed bank
(``cogwm/data/counterfactual_bank.json``, one line per history and condition picked by the seed),
and the simulator predicts its next state in each condition, with the same input otherwise and
the same seed. A responsive simulator orders the three: supportive > dismissive > hostile. Each
of the three pairs scores 1 when ordered so, 1/2 on a tie and 0 otherwise, in valence x intensity
and in the task's composite ``Comp_t``; a simulator that copies the state it is shown ties every
pair and scores 0.5. The real agent turn is read too, to say where people's turns land.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from cogwm import tasks
from cogwm.metrics.trajectory import composite
from cogwm.schema import CognitiveState
from cogwm.simulator.counterfactual_bank import CONDITIONS, TASK_CORPORA, Bank, load_bank
from cogwm.stats.bootstrap import Settings
from cogwm.stats.means import mean_estimate
from cogwm.validate.card import Check, PartInfo
from cogwm.validate.inputs import Reading
from cogwm.validate.items import (
    Heldout,
    Item,
    Population,
    annomi_population,
    esconv_populations,
    p4g_populations,
)
from cogwm.validate.parts import sample_items, valence_score

#: The card part that runs this check.
COUNTERFACTUAL = "counterfactual"
#: The real agent turn's condition (read, not ranked).
REAL = "real"
#: The pairs scored: (should be higher, should be lower).
PAIRS: tuple[tuple[str, str], ...] = (
    ("supportive", "dismissive"),
    ("dismissive", "hostile"),
    ("supportive", "hostile"),
)
#: Pass rule: the mean ordering score and its interval's lower bound.
PASS_ORDERING = 0.80
PASS_LOWER_BOUND = 0.5
RULE = f"ordering >= {PASS_ORDERING:.2f} with the 95 % CI's lower bound above {PASS_LOWER_BOUND}"
#: A simulator that copies the state it is shown ties every pair.
COPY_MACHINE = 0.5
#: The two readings of a state the check orders.
METRICS: tuple[str, ...] = ("valence_ordering", "composite_ordering")


# --- histories ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class HistorySet:
    """One task's held-out histories and the words for where they come from."""

    task: str
    corpus: str
    split: str
    histories: list[Item]
    n_population: int


def _ends_with_agent_turn(item: Item) -> bool:
    return bool(item.inp.history) and item.inp.history[-1][0] == "agent"


def _histories(corpus: str, populations: Sequence[Population]) -> tuple[str, list[Item]]:
    """Every item of the populations once whose prompt ends with an agent turn of ``corpus``
    (FailedESConv's items belong to the known-groups check, not here)."""
    seen: dict[str, Item] = {}
    for population in populations:
        for item in population.items:
            if item.dialogue_id.startswith(f"{corpus}:") and _ends_with_agent_turn(item):
                seen.setdefault(item.id, item)
    split = populations[0].split if populations else ""
    return split, list(seen.values())


def history_sets(
    data_dir: Path, heldout: Heldout, limit: int | None, seed: int
) -> list[HistorySet]:
    """Each task's histories: the held-out user turns of the card's items (ESConv's official
    test split, P4G's and AnnoMI's held-out dialogues), ``limit`` of them sampled with ``seed``.
    """
    populations: dict[str, Callable[[], Sequence[Population]]] = {
        "ESC": lambda: esconv_populations(data_dir, heldout),
        "PD": lambda: p4g_populations(data_dir, heldout),
        "MI": lambda: (annomi_population(data_dir, heldout),),
    }
    sets = []
    for offset, (task, corpus) in enumerate(TASK_CORPORA.items()):
        split, items = _histories(corpus, populations[task]())
        sets.append(
            HistorySet(
                task=task,
                corpus=corpus,
                split=split,
                histories=sample_items(items, limit, seed + offset),
                n_population=len(items),
            )
        )
    return sets


def with_agent_turn(history: Item, condition: str, text: str) -> Item:
    """``history`` with its last agent turn replaced by ``text`` (an item of its own id)."""
    turns = [*history.inp.history[:-1], ("agent", text)]
    return replace(
        history,
        id=f"{history.id}@{condition}",
        inp=history.inp.model_copy(update={"history": turns}),
    )


def condition_items(sets: Sequence[HistorySet], bank: Bank, seed: int) -> list[Item]:
    """Every call of the check: each history in the real condition and in each bank condition.

    The calls of one history come together, so a run cut short has whole histories."""
    calls = []
    for history_set in sets:
        for history in history_set.histories:
            calls.append(replace(history, id=f"{history.id}@{REAL}"))
            calls.extend(
                with_agent_turn(
                    history, condition, bank.pick(history_set.task, condition, history.id, seed)
                )
                for condition in CONDITIONS
            )
    return calls


# --- scoring -----------------------------------------------------------------------------------


def pair_score(higher: float, lower: float) -> float:
    """1 when ``higher`` is above ``lower``, 1/2 on a tie, 0 otherwise."""
    return 1.0 if higher > lower else 0.5 if higher == lower else 0.0


def ordering_score(values: Mapping[str, float]) -> float:
    """Mean of :func:`pair_score` over :data:`PAIRS` for one history's condition values."""
    return sum(pair_score(values[a], values[b]) for a, b in PAIRS) / len(PAIRS)


def _composite(state: CognitiveState, task: str) -> float | None:
    if state.emotion is None:
        return None
    return composite(state, tasks.get(task))


def _value(metric: str, state: CognitiveState | None, task: str) -> float | None:
    if state is None:
        return None
    return valence_score(state) if metric == "valence_ordering" else _composite(state, task)


@dataclass(frozen=True)
class _Scored:
    dialogue_ids: list[str]
    scores: list[float]
    real_between: int
    failed: int


def _score_metric(
    task: str, histories: Sequence[Item], readings: Mapping[str, Reading], metric: str
) -> _Scored:
    dialogue_ids: list[str] = []
    scores: list[float] = []
    real_between = failed = 0
    for history in histories:
        values = {
            condition: _value(metric, readings[f"{history.id}@{condition}"].state, task)
            for condition in (REAL, *CONDITIONS)
        }
        if any(v is None for v in values.values()):
            failed += 1  # left out, never scored as a wrong order
            continue
        known = {c: float(v) for c, v in values.items() if v is not None}
        dialogue_ids.append(history.dialogue_id)
        scores.append(ordering_score(known))
        real_between += known["hostile"] <= known[REAL] <= known["supportive"]
    return _Scored(dialogue_ids, scores, real_between, failed)


def counterfactual_checks(
    history_set: HistorySet, readings: Mapping[str, Reading], settings: Settings, bank: Bank
) -> list[Check]:
    """The task's two checks (valence and composite ordering) from the readings by call id."""
    checks = []
    for metric in METRICS:
        scored = _score_metric(history_set.task, history_set.histories, readings, metric)
        value = low = high = None
        if scored.scores:
            estimate = mean_estimate(
                scored.scores,
                groups=scored.dialogue_ids,
                n_resamples=settings.resamples,
                confidence=settings.confidence,
                seed=settings.seed,
            )
            value, low, high = estimate.mean, estimate.ci_low, estimate.ci_high
        n = len(scored.scores)
        checks.append(
            Check(
                name=COUNTERFACTUAL,
                task=history_set.task,
                metric=metric,
                value=value,
                ci_low=low,
                ci_high=high,
                n=n,
                n_failed=scored.failed,
                copy_machine=COPY_MACHINE,
                baselines={"random": 0.5},
                passed=_passed(value, low),
                rule=RULE,
                note=_note(history_set, scored, metric, bank),
            )
        )
    return checks


def _passed(value: float | None, low: float | None) -> bool | None:
    if value is None or low is None:
        return None
    return value >= PASS_ORDERING and low > PASS_LOWER_BOUND


def _note(history_set: HistorySet, scored: _Scored, metric: str, bank: Bank) -> str:
    reading = "valence x intensity" if metric == "valence_ordering" else "Comp_t"
    n = len(scored.scores)
    real = (
        f"the real agent turn's {reading} lies between the hostile and the supportive line's "
        f"(inclusive) in {scored.real_between} of {n}"
        if n
        else "no history answered in every condition"
    )
    return (
        f"{n} histories of {len(set(scored.dialogue_ids))} dialogues ({history_set.corpus}, "
        f"{history_set.split}); the last agent turn replaced by a line of bank "
        f"{bank.version} per condition; pairs supportive > dismissive > hostile in {reading} "
        f"score 1, ties 1/2; {scored.failed} histories with a failed or unscorable call left "
        f"out; random and copying both score 0.5; {real}"
    )


def part_info(history_set: HistorySet, readings: Mapping[str, Reading], bank: Bank) -> PartInfo:
    """The data behind one task's check, for the card's parts list."""
    calls = [readings[f"{h.id}@{c}"] for h in history_set.histories for c in (REAL, *CONDITIONS)]
    return PartInfo(
        name=f"{COUNTERFACTUAL}.{history_set.task}",
        corpus=history_set.corpus,
        split=history_set.split,
        selection="held-out user turns that follow an agent turn; the agent turn as it was and "
        f"replaced by a supportive, a dismissive and a hostile line (bank {bank.version})",
        mode="predict",
        n_items=len(history_set.histories),
        n_population=history_set.n_population,
        n_dialogues=len({h.dialogue_id for h in history_set.histories}),
        n_calls=len(calls),
        n_failed=sum(r.state is None for r in calls),
    )


@dataclass(frozen=True)
class CounterfactualPlan:
    """The check's calls, read before any model call, and how to score their readings."""

    sets: list[HistorySet]
    bank: Bank
    calls: list[Item]

    def score(
        self, readings: Mapping[str, Reading], settings: Settings
    ) -> tuple[list[Check], list[PartInfo]]:
        """Each task's checks and the data behind them."""
        checks = [
            c for s in self.sets for c in counterfactual_checks(s, readings, settings, self.bank)
        ]
        return checks, [part_info(s, readings, self.bank) for s in self.sets]

    @property
    def versions(self) -> dict[str, str]:
        """What names the run beside the software: the bank's version."""
        return {"counterfactual_bank": self.bank.version}


def plan(data_dir: Path, heldout: Heldout, limit: int | None, seed: int) -> CounterfactualPlan:
    """The check's histories (``limit`` per task) and calls, with the shipped bank."""
    bank = load_bank()
    sets = history_sets(data_dir, heldout, limit, seed)
    return CounterfactualPlan(sets=sets, bank=bank, calls=condition_items(sets, bank, seed))
