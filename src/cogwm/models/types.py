"""Records of the model interface: messages, sampling, completions, call records, failures.

This module is the contract every backend and every caller shares. It imports no backend.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

# A model call's record and failure kinds are shared with the run store, below the models.
from cogwm.schema.calls import CallRecord as CallRecord
from cogwm.schema.calls import FailureKind as FailureKind

T = TypeVar("T", bound=BaseModel)


class _Rec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Message(_Rec):
    """One chat message."""

    role: Literal["system", "user", "assistant"]
    content: str


class Sampling(_Rec):
    """Sampling parameters. All of them enter the cache key."""

    temperature: float = Field(default=0.0, ge=0.0)
    max_tokens: int = Field(default=512, ge=1)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    seed: int | None = None
    repeat_penalty: float | None = Field(
        default=None, description="Repetition penalty (tiny models loop under greedy decoding)."
    )
    stop: list[str] | None = None


class Usage(_Rec):
    """Token usage of one call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


class TokenLogprob(_Rec):
    """Log-probability of one generated token and the top alternatives at that position."""

    token: str
    logprob: float
    top: dict[str, float] = Field(default_factory=dict)


class StructuredMode(StrEnum):
    """How a backend is asked for JSON."""

    JSON_SCHEMA = "json_schema"  # response_format json_schema (vLLM, hosted APIs)
    JSON_OBJECT_SCHEMA = "json_object_schema"  # json_object with an enforced "schema" (llama.cpp)
    JSON_OBJECT = "json_object"  # response_format json_object: JSON, schema only in the prompt
    GRAMMAR = "grammar"  # in-process grammar from the JSON schema
    PROMPT = "prompt"  # schema only in the prompt; validated afterwards


class BackendRequest(_Rec):
    """What the one backend method receives: everything that shapes the reply."""

    messages: list[Message]
    sampling: Sampling
    json_schema: dict[str, Any] | None = Field(
        default=None, description="JSON schema the reply must follow (with ``mode``)."
    )
    mode: StructuredMode | None = Field(
        default=None, description="How the schema is enforced; None for free text."
    )
    schema_name: str = Field(default="output", description="Name of the schema (json_schema mode).")
    logprobs: int | None = Field(
        default=None, ge=0, description="Top-k alternatives per generated token; None for none."
    )
    candidates: list[str] | None = Field(
        default=None,
        description="Strings whose next-token log-probability is wanted from the full "
        "distribution (multiple-choice scoring). A backend with full logits scores the prompt "
        "alone and leaves out candidates that are not exactly one token or repeat an earlier "
        "candidate's token; backends without full logits ignore the field.",
    )
    sample: int = Field(
        default=0, ge=0, description="Sample index; lets seedless fakes vary between samples."
    )


class BackendReply(_Rec):
    """What a backend's single method returns."""

    text: str
    usage: Usage = Field(default_factory=Usage)
    logprobs: list[TokenLogprob] | None = None
    candidate_logprobs: dict[str, float] | None = Field(
        default=None,
        description="Next-token log-probability of each requested candidate, from the full "
        "distribution (set only by backends that see all logits).",
    )
    endpoint: str | None = Field(default=None, description="Which endpoint answered.")
    finish_reason: str | None = None
    reasoning: str | None = Field(
        default=None, description="The model's thinking, where the server returns it apart."
    )


class Capabilities(_Rec):
    """What one endpoint supports, probed once."""

    modes: list[StructuredMode] = Field(
        description="Structured-output modes that work, best first (PROMPT always works)."
    )
    logprobs: bool = Field(description="Returns token log-probabilities with top-k alternatives.")
    full_logits: bool = Field(
        default=False, description="Fills ``candidate_logprobs`` from the full distribution."
    )


class Completion(_Rec):
    """A finished call as callers see it."""

    text: str
    usage: Usage
    logprobs: list[TokenLogprob] | None = None
    finish_reason: str | None = Field(default=None, description="'length' when max_tokens cut it.")
    reasoning: str | None = Field(
        default=None, description="The model's thinking, where the server returns it apart."
    )
    model: str
    endpoint: str | None = None
    cached: bool = False
    latency_s: float = 0.0
    call_id: str


class ChoicePath(StrEnum):
    """Which path scored a multiple-choice item."""

    LOGITS = "logits"  # full next-token distribution in process
    TOP_LOGPROBS = "top_logprobs"  # server top-k logprobs
    PARSED = "parsed"  # answer letter parsed from generated text


class ChoiceScores(_Rec):
    """Probabilities of each option letter after one prompt."""

    probs: dict[str, float] = Field(description="Renormalised over the letters; empty if unparsed.")
    choice: str | None = Field(description="The chosen letter; None when nothing could be parsed.")
    path: ChoicePath
    raw: str = Field(default="", description="Raw model output (parsed path) or top tokens.")
    call_id: str


class Structured(_Rec, Generic[T]):
    """A validated structured-output result."""

    value: T
    completion: Completion
    repaired: bool = Field(default=False, description="True if the repair attempt was needed.")


class BackendError(Exception):
    """Raised by a backend for one failed attempt; the generate path decides what follows.

    ``detail`` is short and never contains credentials (backends scrub it).
    """

    def __init__(
        self, kind: FailureKind, detail: str, *, retry_after_s: float | None = None
    ) -> None:
        super().__init__(f"{kind.value}: {detail}")
        self.kind = kind
        self.detail = detail
        self.retry_after_s = retry_after_s


class ModelCallError(Exception):
    """A model call that failed after the retries. ``reason`` is short and key-free."""

    def __init__(
        self,
        reason: str,
        *,
        model: str,
        retryable: bool = False,
        kind: FailureKind | None = None,
        attempts: int = 1,
        call_id: str | None = None,
    ) -> None:
        super().__init__(f"{model}: {reason}")
        self.reason = reason
        self.model = model
        self.retryable = retryable
        self.kind = kind
        self.attempts = attempts
        self.call_id = call_id  # the CallRecord that reports this failure


class UnsupportedFeatureError(ModelCallError):
    """The endpoint does not support a requested feature (never retried)."""

    def __init__(self, reason: str, *, model: str, call_id: str | None = None) -> None:
        super().__init__(
            reason, model=model, retryable=False, kind=FailureKind.UNSUPPORTED, call_id=call_id
        )


class StructuredOutputError(ModelCallError):
    """The output did not validate against the schema, even after one repair attempt."""

    def __init__(self, reason: str, *, model: str, raw: str, call_id: str | None = None) -> None:
        super().__init__(reason, model=model, kind=FailureKind.INVALID_OUTPUT, call_id=call_id)
        self.raw = raw
