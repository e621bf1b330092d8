"""DailyDialog: an emotion on every utterance of both speakers, read from both sides.

DailyDialog has no user and no agent: each dialogue is read twice, once with each speaker as
the user (ids ``<id>#A`` for the speaker of the first utterance, ``<id>#B`` for the other), so
every utterance is a user turn in exactly one reading. All seven labels are kept (four of them
as lexicon extensions, see :mod:`cogwm.corpora.labels.extensions`). B/D/I stay unknown: the task
has no defined scores and the only related label (the ``commissive`` act) is too noisy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from cogwm.corpora.labels import extensions
from cogwm.corpora.labels.common import StateCollector, emotion
from cogwm.corpora.labels.table import MappingRow, MappingTable
from cogwm.errors import InputError
from cogwm.schema import Dialogue, Role
from cogwm.schema.labels import DailyDialogUtteranceLabels
from cogwm.schema.partial import LabelledDialogue

#: The lexicon has no intensities for DailyDialog's labels; this one is a convention.
CONVENTIONAL_INTENSITY = 2
#: Reading ids: ``A`` has the first utterance's speaker as the user, ``B`` the other one.
SIDES: tuple[str, str] = ("A", "B")

_TURN = "the user turn of the labelled utterance"
_INTENSITY = f"intensity {CONVENTIONAL_INTENSITY} by convention (dailydialog.N1)"


def _row(n: int, source: str, target: str, exact: bool, note: str, extension: bool) -> MappingRow:
    detail = f"lexicon extension; {_INTENSITY}" if extension else _INTENSITY
    return MappingRow(
        id=f"dailydialog.E{n}",
        column="emotion",
        source=source,
        target="emotion",
        value=target,
        detail=detail,
        turn=_TURN,
        exact=exact,
        note=note,
    )


_IN_LEXICON = "Expert per-utterance label with the same name in the paper's lexicon."
_BEYOND = "Beyond the paper's twelve labels; kept so that positive emotion is learnt too."

TABLE = MappingTable(
    corpus="dailydialog",
    rows=(
        _row(1, "anger", "anger", True, _IN_LEXICON, extension=False),
        _row(2, "sadness", "sadness", True, _IN_LEXICON, extension=False),
        _row(3, "fear", "fear", True, _IN_LEXICON, extension=False),
        _row(4, "happiness", "happiness", True, _BEYOND + " Valence +2.0.", extension=True),
        _row(5, "surprise", "surprise", True, _BEYOND + " Valence 0 (mixed).", extension=True),
        _row(6, "disgust", "disgust", True, _BEYOND + " Valence -1.5.", extension=True),
        _row(
            7,
            "no emotion",
            "neutral",
            True,
            "The annotator saw no emotion: a calm state with valence 0, a value rather than a "
            "missing label (it also lets false positives be counted).",
            extension=True,
        ),
        MappingRow(
            id="dailydialog.N1",
            column="emotion",
            source="*",
            target="emotion.intensity",
            value=str(CONVENTIONAL_INTENSITY),
            turn=_TURN,
            exact=False,
            note="DailyDialog does not grade intensity; the middle of the scale is a convention "
            "(valence x intensity keeps its sign, never use it for intensity scores).",
        ),
        MappingRow(
            id="dailydialog.A1",
            column="act",
            source="*",
            target="none",
            value="B/D/I unknown",
            turn="-",
            exact=False,
            note="'commissive' would only say that some intention exists, without text or score, "
            "and it also covers refusals and thanks; the acts stay in the utterance labels.",
        ),
    ),
)


def readings(dialogue: Dialogue) -> Iterator[LabelledDialogue]:
    """The two readings of one dialogue, each speaker in turn as the user.

    Raises:
        InputError: Not a DailyDialog dialogue, not two speakers, or an unknown emotion label.
    """
    speakers = list(dict.fromkeys(u.speaker for u in dialogue.utterances))
    if len(speakers) != 2:
        raise InputError(f"{dialogue.id}: expected two speakers, got {speakers}")
    extensions.register()
    for side, user in zip(SIDES, speakers, strict=True):
        yield _reading(_as_user(dialogue, side, user))


def _as_user(dialogue: Dialogue, side: str, user: str) -> Dialogue:
    utterances = [
        u.model_copy(update={"role": Role.USER if u.speaker == user else Role.AGENT})
        for u in dialogue.utterances
    ]
    return dialogue.model_copy(update={"id": f"{dialogue.id}#{side}", "utterances": utterances})


def _reading(dialogue: Dialogue) -> LabelledDialogue:
    states = StateCollector(dialogue)
    for turn in dialogue.turns():
        if turn.role is not Role.USER:
            continue
        labels = [lab for lab in turn.labels if isinstance(lab, DailyDialogUtteranceLabels)]
        if len(labels) != len(turn.utterances):
            raise InputError(f"{dialogue.id}: turn {turn.index} has an unlabelled utterance")
        # A turn is one utterance in this corpus; were it several, the last one's emotion is
        # the state at the end of the turn.
        for row in TABLE.lookup("emotion", labels[-1].emotion):
            states.set(
                turn.index,
                "emotion",
                emotion(row, row.value, CONVENTIONAL_INTENSITY, intensity_known=False),
            )
    return states.labelled()


def labelled(dialogues: list[Dialogue], _: Path) -> Iterator[LabelledDialogue]:
    """Both readings of every dialogue, in corpus order."""
    return (reading for d in dialogues for reading in readings(d))
