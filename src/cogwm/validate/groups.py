"""The known-groups check: does the simulated user's change of state tell people's groups apart?

The simulator is driven through real agent turns in prediction mode: for each dialogue it
predicts the user's state at the first and at the last user turn, each from the real history up
to it and the human-known initial state (the inputs the training samples build; the first turn is
shown the initial state too, so a simulator that copies what it is shown changes nothing). The
change ``Δs_t = s_last - s_first`` in the task's composite ``Comp_t`` (and, for emotional support,
in valence x intensity) should separate:

- ESConv's official test dialogues (every seeker's intensity dropped) from FailedESConv
  dialogues whose survey shows no improvement (final intensity not below the initial one). This
  one gates. Under the ``test`` held-out rule the FailedESConv dialogues are its test split, which
  holds the survey-stratified half of :func:`cogwm.simulator.splits.failed_esconv_holdout`.
- AnnoMI's high-quality from its low-quality sessions, on the stratified hold-out of
  :func:`cogwm.simulator.splits.annomi_quality_holdout`. Reported, not gating: MI quality is
  the counsellor's, and how much a client's state moves within one session is a weak echo of it.

Both comparisons score clean held-out dialogues only, as the card's parts do
(:func:`cogwm.validate.items.clean_test`): a dialogue with a user line of 8+ words
that also occurs in its corpus's train split is left out, and the note says how many were.

The figure is the AUROC of ``Δs_t`` (the first group positive) with a bootstrap interval over
dialogues. Beside it: the AUROC of the mean VADER compound of the agent's turns, and of the
dialogue's length in turns, which need no simulator at all. A simulator that only echoes one of
them models nobody, so the gating comparison also needs the simulator's AUROC above the better
of the two (read in whichever direction separates the groups) on the same dialogues: a paired
bootstrap over dialogues of the difference, its lower bound above 0. A copy machine scores 0.5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from cogwm import tasks
from cogwm.metrics.sentiment import vader_compound
from cogwm.metrics.trajectory import composite
from cogwm.schema import CognitiveState, Role
from cogwm.schema.labels import AnnoMIMeta
from cogwm.schema.partial import LabelledDialogue
from cogwm.simulator.format import WorldModelInput
from cogwm.simulator.samples import shown_text, turn_inputs
from cogwm.simulator.splits import annomi_quality_holdout, base_id
from cogwm.stats.bootstrap import (
    PairedDifference,
    auroc_interval,
    auroc_or_none,
    auroc_value,
    paired_difference,
)
from cogwm.validate.card import Check, PartInfo
from cogwm.validate.figures import Settings
from cogwm.validate.inputs import Reading
from cogwm.validate.items import (
    Heldout,
    Item,
    clean_held_out,
    clean_test,
    held_out,
    unclean_words,
    unimproved,
)
from cogwm.validate.parts import sample_items, valence_score

#: The card part that runs this check.
KNOWN_GROUPS = "known_groups"
#: Pass rule of the gating comparison.
PASS_AUROC = 0.65
PASS_LOWER_BOUND = 0.5
RULE = (
    f"AUROC >= {PASS_AUROC:.2f} with the 95 % CI's lower bound above {PASS_LOWER_BOUND}, and "
    "above the better trivial rule (agent turns' mean VADER compound or length in turns, read in "
    "the direction that separates the groups) on the same dialogues: paired dialogue bootstrap "
    "of the difference with its lower bound above 0"
)
#: A copy machine's change is 0 for every dialogue: every pair ties.
COPY_MACHINE = 0.5


@dataclass(frozen=True)
class GroupDialogue:
    """One dialogue of a known group: its first and last user turns as prediction items."""

    id: str
    positive: bool
    first: Item
    last: Item
    agent_turns: tuple[str, ...]
    n_turns: int


@dataclass(frozen=True)
class GroupSet:
    """Two known groups of people on one task, and the words for the data behind them."""

    name: str
    task: str
    corpus: str
    split: str
    positive: str
    negative: str
    gating: bool
    dialogues: list[GroupDialogue]
    n_population: int
    n_unclean: int | None = None
    """Held-out dialogues the clean rule left out (None: the rule did not apply)."""


def group_dialogue(labelled: LabelledDialogue, positive: bool) -> GroupDialogue | None:
    """The dialogue's first and last user turns as items; None with fewer than two user turns.

    The first turn is shown the human-known initial state (the state the samples show every
    later turn as the start), as initial and as previous state.
    """
    dialogue = labelled.dialogue
    inputs = list(turn_inputs(labelled))
    if len(inputs) < 2:
        return None
    turns = dialogue.turns()
    initial = inputs[-1][1].initial_state
    first_index, first_inp, _ = inputs[0]
    last_index, last_inp, _ = inputs[-1]
    first_inp = first_inp.model_copy(update={"initial_state": initial, "previous_state": initial})
    group = "positive" if positive else "negative"

    def item(index: int, inp: WorldModelInput, where: str) -> Item:
        return Item(
            id=f"{dialogue.id}:{index}@{where}",
            dialogue_id=base_id(dialogue.id),
            turn_index=index,
            inp=inp,
            utterance=shown_text(turns[index].text),
            gold=group,
        )

    return GroupDialogue(
        id=base_id(dialogue.id),
        positive=positive,
        first=item(first_index, first_inp, "first"),
        last=item(last_index, last_inp, "last"),
        agent_turns=tuple(t.text for t in turns if t.role is Role.AGENT),
        n_turns=len(turns),
    )


def _dialogues(pairs: Iterable[tuple[LabelledDialogue, bool]]) -> list[GroupDialogue]:
    return [d for ld, positive in pairs if (d := group_dialogue(ld, positive)) is not None]


def esconv_groups(data_dir: Path, heldout: Heldout) -> GroupSet:
    """ESConv's official test dialogues against FailedESConv's without improvement."""
    from cogwm.annotate.human import labelled_dialogues

    every_test = list(labelled_dialogues("esconv", data_dir, split="test"))
    test, unclean = clean_test("esconv", every_test, data_dir, heldout.seed)
    failed, failed_split, failed_unclean = clean_held_out(
        "failed_esconv", list(labelled_dialogues("failed_esconv", data_dir)), heldout, data_dir
    )
    negatives = [ld for ld in failed if unimproved(ld)]
    dialogues = _dialogues([(ld, True) for ld in test] + [(ld, False) for ld in negatives])
    return GroupSet(
        name="esconv_vs_failed",
        task="ESC",
        corpus="esconv, failed_esconv",
        split=f"ESConv official test, clean: {len(test)} of {len(every_test)} dialogues "
        f"({unclean_words(unclean)}), and FailedESConv ({failed_split}), of which "
        f"{len(negatives)} report no improvement",
        positive="ESConv (intensity dropped)",
        negative="FailedESConv without improvement",
        gating=True,
        dialogues=dialogues,
        n_population=len(dialogues),
        n_unclean=unclean + (failed_unclean or 0),
    )


def annomi_groups(data_dir: Path, heldout: Heldout) -> GroupSet:
    """AnnoMI's high- against low-quality sessions of the quality hold-out."""
    from cogwm.annotate.human import labelled_dialogues

    labelled = list(labelled_dialogues("annomi", data_dir))
    kept = annomi_quality_holdout((ld.dialogue for ld in labelled), heldout.seed)
    # Only sessions the simulator's own split kept out of training: samples built before the
    # hold-out existed trained on most of it.
    untrained, _ = held_out("annomi", labelled, heldout)
    held = [ld for ld in untrained if base_id(ld.dialogue.id) in kept]
    # Under ``all`` (or for a simulator that saw no AnnoMI) no train split exists to be clean of.
    chosen, unclean = (
        (held, None)
        if heldout.rule == "all" or heldout.never_trained_on("annomi")
        else clean_test("annomi", held, data_dir, heldout.seed, forced=heldout.forced)
    )
    clean = "" if unclean is None else f", {len(chosen)} of them clean ({unclean_words(unclean)})"
    dialogues = _dialogues(
        (ld, isinstance(ld.dialogue.meta, AnnoMIMeta) and ld.dialogue.meta.mi_quality == "high")
        for ld in chosen
    )
    return GroupSet(
        name="annomi_quality",
        task="MI",
        corpus="annomi",
        split=f"the quality hold-out (seed {heldout.seed}): half of the low-quality sessions "
        f"and as many high-quality ones, {len(held)} of {len(labelled)}{clean}",
        positive="high MI quality",
        negative="low MI quality",
        gating=False,
        dialogues=dialogues,
        n_population=len(dialogues),
        n_unclean=unclean,
    )


