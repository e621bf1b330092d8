"""The judges the arena relies on, against human outcomes (the card's ``judges`` part).

GoodOutcome is asked, with the arena's prompt (:func:`cogwm.metrics.judge.judge_good_outcome`),
about real conversations whose outcome people reported: PersuasionForGood persuadees who donated
after the task (B6 > 0) or did not, and ESConv conversations (every one improved the seeker's
emotion) against FailedESConv ones. The judge reads what the arena's judge reads: the opening
rounds and the last turns. The arena's intent detector is asked whether ESConv conversations
have ended, at their real end and cut half way. Figures: balanced accuracy (a judge that always
says yes scores 0.5) and the share of yes answers.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cogwm import tasks
from cogwm.models.model import Model
from cogwm.models.types import Sampling, StructuredOutputError
from cogwm.schema import Dialogue
from cogwm.schema.labels import P4GMeta
from cogwm.stats.bootstrap import IntArray, cluster_bootstrap
from cogwm.validate.card import Baselines, Figure
from cogwm.validate.figures import Scope
from cogwm.validate.items import Heldout, held_out

#: Turns the judge reads: the opening (the arena's cold start is two rounds) and the last ones.
OPENING_TURNS = 4
LAST_TURNS = 12


@dataclass(frozen=True)
class JudgedDialogue:
    """A real conversation (or a cut of it) and the truth the judge should find.

    ``kind``: ``good_outcome`` (``good``: the human record says the outcome was good) or
    ``intent`` (``good``: the conversation really ends here, not at a cut half way through).
    ``group`` is the dialogue, which the bootstrap resamples.
    """

    id: str
    task: str
    transcript: tuple[tuple[str, str], ...]
    good: bool
    kind: str = "good_outcome"
    group: str = ""


def judged_transcript(dialogue: Dialogue) -> tuple[tuple[str, str], ...]:
    """The opening turns and the last ones, as ``(role, text)`` (what the arena's judge sees)."""
    turns = dialogue.turns()
    shown = turns[:OPENING_TURNS] + turns[max(OPENING_TURNS, len(turns) - LAST_TURNS) :]
    return tuple((t.role.value, t.text) for t in shown)


def judge_sets(data_dir: Path, heldout: Heldout) -> dict[str, tuple[str, list[JudgedDialogue]]]:
    """The judged conversations per set, with the words for the data behind them."""
    from cogwm.annotate.human import labelled_dialogues

    p4g, p4g_split = held_out(
        "persuasionforgood", list(labelled_dialogues("persuasionforgood", data_dir)), heldout
    )
    failed, failed_split = held_out(
        "failed_esconv", list(labelled_dialogues("failed_esconv", data_dir)), heldout
    )
    esconv = list(labelled_dialogues("esconv", data_dir, split="test"))
    return {
        "good_outcome_p4g": (
            f"PersuasionForGood, {p4g_split} of the act-annotated ones; good: donated (B6 > 0)",
            [_judged(ld.dialogue, "PD", _donated(ld.dialogue)) for ld in p4g],
        ),
        "good_outcome_esconv": (
            f"ESConv official test ({len(esconv)}; good) and FailedESConv ({failed_split}; bad)",
            [_judged(ld.dialogue, "ESC", True) for ld in esconv]
            + [_judged(ld.dialogue, "ESC", False) for ld in failed],
        ),
        "intent_esconv": (
            f"ESConv official test ({len(esconv)} dialogues), each cut after its last turn "
            "(ended) and after the user turn half way through (not ended)",
            [probe for ld in esconv for probe in intent_probes(ld.dialogue, "ESC")],
        ),
    }


def intent_probes(dialogue: Dialogue, task: str) -> list[JudgedDialogue]:
    """The dialogue cut at its real end (ended) and after the user turn half way (not ended)."""
    turns = [(t.role.value, t.text) for t in dialogue.turns()]
    users = [i for i, (role, _) in enumerate(turns) if role == "user"]
    if len(users) < 4:
        return []
    middle = users[len(users) // 2]
    return [
        JudgedDialogue(f"{dialogue.id}@end", task, tuple(turns), True, "intent", dialogue.id),
        JudgedDialogue(
            f"{dialogue.id}@middle", task, tuple(turns[: middle + 1]), False, "intent", dialogue.id
        ),
    ]


def _donated(dialogue: Dialogue) -> bool:
    meta = dialogue.meta
    return isinstance(meta, P4GMeta) and meta.persuadee.actual_donation > 0


def _judged(dialogue: Dialogue, task: str, good: bool) -> JudgedDialogue:
    return JudgedDialogue(dialogue.id, task, judged_transcript(dialogue), good, group=dialogue.id)


async def judge_all(
    model: Model,
    dialogues: Sequence[JudgedDialogue],
    *,
    seed: int,
    on_done: Callable[[bool], None] | None = None,
) -> list[bool | None]:
    """The judge's verdict on each conversation (None: unparsable after the repair)."""
    verdicts: list[bool | None] = []
    for dialogue in dialogues:
        if dialogue.kind == "intent":
            verdict = await _intent(model, dialogue, seed)
        else:
            verdict = await _good_outcome(model, dialogue, seed)
        verdicts.append(verdict)
        if on_done is not None:
            on_done(verdict is None)
    return verdicts


async def _good_outcome(model: Model, dialogue: JudgedDialogue, seed: int) -> bool | None:
    from cogwm.metrics.judge import judge_good_outcome

    (judgement,) = await judge_good_outcome(
        model,
        [(dialogue.id, dialogue.transcript)],
        tasks.get(dialogue.task),
        sampling=Sampling(temperature=0.0, max_tokens=200, seed=seed),
        concurrency=1,
    )
    return judgement.good_outcome


async def _intent(model: Model, dialogue: JudgedDialogue, seed: int) -> bool | None:
    """The arena's intent detector, asked about the conversation cut as ``dialogue`` says."""
    from cogwm.arena.config import ModelConfig
    from cogwm.arena.participants import IntentDetector
    from cogwm.schema import Role
    from cogwm.schema.termination import Phase
    from cogwm.schema.transcript import ArenaTurn

    turns = [
        ArenaTurn(index=i, round=0, role=Role(role), phase=Phase.SIMULATED, text=text)
        for i, (role, text) in enumerate(dialogue.transcript)
    ]
    detector = IntentDetector(model, ModelConfig(model="validate"), tasks.get(dialogue.task))
    try:
        return (await detector.ended(turns, seed=seed)).leave
    except StructuredOutputError:
        return None


def judge_figures(
    scope: Scope, metric: str, dialogues: Sequence[JudgedDialogue], verdicts: Sequence[bool | None]
) -> list[Figure]:
    """Balanced accuracy of the verdicts (unparsable ones left out and counted), and yes rate."""
    from sklearn.metrics import balanced_accuracy_score

    kept = [i for i, v in enumerate(verdicts) if v is not None]
    truth = np.asarray([dialogues[i].good for i in kept], dtype=bool)
    said = np.asarray([verdicts[i] for i in kept], dtype=bool)
    groups: list[Hashable] = [dialogues[i].group or dialogues[i].id for i in kept]

    def balanced(idx: IntArray) -> float | None:
        if truth[idx].all() or not truth[idx].any():
            return None
        return float(balanced_accuracy_score(truth[idx], said[idx]))

    def yes_rate(idx: IntArray) -> float:
        return float(said[idx].mean())

    failed = len(verdicts) - len(kept)
    intent = any(d.kind == "intent" for d in dialogues)
    yes, no = ("ended", "not ended") if intent else ("good", "bad by the human record")
    everything = np.arange(len(kept), dtype=np.intp)
    figures = []
    for name, statistic, baselines in (
        (f"{metric}_balanced_accuracy", balanced, Baselines(majority=0.5, random=0.5)),
        (f"{metric}_yes_rate", yes_rate, Baselines(majority=None, random=0.5)),
    ):
        value = statistic(everything) if kept else None
        low, high = cluster_bootstrap(statistic, groups, scope.settings) if kept else (None, None)
        figures.append(
            scope.figure(
                metric=name,
                value=value,
                ci_low=low,
                ci_high=high,
                n=len(kept),
                n_failed=failed,
                baselines=baselines,
                higher_is_better=True if statistic is balanced else None,
                note=f"{int(truth.sum())} {yes}, {len(kept) - int(truth.sum())} {no}; "
                "unparsable verdicts left out"
                + (
                    "; the yes rate should match the share of good outcomes"
                    if statistic is yes_rate
                    else ""
                ),
            )
        )
    return figures
