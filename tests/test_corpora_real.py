"""The loaders on the real corpora: counts of SOURCE.md / LABELS.md and the known quirks.

Skipped when the corpora are not present (see the ``real_data_dir`` fixture).
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from cogwm import corpora
from cogwm.schema import Dialogue, Role
from cogwm.schema.labels import (
    AnnoMIUtteranceLabels,
    DailyDialogUtteranceLabels,
    ESConvMeta,
    ESConvUtteranceLabels,
    InspiredMeta,
    P4GMeta,
    P4GUtteranceLabels,
)


@cache
def _load(name: str, data_dir: Path) -> list[Dialogue]:
    return corpora.load(name, data_dir)


@pytest.fixture(scope="module")
def real(real_data_dir: Path) -> dict[str, list[Dialogue]]:
    return {name: _load(name, real_data_dir) for name in corpora.names()}


@pytest.mark.parametrize(
    ("name", "dialogues", "utterances"),
    [
        ("esconv", 1_300, 38_365),
        ("persuasionforgood", 1_017, 20_932),
        ("dailydialog", 13_118, 102_979),
        ("annomi", 133, 9_699),
        ("inspired", 198, 6_976),
    ],
)
def test_release_counts(
    real: dict[str, list[Dialogue]], name: str, dialogues: int, utterances: int
) -> None:
    loaded = real[name]
    assert len(loaded) == dialogues
    assert sum(len(d.utterances) for d in loaded) == utterances
    assert len({d.id for d in loaded}) == dialogues


@pytest.mark.parametrize(
    ("name", "user_utterances"),
    [
        ("esconv", 19_989),
        ("persuasionforgood", 10_332),
        ("dailydialog", 53_791),
        ("annomi", 4_817),
        ("inspired", 3_352),
    ],
)
def test_user_role_mapping(
    real: dict[str, list[Dialogue]], name: str, user_utterances: int
) -> None:
    users = sum(1 for d in real[name] for u in d.utterances if u.role is Role.USER)
    assert users == user_utterances


def test_user_turns_per_dialogue_match_design(real: dict[str, list[Dialogue]]) -> None:
    # The paper's "turns per dialogue" are user turns: DailyDialog 4.1, P4G 10.2
    for name, expected in (("dailydialog", 4.1), ("persuasionforgood", 10.2)):
        dialogues = real[name]
        mean = sum(len(d.user_turns()) for d in dialogues) / len(dialogues)
        assert round(mean, 1) == expected


def test_esconv_labels(real: dict[str, list[Dialogue]]) -> None:
    dialogues = real["esconv"]
    assert Counter(d.split for d in dialogues) == {"train": 910, "valid": 195, "test": 195}
    strategies = Counter(
        u.labels.strategy
        for d in dialogues
        for u in d.utterances
        if isinstance(u.labels, ESConvUtteranceLabels) and u.labels.strategy
    )
    assert strategies["Question"] == 3801 and strategies["Restatement or Paraphrasing"] == 1089
    metas = [d.meta for d in dialogues if isinstance(d.meta, ESConvMeta)]
    finals = Counter(m.survey.final_emotion_intensity for m in metas)
    assert finals == {1: 329, 2: 469, 3: 290, 4: 62, None: 150}
    assert Counter(m.emotion_type for m in metas)["anxiety"] == 354


def test_p4g_labels_and_profiles(real: dict[str, list[Dialogue]]) -> None:
    dialogues = real["persuasionforgood"]
    metas = [d.meta for d in dialogues if isinstance(d.meta, P4GMeta)]
    assert sum(m.annotated for m in metas) == 300
    assert sum(m.marked_bad for m in metas) == 27
    assert sum(m.persuadee.actual_donation > 0 for m in metas) == 545
    assert sum(m.persuadee.intended_donation is not None for m in metas) == 217
    sentences = [
        s
        for d in dialogues
        for u in d.utterances
        if isinstance(u.labels, P4GUtteranceLabels) and u.labels.sentences
        for s in u.labels.sentences
    ]
    assert len(sentences) == 10_864
    ee = Counter(s.ee_label_1 for s in sentences if s.ee_label_1)
    assert sum(ee.values()) == 4847 and ee["positive-reaction-to-donation"] == 1032
    assert sum(s.neg is None for s in sentences) == 629  # VADER cells left empty
    # 7 participants skipped the questionnaire, 5 of them persuadees
    assert sum(d.profile is not None for d in dialogues) == 1012
    assert all(d.profile.source == "corpus" for d in dialogues if d.profile)


def test_dailydialog_labels(real: dict[str, list[Dialogue]]) -> None:
    labels = [
        u.labels
        for d in real["dailydialog"]
        for u in d.utterances
        if isinstance(u.labels, DailyDialogUtteranceLabels)
    ]
    emotions = Counter(lab.emotion for lab in labels)
    assert emotions["no emotion"] == 85_572 and emotions["fear"] == 174
    assert Counter(lab.act for lab in labels)["commissive"] == 9_724


def test_annomi_labels(real: dict[str, list[Dialogue]]) -> None:
    talk = Counter(
        u.labels.client_talk_type
        for d in real["annomi"]
        for u in d.utterances
        if isinstance(u.labels, AnnoMIUtteranceLabels) and u.role is Role.USER
    )
    assert talk == {"neutral": 3102, "change": 1174, "sustain": 541}


def test_inspired_outcomes_and_survey(real: dict[str, list[Dialogue]]) -> None:
    dialogues = {d.id: d for d in real["inspired"]}
    metas = [d.meta for d in dialogues.values() if isinstance(d.meta, InspiredMeta)]
    assert Counter(m.fine_label for m in metas) == {
        "accept_rating_good": 95,
        "accept_others": 62,
        "accept_uninterested": 29,
        "accept_rating_mod": 10,
        "reject": 2,
    }
    # read with the survey files' own quoting, the rec_demographic join reaches every seeker
    joined = [m for m in metas if m.survey is not None and m.survey.seeker is not None]
    assert len(joined) == 198
    assert all(
        m.survey.seeker["case"] == m.fine_label for m in joined if m.survey and m.survey.seeker
    )
    nan_row = dialogues["inspired:20200305-072858_888_live"].meta
    assert isinstance(nan_row, InspiredMeta) and nan_row.fine_label == "accept_others"
    example = dialogues["inspired:20200227-144701_702_live"].meta
    assert isinstance(example, InspiredMeta) and example.survey is not None
    assert (example.survey.reason or "").startswith("It was exactly what I was looking for.")
