"""ESConv: the seeker's pre-chat emotion and intensities, and the situation as a belief text.

ESConv labels no seeker turn; its dialogue-level self-reports describe the state before the chat
(emotion type, initial intensity, situation) and after it (final intensity). They are placed on
the first and the last seeker turn. Every other turn and every B/D/I score stays unknown: no
annotator said anything about them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from cogwm.corpora.labels import extensions
from cogwm.corpora.labels.common import StateCollector, compress_intensity, emotion, items
from cogwm.corpora.labels.table import MappingRow, MappingTable
from cogwm.errors import InputError
from cogwm.schema import Dialogue
from cogwm.schema.labels import ESConvMeta
from cogwm.schema.partial import LabelledDialogue

_FIRST = "first seeker turn (the state before the chat)"
_INTENSITY = "intensity: initial_emotion_intensity via esconv.N1"


def _same(label: str, n: int) -> MappingRow:
    return MappingRow(
        id=f"esconv.E{n}",
        column="emotion_type",
        source=label,
        target="emotion",
        value=label,
        detail=_INTENSITY,
        turn=_FIRST,
        exact=True,
        note="The seeker's self-reported emotion is a lexicon label with the same name.",
    )


TABLE = MappingTable(
    corpus="esconv",
    rows=(
        *(
            _same(label, n)
            for n, label in enumerate(
                ("anxiety", "sadness", "anger", "fear", "shame", "guilt"), start=1
            )
        ),
        MappingRow(
            id="esconv.E7",
            column="emotion_type",
            source="depression",
            target="emotion",
            value="sadness",
            detail=_INTENSITY,
            turn=_FIRST,
            exact=False,
            note="Depression is not in the lexicon; sadness is its closest label "
            "(helplessness would be the other choice).",
        ),
        MappingRow(
            id="esconv.E8",
            column="emotion_type",
            source="nervousness",
            target="emotion",
            value="anxiety",
            detail=_INTENSITY,
            turn=_FIRST,
            exact=False,
            note="Nervousness is a mild form of anxiety.",
        ),
        MappingRow(
            id="esconv.E9",
            column="emotion_type",
            source="pain",
            target="emotion",
            value="sadness",
            detail=_INTENSITY,
            turn=_FIRST,
            exact=False,
            note="Emotional pain (one dialogue) is closest to sadness.",
        ),
        MappingRow(
            id="esconv.E10",
            column="emotion_type",
            source="disgust",
            target="emotion",
            value="disgust",
            detail=f"lexicon extension (valence -1.5); {_INTENSITY}",
            turn=_FIRST,
            exact=True,
            note="Not among the paper's twelve labels; kept through the same extension label "
            "DailyDialog uses, so one label means one valence everywhere.",
        ),
        MappingRow(
            id="esconv.E11",
            column="emotion_type",
            source="jealousy",
            target="none",
            value="unknown",
            turn="-",
            exact=False,
            note="One dialogue; no lexicon label or extension fits, so the emotion stays unknown.",
        ),
        MappingRow(
            id="esconv.E12",
            column="final_emotion_intensity",
            source="*",
            target="emotion",
            value="the first turn's label (esconv.E1-E10); intensity via esconv.N1",
            turn="last seeker turn (the state after the chat)",
            exact=False,
            note="The survey assumes the emotion persists; a low final intensity could as well "
            "be relief or hope, which the data cannot tell. Missing final intensity: unknown; "
            "a dialogue with one seeker turn keeps only the initial reading there.",
        ),
        MappingRow(
            id="esconv.N1",
            column="initial_emotion_intensity",
            source="*",
            target="emotion.intensity",
            value="1-5 -> 1-3: {1,2}->1, 3->2, {4,5}->3",
            turn=_FIRST,
            exact=False,
            note="The five-point scale is compressed onto the lexicon's three intensities.",
        ),
        MappingRow(
            id="esconv.B1",
            column="situation",
            source="*",
            target="beliefs",
            value="one belief item: the situation text, no score",
            turn=_FIRST,
            exact=False,
            note="The seeker's own description of the problem; the reality score would need a "
            "coding no human did, so the score stays unknown.",
        ),
        MappingRow(
            id="esconv.M1",
            column="problem_type, experience_type",
            source="*",
            target="meta",
            value="kept in the dialogue's metadata",
            turn="-",
            exact=True,
            note="Context, not a state; 'Previous Experience' marks a recalled problem.",
        ),
        MappingRow(
            id="esconv.X1",
            column="empathy, relevance, seeker_question1/2",
            source="*",
            target="none",
            value="outcome only (kept in the dialogue's metadata)",
            turn="-",
            exact=False,
            note="Ratings of the supporter, not of the seeker's state.",
        ),
        MappingRow(
            id="esconv.X2",
            column="feedback (FailedESConv.json only)",
            source="*",
            target="none",
            value="outcome only (kept in the utterance labels)",
            turn="-",
            exact=False,
            note="The seeker rates how helpful the supporter's last turns were: an outcome of "
            "the agent's turns, not a label of the seeker's emotion or BDI.",
        ),
    ),
)


def label(dialogue: Dialogue) -> LabelledDialogue:
    """The partial states ESConv's self-reports give one dialogue (FailedESConv's too).

    Raises:
        InputError: The dialogue is not an ESConv dialogue, has no seeker turn, or carries an
            emotion type the table does not know.
    """
    meta = dialogue.meta
    if not isinstance(meta, ESConvMeta):
        raise InputError(f"{dialogue.id}: not an ESConv dialogue")
    states = StateCollector(dialogue)
    user_turns = states.user_turn_indices()
    if not user_turns:
        raise InputError(f"{dialogue.id}: no seeker turn to attach the self-reports to")
    first, last = user_turns[0], user_turns[-1]
    rows = TABLE.lookup("emotion_type", meta.emotion_type)
    initial = meta.survey.initial_emotion_intensity
    final = meta.survey.final_emotion_intensity
    for row in rows:
        mapped = row.value
        if mapped in extensions.LABELS:
            extensions.register(mapped)
        if initial is not None:
            states.set(first, "emotion", emotion(row, mapped, compress_intensity(initial)))
        if final is not None and last != first:
            final_row = TABLE.row("esconv.E12")
            states.set(last, "emotion", emotion(final_row, mapped, compress_intensity(final)))
    if meta.situation.strip():
        states.set(first, "beliefs", items(TABLE.row("esconv.B1"), meta.situation.strip()))
    return states.labelled()


def labelled(dialogues: list[Dialogue], _: Path) -> Iterator[LabelledDialogue]:
    """The partial states of every dialogue (ESConv and FailedESConv alike)."""
    return (label(d) for d in dialogues)
