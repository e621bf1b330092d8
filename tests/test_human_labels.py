"""Human-label partial states on tiny synthetic corpora: each test names the bug it catches."""

from __future__ import annotations

import csv
import json
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import pytest

from cogwm.annotate.human import TABLES, labelled_dialogues, names
from cogwm.corpora.dailydialog.loader import EMOTIONS
from cogwm.corpora.persuasionforgood import mapping as p4g
from cogwm.errors import InputError
from cogwm.schema import BigFive, Dialogue, Profile, Role, Utterance, lexicon
from cogwm.schema.labels import P4GMeta, P4GParticipant, P4GSentence, P4GUtteranceLabels
from cogwm.schema.partial import FieldKind, LabelledDialogue


@pytest.fixture(autouse=True)
def _isolated_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexicon, "_ACTIVE", ContextVar("lexicon", default=lexicon.DEFAULT_LEXICON))


# --- ESConv -----------------------------------------------------------------------------------


def _esconv_dialogue(emotion: str, initial: str, final: str | None) -> dict[str, Any]:
    seeker: dict[str, str] = {"initial_emotion_intensity": initial}
    if final is not None:
        seeker["final_emotion_intensity"] = final
    return {
        "experience_type": "Current Experience",
        "emotion_type": emotion,
        "problem_type": "job crisis",
        "situation": "  I may lose my job.  ",
        "survey_score": {"seeker": seeker, "supporter": {}},
        "dialog": [
            {"text": "Hi", "speaker": "sys", "strategy": "Question"},
            {"text": "Hello", "speaker": "usr"},
            {"text": "What happened?", "speaker": "sys", "strategy": "Question"},
            {"text": "My boss is cutting staff.", "speaker": "usr"},
            {"text": "I see.", "speaker": "sys", "strategy": "Reflection of feelings"},
            {"text": "Thanks.", "speaker": "usr"},
            {"text": "Bye now.", "speaker": "usr"},
        ],
        "seeker_question1": "",
        "seeker_question2": "",
        "supporter_question1": "",
        "supporter_question2": "",
    }


