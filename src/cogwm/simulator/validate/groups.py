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

The figure is the AUROC of ``Δs_t`` (the first group positive) with a bootstrap interval over
dialogues. Beside it: the AUROC of the mean VADER compound of the agent's turns, and of the
dialogue's length in turns, which need no simulator at all. A copy machine scores 0.5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from cogwm import tasks
from cogwm.metrics.trajectory import composite
from cogwm.schema import CognitiveState, Role
from cogwm.schema.labels import AnnoMIMeta
from cogwm.schema.partial import LabelledDialogue
from cogwm.simulator.format import WorldModelInput
from cogwm.simulator.samples import shown_text, turn_inputs
from cogwm.simulator.splits import annomi_quality_holdout, base_id
from cogwm.simulator.validate.card import Check, PartInfo
from cogwm.simulator.validate.figures import IntArray, Settings, cluster_bootstrap
from cogwm.simulator.validate.items import Heldout, Item, held_out, unimproved
from cogwm.simulator.validate.parts import sample_items, valence_score
from cogwm.simulator.validate.reader import Reading

#: The card part that runs this check.
KNOWN_GROUPS = "known_groups"
#: Pass rule of the gating comparison.
PASS_AUROC = 0.65
PASS_LOWER_BOUND = 0.5
RULE = f"AUROC >= {PASS_AUROC:.2f} with the 95 % CI's lower bound above {PASS_LOWER_BOUND}"
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

    test = list(labelled_dialogues("esconv", data_dir, split="test"))
    failed, failed_split = held_out(
        "failed_esconv", list(labelled_dialogues("failed_esconv", data_dir)), heldout
    )
    unimproved = [ld for ld in failed if unimproved(ld)]
    dialogues = _dialogues([(ld, True) for ld in test] + [(ld, False) for ld in unimproved])
    return GroupSet(
        name="esconv_vs_failed",
        task="ESC",
        corpus="esconv, failed_esconv",
        split=f"ESConv official test ({len(test)} dialogues) and FailedESConv ({failed_split}), "
        f"of which {len(unimproved)} report no improvement",
        positive="ESConv (intensity dropped)",
        negative="FailedESConv without improvement",
        gating=True,
        dialogues=dialogues,
        n_population=len(dialogues),
    )


def annomi_groups(data_dir: Path, heldout: Heldout) -> GroupSet:
    """AnnoMI's high- against low-quality sessions of the quality hold-out."""
    from cogwm.annotate.human import labelled_dialogues

    labelled = list(labelled_dialogues("annomi", data_dir))
    kept = annomi_quality_holdout((ld.dialogue for ld in labelled), heldout.seed)
    chosen = [ld for ld in labelled if base_id(ld.dialogue.id) in kept]
    dialogues = _dialogues(
        (ld, isinstance(ld.dialogue.meta, AnnoMIMeta) and ld.dialogue.meta.mi_quality == "high")
        for ld in chosen
    )
    return GroupSet(
        name="annomi_quality",
        task="MI",
        corpus="annomi",
        split=f"the quality hold-out (seed {heldout.seed}): half of the low-quality sessions "
        f"and as many high-quality ones, {len(chosen)} of {len(labelled)}",
        positive="high MI quality",
        negative="low MI quality",
        gating=False,
        dialogues=dialogues,
        n_population=len(dialogues),
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


def auroc_interval(
    positive: Sequence[bool],
    scores: Sequence[float | None],
    groups: Sequence[str],
    settings: Settings,
) -> tuple[float | None, float | None, float | None]:
    """AUROC of ``scores`` for the positive items (unscored ones left out), with a bootstrap
    interval over ``groups``; ``(None, None, None)`` when one class is missing."""
    from sklearn.metrics import roc_auc_score

    kept = [i for i, s in enumerate(scores) if s is not None]
    y = np.asarray([positive[i] for i in kept], dtype=bool)
    s = np.asarray([scores[i] for i in kept], dtype=np.float64)

    def statistic(idx: IntArray) -> float | None:
        labels = y[idx]
        if labels.all() or not labels.any():
            return None
        return float(roc_auc_score(labels, s[idx]))

    value = statistic(np.arange(len(kept), dtype=np.intp))
    if value is None:
        return None, None, None
    low, high = cluster_bootstrap(statistic, [groups[i] for i in kept], settings)
    return value, low, high


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
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()
    return [
        float(np.mean([analyzer.polarity_scores(t)["compound"] for t in d.agent_turns]))
        if d.agent_turns
        else None
        for d in dialogues
    ]


def known_groups_checks(
    group_set: GroupSet, readings: Mapping[str, Reading], settings: Settings
) -> list[Check]:
    """The comparison's checks: AUROC of Δs_t in Comp_t (and valence for ESC)."""
    dialogues = group_set.dialogues
    positive = [d.positive for d in dialogues]
    ids = [d.id for d in dialogues]
    baselines = {
        "vader_agent_turns": auroc_interval(positive, vader_agent_scores(dialogues), ids, settings)[
            0
        ],
        "dialogue_length": auroc_interval(
            positive, [float(d.n_turns) for d in dialogues], ids, settings
        )[0],
    }
    metrics = ["composite_delta_auroc"]
    if group_set.task == "ESC":
        metrics.append("valence_delta_auroc")
    checks = []
    for metric in metrics:
        deltas = [
            _delta(metric, readings[d.first.id].state, readings[d.last.id].state, group_set.task)
            for d in dialogues
        ]
        value, low, high = auroc_interval(positive, deltas, ids, settings)
        checks.append(
            Check(
                name=KNOWN_GROUPS,
                task=group_set.task,
                metric=metric,
                value=value,
                ci_low=low,
                ci_high=high,
                n=sum(d is not None for d in deltas),
                n_failed=sum(d is None for d in deltas),
                copy_machine=COPY_MACHINE,
                baselines=dict(baselines),
                passed=_passed(value, low) if group_set.gating else None,
                rule=RULE if group_set.gating else "not gating (reported only)",
                note=_note(group_set, metric, deltas),
            )
        )
    return checks


def _passed(value: float | None, low: float | None) -> bool | None:
    if value is None or low is None:
        return None
    return value >= PASS_AUROC and low > PASS_LOWER_BOUND


def _note(group_set: GroupSet, metric: str, deltas: Sequence[float | None]) -> str:
    scored = [d for d, x in zip(group_set.dialogues, deltas, strict=True) if x is not None]
    n_pos = sum(d.positive for d in scored)
    reading = "valence x intensity" if metric == "valence_delta_auroc" else "Comp_t"
    gating = "" if group_set.gating else "not gating; "
    return (
        f"{gating}{group_set.split}; positive: {group_set.positive} ({n_pos}), negative: "
        f"{group_set.negative} ({len(scored) - n_pos}); score: predicted {reading} at the last "
        "user turn minus at the first, each from the real history and the human-known initial "
        "state; dialogues with a failed call left out; baselines: AUROC of the agent turns' mean "
        "VADER compound and of the length in turns; a copy machine's change is 0 (AUROC 0.5)"
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
