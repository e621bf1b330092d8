"""INSPIRED (Hayati et al., EMNLP 2020): movie recommendation, SEEKER = user.

Reads ``dialog_data/{dev,test}.tsv`` (the train text is not distributed) and the surveys in
``survey_data/``. Quirks handled here:

- The dialogue TSVs hold unescaped quote characters, so they are read with ``QUOTE_NONE``.
  The survey TSVs, on the contrary, quote cells that contain tabs or quotes (four rows of
  ``rec_demographic.tsv`` hold a tab inside a quoted degree), so they are read with standard
  quoting; read with ``QUOTE_NONE`` those four rows shift by two columns and fail to join.
- Per-dialogue fields (outcome, trailer id, entity dicts) repeat on every row; one dev row
  holds ``'nan'`` (and empty dicts) instead, so the dialogue's value is the one its other rows
  agree on. Rows that disagree otherwise are an error.
- Surveys join ``rec_survey_id`` -> ``rec_demographic.tsv`` (``seeker_id``, ``recommender_id``)
  -> the seeker files on (``seeker_id``, ``recommender_id``). The listed ``seek_survey_id`` is
  kept but not used: joined on it, outcomes disagree for most dialogues.

The seeker's Big Five (``seeker_personality.tsv``, observed range 1-5 although the survey
README gives 1-6 for the whole questionnaire) becomes ``Dialogue.profile``.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

from cogwm.corpora.common import big_five, corpus_profile, distribution, task_of
from cogwm.corpora.readers import Row, group_by, read_table, require_dir
from cogwm.schema import BigFive, Dialogue, Role, Utterance
from cogwm.schema.labels import InspiredMeta, InspiredSurvey, InspiredUtteranceLabels

NAME = "inspired"
SPLITS: tuple[str, ...] = ("dev", "test")
SPEAKER_ROLES: dict[str, Role] = {"SEEKER": Role.USER, "RECOMMENDER": Role.AGENT}
FINE_LABELS: tuple[str, ...] = (
    "accept_rating_good",
    "accept_rating_mod",
    "accept_uninterested",
    "accept_others",
    "reject",
)
COARSE_LABELS: tuple[str, ...] = ("accept_new", "reject_new")
#: The marker one dev row carries instead of its dialogue's values.
NAN_CELL = "nan"
ID_SUFFIX = ".pkl"

BIG_FIVE_COLUMNS: dict[str, str] = {
    "openness": "Open",
    "conscientiousness": "Conscientious",
    "extraversion": "Extrovert",
    "agreeableness": "Agreeable",
    "neuroticism": "Neurotic",
}

_DIALOGUE_COLUMNS = (
    "dialog_id",
    "utt_id",
    "speaker",
    "turn_id",
    "text",
    "text_with_placeholder",
    "movies",
    "genres",
    "people_names",
    "movie_dict",
    "genre_dict",
    "actor_dict",
    "director_dict",
    "others_dict",
    "expert_label",
    "second_label",
    "fine_label",
    "coarse_label",
    "movie_id",
)
_CONSTANT_COLUMNS = (
    "fine_label",
    "coarse_label",
    "movie_id",
    "movie_dict",
    "genre_dict",
    "actor_dict",
    "director_dict",
    "others_dict",
)
_REQUIRED_CONSTANTS = ("fine_label", "coarse_label", "movie_id")
_LIST_FILE = "list_of_dialog_ids_with_movie_id_all.tsv"
_SURVEY_KEYS = ("seeker_survey_id", "role", "seeker_id", "recommender_id")

K = TypeVar("K", bound=Hashable)
_JOIN_KEYS = ("seeker_id", "recommender_id")


class _Surveys(NamedTuple):
    listed: dict[str, Row]  # dialog_id -> list file row
    recommender: dict[str, Row]  # rec_survey_id -> rec_demographic row
    seeker: dict[tuple[str, str], Row]  # (seeker_id, recommender_id) -> seeker_demographic row
    perception: dict[tuple[str, str], Row]
    seeker_personality: dict[str, Row]  # User_ID -> row
    recommender_personality: dict[str, Row]


def load(corpus_dir: Path) -> list[Dialogue]:
    """The dev and test dialogues (198) with strategies, outcome and joined surveys.

    Args:
        corpus_dir: The ``inspired`` folder (holding ``dialog_data/`` and ``survey_data/``).

    Raises:
        InputError: A missing file, a malformed row, per-dialogue fields that disagree, or a
            dialogue missing from the survey list.
    """
    dialog_dir = require_dir(corpus_dir / "dialog_data", "dev.tsv and test.tsv")
    surveys = _read_surveys(require_dir(corpus_dir / "survey_data", "the survey TSV files"))
    dialogues: list[Dialogue] = []
    for split in SPLITS:
        rows = read_table(
            dialog_dir / f"{split}.tsv", _DIALOGUE_COLUMNS, delimiter="\t", quoting=csv.QUOTE_NONE
        )
        for dialog_id, group in group_by(rows, lambda r: r.text("dialog_id")).items():
            dialogues.append(_dialogue(dialog_id, split, group, surveys))
    return dialogues


def _read_surveys(survey_dir: Path) -> _Surveys:
    def table(name: str, *required: str) -> list[Row]:
        # Standard quoting: these files quote cells holding tabs or quote characters.
        return read_table(survey_dir / name, required, delimiter="\t")

    def pair(row: Row) -> tuple[str, str]:
        return (row.text("seeker_id"), row.text("recommender_id"))

    def user(row: Row) -> str:
        return row.text("User_ID")

    personality = ("User_ID", *BIG_FIVE_COLUMNS.values())
    return _Surveys(
        listed=_index(
            table(
                _LIST_FILE, "dialog_id", "rec_survey_id", "seek_survey_id", "fine_label", "movie_id"
            ),
            lambda r: r.text("dialog_id"),
        ),
        recommender=_index(
            table("rec_demographic.tsv", "rec_survey_id", *_JOIN_KEYS),
            lambda r: r.text("rec_survey_id"),
        ),
        seeker=_index(table("seeker_demographic.tsv", *_JOIN_KEYS, "case", "reason"), pair),
        perception=_index(table("seeker_partner_perception.tsv", *_JOIN_KEYS, "case"), pair),
        seeker_personality=_index(table("seeker_personality.tsv", *personality), user),
        recommender_personality=_index(table("rec_personality.tsv", *personality), user),
    )


def _index(rows: list[Row], key: Callable[[Row], K]) -> dict[K, Row]:
    index: dict[K, Row] = {}
    for row in rows:
        value = key(row)
        if value in index:
            raise row.error(f"a key not used by an earlier row ({index[value].where})", value)
        index[value] = row
    return index


def _dialogue(dialog_id: str, split: str, rows: list[Row], surveys: _Surveys) -> Dialogue:
    if not dialog_id.strip():
        raise rows[0].error("a dialog_id", dialog_id)
    constants = {column: _constant(rows, column) for column in _CONSTANT_COLUMNS}
    fine = constants["fine_label"]
    if fine not in FINE_LABELS:
        raise rows[0].error(f"'fine_label' to be one of {list(FINE_LABELS)}", fine)
    if constants["coarse_label"] not in COARSE_LABELS:
        raise rows[0].error(
            f"'coarse_label' to be one of {list(COARSE_LABELS)}", constants["coarse_label"]
        )
    utterances = [_utterance(row, index) for index, row in enumerate(rows)]
    _check_order(rows, utterances)
    joined = _survey(dialog_id, fine, rows[0], surveys)
    short_id = dialog_id.removesuffix(ID_SUFFIX)
    return Dialogue(
        id=f"{NAME}:{short_id}",
        corpus=NAME,
        split=split,
        task=task_of(NAME),
        utterances=utterances,
        meta=InspiredMeta(
            dialog_id=dialog_id,
            fine_label=fine,
            coarse_label=constants["coarse_label"],
            movie_id=constants["movie_id"],
            movie_dict=constants["movie_dict"],
            genre_dict=constants["genre_dict"],
            actor_dict=constants["actor_dict"],
            director_dict=constants["director_dict"],
            others_dict=constants["others_dict"],
            survey=joined.survey,
        ),
        profile=corpus_profile(joined.seeker_big_five),
    )


def _constant(rows: list[Row], column: str) -> str:
    """The value a dialogue's rows agree on, ignoring 'nan' and empty cells."""
    values = {row.text(column) for row in rows} - {NAN_CELL, ""}
    if len(values) > 1:
        bad = next(row for row in rows if row.text(column) != rows[0].text(column))
        raise bad.error(f"the same {column!r} on every row of the dialogue", sorted(values))
    if not values and column in _REQUIRED_CONSTANTS:
        raise rows[0].error(f"a value in {column!r} on some row of the dialogue")
    return values.pop() if values else ""


