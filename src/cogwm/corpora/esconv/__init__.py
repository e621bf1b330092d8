"""ESConv: its loader (:mod:`.loader`), its human-label mapping (:mod:`.mapping`), and
:data:`CORPUS`, what the registry knows about it."""

from __future__ import annotations

from cogwm.corpora.corpus import Corpus, ReleaseCounts
from cogwm.corpora.esconv import loader, mapping

CORPUS = Corpus(
    name=loader.NAME,
    folder="esconv",
    description="ESConv emotional-support conversations (seeker = user)",
    loader=loader.load,
    label_distributions=loader.label_distributions,
    release=ReleaseCounts(dialogues=1_300, utterances=38_365),
    label_table=mapping.TABLE,
    situation=loader.situation,
    labeller=mapping.labelled,
)
