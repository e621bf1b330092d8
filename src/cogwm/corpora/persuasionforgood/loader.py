"""PersuasionForGood (Wang et al., ACL 2019): donation persuasion, persuadee = user.

Reads ``FullData/full_dialog.csv`` (one row per utterance, 1,017 dialogues),
``FullData/full_info.csv`` (both participants of every dialogue: donation, traits),
``AnnotatedData/300_dialog.xlsx`` (sentence-level act labels of 300 dialogues) and
``AnnotatedData/300_info.xlsx`` (intended donation ``B5``). The ``neg/neu/pos`` sentence columns
are automatic VADER scores and are kept as such, not as human labels.

The persuadee's Big Five (``full_info.csv``, pre-task self-report, observed range 1-5, the
profile's own scale) becomes ``Dialogue.profile`` with ``source="corpus"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from cogwm.corpora.common import big_five, corpus_profile, distribution, task_of
from cogwm.corpora.readers import (
    Row,
    as_number,
    group_by,
    input_error,
    read_table,
    read_xlsx,
    require_dir,
)
from cogwm.schema import BigFive, Dialogue, Role, Utterance
from cogwm.schema.labels import P4GMeta, P4GParticipant, P4GSentence, P4GUtteranceLabels

NAME = "persuasionforgood"
PERSUADER, PERSUADEE = 0, 1
SPEAKERS: dict[int, str] = {PERSUADER: "persuader", PERSUADEE: "persuadee"}
ROLES: dict[int, Role] = {PERSUADER: Role.AGENT, PERSUADEE: Role.USER}
#: Dialogue ids; 27 dialogues of the release carry the authors' "BAD_" prefix.
DIALOGUE_ID = re.compile(r"(BAD_)?\d{8}-\d{6}_\d+_live")
BAD_PREFIX = "BAD_"

#: Profile trait -> full_info.csv column. The questionnaire's scale is 1-5, like the profile's.
BIG_FIVE_COLUMNS: dict[str, str] = {
    "openness": "open.x",
    "conscientiousness": "conscientious.x",
    "extraversion": "extrovert.x",
    "agreeableness": "agreeable.x",
    "neuroticism": "neurotic.x",
}

_SENTENCE_LABELS = ("er_label_1", "ee_label_1", "er_label_2", "ee_label_2")
_SENTIMENT = ("neg", "neu", "pos")


class _UtteranceKey(NamedTuple):
    dialogue: str
    turn: int
    role: int


class _SentenceGroup(NamedTuple):
    row: Row  # the first sheet row of the group, to point at in errors
    sentences: list[P4GSentence]


class _Participant(NamedTuple):
    record: P4GParticipant
    big_five: BigFive | None


def load(corpus_dir: Path) -> list[Dialogue]:
    """All 1,017 dialogues in ``full_dialog.csv`` order, with labels and participants joined.

    Args:
        corpus_dir: The ``persuasionforgood`` folder (holding ``FullData/`` and ``AnnotatedData/``).

    Raises:
        InputError: A missing file, a malformed row, or files that do not join (a dialogue
            without participant rows, labels for an utterance that does not exist, ...).
    """
    full_dir = require_dir(corpus_dir / "FullData", "full_dialog.csv and full_info.csv")
    annotated_dir = require_dir(corpus_dir / "AnnotatedData", "300_dialog.xlsx and 300_info.xlsx")
    utterance_rows = read_table(full_dir / "full_dialog.csv", ("Unit", "Turn", "B4", "B2"))
    by_dialogue = group_by(utterance_rows, _dialogue_id)
    sentences = _sentences(annotated_dir / "300_dialog.xlsx")
    info_path = annotated_dir / "300_info.xlsx"
    intended = _annotated_info(info_path)
    participants = _participants(full_dir / "full_info.csv", set(by_dialogue), intended)
    _check_annotated(sentences, intended, utterance_rows, info_path)
    annotated = {key.dialogue for key in sentences}
    return [
        _dialogue(dialogue_id, rows, participants, sentences, dialogue_id in annotated)
        for dialogue_id, rows in by_dialogue.items()
    ]


def _dialogue_id(row: Row) -> str:
    value = row.text("B2")
    if not DIALOGUE_ID.fullmatch(value):
        raise row.error("a dialogue id like '20180904-045349_715_live' in 'B2'", value)
    return value


def _role(row: Row) -> int:
    return row.integer("B4", low=PERSUADER, high=PERSUADEE)


def _key(row: Row) -> _UtteranceKey:
    return _UtteranceKey(_dialogue_id(row), row.integer("Turn", low=0), _role(row))


def _dialogue(
    dialogue_id: str,
    rows: list[Row],
    participants: dict[tuple[str, int], _Participant],
    sentences: dict[_UtteranceKey, _SentenceGroup],
    annotated: bool,
) -> Dialogue:
    for role in (PERSUADER, PERSUADEE):
        if (dialogue_id, role) not in participants:
            raise rows[0].error(f"a {SPEAKERS[role]} row for {dialogue_id} in full_info.csv")
    seen: set[_UtteranceKey] = set()
    utterances: list[Utterance] = []
    for index, row in enumerate(rows):
        key = _key(row)
        if key in seen:
            raise row.error("one row per (B2, Turn, B4)", f"a second row for turn {key.turn}")
        seen.add(key)
        group = sentences.get(key) if annotated else None
        utterances.append(_utterance(row, index, key, group.sentences if group else None))
    persuadee = participants[(dialogue_id, PERSUADEE)]
    return Dialogue(
        id=f"{NAME}:{dialogue_id}",
        corpus=NAME,
        task=task_of(NAME),
        utterances=utterances,
        meta=P4GMeta(
            annotated=annotated,
            marked_bad=dialogue_id.startswith(BAD_PREFIX),
            persuader=participants[(dialogue_id, PERSUADER)].record,
            persuadee=persuadee.record,
        ),
        profile=corpus_profile(persuadee.big_five),
    )


def _utterance(
    row: Row, index: int, key: _UtteranceKey, sentences: list[P4GSentence] | None
) -> Utterance:
    text = row.text("Unit")
    matches = (
        None
        if sentences is None
        else _squeeze(" ".join(s.text for s in sentences)) == _squeeze(text)
    )
    return Utterance(
        index=index,
        speaker=SPEAKERS[key.role],
        role=ROLES[key.role],
        text=text,
        labels=P4GUtteranceLabels(turn=key.turn, sentences=sentences, sentences_match_text=matches),
    )


def _squeeze(text: str) -> str:
    return "".join(text.split())


def _sentences(path: Path) -> dict[_UtteranceKey, _SentenceGroup]:
    rows = read_xlsx(path, ("B2", "B4", "Turn", "Unit", *_SENTENCE_LABELS, *_SENTIMENT))
    grouped: dict[_UtteranceKey, _SentenceGroup] = {}
    for row in rows:
        sentence = P4GSentence(
            text=row.text("Unit"),
            er_label_1=row.optional_text("er_label_1"),
            ee_label_1=row.optional_text("ee_label_1"),
            er_label_2=row.optional_text("er_label_2"),
            ee_label_2=row.optional_text("ee_label_2"),
            neg=row.optional_number("neg"),
            neu=row.optional_number("neu"),
            pos=row.optional_number("pos"),
        )
        grouped.setdefault(_key(row), _SentenceGroup(row, [])).sentences.append(sentence)
    return grouped


class _AnnotatedInfo(NamedTuple):
    row: Row
    user_id: str
    intended_donation: float | None
    actual_donation: float
    num_turns: int | None


def _annotated_info(path: Path) -> dict[tuple[str, int], _AnnotatedInfo]:
    info: dict[tuple[str, int], _AnnotatedInfo] = {}
    for row in read_xlsx(path, ("B2", "B3", "B4", "B5", "B6", "B7")):
        key = (_dialogue_id(row), _role(row))
        if key in info:
            raise row.error("one row per (B2, B4)", f"a second row for {key[0]}")
        info[key] = _AnnotatedInfo(
            row=row,
            user_id=row.text("B3"),
            intended_donation=row.optional_number("B5"),
            actual_donation=row.number("B6"),
            num_turns=row.optional_integer("B7"),
        )
    return info


def _participants(
    path: Path, dialogue_ids: set[str], annotated: dict[tuple[str, int], _AnnotatedInfo]
) -> dict[tuple[str, int], _Participant]:
    participants: dict[tuple[str, int], _Participant] = {}
    for row in read_table(path, ("B2", "B3", "B4", "B6", "B7", *BIG_FIVE_COLUMNS.values())):
        key = (_dialogue_id(row), _role(row))
        if key[0] not in dialogue_ids:
            raise row.error("a dialogue that full_dialog.csv has", key[0])
        if key in participants:
            raise row.error("one row per (B2, B4)", f"a second row for {key[0]}")
        extra = annotated.get(key)
        record = P4GParticipant(
            user_id=row.text("B3"),
            actual_donation=row.number("B6"),
            intended_donation=extra.intended_donation if extra else None,
            num_turns=row.integer("B7", low=0),
            num_turns_annotated=extra.num_turns if extra else None,
            traits={c: _trait(row, c) for c in row.values if c.endswith(".x")},
        )
        if extra is not None:
            _check_same_participant(extra, record)
        traits = big_five(row, BIG_FIVE_COLUMNS) if key[1] == PERSUADEE else None
        participants[key] = _Participant(record, traits)
    return participants


def _check_same_participant(extra: _AnnotatedInfo, record: P4GParticipant) -> None:
    if extra.user_id != record.user_id:
        raise extra.row.error(f"B3 = {record.user_id!r} as in full_info.csv", extra.user_id)
    if abs(extra.actual_donation - record.actual_donation) > 1e-9:
        raise extra.row.error(
            f"B6 = {record.actual_donation} as in full_info.csv", extra.actual_donation
        )


def _trait(row: Row, column: str) -> float | str | None:
    value = row.text(column).strip()
    if not value:
        return None
    number = as_number(value)
    return value if number is None else number


def _check_annotated(
    sentences: dict[_UtteranceKey, _SentenceGroup],
    info: dict[tuple[str, int], _AnnotatedInfo],
    utterance_rows: list[Row],
    info_path: Path,
) -> None:
    known = {_key(row) for row in utterance_rows}
    for key, group in sentences.items():
        if key not in known:
            raise group.row.error(
                f"a {SPEAKERS[key.role]} utterance at turn {key.turn} of {key.dialogue} "
                "in full_dialog.csv"
            )
    with_sentences = {key.dialogue for key in sentences}
    for (dialogue_id, _), extra in info.items():
        if dialogue_id not in with_sentences:
            raise extra.row.error("a dialogue that 300_dialog.xlsx annotates", dialogue_id)
    with_info = {dialogue_id for dialogue_id, _ in info}
    missing = sorted(with_sentences - with_info)
    if missing:
        raise input_error(info_path, None, "rows for every dialogue of 300_dialog.xlsx", missing[0])


def count_annotated(dialogues: Sequence[Dialogue]) -> int:
    """How many dialogues are among the 300 with sentence-level labels."""
    return sum(1 for d in dialogues if isinstance(d.meta, P4GMeta) and d.meta.annotated)


def label_distributions(dialogues: Sequence[Dialogue]) -> dict[str, dict[str, int]]:
    """Counts of the human sentence labels and of donation behaviour."""
    sentences = [
        s
        for d in dialogues
        for u in d.utterances
        if isinstance(u.labels, P4GUtteranceLabels) and u.labels.sentences
        for s in u.labels.sentences
    ]
    metas = [d.meta for d in dialogues if isinstance(d.meta, P4GMeta)]
    return {
        "ee_label_1": distribution(s.ee_label_1 for s in sentences if s.ee_label_1 is not None),
        "er_label_1": distribution(s.er_label_1 for s in sentences if s.er_label_1 is not None),
        "marked_bad": distribution("yes" if m.marked_bad else "no" for m in metas),
        "persuadee_donated": distribution(
            "yes" if m.persuadee.actual_donation > 0 else "no" for m in metas
        ),
        "persuadee_intended_donation": distribution(
            None
            if m.persuadee.intended_donation is None
            else ("positive" if m.persuadee.intended_donation > 0 else "zero")
            for m in metas
            if m.annotated
        ),
    }


def user_traits(dialogue: Dialogue) -> Mapping[str, object] | None:
    """The persuadee's pre-task questionnaire row (Big Five and more); None without one."""
    meta = dialogue.meta
    if isinstance(meta, P4GMeta) and meta.persuadee is not None:
        return meta.persuadee.traits
    return None
