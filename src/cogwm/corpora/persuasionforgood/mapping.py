"""PersuasionForGood: the persuadee's dialogue acts as commitment and prosocial desire.

Only the 300 dialogues with sentence-level act labels (``300_dialog.xlsx``) are labelled. A
persuadee turn's sentences are read in order (``ee_label_1`` then ``ee_label_2`` of each); when
a turn has several donation labels of one kind, the last one wins. The scores (0.5 ... 2.0) are
LABELS.md's conventions, not annotations, so commitment labels also give bounds (``>= 1.5`` for
agreeing, ``<= 0.5`` for refusing) that threshold metrics can check. The intended (B5) and
actual (B6) donations stay dialogue-level facts in ``Dialogue.meta``; the persuadee's pre-task
Big Five becomes the profile, marked ``self_report``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from cogwm.corpora.labels.common import StateCollector, constraint, items, self_reported
from cogwm.corpora.labels.table import MappingRow, MappingTable
from cogwm.errors import InputError
from cogwm.schema import Dialogue, Role, Turn
from cogwm.schema.labels import P4GMeta, P4GUtteranceLabels
from cogwm.schema.partial import LabelledDialogue

COLUMN = "ee_label"
_TURN = "the persuadee turn holding the labelled sentence"
#: Item texts: what the commitment and the prosocial desire are about.
DONATE = "donate to Save the Children"
HELP = "help children in need through Save the Children"
_NUMBER = r"(\d+(?:\.\d+)?|\.\d+)"
_DOLLARS = re.compile(rf"\${_NUMBER}|\$\s{_NUMBER}|{_NUMBER}\s*(?:\$|dollars?\b)", re.IGNORECASE)
_CENTS = re.compile(rf"{_NUMBER}\s*cents?\b", re.IGNORECASE)


def _commitment(n: int, source: str, score: float, note: str, *, exact: bool = False) -> MappingRow:
    return MappingRow(
        id=f"persuasionforgood.I{n}",
        column=COLUMN,
        source=source,
        target="intentions",
        value=DONATE,
        score=score,
        turn=_TURN,
        exact=exact,
        note=note,
    )


def _bound(n: int, source: str, relation: str, bound: float) -> MappingRow:
    return MappingRow(
        id=f"persuasionforgood.C{n}",
        column=COLUMN,
        source=source,
        target="constraint",
        value=f"commitment {'>=' if relation == 'at_least' else '<='} {bound}",
        score=bound,
        relation="at_least" if relation == "at_least" else "at_most",
        constraint_target="intention",
        turn=_TURN,
        exact=True,
        note="The decision itself is exact; a bound, unlike the conventional score, can be "
        "checked without pretending to know the number.",
    )


def _reaction(n: int, polarity: str, score: float) -> MappingRow:
    return MappingRow(
        id=f"persuasionforgood.D{n}",
        column=COLUMN,
        source=f"{polarity}-reaction-to-donation",
        target="desires",
        value=HELP,
        score=score,
        turn=_TURN,
        exact=False,
        note="A reaction to the idea of donating shows how much the persuadee wants to help; "
        "a negative one may concern impact (a belief) instead, and the label alone never sets B.",
    )


def _nothing(source: str, n: int) -> MappingRow:
    return MappingRow(
        id=f"persuasionforgood.X{n}",
        column=COLUMN,
        source=source,
        target="none",
        value="nothing",
        turn="-",
        exact=False,
        note="Not about the persuadee's commitment or desire to donate.",
    )


_UNMAPPED = (
    "ask-org-info",
    "other",
    "acknowledgement",
    "positive-to-inquiry",
    "greeting",
    "task-related-inquiry",
    "negative-to-inquiry",
    "thank",
    "off-task",
    "personal-related-inquiry",
    "closing",
    "ask-persuader-donation-intention",
    "neutral-to-inquiry",
    "you-are-welcome",
)

TABLE = MappingTable(
    corpus="persuasionforgood",
    rows=(
        _commitment(
            1,
            "agree-donation",
            2.0,
            "Agreeing to donate is a commitment; its presence is exact, the score 2.0 is a "
            "convention.",
        ),
        _commitment(
            2,
            "provide-donation-amount",
            2.0,
            "Naming an amount commits to it; the item reads 'donate $X ...' when the sentence "
            "gives a dollar amount.",
        ),
        _commitment(3, "confirm-donation", 2.0, "Confirming repeats the commitment."),
        _commitment(4, "disagree-donation", 0.0, "Refusing to donate: no commitment."),
        _commitment(
            5,
            "ask-donation-procedure",
            1.5,
            "Asking how to donate shows the persuadee is considering it (1.5, a convention).",
        ),
        MappingRow(
            id="persuasionforgood.I6",
            column=COLUMN,
            source="disagree-donation-more",
            target="intentions",
            value="the commitment of the persuadee's last earlier commitment-labelled turn",
            turn=_TURN,
            exact=False,
            note="Refusing to give more keeps the earlier commitment; with none earlier the "
            "turn's commitment stays unknown.",
        ),
        _bound(1, "agree-donation", "at_least", 1.5),
        _bound(2, "provide-donation-amount", "at_least", 1.5),
        _bound(3, "confirm-donation", "at_least", 1.5),
        _bound(4, "disagree-donation", "at_most", 0.5),
        _reaction(1, "positive", 1.5),
        _reaction(2, "neutral", 1.0),
        _reaction(3, "negative", 0.5),
        *(_nothing(label, n) for n, label in enumerate(_UNMAPPED, start=1)),
        MappingRow(
            id="persuasionforgood.M1",
            column="B5, B6",
            source="*",
            target="meta",
            value="intended (B5) and actual (B6) donation, kept in the dialogue's metadata",
            turn="-",
            exact=True,
            note="Dialogue-level facts (B5 read from the text by annotators, B6 behaviour after "
            "the task); intention and behaviour often diverge, so neither is put on a turn.",
        ),
        MappingRow(
            id="persuasionforgood.P1",
            column="full_info.csv Big Five",
            source="*",
            target="profile",
            value="the profile's Big Five, source self_report",
            turn="-",
            exact=True,
            note="Pre-task questionnaire on the profile's own 1-5 scale.",
        ),
        MappingRow(
            id="persuasionforgood.X0",
            column="neg, neu, pos",
            source="*",
            target="none",
            value="nothing",
            turn="-",
            exact=False,
            note="Automatic VADER sentiment, not a human label; no emotion is set.",
        ),
    ),
)

_DISAGREE_MORE = "disagree-donation-more"


def is_labelled(dialogue: Dialogue) -> bool:
    """Whether the dialogue is one of the 300 with sentence-level act labels."""
    return isinstance(dialogue.meta, P4GMeta) and dialogue.meta.annotated


class _Commitment(NamedTuple):
    row: MappingRow
    text: str
    score: float | None


def label(dialogue: Dialogue) -> LabelledDialogue:
    """The partial states of one annotated PersuasionForGood dialogue.

    Raises:
        InputError: Not a PersuasionForGood dialogue, or a persuadee act the table does not know.
    """
    if not isinstance(dialogue.meta, P4GMeta):
        raise InputError(f"{dialogue.id}: not a PersuasionForGood dialogue")
    states = StateCollector(dialogue)
    previous: _Commitment | None = None  # the last commitment, for disagree-donation-more
    for turn in dialogue.turns():
        if turn.role is not Role.USER:
            continue
        commitment, reaction = _turn_labels(turn, previous)
        if commitment is not None:
            row = commitment.row
            states.set(turn.index, "intentions", items(row, commitment.text, commitment.score))
            for bound in TABLE.lookup(COLUMN, row.source):
                if bound.target == "constraint":
                    states.add_constraint(turn.index, constraint(bound))
            previous = commitment
        if reaction is not None:
            states.set(turn.index, "desires", items(reaction, HELP, reaction.score))
    profile = self_reported(dialogue.profile)
    return states.labelled(dialogue.model_copy(update={"profile": profile}))


def _turn_labels(
    turn: Turn, previous: _Commitment | None
) -> tuple[_Commitment | None, MappingRow | None]:
    """The turn's commitment and reaction (the last of each kind wins)."""
    commitment: _Commitment | None = None
    reaction: MappingRow | None = None
    refuses_more = False
    for act, text in _acts(turn):
        for row in TABLE.lookup(COLUMN, act):
            if act == _DISAGREE_MORE:
                refuses_more = True
            elif row.target == "intentions":
                commitment = _Commitment(row, _item_text(act, text), row.score)
            elif row.target == "desires":
                reaction = row
    if commitment is None and refuses_more and previous is not None:
        # Refusing to give more keeps the earlier commitment (its text and score).
        commitment = _Commitment(TABLE.row("persuasionforgood.I6"), previous.text, previous.score)
    return commitment, reaction


def _acts(turn: Turn) -> list[tuple[str, str]]:
    """The turn's persuadee acts with their sentence, in reading order."""
    acts: list[tuple[str, str]] = []
    for labels in turn.labels:
        if not isinstance(labels, P4GUtteranceLabels) or not labels.sentences:
            continue
        for sentence in labels.sentences:
            for act in (sentence.ee_label_1, sentence.ee_label_2):
                if act is not None:
                    acts.append((act, sentence.text))
    return acts


def _item_text(act: str, sentence: str) -> str:
    if act != "provide-donation-amount":
        return DONATE
    dollars = _DOLLARS.search(sentence)
    if dollars is not None:
        amount = next(g for g in dollars.groups() if g is not None)
        return f"donate ${amount} to Save the Children"
    cents = _CENTS.search(sentence)
    if cents is not None:
        return f"donate ${float(cents.group(1)) / 100:.2f} to Save the Children"
    return DONATE


def labelled(dialogues: list[Dialogue], _: Path) -> Iterator[LabelledDialogue]:
    """The partial states of the 300 dialogues with act labels (the others have no turn-level
    human label)."""
    return (label(d) for d in dialogues if is_labelled(d))
