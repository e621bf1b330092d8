"""The fake backend: scripted replies, schema-valid JSON, echo; simulated latency and failures.

Built-in names: ``fake:schema`` (deterministic schema-valid JSON for structured calls, a short
deterministic sentence otherwise, deterministic letter scores for multiple choice) and
``fake:echo`` (the last user message). ``register_fake(name, replies)`` adds scripted ones: a list
of replies given in order, or a callable ``(messages) -> str`` or ``(messages, sampling) -> str``
(sync or async; the second form sees the seed, so its answers can depend on it as a sampled
model's do).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import json
import random
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cogwm.errors import ConfigError
from cogwm.models.backend import Backend
from cogwm.models.fake_schema import example_for_schema
from cogwm.models.types import (
    BackendError,
    BackendReply,
    BackendRequest,
    Capabilities,
    FailureKind,
    Message,
    Sampling,
    StructuredMode,
    TokenLogprob,
    Usage,
)

FakeReply = str | BackendReply
FakeScript = (
    Sequence[FakeReply]
    | Callable[[list[Message]], FakeReply | Awaitable[FakeReply]]
    | Callable[[list[Message], Sampling], FakeReply | Awaitable[FakeReply]]
)

BUILTIN_FAKES = ("schema", "echo")
_WORDS = ("i", "see", "that", "you", "feel", "this", "way", "today")


class Faults(BaseModel):
    """Failure injection: each attempt fails with these probabilities (drawn from ``seed``).

    The draw for an attempt depends on the seed, the request and how many times that request was
    seen before, so a run is reproducible regardless of scheduling order.
    """

    model_config = ConfigDict(extra="forbid")

    server_error: float = Field(default=0.0, ge=0, le=1, description="HTTP 5xx.")
    rate_limit: float = Field(default=0.0, ge=0, le=1, description="HTTP 429 with Retry-After.")
    timeout: float = Field(default=0.0, ge=0, le=1, description="The request times out.")
    malformed_json: float = Field(
        default=0.0, ge=0, le=1, description="A structured call gets truncated JSON back."
    )
    retry_after_s: float | None = Field(default=None, ge=0, description="Sent with rate limits.")
    seed: int = 0


class FakeOptions(BaseModel):
    """Options of ``fake:`` models (``load("fake:name", **options)``)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    replies: Any = Field(default=None, description="A list of replies or a callable(messages).")
    cycle: bool = Field(default=False, description="Start the list again when it runs out.")
    latency_s: float = Field(default=0.0, ge=0, description="Simulated time per call.")
    faults: Faults = Field(default_factory=Faults)
    endpoints: int = Field(default=1, ge=1, description="Simulated equivalent endpoints.")
    modes: list[StructuredMode] = Field(
        default_factory=lambda: [StructuredMode.JSON_SCHEMA],
        description="Structured modes the fake accepts; others answer 'unsupported'.",
    )
    logprobs: bool = Field(default=True, description="Whether it returns token logprobs.")
    full_logits: bool = Field(default=True, description="Whether it scores candidates itself.")
    keep_requests: bool = Field(
        default=True,
        description="Keep every request in ``FakeBackend.requests`` (tests read them; a long "
        "benchmark turns it off, as the log would grow with every call).",
    )


@dataclass
class _Script:
    name: str
    options: dict[str, Any]


_registry: dict[str, _Script] = {}


def register_fake(name: str, replies: FakeScript | None = None, **options: Any) -> None:
    """Register a scripted fake so that ``load(f"fake:{name}")`` finds it.

    Args:
        name: The name after ``fake:``; must not be a built-in one (``schema``, ``echo``).
        replies: Replies in order (strings or ``BackendReply``), or a callable that receives the
            messages and returns a reply (may be async).
        **options: Further ``FakeOptions`` (``latency_s``, ``faults``, ``endpoints``, ...);
            ``load`` options override them.
    """
    if name in BUILTIN_FAKES:
        raise ConfigError(f"fake:{name} is built in; choose another name")
    FakeOptions(replies=replies, **options)  # fail early on a bad option
    _registry[name] = _Script(name, {"replies": replies, **options})


def unregister_fake(name: str) -> None:
    """Forget a registered fake (no error if unknown)."""
    _registry.pop(name, None)


