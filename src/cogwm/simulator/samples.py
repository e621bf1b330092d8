"""Training samples of the world model: one per user turn of a labelled dialogue.

A sample's input is the simulator's prompt in the world-model format (:mod:`cogwm.simulator.format`,
the same messages the arena's simulator sends): the task context, the user's profile, the initial
state, a window of the history and the previous state. Its target is the state at that turn plus
the user's real utterance, with character spans that tell state, utterance, syntax and unknown
apart. One JSON line per sample (contract ``cogwm.samples/1``)::

    {"schema": "cogwm.samples/1", "id": "<dialogue_id>:<turn_index>", "dialogue_id", "corpus",
     "split", "turn_index", "messages": [{"role", "content"}, ...], "target", "target_spans":
     [[start, end, tag], ...], "provenance": {"emotion": "human"|"llm"|"self_report"|"unknown",
     ...}, "constraints": [...]}

The states come from :class:`~cogwm.schema.partial.LabelledDialogue` records: the corpora's human
labels (:func:`cogwm.annotate.human.labelled_dialogues`) or LLM annotations
(:func:`cogwm.annotate.io.read_labelled`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import Field

from cogwm import tasks
from cogwm.corpora.profiles import profile_from_metadata, situation_from_metadata
from cogwm.corpora.registry import ends_by_choice, lookup
from cogwm.errors import InputError
from cogwm.jsonl import dump_tagged, parse_tagged, read_lines, write_lines
from cogwm.models.types import Message
from cogwm.schema import CognitiveState, Dialogue, Profile, Record, Role, TaskSpec
from cogwm.schema.partial import STATE_FIELDS, Constraint, FieldKind, LabelledDialogue, PartialState
from cogwm.simulator.format import (
    Mode,
    SpanTag,
    WorldModelInput,
    WorldModelOutput,
    build_messages,
    fit_output,
    render_target,
)

#: The tag every samples line carries.
SCHEMA = "cogwm.samples/1"
#: Turns of history a sample shows by default: the arena simulator's default window.
DEFAULT_HISTORY_TURNS = 8

Split = Literal["train", "val", "test"]
SPLITS: tuple[Split, ...] = ("train", "val", "test")
Provenance = Literal["human", "llm", "self_report", "unknown"]


class Sample(Record):
    """One training sample: the simulator's prompt at a user turn and what the user did there."""

    id: str = Field(description="'<dialogue_id>:<turn_index>'.")
    dialogue_id: str
    corpus: str
    split: Split
    turn_index: int = Field(ge=0, description="Index into dialogue.turns() of the user turn.")
    messages: list[Message]
    target: str
    target_spans: list[tuple[int, int, SpanTag]]
    provenance: dict[str, Provenance] = Field(
        description="Source of each state field: emotion, beliefs, desires, intentions."
    )
    constraints: list[Constraint] = Field(default_factory=list)
    mode: Mode = Field(
        default="predict",
        description="'predict' (state and reply after the agent's turn) or 'understand' (the "
        "real user turn is the last line of the history; the target is the state only).",
    )


def task_for_corpus(corpus: str) -> TaskSpec:
    """The task a corpus's dialogues play (DailyDialog: DAILY, FailedESConv: ESC, ...).

    Raises:
        InputError: No task plays this corpus.
    """
    # A companion corpus (FailedESConv) plays the task of the release that holds it.
    found = lookup(corpus)
    plays = found.companion_of if found is not None and found.companion_of else corpus
    spec = tasks.for_corpus(plays)
    if spec is None:
        raise InputError(f"no task plays corpus {corpus!r}")
    return spec


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def dump_sample(sample: Sample) -> str:
    """One sample as a JSON line (without the newline), tagged with :data:`SCHEMA`."""
    return dump_tagged(SCHEMA, sample.model_dump(mode="json"))


def parse_sample(line: str, where: str = "<line>") -> Sample:
    """One JSON line back into a :class:`Sample`.

    Raises:
        InputError: Not JSON, no or another schema tag, or a record that does not validate.
    """
    return parse_tagged(line, SCHEMA, Sample, where=where, what="sample")


def read_samples(path: Path | str) -> Iterator[Sample]:
    """Read a samples file lazily, one :class:`Sample` per non-blank line.

    Raises:
        InputError: A missing or unreadable file, or a bad line (named by file and line number).
    """
    return read_lines(path, parse_sample)


