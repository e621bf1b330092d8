"""INSPIRED: its loader (:mod:`.loader`), its human-label mapping (:mod:`.mapping`), and
:data:`CORPUS`, what the registry knows about it."""

from __future__ import annotations

from cogwm.corpora.corpus import Corpus, ReleaseCounts
from cogwm.corpora.inspired import loader, mapping

CORPUS = Corpus(
    name=loader.NAME,
    folder="inspired",
    description="INSPIRED movie recommendation, dev + test (SEEKER = user)",
    loader=loader.load,
    label_distributions=loader.label_distributions,
    release=ReleaseCounts(dialogues=198, utterances=6_976),
    label_table=mapping.TABLE,
    labeller=mapping.labelled,
    profile_traits=loader.user_traits,
)
