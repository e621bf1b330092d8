"""The corpora cogwm reads: names, aliases, folders, loaders and the release's own counts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from cogwm.corpora.annomi import loader as annomi
from cogwm.corpora.dailydialog import loader as dailydialog
from cogwm.corpora.esconv import loader as esconv
from cogwm.corpora.inspired import loader as inspired
from cogwm.corpora.persuasionforgood import loader as persuasionforgood
from cogwm.errors import InputError
from cogwm.schema import Dialogue

Loader = Callable[[Path], list[Dialogue]]
Distributions = Callable[[Sequence[Dialogue]], dict[str, dict[str, int]]]
DialogueCount = Callable[[Sequence[Dialogue]], int]


class ReleaseCounts(NamedTuple):
    """Dialogue and utterance counts of the published release, to tell a shortened copy."""

    dialogues: int
    utterances: int


@dataclass(frozen=True)
class CorpusSpec:
    """One corpus: where its files lie under the data directory and how to read them."""

    name: str
    folder: str
    description: str
    loader: Loader
    label_distributions: Distributions
    release: ReleaseCounts
    aliases: tuple[str, ...] = ()
    #: Counts the dialogues with fine-grained human labels, where only some have them.
    count_annotated: DialogueCount | None = None
    #: Whether a transcript ends where its participants ended the conversation (live chats).
    #: False where the source set the end (written dialogues, recorded demonstrations): there
    #: the last turn says nothing about whether the user wanted to leave.
    ends_by_choice: bool = True


CORPORA: tuple[CorpusSpec, ...] = (
    CorpusSpec(
        name=esconv.NAME,
        folder="esconv",
        description="ESConv emotional-support conversations (seeker = user)",
        loader=esconv.load,
        label_distributions=esconv.label_distributions,
        release=ReleaseCounts(dialogues=1_300, utterances=38_365),
    ),
    CorpusSpec(
        name=persuasionforgood.NAME,
        folder="persuasionforgood",
        description="PersuasionForGood donation persuasion (persuadee = user)",
        loader=persuasionforgood.load,
        label_distributions=persuasionforgood.label_distributions,
        release=ReleaseCounts(dialogues=1_017, utterances=20_932),
        aliases=("p4g",),
        count_annotated=persuasionforgood.count_annotated,
    ),
    CorpusSpec(
        name=dailydialog.NAME,
        folder="dailydialog",
        description="DailyDialog everyday conversations (ConvLab-3 'user' = user)",
        loader=dailydialog.load,
        label_distributions=dailydialog.label_distributions,
        release=ReleaseCounts(dialogues=13_118, utterances=102_979),
        # Dialogues written for learners of English, ended where their writer stopped.
        ends_by_choice=False,
    ),
    CorpusSpec(
        name=annomi.NAME,
        folder="annomi",
        description="AnnoMI motivational-interviewing sessions (client = user)",
        loader=annomi.load,
        label_distributions=annomi.label_distributions,
        release=ReleaseCounts(dialogues=133, utterances=9_699),
        # Transcripts of demonstration videos, which end where the demonstration does.
        ends_by_choice=False,
    ),
    CorpusSpec(
        name=inspired.NAME,
        folder="inspired",
        description="INSPIRED movie recommendation, dev + test (SEEKER = user)",
        loader=inspired.load,
        label_distributions=inspired.label_distributions,
        release=ReleaseCounts(dialogues=198, utterances=6_976),
    ),
)

_BY_NAME: dict[str, CorpusSpec] = {
    key: spec for spec in CORPORA for key in (spec.name, *spec.aliases)
}


def names() -> list[str]:
    """Canonical corpus names, in registry order."""
    return [spec.name for spec in CORPORA]


def ends_by_choice(name: str) -> bool:
    """Whether the transcripts of corpus ``name`` end where the participants ended them (True
    for a name outside the registry, such as a custom corpus of live conversations)."""
    spec = _BY_NAME.get(name.lower())
    return spec.ends_by_choice if spec is not None else True


def get(name: str) -> CorpusSpec:
    """The corpus called ``name`` or one of its aliases (case-insensitive).

    Raises:
        InputError: Unknown name; the message lists the known ones.
    """
    spec = _BY_NAME.get(name.strip().lower())
    if spec is None:
        known = ", ".join(
            f"{s.name} ({', '.join(s.aliases)})" if s.aliases else s.name for s in CORPORA
        )
        raise InputError(f"unknown corpus {name!r}; known corpora: {known}")
    return spec
