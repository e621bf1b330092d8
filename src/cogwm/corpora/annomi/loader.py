"""AnnoMI (Wu et al., 2022/2023): motivational-interviewing sessions, client = user.

Reads ``AnnoMI-simple.csv``: one row per utterance with the therapist's main behaviour or the
client's talk type (change / neutral / sustain); the file's ``n/a`` on the other speaker's
rows becomes ``None``. Dialogue ids are ``annomi:<transcript_id>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cogwm.corpora.common import distribution, task_of
from cogwm.corpora.readers import Row, group_by, read_table
from cogwm.schema import Dialogue, Role, Utterance
from cogwm.schema.labels import AnnoMIMeta, AnnoMIUtteranceLabels

NAME = "annomi"
FILE = "AnnoMI-simple.csv"
SPEAKER_ROLES: dict[str, Role] = {"client": Role.USER, "therapist": Role.AGENT}
NOT_APPLICABLE = "n/a"
THERAPIST_BEHAVIOURS: tuple[str, ...] = ("question", "reflection", "therapist_input", "other")
CLIENT_TALK_TYPES: tuple[str, ...] = ("change", "neutral", "sustain")
MI_QUALITIES: tuple[str, ...] = ("high", "low")

_TRANSCRIPT_FIELDS = ("mi_quality", "video_title", "video_url", "topic")
_COLUMNS = (
    "transcript_id",
    *_TRANSCRIPT_FIELDS,
    "utterance_id",
    "interlocutor",
    "timestamp",
    "utterance_text",
    "main_therapist_behaviour",
    "client_talk_type",
)


def load(corpus_dir: Path) -> list[Dialogue]:
    """All transcripts in file order.

    Args:
        corpus_dir: The ``annomi`` folder.

    Raises:
        InputError: A missing file, a malformed row, a label outside the coding scheme, or a
            transcript whose per-transcript fields change from row to row.
    """
    rows = read_table(corpus_dir / FILE, _COLUMNS)
    by_transcript = group_by(rows, lambda r: r.integer("transcript_id", low=0))
    return [_dialogue(transcript_id, group) for transcript_id, group in by_transcript.items()]


def _dialogue(transcript_id: int, rows: list[Row]) -> Dialogue:
    first = rows[0]
    for row in rows[1:]:
        for field in _TRANSCRIPT_FIELDS:
            if row.text(field) != first.text(field):
                raise row.error(
                    f"{field!r} = {first.text(field)!r} as on the transcript's first row",
                    row.text(field),
                )
    utterances = [_utterance(row, index) for index, row in enumerate(rows)]
    ids = [u.labels.utterance_id for u in utterances if isinstance(u.labels, AnnoMIUtteranceLabels)]
    for row, previous, current in zip(rows[1:], ids, ids[1:], strict=False):
        if current <= previous:
            raise row.error(f"an utterance_id above {previous} (rows in order)", current)
    return Dialogue(
        id=f"{NAME}:{transcript_id}",
        corpus=NAME,
        task=task_of(NAME),
        utterances=utterances,
        meta=AnnoMIMeta(
            transcript_id=transcript_id,
            mi_quality=first.choice("mi_quality", MI_QUALITIES),
            video_title=first.text("video_title"),
            video_url=first.text("video_url"),
            topic=first.text("topic"),
        ),
    )


def _utterance(row: Row, index: int) -> Utterance:
    speaker = row.choice("interlocutor", SPEAKER_ROLES)
    is_client = speaker == "client"
    behaviour = row.choice(
        "main_therapist_behaviour",
        (NOT_APPLICABLE,) if is_client else THERAPIST_BEHAVIOURS,
    )
    talk_type = row.choice(
        "client_talk_type", CLIENT_TALK_TYPES if is_client else (NOT_APPLICABLE,)
    )
    return Utterance(
        index=index,
        speaker=speaker,
        role=SPEAKER_ROLES[speaker],
        text=row.text("utterance_text"),
        labels=AnnoMIUtteranceLabels(
            utterance_id=row.integer("utterance_id", low=0),
            timestamp=row.text("timestamp"),
            main_therapist_behaviour=None if is_client else behaviour,
            client_talk_type=talk_type if is_client else None,
        ),
    )


def label_distributions(dialogues: Sequence[Dialogue]) -> dict[str, dict[str, int]]:
    """Counts of client talk types, therapist behaviours, MI quality and topics."""
    labels = [
        u.labels
        for d in dialogues
        for u in d.utterances
        if isinstance(u.labels, AnnoMIUtteranceLabels)
    ]
    metas = [d.meta for d in dialogues if isinstance(d.meta, AnnoMIMeta)]
    return {
        "client_talk_type": distribution(
            lab.client_talk_type for lab in labels if lab.client_talk_type is not None
        ),
        "main_therapist_behaviour": distribution(
            lab.main_therapist_behaviour
            for lab in labels
            if lab.main_therapist_behaviour is not None
        ),
        "mi_quality": distribution(m.mi_quality for m in metas),
        "topic": distribution(m.topic for m in metas),
    }