def _write_esconv(root: Path, train: list[dict[str, Any]]) -> Path:
    folder = root / "esconv" / "hf_splits"
    folder.mkdir(parents=True)
    for split in ("train", "valid", "test"):
        rows = train if split == "train" else [_esconv_dialogue("fear", "3", "3")]
        (folder / f"{split}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_esconv_self_reports_go_to_first_and_last_seeker_turn(tmp_path: Path) -> None:
    # Catches: the label put on a supporter turn, on every turn (middle turns must stay
    # unknown), an uncompressed 1-5 intensity, or an approximate row marked exact.
    root = _write_esconv(tmp_path, [_esconv_dialogue("depression", "5", "2")])
    item = next(iter(labelled_dialogues("esconv", root, split="train")))
    turns = item.dialogue.turns()
    assert sorted(item.states) == [1, 5]  # first and last seeker turn; turn 3 unknown
    assert all(turns[t].role is Role.USER for t in item.states)
    first, last = item.states[1], item.states[5]
    assert first.emotion.value is not None and last.emotion.value is not None
    assert (first.emotion.value.label, first.emotion.value.intensity) == ("sadness", 3)
    assert first.emotion.origin is not None
    assert (first.emotion.origin.rule, first.emotion.origin.exact) == ("esconv.E7", False)
    assert (last.emotion.value.label, last.emotion.value.intensity) == ("sadness", 1)
    assert first.beliefs.items[0].text == "I may lose my job."
    assert first.beliefs.items[0].score is None  # text only: the score is not annotated
    for field in ("desires", "intentions"):
        assert first.kind(field) is FieldKind.UNKNOWN


def test_esconv_unmappable_emotion_and_missing_final_stay_unknown(tmp_path: Path) -> None:
    # Catches: an unmappable emotion (jealousy) or a missing final intensity turned into an
    # empty emotion (an annotator never said there was none) or into a default label.
    root = _write_esconv(tmp_path, [_esconv_dialogue("jealousy", "4", None)])
    item = next(iter(labelled_dialogues("esconv", root, split="train")))
    assert sorted(item.states) == [1]
    assert item.states[1].kind("emotion") is FieldKind.UNKNOWN
    assert item.states[1].kind("beliefs") is FieldKind.VALUE


def test_esconv_missing_final_intensity_leaves_the_last_turn_unknown(tmp_path: Path) -> None:
    # Catches: a missing final survey value filled from the initial one (or any default) for a
    # mappable emotion: the survey said nothing about the state after the chat.
    root = _write_esconv(tmp_path, [_esconv_dialogue("anxiety", "4", None)])
    item = next(iter(labelled_dialogues("esconv", root, split="train")))
    assert sorted(item.states) == [1]
    first = item.states[1].emotion.value
    assert first is not None and (first.label, first.intensity) == ("anxiety", 3)


def test_esconv_unknown_emotion_type_is_an_error(tmp_path: Path) -> None:
    # Catches: a label the release adds being dropped silently instead of reported.
    root = _write_esconv(tmp_path, [_esconv_dialogue("boredom", "4", "2")])
    with pytest.raises(InputError, match="'boredom' of 'emotion_type' has no row"):
        list(labelled_dialogues("esconv", root))


def test_esconv_disgust_uses_the_extension_label(tmp_path: Path) -> None:
    root = _write_esconv(tmp_path, [_esconv_dialogue("disgust", "4", "2")])
    item = next(iter(labelled_dialogues("esconv", root, split="train")))
    assert item.states[1].emotion.value is not None
    assert item.states[1].emotion.value.label == "disgust"
    assert lexicon.valence("disgust") < 0


# --- DailyDialog ------------------------------------------------------------------------------


def test_dailydialog_every_utterance_is_a_user_turn_in_exactly_one_reading(
    fixtures_dir: Path,
) -> None:
    # Catches: reading only the ConvLab 'user' side (half the labels lost) or both readings
    # labelling the same utterances.
    items = list(labelled_dialogues("dailydialog", fixtures_dir))
    by_id = {i.dialogue.id: i for i in items}
    originals = {i.dialogue.id.rsplit("#", 1)[0] for i in items}
    assert len(items) == 2 * len(originals)
    for original in originals:
        a, b = by_id[f"{original}#A"], by_id[f"{original}#B"]
        assert a.dialogue.utterances[0].role is Role.USER
        assert b.dialogue.utterances[0].role is Role.AGENT
        user_a = {u.index for u in a.dialogue.utterances if u.role is Role.USER}
        user_b = {u.index for u in b.dialogue.utterances if u.role is Role.USER}
        assert user_a.isdisjoint(user_b)
        assert user_a | user_b == set(range(len(a.dialogue.utterances)))
        for item in (a, b):
            assert set(item.states) == {t.index for t in item.dialogue.user_turns()}


def test_dailydialog_keeps_every_label_with_its_valence(fixtures_dir: Path) -> None:
    # Catches: 'no emotion' dropped or made empty/unknown, happiness dropped, or an extension
    # label with the wrong sign.
    items = list(labelled_dialogues("dailydialog", fixtures_dir))
    seen: dict[str, str] = {}
    for item in items:
        for turn in item.dialogue.user_turns():
            raw = turn.utterances[-1].labels
            field = item.states[turn.index].emotion
            value = field.value
            assert value is not None and raw is not None and hasattr(raw, "emotion")
            # Catches: the conventional intensity passed off as a graded one.
            assert not field.intensity_known
            seen[raw.emotion] = value.label
    assert seen.get("no emotion") == "neutral"
    assert lexicon.valence("neutral") == 0
    assert lexicon.valence("happiness") > 0
    assert lexicon.valence("disgust") < 0


def test_dailydialog_table_covers_every_label_of_the_release() -> None:
    table = TABLES["dailydialog"]
    for label in EMOTIONS:
        assert table.lookup("emotion", label), label


# --- AnnoMI -----------------------------------------------------------------------------------

_SIMPLE = [
    # transcript, utterance, who, text, behaviour, talk type
    (0, 0, "therapist", "How is smoking going?", "question", "n/a"),
    (0, 1, "client", "Fine.", "n/a", "neutral"),
    (0, 2, "therapist", "Tell me more.", "question", "n/a"),
    (0, 3, "client", "I want to quit.", "n/a", "change"),
    (0, 4, "client", "Really.", "n/a", "change"),
    (0, 5, "therapist", "Why now?", "question", "n/a"),
    (0, 6, "client", "But it calms me.", "n/a", "sustain"),
    (0, 7, "therapist", "Hm.", "other", "n/a"),
    (0, 8, "client", "Maybe later.", "n/a", "sustain"),
]
#: Utterance 8 was labelled by four annotators who split 2:2, utterance 6 by three (2:1).
_VOTES = {6: ["sustain", "sustain", "neutral"], 8: ["sustain", "neutral", "sustain", "neutral"]}


def _write_annomi(
    root: Path,
    votes: dict[int, list[str]] = _VOTES,
    simple: list[tuple[int, int, str, str, str, str]] = _SIMPLE,
) -> Path:
    folder = root / "annomi"
    folder.mkdir(parents=True)
    meta = ["high", "Example", "https://example.org/v", "smoking cessation"]
    with (folder / "AnnoMI-simple.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "transcript_id",
                "mi_quality",
                "video_title",
                "video_url",
                "topic",
                "utterance_id",
                "interlocutor",
                "timestamp",
                "utterance_text",
                "main_therapist_behaviour",
                "client_talk_type",
            ]
        )
        for t, u, who, text, behaviour, talk in simple:
            writer.writerow([t, *meta, u, who, f"00:00:{u:02d}", text, behaviour, talk])
    with (folder / "AnnoMI-full.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "transcript_id",
                "utterance_id",
                "interlocutor",
                "utterance_text",
                "annotator_id",
                "main_therapist_behaviour",
                "client_talk_type",
            ]
        )
        for t, u, who, text, behaviour, talk in simple:
            for annotator, label in enumerate(votes.get(u, [talk])):
                writer.writerow([t, u, who, text, annotator, behaviour, label])
    return root


