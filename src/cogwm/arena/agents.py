"""Agents under test of every kind, built from their config: a model and prompt, a service that
speaks OpenAI chat completions, or a Python object implementing the participant protocol.

All three answer through ``Participant.next_turn``. Endpoint and Python agents are held to the
reply budget the same way: an empty reply, or one over ``max_tokens`` (the service's reported
completion tokens, else ``max_tokens * CHARS_PER_TOKEN`` characters), is the agent's failure
(``AgentFailure``: scored, counted against it). An endpoint's transport errors and 5xx go
through the model interface's retries; once they are spent, the conversation fails as
infrastructure (excluded, re-run by ``--resume``).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from cogwm.arena.config import AgentConfig, AgentKind
from cogwm.arena.factories import import_factory
from cogwm.arena.participants import CHARS_PER_TOKEN, AgentParticipant
from cogwm.arena.prompts import Prompt
from cogwm.arena.protocol import AgentFailure, Participant
from cogwm.arena.termination import Condition
from cogwm.arena.transcript import ArenaTurn, TurnOutput
from cogwm.errors import ConfigError
from cogwm.models.model import Model
from cogwm.models.types import Message
from cogwm.schema import Record, TaskSpec


class AgentBrief(Record):
    """What a Python agent's factory is told about the conversation it will hold."""

    task: str
    agent_role: str
    user_role: str
    system: str | None = None
    max_tokens: int
    max_chars: int


def check_reply(text: str, config: AgentConfig, *, tokens: int | None = None) -> str:
    """The reply stripped, or ``AgentFailure`` when it is empty or over the agent's budget.

    Args:
        text: The agent's reply.
        config: The agent (its ``max_tokens``).
        tokens: The reply's completion tokens when the service reported them; else characters
            are counted against ``max_tokens * CHARS_PER_TOKEN``.
    """
    reply = text.strip()
    if not reply:
        raise AgentFailure("empty reply")
    if tokens:
        if tokens > config.max_tokens:
            raise AgentFailure(f"reply of {tokens} tokens, over the budget of {config.max_tokens}")
    elif len(reply) > config.max_tokens * CHARS_PER_TOKEN:
        limit = config.max_tokens * CHARS_PER_TOKEN
        raise AgentFailure(f"reply of {len(reply)} characters, over the budget of {limit}")
    return reply


class EndpointAgent(AgentParticipant):
    """An agent behind an HTTP endpoint that speaks OpenAI chat completions.

    It receives the conversation so far as messages (user turns as ``user``, its own as
    ``assistant``) after the task's system prompt (unless ``system_message = false``); the
    reply is its next turn.
    """

    def __init__(
        self,
        model: Model,
        config: AgentConfig,
        task: TaskSpec,
        own_prompt: Prompt,
        *,
        history_turns: int | None,
    ):
        super().__init__(
            model, config, task, own_prompt, Condition.NO_COT, history_turns=history_turns
        )

    def messages(self, turns: Sequence[ArenaTurn]) -> list[Message]:
        """The chat sent to the service (without the system message when told so)."""
        chat = super().messages(turns)
        return chat if self.config.system_message else chat[1:]

    async def next_turn(self, turns: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
        """The service's reply, checked against the budget."""
        completion = await self.model.generate(
            self.messages(turns), self.config.sampling(seed), tag="agent.endpoint"
        )
        tokens = completion.usage.completion_tokens
        text = check_reply(completion.text, self.config, tokens=tokens or None)
        return TurnOutput(text=text, call_id=completion.call_id)


class PythonAgent:
    """A Python object implementing the participant protocol, held to the agent's budget.

    The object sees the turns' texts only: the simulated user's states and the agent's
    reasoning are stripped from the history it gets. A synchronous ``next_turn`` runs in a
    worker thread, so a slow agent never stalls other conversations. The object may return a
    ``TurnOutput`` or a string.
    """

    def __init__(self, inner: Participant, config: AgentConfig):
        self.inner = inner
        self.config = config
        self._shown: dict[int, tuple[ArenaTurn, ArenaTurn]] = {}

    def _visible(self, turn: ArenaTurn) -> ArenaTurn:
        known = self._shown.get(id(turn))
        if known is None or known[0] is not turn:
            shown = turn.model_copy(update={"state": None, "reasoning": None, "call_id": None})
            known = self._shown[id(turn)] = (turn, shown)
        return known[1]

    async def next_turn(self, turns: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
        """The object's reply, checked against the budget."""
        history = [self._visible(t) for t in turns]
        method = self.inner.next_turn
        if inspect.iscoroutinefunction(method):
            answer: Any = await method(history, seed=seed)
        else:
            answer = await asyncio.to_thread(method, history, seed=seed)
            if inspect.isawaitable(answer):
                answer = await answer
        if isinstance(answer, str):
            return TurnOutput(text=check_reply(answer, self.config))
        if not isinstance(answer, TurnOutput):
            raise AgentFailure(f"next_turn returned {type(answer).__name__}, not a TurnOutput")
        # Only the reply and the agent's own reasoning pass: a Python agent cannot end the
        # conversation or set the user's state.
        return TurnOutput(
            text=check_reply(answer.text, self.config),
            reasoning=answer.reasoning,
            call_id=answer.call_id,
        )


def _takes_brief(factory: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in parameters
    )


def build_agent(
    config: AgentConfig,
    task: TaskSpec,
    own_prompt: Prompt,
    condition: Condition,
    *,
    history_turns: int | None,
    model: Callable[[], Model],
) -> Participant:
    """The participant for one conversation of ``config`` (a Python agent's factory is called
    once per conversation, with an ``AgentBrief`` when it takes an argument).

    Args:
        config: The agent.
        task: The conversation's task.
        own_prompt: The agent's own prompt, resolved.
        condition: CoT or not (endpoint and Python agents: no CoT only).
        history_turns: Turns of history a model or endpoint agent is shown (None: all).
        model: Gives the model the agent's calls go through (model and endpoint agents).
    """
    kind = config.kind
    if kind is AgentKind.MODEL:
        return AgentParticipant(
            model(), config, task, own_prompt, condition, history_turns=history_turns
        )
    if kind is AgentKind.ENDPOINT:
        return EndpointAgent(model(), config, task, own_prompt, history_turns=history_turns)
    factory = import_factory(str(config.python))
    if _takes_brief(factory):
        system = AgentParticipant.system_text(task, own_prompt, condition)
        brief = AgentBrief(
            task=task.name,
            agent_role=task.agent_role,
            user_role=task.user_role,
            system=system if config.system_message else None,
            max_tokens=config.max_tokens,
            max_chars=config.max_tokens * CHARS_PER_TOKEN,
        )
        inner = factory(brief)
    else:
        inner = factory()
    if not callable(getattr(inner, "next_turn", None)):
        raise ConfigError(f"python agent {config.python!r}: its object has no next_turn method")
    return PythonAgent(inner, config)