def group_sets(data_dir: Path, heldout: Heldout, limit: int | None, seed: int) -> list[GroupSet]:
    """Both comparisons; ``limit`` dialogues per group, sampled with ``seed``."""
    sets = []
    for offset, found in enumerate(
        (esconv_groups(data_dir, heldout), annomi_groups(data_dir, heldout))
    ):
        positives = [d for d in found.dialogues if d.positive]
        negatives = [d for d in found.dialogues if not d.positive]
        chosen = sample_items(positives, limit, seed + 2 * offset) + sample_items(
            negatives, limit, seed + 2 * offset + 1
        )
        sets.append(replace(found, dialogues=chosen))
    return sets


def group_items(sets: Sequence[GroupSet]) -> list[Item]:
    """Every call of the check: each dialogue's first and last user turn."""
    return [item for s in sets for d in s.dialogues for item in (d.first, d.last)]


# --- scoring -----------------------------------------------------------------------------------


def _delta(
    metric: str, first: CognitiveState | None, last: CognitiveState | None, task: str
) -> float | None:
    if first is None or last is None:
        return None
    if metric == "valence_delta_auroc":
        a, b = valence_score(first), valence_score(last)
        return None if a is None or b is None else b - a
    if first.emotion is None or last.emotion is None:
        return None
    spec = tasks.get(task)
    return composite(last, spec) - composite(first, spec)


