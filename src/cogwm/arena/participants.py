"""The participants of an arena conversation: the user simulator, the agent under test, the
intent detector and the profile annotator. Each makes its model call through the model interface.

The simulator's output model is built per task: the emotion label is a ``Literal`` over the
lexicon and scores are bounded, so grammar-constrained decoding (llama.cpp) can only produce valid
states.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, create_model

from cogwm.arena.config import AgentConfig, ModelConfig
from cogwm.arena.prompts import (
    AGENT_COT,
    INTENT_DETECTOR,
    PROFILE_ANNOTATOR,
    SIMULATOR_OPENING,
    SIMULATOR_SYSTEM,
    SIMULATOR_TURN,
    Prompt,
    agent_task_prompt,
    describe_profile,
    describe_scores,
    describe_state,
    speaker_name,
)
from cogwm.arena.termination import Condition
from cogwm.arena.transcript import ArenaTurn, TurnOutput, UserSetup, latest_state
from cogwm.models.model import Model
from cogwm.models.types import Message
from cogwm.schema import BigFive, CognitiveState, Emotion, Profile, Role, StateItem, TaskSpec
from cogwm.schema.lexicon import INTENSITIES, valence_table

#: Items per B/D/I dimension the simulator may state in one turn (keeps outputs short).
MAX_ITEMS = 2
#: Longest item text and utterance (characters): with the keys, a state and utterance stay
#: under ~220 tokens, inside the simulator's default budget of 300, so outputs are never cut.
ITEM_CHARS = 60
UTTERANCE_CHARS = 240


def plain_text(max_chars: int, description: str = "") -> Any:
    """A string field of 1 to ``max_chars`` characters without control characters, double quotes
    or backslashes.

    Stated as a JSON-schema ``pattern`` because grammar-constrained decoding turns a pattern into
    exactly these characters, whereas a plain ``maxLength`` string lets llama.cpp's grammar emit
    raw newlines, which are invalid JSON; the same pattern is validated afterwards.
    """
    return Field(pattern=rf'^[^\x00-\x1f"\\]{{1,{max_chars}}}$', description=description or None)


_STRICT = ConfigDict(extra="forbid")


class _Output(BaseModel):
    model_config = _STRICT


class ReasonedReply(_Output):
    """The agent's output under the CoT condition: reasoning first, then the reply."""

    reasoning: str = plain_text(600, "Your private reasoning; the user never sees it.")
    reply: str = plain_text(400, "What you say to the user.")


class EndCheck(_Output):
    """The intent detector's verdict."""

    ended: bool = Field(description="True if the conversation has naturally ended.")


class ProfileGuess(_Output):
    """The profile annotator's output."""

    openness: Literal[1, 2, 3, 4, 5]
    conscientiousness: Literal[1, 2, 3, 4, 5]
    extraversion: Literal[1, 2, 3, 4, 5]
    agreeableness: Literal[1, 2, 3, 4, 5]
    neuroticism: Literal[1, 2, 3, 4, 5]
    communication_style: str = plain_text(80)
    decision_style: str = plain_text(80)
    confidence: Literal[1, 2, 3]


@cache
def state_output_models(
    task_name: str, score_range: tuple[float, float], labels: tuple[str, ...]
) -> tuple[type[BaseModel], type[BaseModel]]:
    """The simulator's output models for one task: ``(state only, state + utterance)``.

    Args:
        task_name: Names the models (``UserStateESC``...).
        score_range: The task's item score range; integer ends give ``Literal`` scores.
        labels: The emotion labels allowed.
    """
    low, high = score_range
    score: Any
    if float(low).is_integer() and float(high).is_integer():
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


def to_state(value: BaseModel) -> CognitiveState:
    """The ``CognitiveState`` in a simulator output."""
    data = value.model_dump()
    emotion = data["emotion"]

    def items(key: str) -> list[StateItem]:
        return [
            StateItem(text=i["text"].strip() or "-", score=float(i["score"])) for i in data[key]
        ]

    return CognitiveState(
        emotion=Emotion(label=emotion["label"], intensity=int(emotion["intensity"])),
        beliefs=items("beliefs"),
        desires=items("desires"),
        intentions=items("intentions"),
    )


def render_history(turns: list[ArenaTurn], task: TaskSpec, *, limit: int, user_is_you: bool) -> str:
    """The last ``limit`` turns as ``Speaker: text`` lines."""
    shown = turns[-limit:]
    return "\n".join(
        f"{speaker_name(t.role, task, user_is_you=user_is_you)}: {t.text}" for t in shown
    )


def strip_speaker_label(text: str, labels: tuple[str, ...]) -> str:
    """The utterance without a leading ``You:``-style label copied from the transcript format."""
    text = text.strip()
    head, sep, rest = text.partition(":")
    if sep and head.strip().lower() in labels and rest.strip():
        return rest.strip()
    return text


class StateReading(NamedTuple):
    """The simulator's reading of the opening: the initial state and the call that made it."""

    state: CognitiveState
    call_id: str


