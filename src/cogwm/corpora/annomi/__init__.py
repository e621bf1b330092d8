"""AnnoMI: its loader (:mod:`.loader`), the agreement subset's annotator votes
(:mod:`.annotators`), its human-label mapping (:mod:`.mapping`), and :data:`CORPUS`, what the
registry knows about it."""

from __future__ import annotations

from cogwm.corpora.annomi import loader, mapping
from cogwm.corpora.corpus import Corpus, ReleaseCounts

CORPUS = Corpus(
    name=loader.NAME,
    folder="annomi",
    description="AnnoMI motivational-interviewing sessions (client = user)",
    loader=loader.load,
    label_distributions=loader.label_distributions,
    release=ReleaseCounts(dialogues=133, utterances=9_699),
    label_table=mapping.TABLE,
    labeller=mapping.labelled,
    # Transcripts of demonstration videos, which end where the demonstration does.
    ends_by_choice=False,
    # Sessions rated high or low quality: half the low ones and as many high ones held out.
    holdout="AnnoMI's quality hold-out",
)
