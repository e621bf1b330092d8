"""FailedESConv: its loader (:mod:`.loader`) and :data:`CORPUS`, what the registry knows about
it. It ships in the ESConv folder and keeps ESConv's labels, so it maps them with ESConv's
table (one table, one set of rules) and plays ESConv's task."""

from __future__ import annotations

from cogwm.corpora import esconv
from cogwm.corpora.corpus import Corpus, ReleaseCounts
from cogwm.corpora.failed_esconv import loader

CORPUS = Corpus(
    name=loader.NAME,
    folder=esconv.CORPUS.folder,
    description="FailedESConv: the emotional-support conversations ESConv dropped as failures",
    loader=loader.load,
    label_distributions=esconv.loader.label_distributions,
    release=ReleaseCounts(dialogues=196, utterances=5_230),
    label_table=esconv.mapping.TABLE,
    situation=esconv.loader.situation,
    labeller=esconv.mapping.labelled,
    aliases=("failedesconv",),
    companion_of=esconv.CORPUS.name,
    # Seekers' surveys (improved or not): half of each group held out.
    holdout="FailedESConv's survey hold-out",
    files=loader.FILE,
)
