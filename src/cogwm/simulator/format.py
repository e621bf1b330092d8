"""The world-model prompt format: the one home of what the user simulator sees and says.

The training samples, the trainer, ``cogwm validate`` and the arena's simulator participant all
build their prompts with :func:`build_messages` and read answers with :func:`parse_output` or the
output models of :func:`state_output_models`, so a model trained on samples plays the arena's user
without any translation.

What the simulator sees (:class:`WorldModelInput`): the task, the user's situation and profile, the
initial and previous states, and a window of the conversation. The fixed instruction is short on
purpose: prompt tokens dominate the cost of training (docs/architecture.md, "Models").

What it says (:class:`WorldModelOutput`): compact JSON with a fixed key order, ``emotion``,
``beliefs``, ``desires``, ``intentions``, then ``utterance`` and ``leave`` in prediction mode.
:func:`render_target` writes it as a training target with character spans tagged ``state``,
``utterance``, ``syntax`` or ``unknown``; a field the source says nothing about is rendered
``null`` and tagged ``unknown``, so it is never a training target.

Every prompt text has an id and a version (:class:`Prompt`); the arena stores and hashes them with
each run, so changing the format here (and bumping a version) changes run digests.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from cogwm.errors import CogwmError
from cogwm.models.types import Message
from cogwm.schema import CognitiveState, Dimension, Emotion, Profile, Record, StateItem, TaskSpec
from cogwm.schema.lexicon import INTENSITIES, valence_table
from cogwm.schema.partial import STATE_FIELDS, FieldKind, PartialState

#: Items per B/D/I dimension the simulator may state in one turn (keeps outputs short).
MAX_ITEMS = 2
#: Longest item text and utterance (characters): with the keys, a state and utterance stay
#: under ~220 tokens, inside the simulator's default budget of 300, so outputs are never cut.
ITEM_CHARS = 60
UTTERANCE_CHARS = 240

Mode = Literal["predict", "understand"]
SpeakerRole = Literal["user", "agent"]
SpanTag = Literal["state", "utterance", "syntax", "unknown"]
Span = tuple[int, int, SpanTag]


class Prompt(Record):
    """One prompt text with a stable id and a version number."""

    id: str
    version: int = Field(ge=1)
    text: str

    def render(self, **fields: str) -> str:
        """The text with its ``{fields}`` filled in."""
        return self.text.format(**fields)


SIMULATOR_SYSTEM = Prompt(
    id="simulator.system",
    version=3,
    text=(
        "You play a {user_role} talking with a {agent_role}. {scenario}\n{about}"
        "Answer in JSON: emotion now, intensity 1 weak to 3 strong; at most 2 short first-person "
        "beliefs, desires and intentions, scored {low}-{high}: {scores}; utterance: what you "
        "say next; leave: true only to end the conversation."
    ),
)

#: Prediction mode: the history ends with the agent's turn; state and reply are asked.
SIMULATOR_TURN = Prompt(
    id="simulator.turn",
    version=2,
    text="Conversation so far:\n{history}\n{states}Give your new state and your reply.",
)

#: Understanding mode: the history ends with the user's real turn; only the state is asked
#: (the arena reads the initial state from the cold start this way).
SIMULATOR_OPENING = Prompt(
    id="simulator.opening",
    version=2,
    text="Conversation so far:\n{history}\n{states}Give your state at this point.",
)

#: The prompts of the format, in the order they are hashed into :func:`format_version`.
FORMAT_PROMPTS: tuple[Prompt, ...] = (SIMULATOR_SYSTEM, SIMULATOR_TURN, SIMULATOR_OPENING)

_NO_HISTORY = "(nothing said yet)"
#: How the states part of a user message starts each state line (see :func:`states_text`).
START_STATE_PREFIX = "Your state at the start: "
PREVIOUS_STATE_PREFIX = "Your state before this: "
#: The states part of a prompt whose start and previous states are withheld: the simulator
#: must read the user's state from the conversation (state dropout in training; an input that
#: sets ``states_hidden``).
STATES_HIDDEN_LINE = "Your earlier states are not shown.\n"
#: How every line of the states part starts (see :func:`split_states`).
STATE_LINE_STARTS = (START_STATE_PREFIX, PREVIOUS_STATE_PREFIX, STATES_HIDDEN_LINE.rstrip("\n"))
#: How the system message starts the profile line (see :func:`system_message`).
PROFILE_PREFIX = "Your profile: "


class SimulatorOutputError(CogwmError):
    """A simulator answer that is not a valid state (and utterance) for the task."""


def format_version() -> str:
    """``ids@versions`` plus a short hash of the texts: changes whenever the format changes."""
    ids = ",".join(f"{p.id}@{p.version}" for p in FORMAT_PROMPTS)
    digest = hashlib.sha256("\x1f".join(p.text for p in FORMAT_PROMPTS).encode()).hexdigest()
    return f"{ids}#{digest[:12]}"


# --------------------------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------------------------


class WorldModelInput(Record):
    """Everything the simulator is shown for one user turn.

    ``history`` is already windowed (the caller decides how many turns the model sees). In
    ``predict`` mode it ends with the agent's turn (or is empty when the user opens) and the model
    gives its state and reply; in ``understand`` mode it ends with the user's real turn and only the
    state is asked.
    """

    task: str
    context: str = Field(default="", description="The user's situation (may be empty).")
    profile: Profile | None = None
    initial_state: CognitiveState | None = None
    history: list[tuple[SpeakerRole, str]] = Field(default_factory=list)
    previous_state: CognitiveState | None = None
    states_hidden: bool = Field(
        default=False,
        description="Withhold the initial and previous states: the prompt says they are not "
        "shown (see STATES_HIDDEN_LINE).",
    )
    mode: Mode = "predict"


def build_messages(inp: WorldModelInput, task: TaskSpec) -> list[Message]:
    """The system and user messages the simulator receives.

    Raises:
        SimulatorOutputError: The input names another task, or an ``understand`` input whose
            history does not end with the user's turn.
    """
    if inp.task != task.name:
        raise SimulatorOutputError(f"input for task {inp.task!r} given with task {task.name!r}")
    return [
        system_message(task, context=inp.context, profile=inp.profile),
        user_message(
            task,
            history=inp.history,
            mode=inp.mode,
            states=states_text(inp.initial_state, inp.previous_state, hidden=inp.states_hidden),
        ),
    ]


def system_message(task: TaskSpec, *, context: str, profile: Profile | None) -> Message:
    """The simulator's system message: it depends only on the task, the situation and the
    profile, so a caller playing one user many turns renders it once (see ``build_messages``)."""
    return Message(role="system", content=_system_text(task, context, profile))


def user_message(
    task: TaskSpec, *, history: Sequence[tuple[str, str]], mode: Mode, states: str
) -> Message:
    """The simulator's user message for one turn (see ``build_messages``).

    Args:
        task: The task (names the agent's role in the history).
        history: The windowed conversation as ``(role, text)`` pairs.
        mode: ``predict`` (state and reply) or ``understand`` (state only).
        states: The states part, from :func:`states_text`.

    Raises:
        SimulatorOutputError: An ``understand`` history that does not end with the user's turn.
    """
    if mode == "understand" and (not history or history[-1][0] != "user"):
        raise SimulatorOutputError("an 'understand' input must end with the user's turn")
    prompt = SIMULATOR_TURN if mode == "predict" else SIMULATOR_OPENING
    return Message(
        role="user", content=prompt.render(history=render_history(history, task), states=states)
    )


def _system_text(task: TaskSpec, context: str, profile: Profile | None) -> str:
    about = ""
    context = context.strip()
    # The scenario is already in the first line; repeating it as the situation wastes tokens.
    if context and context != task.scenario.strip():
        about += f"Your situation: {context}\n"
    if profile is not None:
        about += f"{PROFILE_PREFIX}{describe_profile(profile)}\n"
    low, high = task.score_range
    return SIMULATOR_SYSTEM.render(
        user_role=task.user_role,
        agent_role=task.agent_role,
        scenario=task.scenario,
        about=about,
        low=f"{low:g}",
        high=f"{high:g}",
        scores=describe_scores(task),
    )


def states_text(
    initial: CognitiveState | None,
    previous: CognitiveState | None,
    describe: Callable[[CognitiveState], str] | None = None,
    *,
    hidden: bool = False,
) -> str:
    """The states part of the simulator's user message: the start state and the previous one.

    Args:
        initial: The state read from the opening (None before it exists).
        previous: The latest state (None before the first one).
        describe: How a state is written (default :func:`describe_state`; a caller may pass a
            memoised one, as the text of a state never changes).
        hidden: Withhold both states: the part is :data:`STATES_HIDDEN_LINE` whatever they are.
    """
    if hidden:
        return STATES_HIDDEN_LINE
    describe = describe or describe_state
    lines = []
    # The start state is shown only while it differs from the previous one (saves tokens on the
    # first simulated turn, where the two are the same reading).
    if initial is not None and initial is not previous and initial != previous:
        lines.append(f"{START_STATE_PREFIX}{describe(initial)}\n")
    if previous is not None:
        lines.append(f"{PREVIOUS_STATE_PREFIX}{describe(previous)}\n")
    return "".join(lines)


def split_states(user: str) -> tuple[str, str, str]:
    """A rendered user message cut round its states part: ``(before, states, instruction)``.

    The states lines (:data:`STATE_LINE_STARTS`) sit just before the closing instruction, the
    last line; ``before + states + instruction`` is the message again. ``states`` is empty when
    the message shows none (the user's first turn).
    """
    lines = user.split("\n")
    end = len(lines) - 1
    start = end
    while start > 0 and lines[start - 1].startswith(STATE_LINE_STARTS):
        start -= 1
    before = "".join(line + "\n" for line in lines[:start])
    states = "".join(line + "\n" for line in lines[start:end])
    return before, states, lines[end]


def render_history(history: Sequence[tuple[str, str]], task: TaskSpec) -> str:
    """``You: ...`` / ``Supporter: ...`` lines, one per turn."""
    if not history:
        return _NO_HISTORY
    agent = task.agent_role.capitalize()
    return "\n".join(f"{'You' if role == 'user' else agent}: {text}" for role, text in history)


def describe_profile(profile: Profile) -> str:
    """A one-line profile for a prompt."""
    parts: list[str] = []
    if profile.big_five is not None:
        traits = profile.big_five.model_dump()
        parts.append("Big Five 1-5: " + ", ".join(f"{k} {v:g}" for k, v in traits.items()))
    if profile.communication_style:
        parts.append(f"talks: {profile.communication_style}")
    if profile.decision_style:
        parts.append(f"decides: {profile.decision_style}")
    parts.extend(f"{k}: {v}" for k, v in profile.task_features.items())
    return "; ".join(parts) or "no details"


def describe_scores(task: TaskSpec) -> str:
    """``beliefs by reality (meaning); ...`` for the system prompt."""
    labels = {
        Dimension.BELIEF: "beliefs",
        Dimension.DESIRE: "desires",
        Dimension.INTENTION: "intentions",
    }
    return ", ".join(
        f"{labels[d]} by {spec.name} ({spec.meaning})"
        for d, spec in task.dimensions.items()
        if d in labels
    )


def describe_state(state: CognitiveState | None) -> str:
    """A compact state for a prompt (``none`` before the first one)."""
    if state is None:
        return "none"
    parts: list[str] = []
    if state.emotion is not None:
        parts.append(f"emotion {state.emotion.label} {state.emotion.intensity}")
    for name, items in (
        ("beliefs", state.beliefs),
        ("desires", state.desires),
        ("intentions", state.intentions),
    ):
        if items:
            listed = "; ".join(
                f"{i.text} ({i.score:g})" if i.score is not None else i.text for i in items
            )
            parts.append(f"{name}: {listed}")
    return " | ".join(parts) or "none"


# --------------------------------------------------------------------------------------------
# Output models (grammar-constrained decoding) and conversion
# --------------------------------------------------------------------------------------------


def plain_text(max_chars: int, description: str = "") -> Any:
    """A string field of 1 to ``max_chars`` characters without control characters, double quotes
    or backslashes.

    Stated as a JSON-schema ``pattern`` because grammar-constrained decoding turns a pattern into
    exactly these characters, whereas a plain ``maxLength`` string lets llama.cpp's grammar emit
    raw newlines, which are invalid JSON; the same pattern is validated afterwards.
    """
    return Field(pattern=rf'^[^\x00-\x1f"\\]{{1,{max_chars}}}$', description=description or None)


_STRICT = ConfigDict(extra="forbid")


@cache
def state_output_models(
    task_name: str, score_range: tuple[float, float], labels: tuple[str, ...]
) -> tuple[type[BaseModel], type[BaseModel]]:
    """The simulator's output models for one task: ``(state only, state + utterance)``.

    The emotion label is a ``Literal`` over the lexicon and scores are bounded, so
    grammar-constrained decoding can only produce valid states.

    Args:
        task_name: Names the models (``UserStateESC``...).
        score_range: The task's item score range; integer ends give ``Literal`` scores.
        labels: The emotion labels allowed.
    """
    low, high = score_range
    score: Any
    if _integer_range(score_range):
        score = (Literal[tuple(range(int(low), int(high) + 1))], ...)
    else:
        score = (float, Field(ge=low, le=high))
    label_type: Any = Literal[labels]
    intensity_type: Any = Literal[INTENSITIES]
    emotion = create_model(
        f"UserEmotion{task_name}",
        __config__=_STRICT,
        label=(label_type, ...),
        intensity=(intensity_type, ...),
    )
    item = create_model(
        f"UserItem{task_name}",
        __config__=_STRICT,
        text=(str, plain_text(ITEM_CHARS)),
        score=score,
    )
    items = (list[item], Field(max_length=MAX_ITEMS))
    state_fields: dict[str, Any] = {
        "emotion": (emotion, ...),
        "beliefs": items,
        "desires": items,
        "intentions": items,
    }
    state = create_model(f"UserState{task_name}", __config__=_STRICT, **state_fields)
    turn = create_model(
        f"UserTurn{task_name}",
        __config__=_STRICT,
        **state_fields,
        utterance=(str, plain_text(UTTERANCE_CHARS)),
        leave=(bool, Field(description="True only if you want to end the conversation now.")),
    )
    return state, turn


def task_output_models(task: TaskSpec) -> tuple[type[BaseModel], type[BaseModel]]:
    """:func:`state_output_models` for ``task`` with every label the lexicon knows now."""
    return state_output_models(task.name, task.score_range, tuple(sorted(valence_table())))


def _integer_range(score_range: tuple[float, float]) -> bool:
    return all(float(end).is_integer() for end in score_range)


def to_state(value: BaseModel) -> CognitiveState:
    """The ``CognitiveState`` in a simulator output."""
    # Read from the attributes and validated in one call (not a model_dump and one model per
    # item): this runs on every simulated turn.
    emotion = value.emotion  # type: ignore[attr-defined]

    def items(key: str) -> list[dict[str, Any]]:
        return [
            {"text": i.text.strip() or "-", "score": float(i.score)} for i in getattr(value, key)
        ]

    return CognitiveState.model_validate(
        {
            "emotion": {"label": emotion.label, "intensity": int(emotion.intensity)},
            "beliefs": items("beliefs"),
            "desires": items("desires"),
            "intentions": items("intentions"),
        }
    )


# --------------------------------------------------------------------------------------------
# Output: the target text and its spans
# --------------------------------------------------------------------------------------------


class WorldModelOutput(Record):
    """What the simulator says: its state, and in prediction mode its utterance and ``leave``.

    ``utterance`` is None in understanding mode (the target then holds the state only).
    ``leave`` None means the source does not say whether the user wanted to end there.
    """

    state: CognitiveState
    utterance: str | None = None
    leave: bool | None = False


class _Target:
    """Builds the target text piece by piece, keeping one tagged span per piece."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.spans: list[Span] = []
        self.length = 0

    def add(self, text: str, tag: SpanTag) -> None:
        if not text:
            return
        start = self.length
        self.parts.append(text)
        self.length += len(text)
        if self.spans and self.spans[-1][2] == tag and self.spans[-1][1] == start:
            self.spans[-1] = (self.spans[-1][0], self.length, tag)
        else:
            self.spans.append((start, self.length, tag))

    def text(self) -> str:
        return "".join(self.parts)


def render_target(
    out: WorldModelOutput, partial: PartialState | None = None
) -> tuple[str, list[Span]]:
    """The assistant target text and its character spans.

    The text is compact JSON in the key order of the output models. Keys, braces and commas are
    tagged ``syntax``; emotion and item values ``state``; the utterance and ``leave`` values
    ``utterance``. A field that ``partial`` marks unknown is rendered ``null`` and tagged
    ``unknown`` (never a training target), as is an item score or ``leave`` that is None, and an
    emotion intensity the source does not know (``intensity_known`` false). An empty
    item list (the source says there is none) is ``[]`` tagged ``state``. Spans are contiguous and
    cover the text exactly.

    Args:
        out: The values (for a partial source, its known fields; see
            :meth:`PartialState.to_state`).
        partial: Which fields are known; None means all of them.

    Raises:
        ValueError: ``out`` has a value for a field ``partial`` marks unknown or empty.
    """
    target = _Target()
    target.add("{", "syntax")
    for position, field in enumerate(STATE_FIELDS):
        target.add(("," if position else "") + f'"{field}":', "syntax")
        kind = partial.kind(field) if partial is not None else FieldKind.VALUE
        if field == "emotion":
            intensity_known = partial is None or partial.emotion.intensity_known
            _add_emotion(target, out.state.emotion, kind, intensity_known=intensity_known)
        else:
            _add_items(target, getattr(out.state, field), kind, field)
    if out.utterance is not None:
        target.add(',"utterance":', "syntax")
        target.add(_json_string(out.utterance), "utterance")
        target.add(',"leave":', "syntax")
        if out.leave is None:
            target.add("null", "unknown")
        else:
            target.add("true" if out.leave else "false", "utterance")
    target.add("}", "syntax")
    return target.text(), target.spans


def _add_emotion(
    target: _Target, emotion: Emotion | None, kind: FieldKind, *, intensity_known: bool
) -> None:
    if kind is not FieldKind.VALUE and emotion is not None:
        raise ValueError(f"emotion is {kind.value} but has a value")
    if kind is FieldKind.UNKNOWN:
        target.add("null", "unknown")
        return
    if emotion is None:
        # An annotator said there is no emotion: that is the target.
        target.add("null", "state")
        return
    target.add('{"label":', "syntax")
    target.add(_json_string(emotion.label), "state")
    target.add(',"intensity":', "syntax")
    if intensity_known:
        target.add(str(emotion.intensity), "state")
    else:
        # The source gives the label only (its intensity is a convention): not a target.
        target.add("null", "unknown")
    target.add("}", "syntax")


def _add_items(target: _Target, items: list[StateItem], kind: FieldKind, field: str) -> None:
    if items and kind is not FieldKind.VALUE:
        raise ValueError(f"{field} is {kind.value} but has items")
    if kind is FieldKind.UNKNOWN:
        target.add("null", "unknown")
        return
    if not items:
        target.add("[]", "state")
        return
    target.add("[", "syntax")
    for position, item in enumerate(items):
        target.add(("," if position else "") + '{"text":', "syntax")
        target.add(_json_string(item.text), "state")
        target.add(',"score":', "syntax")
        if item.score is None:
            target.add("null", "unknown")
        else:
            target.add(_json_number(item.score), "state")
        target.add("}", "syntax")
    target.add("]", "syntax")


def _json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _json_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# --------------------------------------------------------------------------------------------
# Fitting values into what the simulator may say
# --------------------------------------------------------------------------------------------

_UNSAYABLE = re.compile(r'[\x00-\x1f"\\]')
_SPACES = re.compile(r"\s+")


def fit_text(text: str, max_chars: int) -> str:
    """``text`` as the output grammar allows it: one line, no double quotes or backslashes, at
    most ``max_chars`` characters (cut at a sentence end, else a word boundary).

    Double quotes become single quotes and backslashes slashes, so the words are kept.
    """
    cleaned = text.replace('"', "'").replace("\\", "/")
    cleaned = _SPACES.sub(" ", cleaned)
    cleaned = _UNSAYABLE.sub("", cleaned).strip()
    if len(cleaned) <= max_chars:
        return cleaned
    head = cleaned[:max_chars]
    sentence = max(head.rfind(". "), head.rfind("! "), head.rfind("? "))
    if sentence >= max_chars // 3:
        return head[: sentence + 1]
    space = head.rfind(" ")
    return (head[:space] if space >= max_chars // 3 else head).rstrip()


def fit_output(out: WorldModelOutput, task: TaskSpec) -> tuple[WorldModelOutput, list[str]]:
    """``out`` made sayable under the output models of ``task``, and what had to change.

    Keeps the first :data:`MAX_ITEMS` items per dimension, fits item texts and the utterance with
    :func:`fit_text`, and rounds scores to the task's integer grid where its range has integer
    ends (a half away from the middle of the range). Returns the fitted output and the names of
    the changes (``"items_dropped"``, ``"text_fitted"``, ``"utterance_fitted"``,
    ``"score_rounded"``), for the caller to count.
    """
    changes: list[str] = []

    def items(values: list[StateItem]) -> list[StateItem]:
        if len(values) > MAX_ITEMS:
            changes.append("items_dropped")
        kept = []
        for item in values[:MAX_ITEMS]:
            text = fit_text(item.text, ITEM_CHARS) or "-"
            if text != item.text:
                changes.append("text_fitted")
            kept.append(StateItem(text=text, score=_fit_score(item.score, task, changes)))
        return kept

    state = out.state
    fitted = CognitiveState(
        emotion=None
        if state.emotion is None
        else Emotion(label=state.emotion.label, intensity=state.emotion.intensity),
        beliefs=items(state.beliefs),
        desires=items(state.desires),
        intentions=items(state.intentions),
    )
    utterance = out.utterance
    if utterance is not None:
        utterance = fit_text(utterance, UTTERANCE_CHARS) or "..."
        if utterance != out.utterance:
            changes.append("utterance_fitted")
    return WorldModelOutput(state=fitted, utterance=utterance, leave=out.leave), changes


def _fit_score(score: float | None, task: TaskSpec, changes: list[str]) -> float | None:
    if score is None:
        return None
    low, high = task.score_range
    fitted = min(high, max(low, score))
    if _integer_range(task.score_range):
        # The grammar allows whole scores only, and corpus conventions use halves (LABELS.md:
        # P4G desire 0.5 / 1.0 / 1.5 for a negative / neutral / positive reaction). A half goes
        # away from the middle of the range (0.5 -> 0, 1.5 -> 2), so those three levels stay
        # three; rounding every half up would give a negative reaction the neutral score.
        middle = (low + high) / 2
        nearest = math.floor(fitted + 0.5)
        if fitted - math.floor(fitted) == 0.5 and fitted < middle:
            nearest -= 1
        fitted = float(nearest)
    if fitted != score:
        changes.append("score_rounded")
    return fitted


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


def parse_output(text: str, task: TaskSpec) -> WorldModelOutput:
    """Read a simulator answer: one JSON object valid under the task's output models.

    An object with an ``utterance`` key is read as prediction mode (state, utterance, leave);
    one without as understanding mode (state only). Surrounding whitespace is allowed, anything
    else around the object is not.

    Raises:
        SimulatorOutputError: Not JSON, text after the object, or an object that does not
            validate (the message names the first invalid field).
    """
    stripped = text.strip()
    try:
        data, end = json.JSONDecoder().raw_decode(stripped)
    except json.JSONDecodeError as exc:
        raise SimulatorOutputError(
            f"simulator output is not JSON ({exc.msg} at character {exc.pos})"
        ) from None
    if end != len(stripped):
        extra = stripped[end : end + 40]
        raise SimulatorOutputError(f"simulator output has text after the JSON object: {extra!r}")
    if not isinstance(data, dict):
        raise SimulatorOutputError(
            f"simulator output must be a JSON object, got {type(data).__name__}"
        )
    state_model, turn_model = task_output_models(task)
    model = turn_model if "utterance" in data else state_model
    try:
        value = model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "output"
        raise SimulatorOutputError(f"simulator output: {where}: {first['msg']}") from None
    if model is state_model:
        return WorldModelOutput(state=to_state(value), utterance=None, leave=None)
    said = value.model_dump()
    return WorldModelOutput(
        state=to_state(value), utterance=str(said["utterance"]).strip(), leave=bool(said["leave"])
    )
