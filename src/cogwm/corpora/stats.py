"""Corpus statistics in the words of docs/architecture.md: utterances, turns, user turns, rounds."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from cogwm.corpora.common import distribution
from cogwm.corpora.corpus import Corpus
from cogwm.schema import Dialogue, Record, Role


class ReleaseCheck(Record):
    """How the loaded counts compare with the published release."""

    dialogues: int
    utterances: int
    matches: bool


class CorpusStats(Record):
    """Counts and label distributions of one loaded corpus."""

    corpus: str
    dialogues: int
    utterances: int
    user_utterances: int
    turns: int
    user_turns: int
    rounds: int
    mean_turns_per_dialogue: float | None = Field(description="None for an empty corpus.")
    mean_user_turns_per_dialogue: float | None
    mean_utterances_per_dialogue: float | None
    annotated: int | None = Field(
        default=None, description="PersuasionForGood: dialogues with sentence-level labels."
    )
    with_profile: int = Field(description="Dialogues whose user profile comes from the corpus.")
    splits: dict[str, int]
    labels: dict[str, dict[str, int]]
    release: ReleaseCheck


def _mean(total: int, count: int) -> float | None:
    return total / count if count else None


def corpus_stats(spec: Corpus, dialogues: Sequence[Dialogue]) -> CorpusStats:
    """Statistics of ``dialogues`` read from the corpus ``spec``.

    Args:
        spec: The corpus the dialogues come from (names its label distributions).
        dialogues: The loaded dialogues.
    """
    turns = [d.turns() for d in dialogues]
    n_dialogues = len(dialogues)
    n_utterances = sum(len(d.utterances) for d in dialogues)
    n_turns = sum(len(t) for t in turns)
    n_user_turns = sum(1 for ts in turns for t in ts if t.role is Role.USER)
    return CorpusStats(
        corpus=spec.name,
        dialogues=n_dialogues,
        utterances=n_utterances,
        user_utterances=sum(1 for d in dialogues for u in d.utterances if u.role is Role.USER),
        turns=n_turns,
        user_turns=n_user_turns,
        rounds=sum(d.rounds() for d in dialogues),
        mean_turns_per_dialogue=_mean(n_turns, n_dialogues),
        mean_user_turns_per_dialogue=_mean(n_user_turns, n_dialogues),
        mean_utterances_per_dialogue=_mean(n_utterances, n_dialogues),
        annotated=spec.count_annotated(dialogues) if spec.count_annotated else None,
        with_profile=sum(1 for d in dialogues if d.profile is not None),
        splits=distribution(d.split for d in dialogues if d.split is not None),
        labels=spec.label_distributions(dialogues),
        release=ReleaseCheck(
            dialogues=spec.release.dialogues,
            utterances=spec.release.utterances,
            matches=(n_dialogues, n_utterances) == tuple(spec.release),
        ),
    )