def write_samples(path: Path | str, samples: Iterable[Sample]) -> int:
    """Write samples as JSON lines (atomically: a stopped write leaves no partial file).

    Raises:
        InputError: The directory does not exist or the file cannot be written.
    """
    return write_lines(path, (dump_sample(s) for s in samples))


# --------------------------------------------------------------------------------------------
# From a labelled dialogue to samples
# --------------------------------------------------------------------------------------------


class BuiltSample(NamedTuple):
    """A sample and the changes :func:`~cogwm.simulator.format.fit_output` made to its target."""

    sample: Sample
    fitted: list[str]


def sample_context(dialogue: Dialogue, task: TaskSpec) -> str:
    """The user's situation shown in a sample's prompt.

    ESConv gives the seeker's own situation and problem type (never the emotion type, the human
    label of the first seeker turn: see ``Corpus.situation``). Other corpora have no per-dialogue
    situation and get the task's scenario (which the prompt does not repeat).
    """
    found = situation_from_metadata(dialogue)
    return found if found is not None else task.scenario


def sample_profile(dialogue: Dialogue) -> Profile | None:
    """The user's profile: an annotated one, or Big Five from corpus metadata (P4G, INSPIRED)."""
    return profile_from_metadata(dialogue)


def dialogue_samples(
    item: LabelledDialogue,
    split: Split,
    *,
    history_turns: int = DEFAULT_HISTORY_TURNS,
    task: TaskSpec | None = None,
    understand: bool = False,
) -> Iterator[BuiltSample]:
    """One sample per user turn of ``item``, in turn order.

    The input shows the last ``history_turns`` turns before the user turn, the first known state
    before it as the initial state and the latest known one as the previous state (both as
    fitted to the output grammar, like the arena's own earlier outputs). The target is
    the partial state at the turn (unknown fields rendered ``null`` and tagged unknown), the turn's
    text as the utterance, and ``leave`` true on the user's last turn of the dialogue, false on
    the others. Where the corpus's source set the end (written dialogues, recorded
    demonstrations: ``Corpus.ends_by_choice``), the last turn's ``leave`` is unknown (never a
    target): such an end says nothing about when a user wants to leave, and taught as one it
    makes a simulator leave as soon as those short dialogues do.

    Args:
        item: The dialogue and its partial states by turn index.
        split: The split the dialogue belongs to (decided by the caller, per dialogue).
        history_turns: Turns of history shown.
        task: The task; default the one that plays the dialogue's corpus.
        understand: Also yield, after each user turn's sample, its state-understanding sample
            (id ``<dialogue_id>:<turn_index>:understand``): the real turn ends the history and
            the target is the state alone, as ``cogwm validate`` asks it. Only turns with a
            known state field get one (otherwise there is nothing to learn).
    """
    dialogue = item.dialogue
    task = task or task_for_corpus(dialogue.corpus)
    turns = dialogue.turns()
    last = max((t.index for t in turns if t.role is Role.USER), default=-1)
    end_known = ends_by_choice(dialogue.corpus)
    for index, inp, partial in turn_inputs(item, history_turns=history_turns, task=task):
        leave: bool | None = index == last
        if leave and not end_known:
            leave = None  # the source ended the transcript, not the user
        out = WorldModelOutput(state=partial.to_state(), utterance=turns[index].text, leave=leave)
        fitted, changes = fit_output(out, task)
        target, spans = render_target(fitted, partial)
        sample = Sample(
            id=f"{dialogue.id}:{index}",
            dialogue_id=dialogue.id,
            corpus=dialogue.corpus,
            split=split,
            turn_index=index,
            messages=build_messages(inp, task),
            target=target,
            target_spans=spans,
            provenance=provenance(partial),
            constraints=list(partial.constraints),
        )
        yield BuiltSample(sample, changes)
        if understand and any(partial.kind(f) is FieldKind.VALUE for f in STATE_FIELDS):
            real = shown_text(turns[index].text)
            yield BuiltSample(_understand_sample(sample, inp, real, fitted, partial, task), [])