class SimulatorParticipant:
    """The cognitive user simulator: next state and utterance in one structured call."""

    def __init__(self, model: Model, config: ModelConfig, task: TaskSpec, *, history_turns: int):
        self.model = model
        self.config = config
        self.task = task
        self.history_turns = history_turns
        labels = tuple(sorted(valence_table()))
        self.state_model, self.turn_model = state_output_models(task.name, task.score_range, labels)
        self._labels = ("you", "user", task.user_role.lower())

    def _system(self, setup: UserSetup) -> Message:
        low, high = self.task.score_range
        text = SIMULATOR_SYSTEM.render(
            user_role=self.task.user_role,
            agent_role=self.task.agent_role,
            scenario=self.task.scenario,
            context=setup.context,
            profile=describe_profile(setup.profile),
            low=f"{low:g}",
            high=f"{high:g}",
            scores=describe_scores(self.task),
        )
        return Message(role="system", content=text)

    def _history(self, turns: list[ArenaTurn]) -> str:
        return render_history(turns, self.task, limit=self.history_turns, user_is_you=True)

    async def read_state(
        self, setup: UserSetup, turns: list[ArenaTurn], *, seed: int
    ) -> StateReading:
        """The user's state after the cold-start turns (the trajectory's first point)."""
        prompt = SIMULATOR_OPENING.render(history=self._history(turns))
        messages = [self._system(setup), Message(role="user", content=prompt)]
        result = await self.model.generate_structured(
            messages, self.state_model, self.config.sampling(seed), tag="simulator.opening"
        )
        return StateReading(to_state(result.value), result.completion.call_id)

    async def next_turn(self, setup: UserSetup, turns: list[ArenaTurn], *, seed: int) -> TurnOutput:
        """The user's next state and utterance, given the history (ending with an agent turn)."""
        prompt = SIMULATOR_TURN.render(
            history=self._history(turns), previous=describe_state(latest_state(turns))
        )
        messages = [self._system(setup), Message(role="user", content=prompt)]
        result = await self.model.generate_structured(
            messages, self.turn_model, self.config.sampling(seed), tag="simulator"
        )
        value = result.value
        return TurnOutput(
            text=strip_speaker_label(str(getattr(value, "utterance", "")), self._labels),
            state=to_state(value),
            leave=bool(getattr(value, "leave", False)),
            call_id=result.completion.call_id,
        )


class AgentParticipant:
    """An agent under test: a model, the task's system prompt plus its own, and a condition."""

    def __init__(
        self,
        model: Model,
        config: AgentConfig,
        task: TaskSpec,
        own_prompt: Prompt,
        condition: Condition,
        *,
        history_turns: int,
    ):
        self.model = model
        self.config = config
        self.task = task
        self.condition = condition
        self.history_turns = history_turns
        parts = [agent_task_prompt(task).text, own_prompt.text]
        if condition is Condition.COT:
            parts.append(AGENT_COT.render(user_role=task.user_role))
        self.system_prompt = "\n".join(p for p in parts if p)

    def messages(self, turns: list[ArenaTurn]) -> list[Message]:
        """The chat the agent sees: its system prompt, then the turns as user/assistant messages."""
        shown = turns[-self.history_turns :]
        chat = [
            Message(role="assistant" if t.role is Role.AGENT else "user", content=t.text)
            for t in shown
        ]
        return [Message(role="system", content=self.system_prompt), *chat]

    async def next_turn(self, turns: list[ArenaTurn], *, seed: int) -> TurnOutput:
        """The agent's reply (under CoT, the reasoning is returned apart from the reply)."""
        messages = self.messages(turns)
        if self.condition is Condition.COT:
            sampling = self.config.sampling(seed).model_copy(
                update={"max_tokens": self.config.cot_max_tokens}
            )
            result = await self.model.generate_structured(
                messages, ReasonedReply, sampling, tag="agent.cot"
            )
            return TurnOutput(
                text=result.value.reply.strip(),
                reasoning=result.value.reasoning.strip(),
                call_id=result.completion.call_id,
            )
        completion = await self.model.generate(messages, self.config.sampling(seed), tag="agent")
        return TurnOutput(text=completion.text.strip(), call_id=completion.call_id)


class IntentDetector:
    """Decides whether the conversation has naturally ended (DESIGN.md §6)."""

    def __init__(
        self, model: Model, config: ModelConfig, task: TaskSpec, *, history_turns: int = 4
    ):
        self.model = model
        self.config = config
        self.task = task
        self.history_turns = history_turns

    async def ended(self, turns: list[ArenaTurn], *, seed: int) -> TurnOutput:
        """``leave`` is True when the conversation has ended; ``text`` is empty."""
        prompt = INTENT_DETECTOR.render(
            agent_role=self.task.agent_role,
            user_role=self.task.user_role,
            history=render_history(turns, self.task, limit=self.history_turns, user_is_you=False),
        )
        result = await self.model.generate_structured(
            [Message(role="user", content=prompt)],
            EndCheck,
            self.config.sampling(seed),
            tag="intent",
        )
        return TurnOutput(text="", leave=result.value.ended, call_id=result.completion.call_id)


class ProfileAnnotator:
    """Guesses a user profile from the opening rounds when no metadata gives one."""

    def __init__(self, model: Model, config: ModelConfig, task: TaskSpec):
        self.model = model
        self.config = config
        self.task = task

    async def annotate(self, turns: list[ArenaTurn], *, seed: int) -> Profile:
        """A profile with ``source="annotator"`` and the annotator's own confidence."""
        prompt = PROFILE_ANNOTATOR.render(
            user_role=self.task.user_role,
            history=render_history(turns, self.task, limit=len(turns), user_is_you=False),
        )
        result = await self.model.generate_structured(
            [Message(role="user", content=prompt)],
            ProfileGuess,
            self.config.sampling(seed),
            tag="profile",
        )
        guess = result.value
        return Profile(
            big_five=BigFive(
                openness=float(guess.openness),
                conscientiousness=float(guess.conscientiousness),
                extraversion=float(guess.extraversion),
                agreeableness=float(guess.agreeableness),
                neuroticism=float(guess.neuroticism),
            ),
            communication_style=guess.communication_style.strip(),
            decision_style=guess.decision_style.strip(),
            confidence=int(guess.confidence),
            source="annotator",
        )