def vader_agent_scores(dialogues: Sequence[GroupDialogue]) -> list[float | None]:
    """Each dialogue's mean VADER compound over the agent's turns; None without any."""
    return [
        float(np.mean([vader_compound(t) for t in d.agent_turns])) if d.agent_turns else None
        for d in dialogues
    ]


def trivial_scores(dialogues: Sequence[GroupDialogue]) -> dict[str, list[float | None]]:
    """The model-free rules' score per dialogue: the agent turns' mean VADER compound, the
    length in turns."""
    return {
        "vader_agent_turns": vader_agent_scores(dialogues),
        "dialogue_length": [float(d.n_turns) for d in dialogues],
    }


@dataclass(frozen=True)
class GroupGate:
    """The simulator's AUROC against the better trivial rule on the same dialogues.

    ``baseline`` names the rule (None: no rule is defined there), ``flipped`` says it was read
    the other way round (a low score for the first group), ``result`` is the paired bootstrap
    of (simulator AUROC - rule AUROC).
    """

    baseline: str | None
    flipped: bool
    result: PairedDifference


def gate_vs_best(
    positive: Sequence[bool],
    deltas: Sequence[float | None],
    trivial: Mapping[str, Sequence[float | None]],
    groups: Sequence[str],
    settings: Settings,
) -> GroupGate:
    """Paired dialogue bootstrap of the simulator's AUROC minus the better trivial rule's, on
    the dialogues where the simulator and every rule have a score.

    The better rule is the one that separates the groups more on these dialogues, in either
    direction (a rule's sign is a free choice, so a rule below 0.5 is read flipped).
    """
    kept = [
        i
        for i, d in enumerate(deltas)
        if d is not None and all(s[i] is not None for s in trivial.values())
    ]
    y = np.asarray([positive[i] for i in kept], dtype=bool)
    sim = np.asarray([deltas[i] for i in kept], dtype=np.float64)
    rules = {n: np.asarray([s[i] for i in kept], dtype=np.float64) for n, s in trivial.items()}
    values = {n: a for n, x in rules.items() if (a := auroc_or_none(y, x)) is not None}
    kept_groups = [groups[i] for i in kept]
    if not values:
        empty = PairedDifference(value=None, n=len(kept), n_groups=len(set(kept_groups)))
        return GroupGate(None, False, empty)
    best = max(values, key=lambda n: max(values[n], 1 - values[n]))
    flipped = values[best] < 0.5
    base = -rules[best] if flipped else rules[best]
    result = paired_difference(
        lambda idx: auroc_or_none(y[idx], sim[idx]),
        lambda idx: auroc_or_none(y[idx], base[idx]),
        kept_groups,
        settings,
    )
    return GroupGate(best, flipped, result)


def known_groups_checks(
    group_set: GroupSet, readings: Mapping[str, Reading], settings: Settings
) -> list[Check]:
    """The comparison's checks: AUROC of Δs_t in Comp_t (and valence for ESC)."""
    metrics = ["composite_delta_auroc"]
    if group_set.task == "ESC":
        metrics.append("valence_delta_auroc")
    trivial = trivial_scores(group_set.dialogues)
    checks = []
    for metric in metrics:
        deltas = [
            _delta(metric, readings[d.first.id].state, readings[d.last.id].state, group_set.task)
            for d in group_set.dialogues
        ]
        checks.append(delta_check(group_set, metric, deltas, trivial, settings))
    return checks


