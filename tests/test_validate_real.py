"""The card's item counts on the real corpora, checked against counts made from the raw files.

DailyDialog's official test split has 237 turns labelled anger, sadness or fear and 1,303 labelled
happiness, anger, sadness, fear or disgust (counted with a plain JSON reader over the unified
file, both speakers); the card scores its 696 clean dialogues only (no user line of 8+ words in
train), which hold 148 and 797 of those turns. Skips when the corpora are absent.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from cogwm.validate.items import (
    DD_LEXICON_LABELS,
    Heldout,
    annomi_population,
    dailydialog_population,
    esconv_populations,
    p4g_populations,
)


def test_dailydialog_counts_match_the_raw_files(real_data_dir: Path) -> None:
    items = dailydialog_population(real_data_dir).items
    golds = Counter(item.gold for item in items)
    assert sum(golds[label] for label in DD_LEXICON_LABELS) == 148
    assert len(items) == 797
    assert golds == {"happiness": 618, "anger": 63, "sadness": 76, "disgust": 31, "fear": 9}
    assert len({item.dialogue_id for item in items}) == 348


def test_annomi_p4g_esconv_counts(real_data_dir: Path) -> None:
    # Every transcript: the 1,174 change and 541 sustain utterances of AnnoMI-simple.csv are
    # 1,711 client turns; ties and turns that hold both directions are left out.
    annomi = Counter(i.gold for i in annomi_population(real_data_dir, Heldout("all")).items)
    assert annomi == {"change": 1171, "sustain": 537}
    commitment, final = p4g_populations(real_data_dir, Heldout("all"))
    assert Counter(i.gold for i in commitment.items) == {"commits": 416, "refuses": 68}
    assert Counter(i.gold for i in final.items) == {"none": 152, "donated": 148}
    start, end = esconv_populations(real_data_dir, Heldout("all"))
    assert len(start.items) == 195
    # Failed: FailedESConv dialogues whose survey shows no improvement (the known groups' rule).
    assert Counter(i.gold for i in end.items) == {"improved": 195, "failed": 109}


def test_judge_sets_on_the_real_corpora(real_data_dir: Path) -> None:
    from cogwm.validate.judges import judge_sets

    sets = judge_sets(real_data_dir, Heldout("all"))
    _, p4g = sets["good_outcome_p4g"]
    assert (len(p4g), sum(d.good for d in p4g)) == (300, 148)
    _, esconv = sets["good_outcome_esconv"]
    assert (len(esconv), sum(d.good for d in esconv)) == (195 + 196, 195)
    _, intent = sets["intent_esconv"]
    assert len(intent) == 2 * 195 and sum(d.good for d in intent) == 195