def _understand_sample(
    predicted: Sample,
    inp: WorldModelInput,
    utterance: str,
    fitted: WorldModelOutput,
    partial: PartialState,
    task: TaskSpec,
) -> Sample:
    """The state-understanding twin of a prediction-mode sample (same turn, same state), with
    the real turn shown as ``cogwm validate`` shows it."""
    history = [*inp.history, ("user", utterance)]
    understand_input = inp.model_copy(update={"history": history, "mode": "understand"})
    target, spans = render_target(WorldModelOutput(state=fitted.state, utterance=None), partial)
    return predicted.model_copy(
        update={
            "id": f"{predicted.id}:understand",
            "messages": build_messages(understand_input, task),
            "target": target,
            "target_spans": spans,
            "mode": "understand",
        }
    )


class TurnInput(NamedTuple):
    """A user turn's index, the simulator's input there, and the turn's partial state."""

    turn_index: int
    input: WorldModelInput
    partial: PartialState


def turn_inputs(
    item: LabelledDialogue,
    *,
    history_turns: int = DEFAULT_HISTORY_TURNS,
    task: TaskSpec | None = None,
) -> Iterator[TurnInput]:
    """The prediction-mode input of every user turn of ``item``, exactly as its sample shows it.

    The one place that decides what a sample's prompt holds (see :func:`dialogue_samples`), so
    that anything scoring a model on these turns (``cogwm validate``) asks the same prompt.
    """
    dialogue = item.dialogue
    task = task or task_for_corpus(dialogue.corpus)
    turns = dialogue.turns()
    context = sample_context(dialogue, task)
    profile = sample_profile(dialogue)
    known: list[CognitiveState] = []
    for turn in turns:
        if turn.role is not Role.USER:
            continue
        partial = item.states.get(turn.index, PartialState())
        shown = turns[max(0, turn.index - history_turns) : turn.index]
        inp = WorldModelInput(
            task=task.name,
            context=context,
            profile=profile,
            initial_state=known[0] if known else None,
            history=[(t.role.value, shown_text(t.text)) for t in shown],
            previous_state=known[-1] if known else None,
        )
        yield TurnInput(turn.index, inp, partial)
        if any(partial.kind(f) is FieldKind.VALUE for f in STATE_FIELDS):
            # Later prompts show the state as the simulator could have said it (fitted), as the
            # arena shows the simulator's own earlier outputs.
            known.append(fit_output(WorldModelOutput(state=partial.to_state()), task)[0].state)


def shown_text(text: str) -> str:
    """A corpus turn as the simulator is shown it: stripped, as the arena shows its cold start
    (``cogwm.arena.scenarios.cold_start``), so the two prompts are the same bytes."""
    return text.strip() or "..."


#: How :func:`target_emotion` names an emotion an annotator said is absent (``null`` tagged
#: ``state`` in the target), as opposed to one the source says nothing about.
EMPTY_EMOTION = "(none)"
_NULL_EMOTION = '{"emotion":null'


def target_emotion(sample: Sample) -> str | None:
    """The emotion label of a sample's target: its label, :data:`EMPTY_EMOTION` when an annotator
    said there is none, None when the source says nothing (``null`` tagged ``unknown``)."""
    if sample.target.startswith(_NULL_EMOTION):
        at = len(_NULL_EMOTION) - len("null")
        stated = any(s <= at < e and tag == "state" for s, e, tag in sample.target_spans)
        return EMPTY_EMOTION if stated else None
    try:
        emotion = json.loads(sample.target).get("emotion")
    except (ValueError, AttributeError):
        return None
    label = emotion.get("label") if isinstance(emotion, dict) else None
    return label if isinstance(label, str) else None


#: How a prediction target ends (``render_target`` writes the leave value last) → its name.
_LEAVE_ENDINGS = {',"leave":true}': "true", ',"leave":false}': "false", ',"leave":null}': "unknown"}


def target_leave(sample: Sample) -> str | None:
    """The ``leave`` target of a prediction sample: ``true``, ``false`` or ``unknown`` (the
    source does not say); None for an understanding sample, which has no ``leave``."""
    # The utterance is a JSON string, so an unescaped ',"leave":' can only be the key itself.
    return _LEAVE_ENDINGS.get(sample.target[sample.target.rfind(',"leave":') :])


def provenance(partial: PartialState) -> dict[str, Provenance]:
    """The source of each state field (``unknown`` where the source says nothing)."""
    result: dict[str, Provenance] = {}
    for field in STATE_FIELDS:
        value = getattr(partial, field)
        if value.kind is FieldKind.UNKNOWN or value.origin is None:
            result[field] = "unknown"
        else:
            result[field] = value.origin.source.value
    return result
