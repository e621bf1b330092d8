"""The items of each card part: held-out user turns with their human label.

An item is one user turn: what the simulator is shown (task, context, profile, the turns before
it) and the real utterance, with the gold answer. Items are read from the raw corpora with the
corpus loaders, so the counts can be checked against the files:

- **DailyDialog**, the official test split (the samples drop test dialogues' text twins from
  train, so every test dialogue is held out), both speakers as the user in turn; items are the
  turns labelled happiness, anger, sadness, fear or disgust (surprise has no valence sign; "no
  emotion" says nothing about valence).
- **AnnoMI**, every transcript (the corpus has no official split), client turns labelled change or
  sustain by the human-label mapping (utterances on which the annotators tie left out).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cogwm import corpora
from cogwm.errors import InputError
from cogwm.schema import Dialogue, Profile
from cogwm.schema.labels import AnnoMIMeta, DailyDialogMeta
from cogwm.schema.labels import DailyDialogUtteranceLabels as DDLabels
from cogwm.schema.partial import LabelledDialogue

#: Turns before the target that the simulator sees (the most recent ones).
HISTORY_TURNS = 8

#: DailyDialog labels with a valence sign: +1 happiness, -1 the rest.
DD_VALENCE: dict[str, int] = {"happiness": 1, "anger": -1, "sadness": -1, "fear": -1, "disgust": -1}
#: DailyDialog labels that are labels of the emotion lexicon too (exact mapping, LABELS.md §2).
DD_LEXICON_LABELS: tuple[str, ...] = ("anger", "fear", "sadness")


@dataclass(frozen=True)
class Item:
    """One held-out user turn and its gold answer."""

    id: str
    dialogue_id: str
    turn_index: int
    task: str
    context: str
    profile: Profile | None
    history: tuple[tuple[str, str], ...]
    utterance: str
    gold: str


@dataclass(frozen=True)
class Population:
    """All items of a part before ``--limit`` samples them, and how they were chosen."""

    corpus: str
    split: str
    selection: str
    items: list[Item]


def _turn_history(dialogue: Dialogue, user_speaker: str, index: int) -> tuple[tuple[str, str], ...]:
    turns = dialogue.turns()[max(0, index - HISTORY_TURNS) : index]
    return tuple(("user" if t.speaker == user_speaker else "agent", t.text) for t in turns)


# --- DailyDialog ----------------------------------------------------------------------------------


def dailydialog_population(data_dir: Path) -> Population:
    """The DailyDialog part's items (see the module docstring)."""
    test = [d for d in corpora.load("dailydialog", data_dir) if d.split == "test"]
    if not test:
        raise InputError(f"{data_dir}: DailyDialog has no test dialogues")
    return Population(
        corpus="dailydialog",
        split=f"official test ({len(test)} dialogues; their text twins are dropped from train "
        "by the samples split rule, so all of them are held out)",
        selection="turns labelled happiness, anger, sadness, fear or disgust; each speaker is "
        "the user in turn",
        items=[item for d in test for item in _dailydialog_items(d)],
    )


def _dailydialog_items(dialogue: Dialogue) -> Iterable[Item]:
    topic = dialogue.meta.topic if isinstance(dialogue.meta, DailyDialogMeta) else ""
    for turn in dialogue.turns():
        emotions = {u.labels.emotion for u in turn.utterances if isinstance(u.labels, DDLabels)}
        labelled = emotions & set(DD_VALENCE)
        if len(labelled) != 1:  # unlabelled, or a turn with two emotions: no single gold
            continue
        side = "A" if turn.index % 2 == 0 else "B"
        yield Item(
            id=f"{dialogue.id}#{side}:{turn.index}",
            dialogue_id=dialogue.id,
            turn_index=turn.index,
            task="DAILY",
            context=f"Topic: {topic}." if topic else "",
            profile=None,
            history=_turn_history(dialogue, turn.speaker, turn.index),
            utterance=turn.text,
            gold=labelled.pop(),
        )


# --- AnnoMI --------------------------------------------------------------------------------------


def annomi_population(data_dir: Path) -> Population:
    """The AnnoMI part's items: client turns with a change or sustain direction.

    The directions come from :func:`cogwm.annotate.human.labelled_dialogues` (AnnoMI's mapping
    table: annotator ties dropped, a turn with both directions left without one).
    """
    from cogwm.annotate.human import labelled_dialogues

    labelled = list(labelled_dialogues("annomi", data_dir))
    return Population(
        corpus="annomi",
        split=f"all {len(labelled)} transcripts (no official split)",
        selection="client turns labelled change or sustain (annotator ties left out)",
        items=[item for ld in labelled for item in _annomi_items(ld)],
    )


def _annomi_items(labelled: LabelledDialogue) -> Iterable[Item]:
    dialogue = labelled.dialogue
    meta = dialogue.meta if isinstance(dialogue.meta, AnnoMIMeta) else None
    turns = dialogue.turns()
    for index, state in sorted(labelled.states.items()):
        signs = {c.value > 0 for c in state.constraints if c.relation == "direction"}
        if len(signs) != 1:
            continue
        yield Item(
            id=f"{dialogue.id}:{index}",
            dialogue_id=dialogue.id,
            turn_index=index,
            task="MI",
            context=f"The session is about {meta.topic}." if meta else "",
            profile=None,
            history=_turn_history(dialogue, turns[index].speaker, index),
            utterance=turns[index].text,
            gold="change" if signs.pop() else "sustain",
        )
