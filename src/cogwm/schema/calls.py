"""The record of one model call and why a call failed: shared by the model interface, which
makes the records, and the run store, which keeps them."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class _Rec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FailureKind(StrEnum):
    """Why a call (or one attempt at it) failed; decides whether it is retried."""

    RATE_LIMIT = "rate_limit"
    SERVER = "server_error"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    UNSUPPORTED = "unsupported"
    CLIENT = "client_error"
    INVALID_OUTPUT = "invalid_output"

    @property
    def retryable(self) -> bool:
        """Rate limits, server errors, timeouts and lost connections are worth another try."""
        return self in _RETRYABLE


_RETRYABLE = frozenset(
    {FailureKind.RATE_LIMIT, FailureKind.SERVER, FailureKind.TIMEOUT, FailureKind.CONNECTION}
)


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
    error_kind: FailureKind | None = Field(default=None, description="Set when ``ok`` is False.")
    attempts: int = 1