def _utterance(row: Row, index: int) -> Utterance:
    speaker = row.choice("speaker", SPEAKER_ROLES)
    return Utterance(
        index=index,
        speaker=speaker,
        role=SPEAKER_ROLES[speaker],
        text=row.text("text"),
        labels=InspiredUtteranceLabels(
            utt_id=row.integer("utt_id", low=0),
            turn_id=row.integer("turn_id", low=0),
            text_with_placeholder=row.text("text_with_placeholder"),
            movies=_items(row, "movies"),
            genres=_items(row, "genres"),
            people_names=_items(row, "people_names"),
            expert_label=row.optional_text("expert_label"),
            second_label=row.optional_text("second_label"),
        ),
    )


def _items(row: Row, column: str) -> list[str]:
    return [item.strip() for item in row.text(column).split(";") if item.strip()]


def _check_order(rows: list[Row], utterances: list[Utterance]) -> None:
    ids = [u.labels.utt_id for u in utterances if isinstance(u.labels, InspiredUtteranceLabels)]
    for row, previous, current in zip(rows[1:], ids, ids[1:], strict=False):
        if current <= previous:
            raise row.error(f"a utt_id above {previous} (rows in order)", current)


class _Joined(NamedTuple):
    survey: InspiredSurvey
    seeker_big_five: BigFive | None


