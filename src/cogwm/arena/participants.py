"""The participants of an arena conversation: the user simulator, the agent under test, the
intent detector and the profile annotator. Each makes its model call through the model interface.

The simulator's output model is built per task: the emotion label is a ``Literal`` over the
lexicon and scores are bounded, so grammar-constrained decoding (llama.cpp) can only produce valid
states.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Sequence
from functools import cache
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, create_model

from cogwm.arena.config import AgentConfig, ModelConfig
from cogwm.arena.prompts import (
    AGENT_COT,
    INTENT_DETECTOR,
    PROFILE_ANNOTATOR,
    Prompt,
    agent_task_prompt,
    speaker_name,
)
from cogwm.arena.termination import Condition
from cogwm.arena.transcript import ArenaTurn, TurnOutput, UserSetup, latest_state
from cogwm.models.model import Model
from cogwm.models.types import Message
from cogwm.schema import BigFive, CognitiveState, Profile, Role, TaskSpec
from cogwm.schema.lexicon import valence_table

# The simulator's output models and limits live with the world-model format; re-exported here.
from cogwm.simulator.format import (
    ITEM_CHARS as ITEM_CHARS,
)
from cogwm.simulator.format import (
    MAX_ITEMS as MAX_ITEMS,
)
from cogwm.simulator.format import (
    UTTERANCE_CHARS as UTTERANCE_CHARS,
)
from cogwm.simulator.format import (
    Mode,
    describe_state,
    plain_text,
    states_text,
    system_message,
    user_message,
)
from cogwm.simulator.format import (
    state_output_models as state_output_models,
)
from cogwm.simulator.format import (
    to_state as to_state,
)

_STRICT = ConfigDict(extra="forbid")


class _Output(BaseModel):
    model_config = _STRICT


#: Characters per token used to turn token budgets into field lengths (English prose averages
#: about 4 with the BPE tokenizers of current models).
CHARS_PER_TOKEN = 4
#: Tokens a CoT reply needs beyond its two fields (keys, quotes, braces).
COT_OVERHEAD_TOKENS = 24


class ReasonedReply(_Output):
    """The agent's output under the CoT condition: reasoning first, then the reply.

    The limits here are the defaults; ``reasoned_reply`` builds the model an agent is held to.
    """

    reasoning: str = plain_text(800, "Your private reasoning; the user never sees it.")
    reply: str = plain_text(480, "What you say to the user.")


@cache
def reasoned_reply(reasoning_chars: int, reply_chars: int) -> type[BaseModel]:
    """The CoT output model with these field limits (one class per pair, so schemas cache)."""
    return create_model(
        "ReasonedReply",
        __base__=_Output,
        __doc__=ReasonedReply.__doc__,
        reasoning=(
            str,
            plain_text(reasoning_chars, "Your private reasoning; the user never sees it."),
        ),
        reply=(str, plain_text(reply_chars, "What you say to the user.")),
    )


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


def render_history(
    turns: Sequence[ArenaTurn], task: TaskSpec, *, limit: int, user_is_you: bool
) -> str:
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
    call_id: str | None


class SimulatorParticipant:
    """The cognitive user simulator: next state and utterance in one structured call.

    Bound to one user (``setup``, or ``for_user``) it is a ``Participant``; ``respond`` asks for
    any user's turn explicitly.
    """

    def __init__(
        self,
        model: Model,
        config: ModelConfig,
        task: TaskSpec,
        *,
        history_turns: int | None,
        setup: UserSetup | None = None,
    ):
        self.model = model
        self.config = config
        self.task = task
        self.history_turns = history_turns
        self.setup = setup
        labels = tuple(sorted(valence_table()))
        self.state_model, self.turn_model = state_output_models(task.name, task.score_range, labels)
        self._labels = ("you", "user", task.user_role.lower())
        self._system: Message | None = None
        self._described: dict[int, tuple[CognitiveState, str]] = {}

    def for_user(self, setup: UserSetup) -> SimulatorParticipant:
        """This simulator bound to one user's situation and profile (a ``Participant``)."""
        bound = copy.copy(self)
        bound.setup = setup
        # Rendered once per user, not once per turn: it depends only on task and setup.
        bound._system = self._system_message(setup)
        bound._described = {}
        return bound

    def _system_message(self, setup: UserSetup) -> Message:
        return system_message(self.task, context=setup.context, profile=setup.profile)

    def _messages(self, setup: UserSetup, turns: Sequence[ArenaTurn], mode: Mode) -> list[Message]:
        """The simulator's prompt in the world-model format (``build_messages``), over its
        history window."""
        bound = setup is self.setup and self._system is not None
        system = self._system if bound and self._system else self._system_message(setup)
        shown = turns if self.history_turns is None else turns[-self.history_turns :]
        states = states_text(
            next((t.state for t in turns if t.state is not None), None),
            latest_state(turns),
            self._describe if bound else None,
        )
        history = [(str(t.role), t.text) for t in shown]  # str(): the value, without a descriptor
        return [system, user_message(self.task, history=history, mode=mode, states=states)]

    def _describe(self, state: CognitiveState) -> str:
        # A state's text is asked for on every later turn (as the start or previous state).
        known = self._described.get(id(state))
        if known is None or known[0] is not state:
            known = self._described[id(state)] = (state, describe_state(state))
        return known[1]

    async def read_state(
        self, setup: UserSetup, turns: Sequence[ArenaTurn], *, seed: int
    ) -> StateReading:
        """The user's state after the cold-start turns (the trajectory's first point)."""
        messages = self._messages(setup, turns, "understand")
        result = await self.model.generate_structured(
            messages, self.state_model, self.config.sampling(seed), tag="simulator.opening"
        )
        return StateReading(to_state(result.value), result.completion.call_id)

    async def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
        """The bound user's next state and utterance (``Participant``; see ``for_user``)."""
        if self.setup is None:
            raise ValueError("SimulatorParticipant.next_turn needs a user: use for_user(setup)")
        return await self.respond(self.setup, history, seed=seed)

    async def respond(
        self, setup: UserSetup, turns: Sequence[ArenaTurn], *, seed: int
    ) -> TurnOutput:
        """The user's next state and utterance, given the history (ending with an agent turn)."""
        messages = self._messages(setup, turns, "predict")
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
        history_turns: int | None,
    ):
        self.model = model
        self.config = config
        self.task = task
        self.condition = condition
        self.history_turns = history_turns
        self.system_prompt = self.system_text(task, own_prompt, condition)
        self._system = Message(role="system", content=self.system_prompt)
        # The conversation's turns converted so far and their messages, in order: a call shows
        # the turns it was shown before plus the new ones, so each turn is converted once and a
        # call's check of the old ones is one C-level pass (no Python call per turn).
        self._seen: list[ArenaTurn] = []
        self._chat: list[Message] = []

    @staticmethod
    def system_text(task: TaskSpec, own_prompt: Prompt, condition: Condition) -> str:
        """The agent's system prompt: the task's part, its own, and the CoT instruction."""
        parts = [agent_task_prompt(task).text, own_prompt.text]
        if condition is Condition.COT:
            parts.append(AGENT_COT.render(user_role=task.user_role))
        return "\n".join(p for p in parts if p)

    def messages(self, turns: Sequence[ArenaTurn]) -> list[Message]:
        """The chat the agent sees: its system prompt, then the turns of its window (``None``:
        all of them) as user/assistant messages."""
        chat = self._chat_of(turns)
        shown = chat if self.history_turns is None else chat[-self.history_turns :]
        return [self._system, *shown]

    def _chat_of(self, turns: Sequence[ArenaTurn]) -> list[Message]:
        """One message per turn; the turns seen before (the same objects, in the same places)
        keep their messages, anything else starts over."""
        seen, known = self._seen, len(self._seen)
        if len(turns) < known or not all(map(operator.is_, seen, turns[:known])):
            seen.clear()
            self._chat.clear()
            known = 0
        for turn in turns[known:]:
            role = "assistant" if turn.role is Role.AGENT else "user"
            seen.append(turn)
            self._chat.append(Message(role=role, content=turn.text))
        return self._chat

    async def next_turn(self, turns: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
        """The agent's reply (under CoT, the reasoning is returned apart from the reply).

        Both conditions get the same budget for the reply, ``max_tokens``: without CoT it caps
        the generation (a longer reply is cut there and passed on as it is); under CoT the reply
        field holds at most ``max_tokens * CHARS_PER_TOKEN`` characters and the reasoning has
        its own ``reasoning_max_tokens`` on top. A CoT output that is still invalid after the
        repair attempt raises ``StructuredOutputError``: the agent broke its format, which the
        orchestrator counts against the agent.
        """
        messages = self.messages(turns)
        if self.condition is Condition.COT:
            config = self.config
            budget = config.reasoning_max_tokens + config.max_tokens + COT_OVERHEAD_TOKENS
            sampling = config.sampling(seed).model_copy(update={"max_tokens": budget})
            output = reasoned_reply(
                config.reasoning_max_tokens * CHARS_PER_TOKEN, config.max_tokens * CHARS_PER_TOKEN
            )
            result = await self.model.generate_structured(
                messages, output, sampling, tag="agent.cot"
            )
            fields = result.value.model_dump()
            return TurnOutput(
                text=str(fields["reply"]).strip(),
                reasoning=str(fields["reasoning"]).strip(),
                call_id=result.completion.call_id,
            )
        completion = await self.model.generate(messages, self.config.sampling(seed), tag="agent")
        return TurnOutput(text=completion.text.strip(), call_id=completion.call_id)


class IntentDetector:
    """Decides whether the conversation has naturally ended (docs/architecture.md, "Arena")."""

    def __init__(
        self, model: Model, config: ModelConfig, task: TaskSpec, *, history_turns: int = 4
    ):
        self.model = model
        self.config = config
        self.task = task
        self.history_turns = history_turns

    async def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
        """``leave`` is True when the conversation has ended; ``text`` is empty."""
        prompt = INTENT_DETECTOR.render(
            agent_role=self.task.agent_role,
            user_role=self.task.user_role,
            history=render_history(history, self.task, limit=self.history_turns, user_is_you=False),
        )
        result = await self.model.generate_structured(
            [Message(role="user", content=prompt)],
            EndCheck,
            self.config.sampling(seed),
            tag="intent",
        )
        return TurnOutput(text="", leave=result.value.ended, call_id=result.completion.call_id)

    async def ended(self, turns: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
        """The same as ``next_turn`` (the detector's own name for its one question)."""
        return await self.next_turn(turns, seed=seed)


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
