"""Records of the model interface: messages, sampling, completions, call records, failures.

This module is the contract every backend and every caller shares. It imports no backend.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

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
    JSON_OBJECT = "json_object"  # response_format json_object (+schema on llama.cpp)
    GRAMMAR = "grammar"  # in-process grammar from the JSON schema
    PROMPT = "prompt"  # schema only in the prompt; validated afterwards


class BackendReply(_Rec):
    """What a backend's single method returns."""

    text: str
    usage: Usage = Field(default_factory=Usage)
    logprobs: list[TokenLogprob] | None = None
    endpoint: str | None = Field(default=None, description="Which endpoint answered.")
    finish_reason: str | None = None


class Completion(_Rec):
    """A finished call as callers see it."""

    text: str
    usage: Usage
    logprobs: list[TokenLogprob] | None = None
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


class CallRecord(_Rec):
    """One model call, as stored in the run store. Never holds an API key."""

    call_id: str
    model: str
    endpoint: str | None
    tag: str | None = Field(default=None, description="What the call was for (e.g. 'simulator').")
    started_at: float
    latency_s: float
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float = 0.0
    cached: bool
    ok: bool
    error: str | None = None
    attempts: int = 1


class ModelCallError(Exception):
    """A model call that failed after the retries. ``reason`` is short and key-free."""

    def __init__(self, reason: str, *, model: str, retryable: bool = False) -> None:
        super().__init__(f"{model}: {reason}")
        self.reason = reason
        self.model = model
        self.retryable = retryable


class UnsupportedFeatureError(ModelCallError):
    """The endpoint does not support a requested feature (never retried)."""


class StructuredOutputError(ModelCallError):
    """The output did not validate against the schema, even after one repair attempt."""

    def __init__(self, reason: str, *, model: str, raw: str) -> None:
        super().__init__(reason, model=model)
        self.raw = raw