def _annomi(root: Path) -> LabelledDialogue:
    return next(iter(labelled_dialogues("annomi", root)))


def test_annomi_change_and_sustain_are_directions_never_scores(tmp_path: Path) -> None:
    # Catches: change talk stored as a score (an MAE target), neutral turned into a constraint,
    # or a two-utterance change turn counted twice.
    item = _annomi(_write_annomi(tmp_path))
    user_turns = [t.index for t in item.dialogue.user_turns()]
    assert user_turns == [1, 3, 5, 7]
    directions = {t: [c.value for c in item.states[t].constraints] for t in user_turns}
    assert directions == {1: [], 3: [1.0], 5: [-1.0], 7: []}  # 7: the tie
    for t in user_turns:
        state = item.states[t]
        assert all(c.relation == "direction" and c.target == "intention" for c in state.constraints)
        assert [i.score for i in state.intentions.items] == [None]
        assert state.desires.items[0].text == "smoking cessation"
        assert state.kind("emotion") is FieldKind.UNKNOWN
        assert state.kind("beliefs") is FieldKind.UNKNOWN


def test_annomi_majority_is_kept_and_only_a_tie_is_dropped(tmp_path: Path) -> None:
    # Catches: dropping every utterance the annotators disagreed on (2:1 is a majority).
    item = _annomi(_write_annomi(tmp_path))
    assert [c.value for c in item.states[5].constraints] == [-1.0]


def test_annomi_a_turn_of_change_and_sustain_has_no_direction(tmp_path: Path) -> None:
    # Catches: a client turn whose utterances pull both ways given one of the two signs.
    mixed = [*_SIMPLE[:4], (0, 4, "client", "But it calms me.", "n/a", "sustain")]
    item = _annomi(_write_annomi(tmp_path, votes={}, simple=mixed))
    assert item.states[3].constraints == []
    assert item.states[3].kind("intentions") is FieldKind.VALUE  # the topic text stays


