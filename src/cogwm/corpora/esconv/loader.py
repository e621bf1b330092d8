"""ESConv (Liu et al., ACL 2021): emotional-support conversations, seeker = user.

Reads ``hf_splits/{train,valid,test}.json``: JSON Lines despite the suffix, one dialogue per
line, in the Hugging Face layout (``{"text", "speaker": "usr"|"sys", "strategy"}`` per
utterance). Dialogue ids are ``esconv:<split>:<position in the split file>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cogwm.corpora.common import distribution, task_of
from cogwm.corpora.readers import Row, read_json_lines, require_dir
from cogwm.schema import Dialogue, Role, Utterance
from cogwm.schema.labels import ESConvMeta, ESConvSurvey, ESConvUtteranceLabels

NAME = "esconv"
SPLITS: tuple[str, ...] = ("train", "valid", "test")
SPEAKER_ROLES: dict[str, Role] = {"usr": Role.USER, "sys": Role.AGENT}

_DIALOGUE_FIELDS = (
    "experience_type",
    "emotion_type",
    "problem_type",
    "situation",
    "survey_score",
    "seeker_question1",
    "seeker_question2",
    "supporter_question1",
    "supporter_question2",
    "dialog",
)
#: The seeker's survey keys (the same in FailedESConv).
SEEKER_SURVEY = (
    "initial_emotion_intensity",
    "final_emotion_intensity",
    "empathy",
    "relevance",
)


def load(corpus_dir: Path) -> list[Dialogue]:
    """All dialogues of the three splits, in file order.

    Args:
        corpus_dir: The ``esconv`` folder (holding ``hf_splits/``).

    Raises:
        InputError: A missing file or a malformed line, named with its line number.
    """
    splits_dir = require_dir(corpus_dir / "hf_splits", "train.json, valid.json and test.json")
    dialogues: list[Dialogue] = []
    for split in SPLITS:
        rows = read_json_lines(splits_dir / f"{split}.json")
        dialogues.extend(_dialogue(row, split, position) for position, row in enumerate(rows))
    return dialogues


def _dialogue(row: Row, split: str, position: int) -> Dialogue:
    row.check_keys(_DIALOGUE_FIELDS)
    utterances = [
        _utterance(Row(row.path, f"{row.where}, dialog[{i}]", entry), i)
        for i, entry in enumerate(_objects(row, "dialog"))
    ]
    meta = ESConvMeta(
        experience_type=row.text("experience_type"),
        emotion_type=row.text("emotion_type"),
        problem_type=row.text("problem_type"),
        situation=row.text("situation"),
        survey=_survey(row.sub("survey_score", "survey_score")),
        seeker_question1=row.text("seeker_question1"),
        seeker_question2=row.text("seeker_question2"),
        supporter_question1=row.text("supporter_question1"),
        supporter_question2=row.text("supporter_question2"),
    )
    return Dialogue(
        id=f"{NAME}:{split}:{position}",
        corpus=NAME,
        split=split,
        task=task_of(NAME),
        utterances=utterances,
        meta=meta,
    )


def _objects(row: Row, column: str) -> list[dict[str, object]]:
    items = row.sequence(column)
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise row.error(f"an object at {column}[{i}]", item)
    return items


def _utterance(row: Row, index: int) -> Utterance:
    row.check_keys(("text", "speaker"), optional=("strategy",))
    speaker = row.choice("speaker", SPEAKER_ROLES)
    strategy = row.optional_text("strategy") if "strategy" in row.values else None
    return Utterance(
        index=index,
        speaker=speaker,
        role=SPEAKER_ROLES[speaker],
        text=row.text("text"),
        labels=ESConvUtteranceLabels(strategy=strategy),
    )


def _survey(row: Row) -> ESConvSurvey:
    row.check_keys(("seeker", "supporter"))
    seeker = row.sub("seeker", "seeker")
    supporter = row.sub("supporter", "supporter")
    seeker.check_keys((), optional=SEEKER_SURVEY)
    supporter.check_keys((), optional=("relevance",))
    return ESConvSurvey(
        initial_emotion_intensity=_score(seeker, "initial_emotion_intensity"),
        final_emotion_intensity=_score(seeker, "final_emotion_intensity"),
        empathy=_score(seeker, "empathy"),
        relevance=_score(seeker, "relevance"),
        # The supporters' own rating goes down to 0 in four dialogues of the release.
        supporter_relevance=_score(supporter, "relevance", low=0),
    )


def _score(row: Row, key: str, low: int = 1) -> int | None:
    return row.integer(key, low=low, high=5) if key in row.values else None


def label_distributions(dialogues: Sequence[Dialogue]) -> dict[str, dict[str, int]]:
    """Counts of the dialogue-level labels and of the supporter strategies."""
    metas = [d.meta for d in dialogues if isinstance(d.meta, ESConvMeta)]
    strategies = [
        u.labels.strategy
        for d in dialogues
        for u in d.utterances
        if u.role is Role.AGENT and isinstance(u.labels, ESConvUtteranceLabels)
    ]
    return {
        "emotion_type": distribution(m.emotion_type for m in metas),
        "problem_type": distribution(m.problem_type for m in metas),
        "experience_type": distribution(m.experience_type for m in metas),
        "initial_emotion_intensity": distribution(
            m.survey.initial_emotion_intensity for m in metas
        ),
        "final_emotion_intensity": distribution(m.survey.final_emotion_intensity for m in metas),
        "strategy": distribution(strategies),
    }


def situation(dialogue: Dialogue) -> str | None:
    """The seeker's own situation and problem type; None without ESConv metadata.

    The ``emotion_type`` is left out: it is the human label of the first seeker turn, so a
    prompt showing it would hand a model its target.
    """
    meta = dialogue.meta
    if isinstance(meta, ESConvMeta):
        return f"{meta.situation.strip()} (problem: {meta.problem_type})"
    return None