def registered_fakes() -> list[str]:
    """Names usable after ``fake:``: the built-ins and the registered ones."""
    return [*BUILTIN_FAKES, *sorted(_registry)]


class FakeScriptExhaustedError(RuntimeError):
    """A scripted list of replies ran out (a test asked for more calls than it scripted)."""


@dataclass
class FakeBackend(Backend):
    """A backend that needs no model; see the module docstring."""

    name: str
    options: FakeOptions
    calls: int = 0
    calls_by_endpoint: Counter[str] = field(default_factory=Counter)
    requests: list[BackendRequest] = field(default_factory=list)
    _next: int = 0
    _seen: Counter[int] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _caps: Capabilities | None = None

    def __post_init__(self) -> None:
        self.identity = f"fake:{self.name}"
        self.endpoints = [f"fake://{self.name}/{i}" for i in range(self.options.endpoints)]
        self.cache_by_default = False  # scripted replies and caching would fight each other
        self.default_concurrency = 64
        self.default_timeout_s = 30.0

    async def capabilities(self, endpoint: str) -> Capabilities:
        """The modes and log-probability support given in the options."""
        if self._caps is None:
            self._caps = Capabilities(
                modes=[*self.options.modes, StructuredMode.PROMPT],
                logprobs=self.options.logprobs,
                full_logits=self.options.full_logits,
            )
        return self._caps

    async def complete(self, request: BackendRequest, endpoint: str) -> BackendReply:
        """Wait the simulated latency, maybe fail, then reply by script."""
        self.calls += 1
        self.calls_by_endpoint[endpoint] += 1
        if self.options.keep_requests:
            self.requests.append(request)
        if request.mode is not None and request.mode not in (
            *self.options.modes,
            StructuredMode.PROMPT,
        ):
            raise BackendError(FailureKind.UNSUPPORTED, f"{request.mode.value} is not supported")
        if self.options.latency_s:
            await asyncio.sleep(self.options.latency_s)
        # The digest drives fault draws and built-in replies; a scripted reply needs neither.
        needed = self._faulty or self.options.replies is None
        digest = _request_digest(request) if needed else 0
        draw = self._draw(digest) if self._faulty else _NO_FAULT
        self._inject_failure(draw)
        reply = await self._reply(request, digest)
        if request.json_schema is not None and draw.malformed < self.options.faults.malformed_json:
            reply = reply.model_copy(update={"text": reply.text[: max(1, len(reply.text) // 2)]})
        return reply

    # ------------------------------------------------------------------------------ internals

    @property
    def _faulty(self) -> bool:
        f = self.options.faults
        return bool(f.server_error or f.rate_limit or f.timeout or f.malformed_json)

    def _draw(self, digest: int) -> _Draw:
        with self._lock:
            seen = self._seen[digest]
            self._seen[digest] += 1
        rng = random.Random(hash((self.options.faults.seed, digest, seen)))
        return _Draw(failure=rng.random(), malformed=rng.random())

    def _inject_failure(self, draw: _Draw) -> None:
        faults = self.options.faults
        threshold = faults.server_error
        if draw.failure < threshold:
            raise BackendError(FailureKind.SERVER, "HTTP 500 (injected)")
        threshold += faults.rate_limit
        if draw.failure < threshold:
            raise BackendError(
                FailureKind.RATE_LIMIT, "HTTP 429 (injected)", retry_after_s=faults.retry_after_s
            )
        threshold += faults.timeout
        if draw.failure < threshold:
            raise BackendError(FailureKind.TIMEOUT, "request timed out (injected)")

    async def _reply(self, request: BackendRequest, digest: int) -> BackendReply:
        script = self.options.replies
        if script is None:
            if self.name == "echo":
                return _text_reply(request, _last_user(request.messages))
            return self._schema_reply(request, digest)
        if callable(script):
            produced = (
                script(request.messages, request.sampling)
                if _takes_sampling(script)
                else script(request.messages)
            )
            if inspect.isawaitable(produced):
                produced = await produced
            return _as_reply(request, produced)
        with self._lock:
            index = self._next
            self._next += 1
        if index >= len(script):
            if not self.options.cycle or not script:
                raise FakeScriptExhaustedError(
                    f"fake:{self.name} has only {len(script)} scripted replies"
                )
            index %= len(script)
        return _as_reply(request, script[index])

    def _schema_reply(self, request: BackendRequest, digest: int) -> BackendReply:
        seed = request.sampling.seed
        mixed = hash((digest, -1 if seed is None else seed))
        if request.json_schema is None and not request.candidates:
            # Plain text: pick words by bits of the digest (a Random per call costs more).
            words = [_WORDS[(mixed >> (3 * i)) & 7] for i in range(5)]
            return _text_reply(request, " ".join(words).capitalize() + ".")
        rng = random.Random(mixed)
        if request.json_schema is not None:
            value = example_for_schema(request.json_schema, rng)
            text = json.dumps(value, ensure_ascii=False)
            return BackendReply(text=text, usage=_usage(request, text), finish_reason="stop")
        return self._scored_reply(request, rng)

    def _scored_reply(self, request: BackendRequest, rng: random.Random) -> BackendReply:
        """Deterministic candidate log-probabilities (single-character candidates only)."""
        assert request.candidates is not None
        letters = [c for c in request.candidates if len(c) == 1]
        raw = {c: rng.uniform(-6.0, 0.0) for c in letters}
        best = max(raw, key=lambda c: raw[c])
        first = TokenLogprob(token=best, logprob=raw[best], top=dict(raw))
        return BackendReply(
            text=best,
            usage=_usage(request, best),
            logprobs=[first] if request.logprobs is not None else None,
            candidate_logprobs=dict(raw) if self.options.full_logits else None,
        )


@dataclass
class _Draw:
    failure: float
    malformed: float


_NO_FAULT = _Draw(failure=1.0, malformed=1.0)


@functools.cache
def _takes_sampling(script: Callable[..., object]) -> bool:
    """Whether a scripted callable takes ``(messages, sampling)`` rather than ``(messages)``."""
    try:
        parameters = inspect.signature(script).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


def _request_digest(request: BackendRequest) -> int:
    """A stable (not salted like ``hash(str)``) integer digest of the messages and sample index."""
    payload = "\x1e".join(f"{m.role}\x1f{m.content}" for m in request.messages)
    digest = hashlib.blake2b(f"{payload}\x1d{request.sample}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _last_user(messages: list[Message]) -> str:
    return next((m.content for m in reversed(messages) if m.role == "user"), "")


def _usage(request: BackendRequest, text: str) -> Usage:
    # Whitespace words stand in for tokens: good enough for accounting tests.
    prompt = sum([_words(m.content) for m in request.messages])
    return Usage(prompt_tokens=prompt, completion_tokens=len(text.split()))


@functools.lru_cache(maxsize=8192)
def _words(text: str) -> int:
    """Words in a message (cached: a conversation's history is counted again on every call)."""
    return len(text.split())


def _text_reply(request: BackendRequest, text: str) -> BackendReply:
    text = _cap(text, request.sampling.max_tokens)
    return BackendReply(text=text, usage=_usage(request, text), finish_reason="stop")


def _cap(text: str, max_tokens: int) -> str:
    words = text.split(" ")
    return text if len(words) <= max_tokens else " ".join(words[:max_tokens])


def _as_reply(request: BackendRequest, produced: object) -> BackendReply:
    if isinstance(produced, BackendReply):
        return produced.model_copy()  # scripts may return one object many times
    if isinstance(produced, str):
        return BackendReply(text=produced, usage=_usage(request, produced), finish_reason="stop")
    raise TypeError(
        f"a fake script must produce str or BackendReply, not {type(produced).__name__}"
    )


def make_fake(name: str, options: dict[str, Any]) -> FakeBackend:
    """The fake backend for ``fake:<name>`` with ``options`` over the registered ones."""
    if name not in BUILTIN_FAKES and name not in _registry:
        known = ", ".join(registered_fakes())
        raise ConfigError(f"no fake named {name!r} (known: {known}); use register_fake()")
    base = dict(_registry[name].options) if name in _registry else {}
    merged = {**base, **options}
    if isinstance(merged.get("faults"), dict):
        merged["faults"] = Faults(**merged["faults"])
    return FakeBackend(name=name, options=FakeOptions(**merged))
