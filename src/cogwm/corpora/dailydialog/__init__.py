"""DailyDialog: its loader (:mod:`.loader`), its human-label mapping (:mod:`.mapping`), and
:data:`CORPUS`, what the registry knows about it."""

from __future__ import annotations

from cogwm.corpora.corpus import Corpus, ReleaseCounts
from cogwm.corpora.dailydialog import loader, mapping

CORPUS = Corpus(
    name=loader.NAME,
    folder="dailydialog",
    description="DailyDialog everyday conversations (ConvLab-3 'user' = user)",
    loader=loader.load,
    label_distributions=loader.label_distributions,
    release=ReleaseCounts(dialogues=13_118, utterances=102_979),
    label_table=mapping.TABLE,
    labeller=mapping.labelled,
    # Dialogues written for learners of English, ended where their writer stopped.
    ends_by_choice=False,
    # Its labels are read from both sides: each speaker is the user in one reading.
    every_speaker_is_user=True,
)
