"""LLM annotations as partial states (the ``cogwm.labels/1`` line format, Origin source=llm).

What the annotator produced becomes a value or **empty** (it looked and found none); what failed
stays **unknown**: a failed turn gets no state at all, and when stage 1 failed the B/D/I fields of
every turn are unknown (there were no items to allocate), never empty.
"""

from __future__ import annotations

from collections.abc import Iterator

from cogwm.annotate.outputs import Allocation
from cogwm.annotate.prompts import plural
from cogwm.annotate.saa import DialogueAnnotation, global_items
from cogwm.annotate.store import AnnotationStore
from cogwm.schema import Dialogue
from cogwm.schema.partial import (
    EmotionField,
    FieldKind,
    ItemsField,
    LabelledDialogue,
    Origin,
    PartialState,
    Source,
)
from cogwm.schema.state import BDI, Dimension, Emotion, StateItem

LLM_ORIGIN = Origin(source=Source.LLM)


def turn_state(
    allocation: Allocation,
    items: dict[Dimension, list[tuple[str, str, float]]] | None,
) -> PartialState:
    """The partial state of one successfully allocated turn.

    Args:
        allocation: The validated stage-2 answer.
        items: Stage-1 items per dimension, or None when stage 1 failed (B/D/I unknown).
    """
    emotion = allocation.emotion
    state = PartialState(
        emotion=EmotionField(
            kind=FieldKind.VALUE,
            value=Emotion(
                label=emotion.label.strip().lower(),
                intensity=emotion.intensity,
                evidence=emotion.evidence,
            ),
            origin=LLM_ORIGIN,
        )
    )
    if items is None:
        return state
    fields: dict[str, ItemsField] = {}
    for dimension in BDI:
        texts = {item_id: text for item_id, text, _ in items[dimension]}
        allocated = [
            StateItem(
                text=texts[a.global_ref],
                score=a.score,
                evidence=a.evidence,
                global_ref=a.global_ref,
            )
            for a in allocation.items(dimension)
        ]
        kind = FieldKind.VALUE if allocated else FieldKind.EMPTY
        fields[plural(dimension)] = ItemsField(kind=kind, items=allocated, origin=LLM_ORIGIN)
    return state.model_copy(update=fields)


def labelled(annotation: DialogueAnnotation, dialogue: Dialogue) -> LabelledDialogue:
    """One stored annotation as a :class:`LabelledDialogue` (profile in ``dialogue.profile``)."""
    items = global_items(annotation.summary) if annotation.summary is not None else None
    states = {
        turn.turn_index: turn_state(turn.allocation, items)
        for turn in annotation.turns
        if turn.allocation is not None
    }
    with_profile = dialogue.model_copy(update={"profile": annotation.profile})
    return LabelledDialogue(dialogue=with_profile, states=states)


def export_items(store: AnnotationStore) -> Iterator[LabelledDialogue]:
    """Every stored dialogue as a labelled dialogue, in the order they were stored."""
    for stored in store.dialogues():
        yield labelled(stored.annotation, stored.dialogue)
