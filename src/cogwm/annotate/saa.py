"""Summarize-and-Allocate and the profile annotator, for one dialogue (docs/architecture.md,
"Annotation").

Stage 1 reads the whole dialogue and lists the user's dialogue-level items; stage 2 allocates each
user turn on its own (emotion, and the stage-1 items the turn expresses, with quotes); the profile
call describes the user. Every answer is validated (:mod:`cogwm.annotate.validate`); a broken one
gets one repair call carrying the validator's message, and what still fails is kept as a
:class:`Failure` with its reason. Nothing is ever filled with a default.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, Field

from cogwm.annotate import prompts
from cogwm.annotate.outputs import (
    Allocation,
    ProfileOut,
    ProfileRestOut,
    Summary,
    allocation_model,
    summary_model,
)
from cogwm.annotate.validate import Problem, check_allocation, check_summary, describe
from cogwm.models import Model, ModelCallError, Sampling, StructuredOutputError
from cogwm.models.structured import repair_messages
from cogwm.models.types import Message
from cogwm.schema import BigFive, Dialogue, Profile, Role, TaskSpec, Turn
from cogwm.schema.state import BDI, Dimension

T = TypeVar("T", bound=BaseModel)
V = TypeVar("V")
Stage = Literal["summary", "allocation", "profile"]

#: max_tokens per stage: enough for the answer, short enough that a looping model stops soon.
MAX_TOKENS: dict[str, int] = {"summary": 400, "allocation": 400, "profile": 200}

#: Allocation answers consist of enum choices only, where a repetition penalty only distorts the
#: choice; 1.0 also lets llama.cpp reuse the prompt prefix shared by a dialogue's calls.
REPEAT_PENALTY: dict[str, float] = {"allocation": 1.0}

#: Profile provenance values: the field was self-reported in the corpus, or written by the model.
SELF_REPORT = "self_report"
LLM = "llm"


class Failure(BaseModel):
    """An answer that failed validation after its repair call (or a call that failed)."""

    stage: Stage
    turn_index: int | None = None
    reason: str
    message: str
    raw: str | None = None


class TurnAnnotation(BaseModel):
    """Stage 2 for one user turn: the validated allocation, or None when it failed."""

    turn_index: int
    allocation: Allocation | None = None
    repaired: bool = False


class DialogueAnnotation(BaseModel):
    """Everything the annotator produced for one dialogue."""

    dialogue_id: str
    task: str
    summary: Summary | None = None
    summary_repaired: bool = False
    turns: list[TurnAnnotation] = Field(default_factory=list)
    profile: Profile | None = None
    profile_fields: dict[str, str] = Field(
        default_factory=dict, description="Profile field -> 'self_report' or 'llm'."
    )
    failures: list[Failure] = Field(default_factory=list)
    truncated: bool = Field(
        default=False, description="The transcript shown to stage 1 was cut in the middle."
    )

    def global_items(self) -> dict[Dimension, list[tuple[str, str, float]]]:
        """Stage-1 items per dimension as (id, text, score); empty when stage 1 failed."""
        return global_items(self.summary)


def global_items(summary: Summary | None) -> dict[Dimension, list[tuple[str, str, float]]]:
    """Stage-1 items per dimension with their ids (b1, b2, d1, ...)."""
    if summary is None:
        return {d: [] for d in BDI}
    return {
        d: [
            (f"{prompts.ID_PREFIX[d]}{n}", item.text, item.score)
            for n, item in enumerate(summary.items(d), start=1)
        ]
        for d in BDI
    }


class _Answer(Generic[V]):
    """The outcome of one question: a validated value or a failure."""

    def __init__(
        self, value: V | None, failure: Failure | None = None, repaired: bool = False
    ) -> None:
        self.value = value
        self.failure = failure
        self.repaired = repaired


class Annotator:
    """Annotates dialogues of one task with one model.

    Args:
        model: Any loaded model (``cogwm.models.load``).
        task: The task spec whose roles and score meanings the prompts use.
        seed: Sampling seed (decoding is greedy; the seed matters for sampling backends).
        context_chars: Transcript characters shown to stage 1 and to the profile call.
        profiles: Whether to annotate the user profile too.
    """

    def __init__(
        self,
        model: Model,
        task: TaskSpec,
        *,
        seed: int = 0,
        context_chars: int = prompts.DEFAULT_CONTEXT_CHARS,
        profiles: bool = True,
    ) -> None:
        self.model = model
        self.task = task
        self.seed = seed
        self.context_chars = context_chars
        self.profiles = profiles

    async def annotate(self, dialogue: Dialogue) -> DialogueAnnotation:
        """Run stage 1, stage 2 on every user turn, and the profile call."""
        result = DialogueAnnotation(
            dialogue_id=dialogue.id,
            task=self.task.name,
            truncated=prompts.transcript(dialogue, self.task, self.context_chars).truncated,
        )
        summary = await self._summarize(dialogue)
        result.summary, result.summary_repaired = summary.value, summary.repaired
        if summary.failure:
            result.failures.append(summary.failure)
        items = global_items(summary.value)
        turns = dialogue.turns()
        for turn in turns:
            if turn.role is not Role.USER:
                continue
            previous = turns[turn.index - 1] if turn.index > 0 else None
            if previous is not None and previous.role is Role.USER:
                previous = None
            answer = await self._allocate(items, turn, previous)
            result.turns.append(
                TurnAnnotation(
                    turn_index=turn.index, allocation=answer.value, repaired=answer.repaired
                )
            )
            if answer.failure:
                result.failures.append(answer.failure)
        if self.profiles:
            await self._profile(dialogue, result)
        return result

    # --------------------------------------------------------------------------- the stages

    async def _summarize(self, dialogue: Dialogue) -> _Answer[Summary]:
        messages = prompts.summarize_messages(dialogue, self.task, self.context_chars)
        return await self._ask(
            messages,
            summary_model(self.task),
            lambda s: check_summary(s, self.task),
            "summary",
            None,
        )

    async def _allocate(
        self,
        items: dict[Dimension, list[tuple[str, str, float]]],
        turn: Turn,
        previous: Turn | None,
    ) -> _Answer[Allocation]:
        ids = {d: [i for i, _, _ in items[d]] for d in BDI}
        output = allocation_model(self.task, ids, turn.text)
        messages = prompts.allocate_messages(self.task, items, turn, previous)
        return await self._ask(
            messages,
            output,
            lambda a: check_allocation(a, self.task, turn.text, ids),
            "allocation",
            turn.index,
        )

    async def _profile(self, dialogue: Dialogue, result: DialogueAnnotation) -> None:
        given = dialogue.profile.big_five if dialogue.profile is not None else None
        messages = prompts.profile_messages(
            dialogue, self.task, self.context_chars, ask_big_five=given is None
        )
        output: type[ProfileOut] | type[ProfileRestOut] = (
            ProfileOut if given is None else ProfileRestOut
        )
        answer = await self._ask(messages, output, lambda _: [], "profile", None)
        if answer.failure:
            result.failures.append(answer.failure)
        result.profile, result.profile_fields = build_profile(given, answer.value)

    # --------------------------------------------------------------------------- asking

    async def _ask(
        self,
        messages: list[Message],
        output: type[T],
        check: Callable[[T], list[Problem]],
        stage: Stage,
        turn_index: int | None,
    ) -> _Answer[T]:
        sampling = Sampling(
            temperature=0.0,
            max_tokens=MAX_TOKENS[stage],
            seed=self.seed,
            repeat_penalty=REPEAT_PENALTY.get(stage),
        )
        tag = f"annotate.{stage}"
        first = await self._call(messages, output, sampling, tag, stage, turn_index)
        if isinstance(first, Failure):
            return _Answer(None, first)
        value, raw = first
        problems = check(value)
        if not problems:
            return _Answer(value)
        # One repair call: the answer and the validator's message go back to the model.
        repair = repair_messages(messages, raw, describe(problems))
        second = await self._call(repair, output, sampling, tag, stage, turn_index)
        if isinstance(second, Failure):
            return _Answer(None, second)
        value, raw = second
        problems = check(value)
        if not problems:
            return _Answer(value, repaired=True)
        failure = Failure(
            stage=stage,
            turn_index=turn_index,
            reason=problems[0].rule,
            message=describe(problems),
            raw=raw,
        )
        return _Answer(None, failure)

    async def _call(
        self,
        messages: list[Message],
        output: type[T],
        sampling: Sampling,
        tag: str,
        stage: Stage,
        turn_index: int | None,
    ) -> tuple[T, str] | Failure:
        try:
            answer = await self.model.generate_structured(messages, output, sampling, tag=tag)
        except StructuredOutputError as exc:
            return Failure(
                stage=stage, turn_index=turn_index, reason="schema", message=str(exc), raw=exc.raw
            )
        except ModelCallError as exc:
            return Failure(
                stage=stage, turn_index=turn_index, reason="call_error", message=str(exc)
            )
        return answer.value, answer.completion.text


def build_profile(
    given: BigFive | None, answer: ProfileOut | ProfileRestOut | None
) -> tuple[Profile | None, dict[str, str]]:
    """The profile from self-reported traits (taken as given) and the model's answer.

    Returns the profile (None when there is neither) and each field's provenance.
    """
    if answer is None:
        if given is None:
            return None, {}
        return Profile(big_five=given, confidence=3, source=SELF_REPORT), {"big_five": SELF_REPORT}
    fields = {
        "big_five": SELF_REPORT if given is not None else LLM,
        "communication_style": LLM,
        "decision_style": LLM,
        "task_features": LLM,
        "confidence": LLM,
    }
    # Self-reported traits are taken as given; the model's guess is used only where none exist.
    big_five = given
    if big_five is None and isinstance(answer, ProfileOut):
        big_five = BigFive(**answer.big_five.model_dump())
    source = f"big_five:{SELF_REPORT};rest:{LLM}" if given is not None else LLM
    profile = Profile(
        big_five=big_five,
        communication_style=answer.communication_style,
        decision_style=answer.decision_style,
        task_features={f.name: f.value for f in answer.task_features},
        confidence=answer.confidence,
        source=source,
    )
    return profile, fields


def failure_counts(failures: Sequence[Failure]) -> dict[str, int]:
    """Failures per reason."""
    counts: dict[str, int] = {}
    for failure in failures:
        counts[failure.reason] = counts.get(failure.reason, 0) + 1
    return counts
