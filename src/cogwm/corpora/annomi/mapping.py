"""AnnoMI: change and sustain talk as directions, the target behaviour as desire/intention text.

AnnoMI does not split change talk into DARN-CAT subtypes, so a label fixes no single dimension's
value, only that the client's motivation moves toward (change) or away from (sustain) the target
behaviour. That is stored as a direction constraint on the intention (change commitment), the
dimension the MI task's good outcome is about; it is never a score. Where the agreement subset's
ten annotators split evenly, the label is not settled and no constraint is set.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from cogwm.corpora.annomi import annotators
from cogwm.corpora.annomi.annotators import UtteranceKey, UtteranceVotes
from cogwm.corpora.labels.common import StateCollector, constraint, items
from cogwm.corpora.labels.table import MappingRow, MappingTable
from cogwm.errors import InputError
from cogwm.schema import Dialogue, Role
from cogwm.schema.labels import AnnoMIMeta, AnnoMIUtteranceLabels
from cogwm.schema.partial import LabelledDialogue

_TURN = "the client turn of the labelled utterance"

TABLE = MappingTable(
    corpus="annomi",
    rows=(
        MappingRow(
            id="annomi.C1",
            column="client_talk_type",
            source="change",
            target="constraint",
            value="direction +1 on the intention",
            score=1.0,
            relation="direction",
            constraint_target="intention",
            turn=_TURN,
            exact=False,
            note="Change talk moves the client toward the change; which of B/D/I rises is not "
            "annotated, so the commitment (the MI outcome) carries the sign, never a value.",
        ),
        MappingRow(
            id="annomi.C2",
            column="client_talk_type",
            source="sustain",
            target="constraint",
            value="direction -1 on the intention",
            score=-1.0,
            relation="direction",
            constraint_target="intention",
            turn=_TURN,
            exact=False,
            note="Sustain talk argues for the status quo: the sign of annomi.C1 reversed.",
        ),
        MappingRow(
            id="annomi.C3",
            column="client_talk_type",
            source="neutral",
            target="none",
            value="no constraint",
            turn=_TURN,
            exact=False,
            note="Neutral talk says nothing about the direction of motivation.",
        ),
        MappingRow(
            id="annomi.C4",
            column="annotator votes",
            source="tie",
            target="none",
            value="no constraint",
            turn=_TURN,
            exact=False,
            note="In the agreement subset the ten annotators split evenly on a few utterances "
            "(AnnoMI-full.csv); the simple file's pick between them is not a human consensus.",
        ),
        MappingRow(
            id="annomi.C5",
            column="client_talk_type",
            source="change+sustain",
            target="none",
            value="no constraint",
            turn=_TURN,
            exact=False,
            note="A client turn of several utterances labelled change and sustain has no one "
            "direction.",
        ),
        MappingRow(
            id="annomi.D1",
            column="topic",
            source="*",
            target="desires",
            value="one desire item: the topic (target behaviour), no score",
            turn="every client turn",
            exact=True,
            note="The session's target behaviour is what the client's desire to change is "
            "about; exact as text, the score is not annotated.",
        ),
        MappingRow(
            id="annomi.I1",
            column="topic",
            source="*",
            target="intentions",
            value="one intention item: the topic (target behaviour), no score",
            turn="every client turn",
            exact=True,
            note="As annomi.D1, for the commitment to change.",
        ),
    ),
)

#: Talk type -> direction sign.
_SIGNS = {"change": 1, "sustain": -1}


def label(dialogue: Dialogue, votes: Mapping[UtteranceKey, UtteranceVotes]) -> LabelledDialogue:
    """The partial states of one AnnoMI transcript.

    Args:
        dialogue: A transcript read by :mod:`cogwm.corpora.annomi`.
        votes: Per-annotator labels (:func:`cogwm.corpora.annomi.annotators.load`).

    Raises:
        InputError: Not an AnnoMI dialogue, or a client utterance without a talk type or votes.
    """
    meta = dialogue.meta
    if not isinstance(meta, AnnoMIMeta):
        raise InputError(f"{dialogue.id}: not an AnnoMI dialogue")
    states = StateCollector(dialogue)
    topic = meta.topic.strip()
    for turn in dialogue.turns():
        if turn.role is not Role.USER:
            continue
        if topic:
            states.set(turn.index, "desires", items(TABLE.row("annomi.D1"), topic))
            states.set(turn.index, "intentions", items(TABLE.row("annomi.I1"), topic))
        talk = [_settled_talk_type(dialogue, meta, lab, votes) for lab in turn.labels]
        signs = {_SIGNS[t] for t in talk if t in _SIGNS}
        if len(signs) == 1:
            source = "change" if signs == {1} else "sustain"
            for row in TABLE.lookup("client_talk_type", source):
                states.add_constraint(turn.index, constraint(row))
    return states.labelled()


def _settled_talk_type(
    dialogue: Dialogue,
    meta: AnnoMIMeta,
    labels: object,
    votes: Mapping[UtteranceKey, UtteranceVotes],
) -> str | None:
    """The utterance's talk type, ``None`` where the annotators tied."""
    if not isinstance(labels, AnnoMIUtteranceLabels) or labels.client_talk_type is None:
        raise InputError(f"{dialogue.id}: a client utterance without a talk type")
    vote = votes.get(UtteranceKey(meta.transcript_id, labels.utterance_id))
    if vote is None:
        raise InputError(
            f"{dialogue.id}: utterance {labels.utterance_id} has no row in the per-annotator file"
        )
    return None if vote.tied else labels.client_talk_type


def labelled(dialogues: list[Dialogue], corpus_dir: Path) -> Iterator[LabelledDialogue]:
    """The partial states of every session, with the annotators' votes read from
    ``corpus_dir`` (``AnnoMI-full.csv``)."""
    votes = annotators.load(corpus_dir)
    return (label(d, votes) for d in dialogues)