def test_annomi_simple_label_against_the_majority_is_an_error(tmp_path: Path) -> None:
    # Catches: a per-annotator file that does not belong to the simple file going unnoticed.
    root = _write_annomi(tmp_path, votes={**_VOTES, 3: ["neutral", "neutral", "change"]})
    with pytest.raises(InputError, match="majority 'neutral'"):
        _annomi(root)


# --- Corpus names and splits ------------------------------------------------------------------


def test_unknown_corpus_and_split_are_input_errors(tmp_path: Path, fixtures_dir: Path) -> None:
    with pytest.raises(InputError, match="no human-label mapping"):
        labelled_dialogues("durecdial", fixtures_dir)
    with pytest.raises(InputError, match="has no split 'dev'"):
        labelled_dialogues("esconv", fixtures_dir, split="dev")
    with pytest.raises(InputError, match="no official split"):
        labelled_dialogues("annomi", _write_annomi(tmp_path), split="train")
    with pytest.raises(InputError, match="does not exist"):
        labelled_dialogues("esconv", tmp_path / "absent")


def test_every_table_row_names_its_corpus() -> None:
    assert set(names()) <= set(TABLES)
    for corpus, table in TABLES.items():
        assert corpus == table.corpus or (corpus, table.corpus) == ("failed_esconv", "esconv")
        assert all(row.note for row in table)


# --- PersuasionForGood ------------------------------------------------------------------------


def _p4g_dialogue(turn_acts: list[list[tuple[str, str | None]]]) -> Dialogue:
    """A dialogue alternating persuader and persuadee; persuadee turn i has ``turn_acts[i]``."""
    participant = P4GParticipant(user_id="u", actual_donation=0.0, num_turns=1)
    utterances: list[Utterance] = []
    for turn, acts in enumerate(turn_acts):
        utterances.append(
            Utterance(
                index=len(utterances),
                speaker="persuader",
                role=Role.AGENT,
                text="Please donate.",
                labels=P4GUtteranceLabels(turn=turn),
            )
        )
        sentences = [P4GSentence(text=text or act, ee_label_1=act) for act, text in acts]
        utterances.append(
            Utterance(
                index=len(utterances),
                speaker="persuadee",
                role=Role.USER,
                text=" ".join(s.text for s in sentences) or "ok",
                labels=P4GUtteranceLabels(turn=turn, sentences=sentences),
            )
        )
    return Dialogue(
        id="persuasionforgood:x",
        corpus="persuasionforgood",
        utterances=utterances,
        meta=P4GMeta(annotated=True, persuader=participant, persuadee=participant),
        profile=Profile(
            big_five=BigFive(
                openness=3, conscientiousness=3, extraversion=3, agreeableness=3, neuroticism=3
            ),
            source="corpus",
        ),
    )


def _intention(item: LabelledDialogue, turn: int) -> tuple[str, float | None, str | None]:
    field = item.states[turn].intentions
    assert field.origin is not None
    return field.items[0].text, field.items[0].score, field.origin.rule


def test_p4g_last_commitment_wins_and_amount_goes_into_the_text() -> None:
    # Catches: the first label of a turn winning, the dollar amount lost, a refusal given a
    # lower bound, or a greeting turn labelled at all.
    item = p4g.label(
        _p4g_dialogue(
            [
                [("greeting", None)],
                [("disagree-donation", "No."), ("provide-donation-amount", "OK, $0.50 then.")],
                [("disagree-donation", "No more.")],
            ]
        )
    )
    assert 1 not in item.states  # greeting: nothing known
    assert _intention(item, 3) == (
        "donate $0.50 to Save the Children",
        2.0,
        "persuasionforgood.I2",
    )
    assert [(c.relation, c.value) for c in item.states[3].constraints] == [("at_least", 1.5)]
    assert _intention(item, 5)[1:] == (0.0, "persuasionforgood.I4")
    assert [(c.relation, c.value) for c in item.states[5].constraints] == [("at_most", 0.5)]


