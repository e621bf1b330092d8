"""Clean held-out dialogues: none of their long user lines occurs verbatim in train.

The split rule (:mod:`cogwm.simulator.splits`) keeps whole dialogues apart and drops exact text
twins, but a held-out dialogue can still share single lines with training dialogues (DailyDialog
reuses sentences across dialogues written from one template). A simulator that learned such a
line word for word scores on it by recall, not by modelling the person, so the instrument scores
and selects only on *clean* held-out dialogues:

A held-out (validation or test) dialogue is **clean** when none of its user-role lines of at
least :data:`MIN_WORDS` words occurs as a line of any role in any train dialogue of the corpus,
and its whole text is not a train dialogue's (an exact twin made only of short lines).

- A *line* is an utterance (a corpus row) or a turn (a run of one speaker's utterances, what a
  sample's target holds), compared after :func:`normalise_line`: lower case, every run of
  punctuation and spacing made one space (so ``don't`` and DailyDialog's ``don ' t`` agree).
- Only the held-out dialogue's *user* lines count: P4G persuaders repeat scripted lines, and an
  agent's line in the prompt is context, not something the simulator is scored on. In
  DailyDialog each speaker is the user in one of its two readings (``#A``, ``#B``), so both
  speakers' lines count there.
- The train side is the corpus's *full* train split before any twin is dropped (official where
  the corpus has one, else the seeded split of :func:`~cogwm.simulator.splits.plan_splits`),
  every role and every reading.

:func:`clean_heldout` returns the dialogues kept and, per corpus, how many base dialogues the rule
removed, so every consumer can say how many it left out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from cogwm import corpora
from cogwm.schema import Dialogue, Role
from cogwm.simulator.splits import (
    HOLDOUT_CORPORA,
    SplitPlan,
    base_id,
    normalised_text,
    training_plan,
)

#: Lines shorter than this (in words, after normalisation) are common phrases, not copies.
MIN_WORDS = 8
#: Corpora where every speaker is the user in one reading of the dialogue.
EVERY_SPEAKER_IS_USER = frozenset(c.name for c in corpora.EVERY if c.every_speaker_is_user)
#: One line describing the rule, for manifests and cards.
CLEAN_RULE = (
    f"held-out dialogues with a user line (utterance or turn) of {MIN_WORDS}+ words that occurs "
    "in a train dialogue (any role; lower case, punctuation and spacing normalised; the full "
    "train split before twins are dropped), or whose whole text is a train dialogue's, are "
    "left out"
)

_NOT_WORD = re.compile(r"[\W_]+")

T = TypeVar("T")


def normalise_line(text: str) -> str:
    """``text`` in lower case with every run of punctuation or spacing made one space."""
    return _NOT_WORD.sub(" ", text.lower()).strip()


def _lines(dialogue: Dialogue, *, users_only: bool) -> Iterable[str]:
    """The dialogue's utterance and turn texts (of the user role only, when asked)."""
    for utterance in dialogue.utterances:
        if not users_only or utterance.role is Role.USER:
            yield utterance.text
    for turn in dialogue.turns():
        if len(turn.utterances) > 1 and (not users_only or turn.role is Role.USER):
            yield turn.text


def long_lines(texts: Iterable[str], min_words: int = MIN_WORDS) -> set[str]:
    """The normalised texts of at least ``min_words`` words."""
    normalised = (normalise_line(t) for t in texts)
    return {line for line in normalised if len(line.split()) >= min_words}


def scored_lines(dialogue: Dialogue) -> set[str]:
    """The long normalised lines of a held-out dialogue that the rule checks (its user lines;
    every line in a corpus where each speaker is the user in turn)."""
    users_only = dialogue.corpus not in EVERY_SPEAKER_IS_USER
    return long_lines(_lines(dialogue, users_only=users_only))


@dataclass(frozen=True)
class TrainIndex:
    """What held-out dialogues must not share with train: its long lines (any role) and its
    dialogues' whole normalised texts."""

    lines: frozenset[str]
    texts: frozenset[str]

    def shares(self, dialogue: Dialogue) -> bool:
        """Whether ``dialogue`` is not clean against this train split."""
        return bool(scored_lines(dialogue) & self.lines) or normalised_text(dialogue) in self.texts