def delta_check(
    group_set: GroupSet,
    metric: str,
    deltas: Sequence[float | None],
    trivial: Mapping[str, Sequence[float | None]],
    settings: Settings,
) -> Check:
    """The check of one reading of the change: the AUROC of ``deltas`` (one per dialogue, None
    where a call failed), the trivial rules' AUROC beside it, and the gate against the better."""
    dialogues = group_set.dialogues
    positive = [d.positive for d in dialogues]
    ids = [d.id for d in dialogues]
    baselines = {name: auroc_value(positive, scores) for name, scores in trivial.items()}
    value, low, high = auroc_interval(positive, deltas, ids, settings)
    gate = gate_vs_best(positive, deltas, trivial, ids, settings)
    baselines.update(
        gate_vs_best=gate.result.difference,
        gate_ci_low=gate.result.ci_low,
        gate_ci_high=gate.result.ci_high,
    )
    return Check(
        name=KNOWN_GROUPS,
        task=group_set.task,
        metric=metric,
        value=value,
        ci_low=low,
        ci_high=high,
        n=sum(d is not None for d in deltas),
        n_failed=sum(d is None for d in deltas),
        copy_machine=COPY_MACHINE,
        baselines=baselines,
        passed=_passed(value, low, gate) if group_set.gating else None,
        rule=RULE if group_set.gating else "not gating (reported only)",
        note=_note(group_set, metric, deltas, gate),
    )


def _passed(value: float | None, low: float | None, gate: GroupGate) -> bool | None:
    """The AUROC rule and the gate; None where either cannot be decided (unless the AUROC
    rule already fails)."""
    if value is None or low is None:
        return None
    if not (value >= PASS_AUROC and low > PASS_LOWER_BOUND):
        return False
    if gate.result.ci_low is None:
        return None
    return gate.result.ci_low > 0


def _gate_words(gate: GroupGate) -> str:
    if gate.baseline is None:
        return "gate: no trivial rule defined on these dialogues"
    result = gate.result
    way = ", read flipped" if gate.flipped else ""
    if result.difference is None or result.ci_low is None or result.ci_high is None:
        return f"gate against {gate.baseline}{way}: undefined on {result.n} dialogues"
    return (
        f"gate against the better trivial rule, {gate.baseline}{way}: AUROC difference "
        f"{result.difference:+.3f} [{result.ci_low:+.3f}, {result.ci_high:+.3f}] over "
        f"{result.n} dialogues (paired bootstrap)"
    )


def _note(group_set: GroupSet, metric: str, deltas: Sequence[float | None], gate: GroupGate) -> str:
    scored = [d for d, x in zip(group_set.dialogues, deltas, strict=True) if x is not None]
    n_pos = sum(d.positive for d in scored)
    reading = "valence x intensity" if metric == "valence_delta_auroc" else "Comp_t"
    gating = "" if group_set.gating else "not gating; "
    unclean = (
        "clean rule not applied"
        if group_set.n_unclean is None
        else f"n_unclean {group_set.n_unclean} (held-out dialogues the clean rule left out)"
    )
    return (
        f"{gating}{group_set.split}; {unclean}; positive: {group_set.positive} ({n_pos}), "
        f"negative: {group_set.negative} ({len(scored) - n_pos}); score: predicted {reading} at "
        "the last user turn minus at the first, each from the real history and the human-known "
        "initial state; dialogues with a failed call left out; baselines: AUROC of the agent "
        f"turns' mean VADER compound and of the length in turns; {_gate_words(gate)}; a copy "
        "machine's change is 0 (AUROC 0.5)"
    )


def part_info(group_set: GroupSet, readings: Mapping[str, Reading]) -> PartInfo:
    """The data behind one comparison, for the card's parts list."""
    calls = [readings[i.id] for d in group_set.dialogues for i in (d.first, d.last)]
    return PartInfo(
        name=f"{KNOWN_GROUPS}.{group_set.task}",
        corpus=group_set.corpus,
        split=group_set.split,
        selection=f"each dialogue's first and last user turn, predicted; {group_set.positive} "
        f"against {group_set.negative}",
        mode="predict",
        n_items=len(group_set.dialogues),
        n_population=group_set.n_population,
        n_dialogues=len(group_set.dialogues),
        n_calls=len(calls),
        n_failed=sum(r.state is None for r in calls),
        n_unclean=group_set.n_unclean,
    )


@dataclass(frozen=True)
class KnownGroupsPlan:
    """The check's calls, read before any model call, and how to score their readings."""

    sets: list[GroupSet]
    calls: list[Item]

    def score(
        self, readings: Mapping[str, Reading], settings: Settings
    ) -> tuple[list[Check], list[PartInfo]]:
        """Each comparison's checks and the data behind them."""
        checks = [c for s in self.sets for c in known_groups_checks(s, readings, settings)]
        return checks, [part_info(s, readings) for s in self.sets]

    @property
    def versions(self) -> dict[str, str]:
        """Nothing beyond the software names this check's run."""
        return {}


def plan(data_dir: Path, heldout: Heldout, limit: int | None, seed: int) -> KnownGroupsPlan:
    """The check's dialogues (``limit`` per group) and calls."""
    sets = group_sets(data_dir, heldout, limit, seed)
    return KnownGroupsPlan(sets=sets, calls=group_items(sets))