def test_p4g_refusing_more_keeps_the_earlier_commitment_only_when_there_is_one() -> None:
    # Catches: disagree-donation-more read as a refusal (I=0), or invented without an earlier
    # commitment.
    item = p4g.label(
        _p4g_dialogue(
            [
                [("disagree-donation-more", "Not more.")],
                [("agree-donation", "Sure.")],
                [("disagree-donation-more", "That's all.")],
            ]
        )
    )
    assert 1 not in item.states
    assert _intention(item, 5) == ("donate to Save the Children", 2.0, "persuasionforgood.I6")
    assert item.states[5].constraints == []


def test_p4g_refusing_more_in_the_turn_that_agrees_keeps_that_turns_commitment() -> None:
    # Catches: disagree-donation-more bringing back an earlier refusal over the commitment the
    # same turn has just made.
    item = p4g.label(
        _p4g_dialogue(
            [
                [("disagree-donation", "No.")],
                [("agree-donation", "OK, I'll give."), ("disagree-donation-more", "No more.")],
            ]
        )
    )
    assert _intention(item, 3) == ("donate to Save the Children", 2.0, "persuasionforgood.I1")
    assert [(c.relation, c.value) for c in item.states[3].constraints] == [("at_least", 1.5)]


def test_p4g_reactions_set_desire_and_the_profile_is_self_reported() -> None:
    item = p4g.label(_p4g_dialogue([[("negative-reaction-to-donation", "I doubt charities.")]]))
    desires = item.states[1].desires
    assert [i.score for i in desires.items] == [0.5]
    assert item.states[1].kind("beliefs") is FieldKind.UNKNOWN  # never B from the label
    assert item.dialogue.profile is not None and item.dialogue.profile.source == "self_report"


def test_p4g_yields_only_the_annotated_dialogues(fixtures_dir: Path) -> None:
    # Catches: the unannotated dialogues (no turn-level label at all) being written out.
    items = list(labelled_dialogues("p4g", fixtures_dir))
    assert [i.dialogue.id for i in items] == ["persuasionforgood:20180101-000000_1_live"]
    assert _intention(items[0], 3)[2] == "persuasionforgood.I2"  # provide-amount came last


# --- INSPIRED ---------------------------------------------------------------------------------


def test_inspired_outcome_goes_to_the_last_seeker_turn_as_decision_and_bounds(
    fixtures_dir: Path,
) -> None:
    # Catches: the satisfaction rating stored as a score, accept_others given a bound, or
    # the reason lost.
    items = {i.dialogue.id: i for i in labelled_dialogues("inspired", fixtures_dir)}
    good = items["inspired:20200102-000003_3_live"]
    last = good.dialogue.user_turns()[-1].index
    assert set(good.states) == {last}
    state = good.states[last]
    assert state.kind("desires") is FieldKind.UNKNOWN
    bounds = {(c.target, c.relation, c.value) for c in state.constraints}
    assert bounds == {("intention", "at_least", 1.5), ("desire", "at_least", 1.5)}
    assert state.beliefs.items[0].text == "It was exactly what I was looking for."
    assert good.dialogue.profile is not None and good.dialogue.profile.source == "self_report"
    others = items["inspired:20200101-000001_1_live"]
    (other_state,) = others.states.values()
    assert {c.target for c in other_state.constraints} == {"intention"}
    rejected = items["inspired:20200101-000002_2_live"]
    (rejected_state,) = rejected.states.values()
    assert rejected_state.intentions.items[0].score == 0.0
    assert [(c.relation, c.value) for c in rejected_state.constraints] == [("at_most", 0.5)]


@pytest.mark.parametrize(
    ("sentence", "text"),
    [
        ("I'll give $0.05.", "donate $0.05 to Save the Children"),
        ("I'd donate 50 cents of my payment.", "donate $0.50 to Save the Children"),
        ("I will donate 5 dollars", "donate $5 to Save the Children"),
        ("Half of whatever I get.", "donate to Save the Children"),
    ],
)
def test_p4g_amount_in_dollars_or_cents(sentence: str, text: str) -> None:
    # Catches: an amount written in cents read as dollars, or an invented amount.
    item = p4g.label(_p4g_dialogue([[("provide-donation-amount", sentence)]]))
    assert _intention(item, 1)[0] == text
