"""AnnoMI's per-annotator file: the utterances annotators labelled alike and those they split on.

``AnnoMI-full.csv`` has one row per (utterance, annotator): most utterances were labelled by one
annotator, and an agreement subset by all ten. For every utterance this module gives each
annotator's label (client talk type for client rows, main behaviour for therapist rows), the
majority label and its share, and whether the vote is tied. ``AnnoMI-simple.csv`` carries one
label per utterance; :func:`load` checks that it is the single annotator's label or, in the
agreement subset, the majority label wherever there is a strict majority.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from pydantic import Field

from cogwm.corpora.annomi.loader import (
    CLIENT_TALK_TYPES,
    FILE,
    NOT_APPLICABLE,
    THERAPIST_BEHAVIOURS,
)
from cogwm.corpora.readers import Row, read_table
from cogwm.schema.base import Record

FULL_FILE = "AnnoMI-full.csv"

_COLUMNS = (
    "transcript_id",
    "utterance_id",
    "interlocutor",
    "utterance_text",
    "annotator_id",
    "main_therapist_behaviour",
    "client_talk_type",
)


class UtteranceKey(NamedTuple):
    """An utterance: its transcript and its position in it."""

    transcript_id: int
    utterance_id: int


class UtteranceVotes(Record):
    """All annotators' labels of one utterance."""

    transcript_id: int
    utterance_id: int
    interlocutor: str = Field(description="'client' or 'therapist'.")
    labels: dict[int, str] = Field(description="annotator_id -> talk type or main behaviour.")
    simple_label: str = Field(description="The label AnnoMI-simple.csv gives the utterance.")

    @property
    def counts(self) -> Counter[str]:
        """How many annotators gave each label."""
        return Counter(self.labels.values())

    @property
    def split(self) -> bool:
        """Whether the annotators disagree (more than one label)."""
        return len(self.counts) > 1

    @property
    def tied(self) -> bool:
        """Whether the two most frequent labels have as many votes (no strict majority)."""
        top = self.counts.most_common(2)
        return len(top) == 2 and top[0][1] == top[1][1]

    @property
    def majority(self) -> str | None:
        """The label with a strict plurality; ``None`` on a tie."""
        return None if self.tied else self.counts.most_common(1)[0][0]

    @property
    def majority_share(self) -> float:
        """The share of annotators who gave the most frequent label."""
        return self.counts.most_common(1)[0][1] / len(self.labels)


def load(corpus_dir: Path) -> dict[UtteranceKey, UtteranceVotes]:
    """Every utterance's votes, keyed by (transcript_id, utterance_id), in file order.

    Args:
        corpus_dir: The ``annomi`` folder (``AnnoMI-full.csv`` and ``AnnoMI-simple.csv``).

    Raises:
        InputError: A missing file, a malformed row, a label outside the coding scheme, one
            annotator twice on an utterance, an utterance whose text differs between rows or
            from the simple file, utterances present in only one file, or a simple label that
            is not the (strict) majority.
    """
    simple = {_key(row): row for row in read_table(corpus_dir / FILE, _COLUMNS[:4])}
    votes: dict[UtteranceKey, UtteranceVotes] = {}
    first_rows: dict[UtteranceKey, Row] = {}
    for row in read_table(corpus_dir / FULL_FILE, _COLUMNS):
        key = _key(row)
        reference = simple.get(key)
        if reference is None:
            raise row.error(f"an utterance that {FILE} has", key)
        _check_same(row, reference, ("interlocutor", "utterance_text"))
        annotator = row.integer("annotator_id", low=0)
        label = _label(row)
        if key not in votes:
            first_rows[key] = row
            votes[key] = UtteranceVotes(
                transcript_id=key.transcript_id,
                utterance_id=key.utterance_id,
                interlocutor=row.text("interlocutor"),
                labels={},
                simple_label=_label(reference),
            )
        if annotator in votes[key].labels:
            raise row.error(f"one row per annotator of utterance {key}", annotator)
        votes[key].labels[annotator] = label
    missing = [key for key in simple if key not in votes]
    if missing:
        raise simple[missing[0]].error(f"the utterance to be in {FULL_FILE} too", missing[0])
    for key, vote in votes.items():
        if vote.majority is not None and vote.majority != vote.simple_label:
            raise first_rows[key].error(
                f"the simple file's label to be the majority {vote.majority!r}", vote.simple_label
            )
    return votes


def client_votes(votes: Mapping[UtteranceKey, UtteranceVotes]) -> list[UtteranceVotes]:
    """The votes on client utterances (talk types)."""
    return [v for v in votes.values() if v.interlocutor == "client"]


def _key(row: Row) -> UtteranceKey:
    return UtteranceKey(row.integer("transcript_id", low=0), row.integer("utterance_id", low=0))


def _label(row: Row) -> str:
    if row.choice("interlocutor", ("client", "therapist")) == "client":
        row.choice("main_therapist_behaviour", (NOT_APPLICABLE,))
        return row.choice("client_talk_type", CLIENT_TALK_TYPES)
    row.choice("client_talk_type", (NOT_APPLICABLE,))
    return row.choice("main_therapist_behaviour", THERAPIST_BEHAVIOURS)


def _check_same(row: Row, reference: Row, columns: tuple[str, ...]) -> None:
    for column in columns:
        if row.text(column) != reference.text(column):
            raise row.error(f"{column!r} as in {FILE} ({reference.where})", row.text(column))