def _survey(dialog_id: str, outcome: str, first: Row, surveys: _Surveys) -> _Joined:
    listed = surveys.listed.get(dialog_id)
    if listed is None:
        raise first.error(f"{dialog_id} to be listed in survey_data/{_LIST_FILE}")
    if listed.text("fine_label") != outcome:
        raise listed.error(
            f"fine_label {outcome!r} as in the dialogue file", listed.text("fine_label")
        )
    recommender = surveys.recommender.get(listed.text("rec_survey_id"))
    if recommender is None:
        raise listed.error(
            "a rec_survey_id that rec_demographic.tsv has", listed.text("rec_survey_id")
        )
    seeker_id, recommender_id = recommender.text("seeker_id"), recommender.text("recommender_id")
    seeker = surveys.seeker.get((seeker_id, recommender_id))
    perception = surveys.perception.get((seeker_id, recommender_id))
    for answer in (seeker, perception):
        if answer is not None and answer.text("case") != outcome:
            raise answer.error(f"case {outcome!r}, the outcome of {dialog_id}", answer.text("case"))
    seeker_traits = surveys.seeker_personality.get(seeker_id)
    recommender_traits = surveys.recommender_personality.get(recommender_id)
    survey = InspiredSurvey(
        rec_survey_id=listed.text("rec_survey_id"),
        seek_survey_id=listed.text("seek_survey_id"),
        video_id_and_duration=listed.text("movie_id"),
        recommender_id=recommender_id,
        seeker_id=seeker_id,
        recommender=_cells(recommender, ("rec_survey_id", "recommender_id", "seeker_id")),
        recommender_personality=_scores(recommender_traits) if recommender_traits else None,
        seeker=_cells(seeker, ("seeker_id", "recommender_id")) if seeker else None,
        reason=seeker.optional_text("reason") if seeker else None,
        partner_perception=_cells(perception, (*_SURVEY_KEYS, "case")) if perception else None,
        seeker_personality=_scores(seeker_traits) if seeker_traits else None,
    )
    return _Joined(survey, big_five(seeker_traits, BIG_FIVE_COLUMNS) if seeker_traits else None)


def _cells(row: Row, keys: Sequence[str]) -> dict[str, str]:
    """The row's cells except its join keys."""
    return {column: row.text(column) for column in row.values if column not in keys}


def _scores(row: Row) -> dict[str, float]:
    return {column: row.number(column) for column in row.values if column != "User_ID"}


def label_distributions(dialogues: Sequence[Dialogue]) -> dict[str, dict[str, int]]:
    """Counts of outcomes, recommender strategies and survey coverage."""
    metas = [d.meta for d in dialogues if isinstance(d.meta, InspiredMeta)]
    labels = [
        u.labels
        for d in dialogues
        for u in d.utterances
        if isinstance(u.labels, InspiredUtteranceLabels)
    ]
    return {
        "fine_label": distribution(m.fine_label for m in metas),
        "coarse_label": distribution(m.coarse_label for m in metas),
        "expert_label": distribution(
            lab.expert_label for lab in labels if lab.expert_label is not None
        ),
        "second_label": distribution(
            lab.second_label for lab in labels if lab.second_label is not None
        ),
        "seeker_survey_joined": distribution(
            "yes" if m.survey is not None and m.survey.seeker is not None else "no" for m in metas
        ),
        "split": distribution(d.split for d in dialogues),
    }


def user_traits(dialogue: Dialogue) -> Mapping[str, object] | None:
    """The seeker's ``seeker_personality.tsv`` row; None without a joined survey or row."""
    meta = dialogue.meta
    if isinstance(meta, InspiredMeta) and meta.survey is not None:
        return meta.survey.seeker_personality
    return None
