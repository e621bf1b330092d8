"""INSPIRED: the seeker's decision and satisfaction, placed on the last seeker turn.

The outcome (``fine_label``) records whether the seeker accepted the recommended movie and how
they rated it after watching its trailer. The decision is exact (acceptance 2.0 or 0.0, with
the matching bound); the rating describes the state just after the dialogue and only bounds the
satisfaction (desire), so it is stored as constraints, never as a score. The seeker's stated
reason becomes a belief text; their pre-task Big Five the profile, marked ``self_report``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from cogwm.corpora.labels.common import StateCollector, constraint, items, self_reported
from cogwm.corpora.labels.table import MappingRow, MappingTable
from cogwm.errors import InputError
from cogwm.schema import Dialogue
from cogwm.schema.labels import InspiredMeta
from cogwm.schema.partial import LabelledDialogue

COLUMN = "fine_label"
ACCEPT = "watch the recommended movie"
_LAST = "last seeker turn"
_ACCEPTS = ("accept_rating_good", "accept_rating_mod", "accept_uninterested", "accept_others")


def _decision(n: int, source: str, score: float) -> MappingRow:
    return MappingRow(
        id=f"inspired.I{n}",
        column=COLUMN,
        source=source,
        target="intentions",
        value=ACCEPT,
        score=score,
        turn=_LAST,
        exact=True,
        note="The seeker's own choice: accepting is full acceptance (2.0), rejecting none "
        "(0.0); exact for the binary decision.",
    )


def _bound(
    n: int,
    source: str,
    target: Literal["desire", "intention"],
    relation: Literal["at_least", "at_most"],
    bound: float,
    note: str,
    *,
    exact: bool,
) -> MappingRow:
    sign = ">=" if relation == "at_least" else "<="
    return MappingRow(
        id=f"inspired.C{n}",
        column=COLUMN,
        source=source,
        target="constraint",
        value=f"{target} {sign} {bound}",
        score=bound,
        relation=relation,
        constraint_target=target,
        turn=_LAST,
        exact=exact,
        note=note,
    )


_RATING = (
    "Rated after the trailer, so it bounds the satisfaction just after the dialogue; the "
    "bound, not a number, is what the rating supports."
)

TABLE = MappingTable(
    corpus="inspired",
    rows=(
        *(_decision(n, source, 2.0) for n, source in enumerate(_ACCEPTS, start=1)),
        _decision(5, "reject", 0.0),
        *(
            _bound(
                n,
                source,
                "intention",
                "at_least",
                1.5,
                "The decision bounds the acceptance.",
                exact=True,
            )
            for n, source in enumerate(_ACCEPTS, start=1)
        ),
        _bound(5, "reject", "intention", "at_most", 0.5, "The decision bounds it.", exact=True),
        _bound(6, "accept_rating_good", "desire", "at_least", 1.5, _RATING, exact=False),
        _bound(7, "accept_rating_mod", "desire", "at_least", 0.5, _RATING, exact=False),
        MappingRow(
            id="inspired.C8",
            column=COLUMN,
            source="accept_rating_mod",
            target="constraint",
            value="desire <= 1.5",
            score=1.5,
            relation="at_most",
            constraint_target="desire",
            turn=_LAST,
            exact=False,
            note="With inspired.C7: a moderate rating puts the satisfaction around 1.0.",
        ),
        _bound(9, "accept_uninterested", "desire", "at_most", 0.5, _RATING, exact=False),
        MappingRow(
            id="inspired.X1",
            column=COLUMN,
            source="accept_others",
            target="none",
            value="satisfaction unknown",
            turn="-",
            exact=False,
            note="Accepted for other reasons: says nothing about satisfaction.",
        ),
        MappingRow(
            id="inspired.X2",
            column=COLUMN,
            source="reject",
            target="none",
            value="satisfaction unknown",
            turn="-",
            exact=False,
            note="No rating after a rejection.",
        ),
        MappingRow(
            id="inspired.B1",
            column="reason",
            source="*",
            target="beliefs",
            value="one belief item: the seeker's reason, no score",
            turn=_LAST,
            exact=False,
            note="The seeker's own words on why they accepted or rejected; the alignment score "
            "would need a coding no human did.",
        ),
        MappingRow(
            id="inspired.P1",
            column="seeker_personality.tsv Big Five",
            source="*",
            target="profile",
            value="the profile's Big Five, source self_report",
            turn="-",
            exact=True,
            note="Pre-task questionnaire; observed range 1-5, the profile's scale.",
        ),
        MappingRow(
            id="inspired.X3",
            column="partner perception, seconds watched",
            source="*",
            target="none",
            value="kept in the dialogue's metadata",
            turn="-",
            exact=False,
            note="Ratings of the recommender and behaviour, not the seeker's BDI/E.",
        ),
    ),
)


def label(dialogue: Dialogue) -> LabelledDialogue:
    """The partial states of one INSPIRED dialogue.

    Raises:
        InputError: Not an INSPIRED dialogue, no seeker turn, or an unknown outcome label.
    """
    meta = dialogue.meta
    if not isinstance(meta, InspiredMeta):
        raise InputError(f"{dialogue.id}: not an INSPIRED dialogue")
    states = StateCollector(dialogue)
    user_turns = states.user_turn_indices()
    if not user_turns:
        raise InputError(f"{dialogue.id}: no seeker turn to attach the outcome to")
    last = user_turns[-1]
    for row in TABLE.lookup(COLUMN, meta.fine_label):
        if row.target == "intentions":
            states.set(last, "intentions", items(row, ACCEPT, row.score))
        else:
            states.add_constraint(last, constraint(row))
    reason = (meta.survey.reason or "").strip() if meta.survey is not None else ""
    if reason:
        states.set(last, "beliefs", items(TABLE.row("inspired.B1"), reason))
    profile = self_reported(dialogue.profile)
    return states.labelled(dialogue.model_copy(update={"profile": profile}))


def labelled(dialogues: list[Dialogue], _: Path) -> Iterator[LabelledDialogue]:
    """The partial states of every dialogue."""
    return (label(d) for d in dialogues)
