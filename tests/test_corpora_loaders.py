"""Corpus loaders on the hand-written fixtures in tests/fixtures/<corpus>/ (raw formats).

Expected counts are worked out by hand from the fixture files; the arithmetic is in comments.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cogwm import corpora
from cogwm.errors import InputError
from cogwm.schema import BigFive, Dialogue, Role
from cogwm.schema.labels import (
    AnnoMIMeta,
    AnnoMIUtteranceLabels,
    DailyDialogMeta,
    DailyDialogUtteranceLabels,
    ESConvMeta,
    ESConvUtteranceLabels,
    InspiredMeta,
    InspiredUtteranceLabels,
    P4GMeta,
    P4GUtteranceLabels,
)

P4G_A = "20180101-000000_1_live"
P4G_B = "BAD_20180102-000000_2_live"


def test_names_and_aliases() -> None:
    assert corpora.names() == ["esconv", "persuasionforgood", "dailydialog", "annomi", "inspired"]
    assert corpora.get("P4G").name == "persuasionforgood"
    assert corpora.get(" ESConv ").name == "esconv"
    with pytest.raises(InputError, match="known corpora: esconv"):
        corpora.get("durecdial")


def _counts(dialogues: list[Dialogue]) -> tuple[int, int, int, int]:
    return (
        len(dialogues),
        sum(len(d.utterances) for d in dialogues),
        sum(len(d.turns()) for d in dialogues),
        sum(len(d.user_turns()) for d in dialogues),
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # train: 6 utts usr|sys|usr,usr|sys|usr = 5 turns (3 user); 3 utts usr|sys|usr = 3 (2)
        # valid: usr|sys = 2 (1); test: sys,sys|usr|sys = 3 (1)  -> 15 utts, 13 turns, 7 user
        ("esconv", (4, 15, 13, 7)),
        # A: 5 alternating utterances (2 persuadee); B: 4 alternating (2 persuadee)
        ("persuasionforgood", (2, 9, 9, 4)),
        # 3 + 2 + 4 + 2 alternating utterances; user turns 2 + 1 + 2 + 1
        ("dailydialog", (4, 11, 11, 6)),
        # transcript 0: T|C,C|T|C = 4 turns (2 client); transcript 7: T|C|T = 3 (1)
        ("annomi", (2, 8, 7, 3)),
        # D1: R|S,S|R|S = 4 (2); D2: R|S|R|S = 4 (2); D3: R|S|R = 3 (1)
        ("inspired", (3, 12, 11, 5)),
    ],
)
def test_fixture_counts(fixtures_dir: Path, name: str, expected: tuple[int, ...]) -> None:
    assert _counts(corpora.load(name, fixtures_dir)) == expected


@pytest.mark.parametrize("name", ["esconv", "p4g", "dailydialog", "annomi", "inspired"])
def test_dialogues_round_trip_through_json(fixtures_dir: Path, name: str) -> None:
    for dialogue in corpora.load(name, fixtures_dir):
        assert Dialogue.model_validate_json(dialogue.model_dump_json()) == dialogue


def test_esconv_fields(fixtures_dir: Path) -> None:
    dialogues = corpora.load("esconv", fixtures_dir)
    assert [d.id for d in dialogues] == [
        "esconv:train:0",
        "esconv:train:1",
        "esconv:valid:0",
        "esconv:test:0",
    ]
    first = dialogues[0]
    assert first.split == "train" and first.task == "ESC"
    assert [u.role for u in first.utterances[:2]] == [Role.USER, Role.AGENT]
    assert [u.speaker for u in first.utterances[:2]] == ["usr", "sys"]
    labels = [u.labels for u in first.utterances]
    assert all(isinstance(lab, ESConvUtteranceLabels) for lab in labels)
    strategies = [lab.strategy for lab in labels if isinstance(lab, ESConvUtteranceLabels)]
    assert strategies == [None, "Question", None, None, "Reflection of feelings", None]
    # two consecutive seeker utterances form one turn
    turn = first.turns()[2]
    assert turn.text == "I am worried about my job. My boss keeps hinting at layoffs."
    assert isinstance(first.meta, ESConvMeta)
    assert first.meta.emotion_type == "anxiety"
    assert first.meta.survey.initial_emotion_intensity == 4
    assert first.meta.survey.final_emotion_intensity == 2
    assert first.meta.seeker_question1 == "It helped."
    second, valid = dialogues[1].meta, dialogues[2].meta
    assert isinstance(second, ESConvMeta) and isinstance(valid, ESConvMeta)
    assert second.survey.final_emotion_intensity is None  # not asked: unknown, not 0
    assert second.survey.supporter_relevance is None
    assert valid.survey.supporter_relevance == 0  # the release has supporter ratings of 0


def test_p4g_fields(fixtures_dir: Path) -> None:
    dialogues = {d.id: d for d in corpora.load("p4g", fixtures_dir)}
    a = dialogues[f"persuasionforgood:{P4G_A}"]
    b = dialogues[f"persuasionforgood:{P4G_B}"]
    assert isinstance(a.meta, P4GMeta) and isinstance(b.meta, P4GMeta)
    assert (a.meta.annotated, b.meta.annotated) == (True, False)
    assert (a.meta.marked_bad, b.meta.marked_bad) == (False, True)
    assert [u.speaker for u in a.utterances] == [
        "persuader",
        "persuadee",
        "persuader",
        "persuadee",
        "persuader",
    ]
    assert b.utterances[2].text == 'Have you heard of the charity "Save the Children"?'
    labels = [u.labels for u in a.utterances]
    assert all(isinstance(lab, P4GUtteranceLabels) for lab in labels)
    first, reply, _, agree, last = (lab for lab in labels if isinstance(lab, P4GUtteranceLabels))
    assert first.sentences is not None and [s.text for s in first.sentences] == [
        "Hello.",
        "How are you?",
    ]
    assert first.sentences_match_text is True
    assert reply.sentences is not None
    assert (reply.sentences[0].neg, reply.sentences[0].pos) == (None, None)  # empty VADER cells
    assert agree.sentences is not None
    assert agree.sentences[0].ee_label_1 == "agree-donation"
    assert agree.sentences[0].ee_label_2 == "provide-donation-amount"
    # the sheet holds "Thank you so much." only; the utterance goes on "Have a nice day."
    assert last.sentences_match_text is False
    unannotated = b.utterances[0].labels
    assert isinstance(unannotated, P4GUtteranceLabels)
    assert (unannotated.turn, unannotated.sentences) == (0, None)
    persuadee = a.meta.persuadee
    assert (persuadee.user_id, persuadee.actual_donation) == ("user_11", 0.5)
    assert (persuadee.intended_donation, persuadee.num_turns_annotated) == (1.0, None)
    assert a.meta.persuader.intended_donation is None
    assert persuadee.traits["care.x"] == pytest.approx(4.333333333)
    assert persuadee.traits["sex.x"] == "Male"
    assert b.meta.persuadee.traits["sex.x"] is None
    assert a.profile is not None and a.profile.source == "corpus"
    assert a.profile.big_five == BigFive(
        openness=3.0, conscientiousness=4.2, extraversion=2.6, agreeableness=3.8, neuroticism=1.4
    )
    assert b.profile is None  # the persuadee skipped the questionnaire


#: What the committed fixture workbooks hold (they were written from these rows by openpyxl).
_SENTENCE_HEADER = ("B2", "B4", "Turn", "Unit", "er_label_1", "ee_label_1", "er_label_2")
_DONATE = "Would you donate to Save the Children?"
_AGREE, _AMOUNT = "Yes, I will donate $1.", "provide-donation-amount"
P4G_SENTENCE_SHEET = [
    (None, *_SENTENCE_HEADER, "ee_label_2", "neg", "neu", "pos"),
    (0, P4G_A, 0, 0, "Hello.", "greeting", None, None, None, 0, 0.0, 1.0),
    (1, P4G_A, 0, 0, "How are you?", "greeting", None, None, None, 0, 1, 0),
    (2, P4G_A, 1, 0, "Hi. I am fine.", None, "greeting", None, None, None, None, None),
    (3, P4G_A, 0, 1, _DONATE, "proposition-of-donation", None, None, None, 0, 0.8, 0.2),
    (4, P4G_A, 1, 1, _AGREE, None, "agree-donation", None, _AMOUNT, 0, 0.6, 0.4),
    (5, P4G_A, 0, 2, "Thank you so much.", "thank", None, None, None, 0, 0.5, 0.5),
]
P4G_INFO_SHEET = [
    ("B2", "B3", "B4", "B5", "B6", "B7"),
    (P4G_A, "user_10", 0, None, 0, 3),
    (P4G_A, "user_11", 1, 1, 0.5, None),
]


@pytest.mark.parametrize(
    ("name", "rows"), [("300_dialog.xlsx", P4G_SENTENCE_SHEET), ("300_info.xlsx", P4G_INFO_SHEET)]
)
def test_p4g_fixture_workbooks_hold_the_listed_rows(
    fixtures_dir: Path, name: str, rows: list[tuple[object, ...]]
) -> None:
    import openpyxl

    workbook = openpyxl.load_workbook(
        fixtures_dir / "persuasionforgood" / "AnnotatedData" / name, read_only=True
    )
    try:
        assert list(workbook.worksheets[0].iter_rows(values_only=True)) == rows
    finally:
        workbook.close()


def test_dailydialog_fields(fixtures_dir: Path) -> None:
    dialogues = corpora.load("dailydialog", fixtures_dir)
    assert [d.id for d in dialogues] == [
        "dailydialog:train:0",
        "dailydialog:train:1",
        "dailydialog:validation:0",
        "dailydialog:test:0",
    ]
    second = dialogues[1]
    assert [(u.speaker, u.role) for u in second.utterances] == [
        ("user", Role.USER),
        ("system", Role.AGENT),
    ]
    assert [u.labels for u in second.utterances] == [
        DailyDialogUtteranceLabels(emotion="anger", act="inform"),
        DailyDialogUtteranceLabels(emotion="sadness", act="commissive"),
    ]
    assert second.meta == DailyDialogMeta(topic="Relationship", original_id="train-1")
    assert second.task == "DAILY"


def test_dailydialog_without_original_files(fixtures_dir: Path, tmp_path: Path) -> None:
    import shutil

    shutil.copytree(
        fixtures_dir / "dailydialog" / "convlab3_unified",
        tmp_path / "dailydialog" / "convlab3_unified",
    )
    assert len(corpora.load("dailydialog", tmp_path)) == 4


def test_annomi_fields(fixtures_dir: Path) -> None:
    first, second = corpora.load("annomi", fixtures_dir)
    assert (first.id, second.id) == ("annomi:0", "annomi:7")
    assert first.meta == AnnoMIMeta(
        transcript_id=0,
        mi_quality="high",
        video_title='Brief intervention: "Barbara"',
        video_url="https://www.youtube.com/watch?v=example0",
        topic="smoking cessation",
    )
    assert first.utterances[2].text == "I want to quit, I really do.\nIt is just hard."
    assert first.utterances[2].labels == AnnoMIUtteranceLabels(
        utterance_id=2, timestamp="00:00:22", client_talk_type="change"
    )
    therapist = first.utterances[0]
    assert therapist.role is Role.AGENT
    assert isinstance(therapist.labels, AnnoMIUtteranceLabels)
    assert therapist.labels.main_therapist_behaviour == "question"
    assert therapist.labels.client_talk_type is None  # the file's "n/a"


def test_inspired_fields(fixtures_dir: Path) -> None:
    d1, d2, d3 = corpora.load("inspired", fixtures_dir)
    assert [d.id for d in (d1, d2, d3)] == [
        "inspired:20200101-000001_1_live",
        "inspired:20200101-000002_2_live",
        "inspired:20200102-000003_3_live",
    ]
    assert [d.split for d in (d1, d2, d3)] == ["dev", "dev", "test"]
    # the unescaped quote opening a cell is text, not CSV quoting
    assert d1.utterances[2].text == '"Toy Story" is my favorite.'
    meta = d1.meta
    assert isinstance(meta, InspiredMeta)
    # utterance 4 holds 'nan' and empty dicts; the dialogue's value comes from its other rows
    assert (meta.fine_label, meta.coarse_label, meta.movie_id) == (
        "accept_others",
        "accept_new",
        "abc123",
    )
    assert (meta.genre_dict, meta.dialog_id) == ("{'comedy': 0}", "20200101-000001_1_live.pkl")
    recommender_turn = d1.utterances[3].labels
    assert isinstance(recommender_turn, InspiredUtteranceLabels)
    assert (recommender_turn.expert_label, recommender_turn.second_label) == (
        "credibility",
        "personal_opinion",
    )
    seeker_turn = d3.utterances[1].labels
    assert isinstance(seeker_turn, InspiredUtteranceLabels)
    assert seeker_turn.movies == ["Braveheart (1995)", "Saving Private Ryan (1998)"]
    assert seeker_turn.genres == ["war", "drama"]
    assert seeker_turn.expert_label is None


def test_inspired_survey_joins_through_rec_demographic(fixtures_dir: Path) -> None:
    d1, d2, _ = corpora.load("inspired", fixtures_dir)
    assert isinstance(d1.meta, InspiredMeta) and d1.meta.survey is not None
    survey = d1.meta.survey
    # seek_survey_id first_batch_1 points at another seeker's row (case accept_uninterested);
    # rec_survey_id -> (user_1, user_0) reaches the right one (case accept_others)
    assert survey.seek_survey_id == "first_batch_1"
    assert (survey.seeker_id, survey.recommender_id) == ("user_1", "user_0")
    assert survey.seeker is not None and survey.seeker["case"] == "accept_others"
    assert survey.reason == 'I loved "Office Space", but had no time.'
    # a quoted cell with tabs inside, as in the release
    assert survey.recommender["degree"] == "Professional Postgraduate Degree (Medical\t Law\t etc)"
    assert survey.partner_perception == {
        "competent": "Strongly agree",
        "persuasive": "Agree",
        "pressure_me": "Strongly disagree",
    }
    assert survey.video_id_and_duration == "abc123SPLIT40"
    assert survey.recommender_personality is not None
    assert survey.recommender_personality["Open"] == 2.0
    assert d1.profile is not None and d1.profile.big_five is not None
    assert d1.profile.big_five.extraversion == pytest.approx(3.6666666666666665)
    assert d1.profile.big_five.openness == 5.0
    assert isinstance(d2.meta, InspiredMeta) and d2.meta.survey is not None
    assert d2.meta.survey.seeker_personality is None
    assert d2.profile is None  # user_3 has no personality row