def train_lines(train: Iterable[Dialogue]) -> TrainIndex:
    """Every long normalised line of the train dialogues, any role, and their whole texts."""
    lines: set[str] = set()
    texts: set[str] = set()
    for dialogue in train:
        lines |= long_lines(_lines(dialogue, users_only=False))
        texts.add(normalised_text(dialogue))
    return TrainIndex(frozenset(lines), frozenset(texts))


def full_train(plan: SplitPlan) -> set[str]:
    """The base ids of a plan's train split, twins dropped from it included."""
    kept = {b for b, s in plan.splits.items() if s == "train"}
    return kept | {b for b, s in plan.dropped.items() if s == "train"}


def train_of(
    corpus: str,
    dialogues: Sequence[Dialogue],
    seed: int,
    *,
    forced: Collection[str] = HOLDOUT_CORPORA,
) -> list[Dialogue]:
    """The dialogues of the corpus's full train split (official, else seeded with ``seed``;
    its known-groups hold-out moved to test when the corpus is in ``forced``, see
    :func:`~cogwm.simulator.splits.training_plan`), before twins are dropped."""
    train = full_train(training_plan(corpus, dialogues, seed, forced))
    return [d for d in dialogues if base_id(d.id) in train]


def corpus_dialogues(corpus: str, data_dir: Path) -> list[Dialogue]:
    """Every dialogue of a corpus as its files give it (FailedESConv from the ESConv folder).

    Raises:
        InputError: Unknown corpus, or files that are missing or do not read.
    """
    found = corpora.find(corpus) or corpora.get(corpus)  # get: one line naming known corpora
    return corpora.read(found, data_dir)


def corpus_train_lines(
    corpus: str, data_dir: Path, seed: int, *, forced: Collection[str] = HOLDOUT_CORPORA
) -> TrainIndex:
    """The long lines of the corpus's full train split (:func:`train_of` of every dialogue in
    its files, split with ``seed`` and ``forced``), what its held-out dialogues must not share.

    Raises:
        InputError: Unknown corpus, or files that are missing or do not read.
    """
    dialogues = corpus_dialogues(corpus, data_dir)
    return train_lines(train_of(corpus, dialogues, seed, forced=forced))


def unclean_ids(dialogues: Iterable[Dialogue], train: TrainIndex) -> set[str]:
    """Base ids of the dialogues that are not clean against ``train`` (see
    :func:`train_lines`); readings of one dialogue count together."""
    return {base_id(d.id) for d in dialogues if train.shares(d)}


@dataclass(frozen=True)
class Cleaned(Generic[T]):
    """What the rule kept, and how many base dialogues it removed per corpus."""

    kept: list[T]
    removed: dict[str, int] = field(default_factory=dict)

    def removed_from(self, corpus: str) -> int:
        """Base dialogues of ``corpus`` the rule removed."""
        return self.removed.get(corpus, 0)


def clean_heldout(
    items: Sequence[T], train: TrainIndex, dialogue_of: Callable[[T], Dialogue]
) -> Cleaned[T]:
    """The items whose dialogue is clean against ``train`` (see the module docstring).

    Args:
        items: Held-out items (dialogues, labelled dialogues, ...), any readings.
        train: What the train split holds (:func:`train_lines`).
        dialogue_of: The dialogue of an item.

    Returns:
        The items kept in their order, and the removed base dialogues counted per corpus (every
        reading of a removed dialogue goes, and the dialogue counts once).
    """
    dialogues = [dialogue_of(item) for item in items]
    unclean = unclean_ids(dialogues, train)
    kept = [item for item, d in zip(items, dialogues, strict=True) if base_id(d.id) not in unclean]
    corpus_of = {base_id(d.id): d.corpus for d in dialogues}
    removed = Counter(corpus_of[b] for b in unclean)
    return Cleaned(kept=kept, removed=dict(sorted(removed.items())))


def clean_dialogues(heldout: Sequence[Dialogue], train: Iterable[Dialogue]) -> Cleaned[Dialogue]:
    """:func:`clean_heldout` for plain dialogues against train dialogues."""
    return clean_heldout(heldout, train_lines(train), lambda d: d)
