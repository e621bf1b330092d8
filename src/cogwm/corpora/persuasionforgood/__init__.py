"""PersuasionForGood: its loader (:mod:`.loader`), its human-label mapping (:mod:`.mapping`),
and :data:`CORPUS`, what the registry knows about it."""

from __future__ import annotations

from cogwm.corpora.corpus import Corpus, ReleaseCounts
from cogwm.corpora.persuasionforgood import loader, mapping

CORPUS = Corpus(
    name=loader.NAME,
    folder="persuasionforgood",
    description="PersuasionForGood donation persuasion (persuadee = user)",
    loader=loader.load,
    label_distributions=loader.label_distributions,
    release=ReleaseCounts(dialogues=1_017, utterances=20_932),
    label_table=mapping.TABLE,
    labeller=mapping.labelled,
    aliases=("p4g",),
    count_annotated=loader.count_annotated,
    profile_traits=loader.user_traits,
)
