"""Original corpus labels, typed: one utterance-label and one dialogue-metadata model per corpus.

Each model carries a ``corpus`` literal so that a stored dialogue round-trips to the right type.
Field names follow the raw files; automatic (non-human) annotations say so in their descriptions.
Empty cells and the corpora's own "n/a" markers are ``None``: unknown, never a default value.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from cogwm.schema.base import Record

# --- ESConv ------------------------------------------------------------------------------


class ESConvUtteranceLabels(Record):
    corpus: Literal["esconv"] = "esconv"
    strategy: str | None = Field(default=None, description="Supporter strategy (sys rows only).")
    feedback: int | None = Field(
        default=None,
        description="The seeker's 1-5 rating of how helpful the supporter's last turns were "
        "(seeker rows; only FailedESConv.json keeps these ratings).",
    )


class ESConvSurvey(Record):
    """``survey_score``: the seeker's self-reports (1-5) and the supporter's relevance rating."""

    initial_emotion_intensity: int | None = None
    final_emotion_intensity: int | None = None
    empathy: int | None = None
    relevance: int | None = None
    supporter_relevance: int | None = None


class ESConvMeta(Record):
    corpus: Literal["esconv"] = "esconv"
    experience_type: str
    emotion_type: str
    problem_type: str
    situation: str
    survey: ESConvSurvey
    seeker_question1: str = ""
    seeker_question2: str = ""
    supporter_question1: str = ""
    supporter_question2: str = ""


# --- PersuasionForGood ----------------------------------------------------------------------


class P4GSentence(Record):
    """One row of ``300_dialog.xlsx``: a sentence with its act labels."""

    text: str
    er_label_1: str | None = Field(default=None, description="Persuader act (human).")
    ee_label_1: str | None = Field(default=None, description="Persuadee act (human).")
    er_label_2: str | None = None
    ee_label_2: str | None = None
    neg: float | None = Field(default=None, description="Automatic VADER score, not human.")
    neu: float | None = Field(default=None, description="Automatic VADER score, not human.")
    pos: float | None = Field(default=None, description="Automatic VADER score, not human.")


class P4GUtteranceLabels(Record):
    corpus: Literal["persuasionforgood"] = "persuasionforgood"
    turn: int = Field(description="The corpus's own Turn column (a persuader/persuadee pair).")
    sentences: list[P4GSentence] | None = Field(
        default=None,
        description="Sentence rows of 300_dialog.xlsx with this utterance's (B2, Turn, B4) key "
        "(the 300 annotated dialogues only).",
    )
    sentences_match_text: bool | None = Field(
        default=None,
        description="Whether the annotated sentences, joined, spell this utterance's "
        "full_dialog.csv text (whitespace ignored). False where the annotated file puts a "
        "sentence under the other speaker or the next turn.",
    )


class P4GParticipant(Record):
    """One row of ``full_info.csv`` (plus ``300_info.xlsx`` for the annotated dialogues)."""

    user_id: str = Field(description="B3.")
    actual_donation: float = Field(description="B6: dollars donated after the task.")
    intended_donation: float | None = Field(
        default=None, description="B5 of 300_info.xlsx: amount stated in the dialogue (human)."
    )
    num_turns: int = Field(description="B7 of full_info.csv.")
    num_turns_annotated: int | None = Field(default=None, description="B7 of 300_info.xlsx.")
    traits: dict[str, float | str | None] = Field(
        default_factory=dict,
        description="The '.x' columns of full_info.csv under their own names (pre-task "
        "self-report: Big Five 1-5, moral foundations and values 1-6, decision style 1-5, "
        "demographics).",
    )


class P4GMeta(Record):
    corpus: Literal["persuasionforgood"] = "persuasionforgood"
    annotated: bool = Field(description="One of the 300 dialogues with sentence-level labels.")
    marked_bad: bool = Field(
        default=False, description="The release prefixes this dialogue's id (B2) with 'BAD_'."
    )
    persuader: P4GParticipant
    persuadee: P4GParticipant


# --- DailyDialog --------------------------------------------------------------------------


class DailyDialogUtteranceLabels(Record):
    corpus: Literal["dailydialog"] = "dailydialog"
    emotion: str = Field(description="'no emotion' or one of the six emotions (human).")
    act: str = Field(description="inform, question, directive or commissive (human).")


class DailyDialogMeta(Record):
    corpus: Literal["dailydialog"] = "dailydialog"
    topic: str = Field(description="The dialogue's topic (ConvLab-3 'domains').")
    original_id: str = Field(description="<split>-<line index> in the original split files.")


# --- AnnoMI -------------------------------------------------------------------------------


class AnnoMIUtteranceLabels(Record):
    corpus: Literal["annomi"] = "annomi"
    utterance_id: int
    timestamp: str
    main_therapist_behaviour: str | None = Field(default=None, description="Therapist rows.")
    client_talk_type: str | None = Field(
        default=None, description="change, neutral or sustain (client rows)."
    )


class AnnoMIMeta(Record):
    corpus: Literal["annomi"] = "annomi"
    transcript_id: int
    mi_quality: str
    video_title: str
    video_url: str
    topic: str


# --- INSPIRED -----------------------------------------------------------------------------


class InspiredUtteranceLabels(Record):
    corpus: Literal["inspired"] = "inspired"
    utt_id: int
    turn_id: int
    text_with_placeholder: str
    movies: list[str] = Field(default_factory=list)
    genres: list[str] = Field(default_factory=list)
    people_names: list[str] = Field(default_factory=list)
    expert_label: str | None = Field(default=None, description="Recommender strategy (human).")
    second_label: str | None = None


class InspiredSurvey(Record):
    """Post-task surveys, joined rec_survey_id -> rec_demographic -> (seeker_id, recommender_id)."""

    rec_survey_id: str
    seek_survey_id: str = Field(
        description="As listed; not a valid key into the seeker files (that join mismatches)."
    )
    video_id_and_duration: str = Field(
        description="'movie_id' of the dialogue list: <YouTube id>SPLIT<seconds watched>."
    )
    recommender_id: str
    seeker_id: str
    recommender: dict[str, str] = Field(description="rec_demographic.tsv row.")
    recommender_personality: dict[str, float] | None = Field(
        default=None, description="rec_personality.tsv row (pre-task)."
    )
    seeker: dict[str, str] | None = Field(
        default=None, description="seeker_demographic.tsv row (case, reason, demographics)."
    )
    reason: str | None = Field(default=None, description="Seeker's reason to accept or reject.")
    partner_perception: dict[str, str] | None = Field(
        default=None,
        description="seeker_partner_perception.tsv: Likert ratings of the recommender.",
    )
    seeker_personality: dict[str, float] | None = Field(
        default=None, description="seeker_personality.tsv row (pre-task; Big Five 1-5, others 1-6)."
    )


class InspiredMeta(Record):
    corpus: Literal["inspired"] = "inspired"
    dialog_id: str = Field(description="As in the files, with its '.pkl' suffix.")
    fine_label: str
    coarse_label: str
    movie_id: str = Field(description="YouTube id of the recommended movie's trailer.")
    movie_dict: str = Field(default="", description="Python-literal text, kept verbatim.")
    genre_dict: str = ""
    actor_dict: str = ""
    director_dict: str = ""
    others_dict: str = ""
    survey: InspiredSurvey | None = None


UtteranceLabels = Annotated[
    ESConvUtteranceLabels
    | P4GUtteranceLabels
    | DailyDialogUtteranceLabels
    | AnnoMIUtteranceLabels
    | InspiredUtteranceLabels,
    Field(discriminator="corpus"),
]

DialogueMeta = Annotated[
    ESConvMeta | P4GMeta | DailyDialogMeta | AnnoMIMeta | InspiredMeta,
    Field(discriminator="corpus"),
]
