"""FailedESConv: the emotional-support conversations ESConv's authors dropped as failures.

``esconv/FailedESConv.json`` (one JSON array, 196 dialogues) keeps the original ESConv layout:
``{"speaker": "speaker"|"listener", "annotation": {...}, "content"}`` per utterance, where the
``speaker`` is the seeker (the user) and the ``listener`` the supporter. Unlike the Hugging Face
splits it keeps the seeker's per-turn helpfulness ``feedback`` (1-5, on some seeker rows), which
becomes ``ESConvUtteranceLabels.feedback``. These dialogues are the negative outcomes ESConv's
1,300 lack: most seekers' final intensity is no lower than the initial one.

Not registered with the other corpora (it is no separate release); read it with :func:`load`.
Dialogue ids are ``failed_esconv:<position in the file>``; the corpus is ``failed_esconv``.
"""

from __future__ import annotations

from pathlib import Path

from cogwm.corpora.common import task_of
from cogwm.corpora.esconv.loader import NAME as ESCONV
from cogwm.corpora.esconv.loader import SEEKER_SURVEY
from cogwm.corpora.readers import Row, input_error, read_json, require_file
from cogwm.schema import Dialogue, Role, Utterance
from cogwm.schema.labels import ESConvMeta, ESConvSurvey, ESConvUtteranceLabels

NAME = "failed_esconv"
FILE = "FailedESConv.json"
SPEAKER_ROLES: dict[str, Role] = {"speaker": Role.USER, "listener": Role.AGENT}

_DIALOGUE_FIELDS = (
    "experience_type",
    "emotion_type",
    "problem_type",
    "situation",
    "survey_score",
    "dialog",
)


def load(corpus_dir: Path) -> list[Dialogue]:
    """All dialogues of ``FailedESConv.json``, in file order.

    Args:
        corpus_dir: The ``esconv`` folder.

    Raises:
        InputError: A missing file or a malformed record, named with its position; feedback on
            a supporter row or outside 1-5.
    """
    path = require_file(corpus_dir / FILE)
    records = read_json(path)
    if not isinstance(records, list):
        raise input_error(path, None, "a JSON array of dialogues", type(records).__name__)
    return [_dialogue(path, position, record) for position, record in enumerate(records)]


def _dialogue(path: Path, position: int, record: object) -> Dialogue:
    if not isinstance(record, dict):
        raise input_error(path, f"dialogue {position}", "a JSON object", type(record).__name__)
    row = Row(path, f"dialogue {position}", record)
    row.check_keys(_DIALOGUE_FIELDS)
    entries = row.sequence("dialog")
    utterances = [_utterance(row, i, entry) for i, entry in enumerate(entries)]
    return Dialogue(
        id=f"{NAME}:{position}",
        corpus=NAME,
        task=task_of(ESCONV),
        utterances=utterances,
        meta=ESConvMeta(
            experience_type=row.text("experience_type"),
            emotion_type=row.text("emotion_type"),
            problem_type=row.text("problem_type"),
            situation=row.text("situation"),
            survey=_survey(row.sub("survey_score", "survey_score")),
        ),
    )


def _utterance(dialogue: Row, index: int, entry: object) -> Utterance:
    if not isinstance(entry, dict):
        raise dialogue.error(f"an object at dialog[{index}]", entry)
    row = Row(dialogue.path, f"{dialogue.where}, dialog[{index}]", entry)
    row.check_keys(("speaker", "annotation", "content"))
    speaker = row.choice("speaker", SPEAKER_ROLES)
    annotation = row.sub("annotation", "annotation")
    annotation.check_keys((), optional=("strategy", "feedback"))
    strategy = annotation.text("strategy") if "strategy" in annotation.values else None
    feedback = (
        annotation.integer("feedback", low=1, high=5) if "feedback" in annotation.values else None
    )
    if SPEAKER_ROLES[speaker] is Role.USER and strategy is not None:
        raise row.error("no strategy on a seeker row", strategy)
    if SPEAKER_ROLES[speaker] is Role.AGENT and feedback is not None:
        raise row.error("no feedback on a supporter row", feedback)
    return Utterance(
        index=index,
        speaker=speaker,
        role=SPEAKER_ROLES[speaker],
        # The original file ends most utterances with a newline that the HF splits drop.
        text=row.text("content").strip(),
        labels=ESConvUtteranceLabels(strategy=strategy, feedback=feedback),
    )


def _survey(row: Row) -> ESConvSurvey:
    row.check_keys(("seeker", "supporter"))
    seeker = row.sub("seeker", "seeker")
    supporter = row.sub("supporter", "supporter")
    seeker.check_keys((), optional=SEEKER_SURVEY)
    supporter.check_keys((), optional=("relevance",))

    def score(part: Row, key: str, low: int = 1) -> int | None:
        return part.integer(key, low=low, high=5) if key in part.values else None

    return ESConvSurvey(
        initial_emotion_intensity=score(seeker, "initial_emotion_intensity"),
        final_emotion_intensity=score(seeker, "final_emotion_intensity"),
        empathy=score(seeker, "empathy"),
        relevance=score(seeker, "relevance"),
        supporter_relevance=score(supporter, "relevance", low=0),
    )


def feedback_ratings(dialogue: Dialogue) -> list[tuple[int, int]]:
    """The dialogue's (utterance index, rating) pairs, in order."""
    return [
        (u.index, u.labels.feedback)
        for u in dialogue.utterances
        if isinstance(u.labels, ESConvUtteranceLabels) and u.labels.feedback is not None
    ]
