"""Original corpus labels, kept typed: one utterance-label and one dialogue-metadata model per corpus.

Each model carries a ``corpus`` literal so that a stored dialogue round-trips to the right type.
Automatic (non-human) annotations are marked as such in their field descriptions.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from cogwm.schema.base import Record


class ESConvUtteranceLabels(Record):
    corpus: Literal["esconv"] = "esconv"
    strategy: str | None = Field(default=None, description="Supporter strategy (sys rows only).")


class ESConvSurvey(Record):
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


class P4GSentence(Record):
    text: str
    er_label_1: str | None = None
    ee_label_1: str | None = None
    er_label_2: str | None = None
    ee_label_2: str | None = None
    neg: float | None = Field(default=None, description="Automatic VADER score, not human.")
    neu: float | None = Field(default=None, description="Automatic VADER score, not human.")
    pos: float | None = Field(default=None, description="Automatic VADER score, not human.")


class P4GUtteranceLabels(Record):
    corpus: Literal["persuasionforgood"] = "persuasionforgood"
    turn: int = Field(description="The corpus's own Turn column (a persuader/persuadee pair).")
    sentences: list[P4GSentence] | None = Field(
        default=None, description="Sentence-level act labels (the 300 annotated dialogues only)."
    )


class P4GParticipant(Record):
    user_id: str
    actual_donation: float | None = None
    intended_donation: float | None = Field(default=None, description="B5, annotated set only.")
    num_turns: int | None = None
    traits: dict[str, float | str | None] = Field(default_factory=dict)


class P4GMeta(Record):
    corpus: Literal["persuasionforgood"] = "persuasionforgood"
    annotated: bool
    persuader: P4GParticipant | None = None
    persuadee: P4GParticipant | None = None


class DailyDialogUtteranceLabels(Record):
    corpus: Literal["dailydialog"] = "dailydialog"
    emotion: str
    act: str


class DailyDialogMeta(Record):
    corpus: Literal["dailydialog"] = "dailydialog"
    topic: str | None = None
    original_id: str


class AnnoMIUtteranceLabels(Record):
    corpus: Literal["annomi"] = "annomi"
    utterance_id: int
    timestamp: str
    main_therapist_behaviour: str | None = None
    client_talk_type: str | None = None


class AnnoMIMeta(Record):
    corpus: Literal["annomi"] = "annomi"
    transcript_id: int
    mi_quality: str
    video_title: str
    video_url: str
    topic: str


class InspiredUtteranceLabels(Record):
    corpus: Literal["inspired"] = "inspired"
    utt_id: int
    turn_id: int
    text_with_placeholder: str
    movies: list[str] = Field(default_factory=list)
    genres: list[str] = Field(default_factory=list)
    people_names: list[str] = Field(default_factory=list)
    expert_label: str | None = None
    second_label: str | None = None


class InspiredMeta(Record):
    corpus: Literal["inspired"] = "inspired"
    fine_label: str
    coarse_label: str
    movie_id: str
    reason: str | None = None
    seeker_personality: dict[str, float | str | None] = Field(default_factory=dict)
    partner_perception: dict[str, str | None] = Field(default_factory=dict)


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
