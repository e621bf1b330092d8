"""What cogwm knows about one corpus, in one record: :class:`Corpus`.

Each corpus package (``cogwm.corpora.<name>``) builds its own ``CORPUS`` and the registry
(:mod:`cogwm.corpora.registry`) lists them; code elsewhere reads a corpus's facts from its
record instead of naming the corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from cogwm.corpora.labels.table import MappingTable
from cogwm.schema import Dialogue
from cogwm.schema.partial import LabelledDialogue

#: Reads every dialogue of the corpus from its folder.
Loader = Callable[[Path], list[Dialogue]]
#: Counts of each original label, per label column.
Distributions = Callable[[Sequence[Dialogue]], dict[str, dict[str, int]]]
#: Counts some of the dialogues.
DialogueCount = Callable[[Sequence[Dialogue]], int]
#: Maps the corpus's dialogues (read from the folder given) to partial states from its labels.
Labeller = Callable[[list[Dialogue], Path], Iterator[LabelledDialogue]]
#: The questionnaire row of a dialogue's user (trait name -> score); None where it has none.
TraitsOf = Callable[[Dialogue], Mapping[str, object] | None]
#: The user's situation as a dialogue's metadata states it; None where it states none.
SituationOf = Callable[[Dialogue], str | None]


class ReleaseCounts(NamedTuple):
    """Dialogue and utterance counts of the published release, to tell a shortened copy."""

    dialogues: int
    utterances: int


@dataclass(frozen=True)
class Corpus:
    """One corpus: its files, how to read them, its human-label mapping and the facts that the
    samples, profiles and validity card need about it."""

    name: str
    folder: str
    description: str
    loader: Loader
    label_distributions: Distributions
    release: ReleaseCounts
    #: The mapping table of its human labels and the function that applies it.
    label_table: MappingTable
    labeller: Labeller
    aliases: tuple[str, ...] = ()
    #: Counts the dialogues with fine-grained human labels, where only some have them.
    count_annotated: DialogueCount | None = None
    #: Whether a transcript ends where its participants ended the conversation (live chats).
    #: False where the source set the end (written dialogues, recorded demonstrations): there
    #: the last turn says nothing about whether the user wanted to leave.
    ends_by_choice: bool = True
    #: Whether each speaker is the user in one reading of a dialogue (so every line is a user
    #: line somewhere), rather than one role being the user throughout.
    every_speaker_is_user: bool = False
    #: The user's Big Five questionnaire row, where the corpus asked its participants.
    profile_traits: TraitsOf | None = None
    #: The user's own situation, where each dialogue states one (ESConv's seekers).
    situation: SituationOf | None = None
    #: The corpus whose release holds this one's file and whose task it plays (FailedESConv:
    #: ``esconv``); None for a release of its own. Such a corpus is read from that corpus's
    #: folder and is not one of :func:`cogwm.corpora.names`.
    companion_of: str | None = None
    #: How the samples' split rule names this corpus's known-groups hold-out (dialogues of
    #: two groups forced into test so a simulator is checked on both unseen); None without one.
    holdout: str | None = None
    #: What its folder must hold, named when the folder is missing; None: "the <name> files".
    files: str | None = None

    @property
    def keys(self) -> tuple[str, ...]:
        """The name and every alias, each a way to ask for this corpus."""
        return (self.name, *self.aliases)
