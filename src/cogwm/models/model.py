"""``Model``: the one generate path every backend plugs into.

Around the backend's single ``complete`` method, once: the reply cache, the per-endpoint
concurrency limit and endpoint choice, timeouts, retries with backoff, usage and cost accounting,
structured-output enforcement with one repair attempt, multiple-choice scoring and a ``CallRecord``
for every call.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import random
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel

from cogwm.models.backend import Backend, CommonOptions
from cogwm.models.cache import ReplyCache, cache_key, open_cache
from cogwm.models.choices import (
    SCORING_MAX_TOKENS,
    SCORING_TOP_LOGPROBS,
    choose,
    from_top_logprobs,
    letter_variants,
    logsumexp,
    normalize,
    scores_from_parsed,
)
from cogwm.models.deadlines import Deadline
from cogwm.models.dispatch import (
    AttemptFailureError,
    EndpointPool,
    RetryPolicy,
    Sleep,
    with_retries,
)
from cogwm.models.recording import emit
from cogwm.models.structured import (
    Validation,
    repair_messages,
    schema_for,
    validate_reply,
    with_schema_hint,
)
from cogwm.models.types import (
    BackendError,
    BackendReply,
    BackendRequest,
    CallRecord,
    Capabilities,
    ChoicePath,
    ChoiceScores,
    Completion,
    FailureKind,
    Message,
    ModelCallError,
    Sampling,
    Structured,
    StructuredMode,
    StructuredOutputError,
    UnsupportedFeatureError,
    Usage,
)

T = TypeVar("T", bound=BaseModel)

log = logging.getLogger("cogwm.models")

MessagesLike = str | Sequence[Message | dict[str, str]]


@dataclass
class ModelStats:
    """Running totals of one ``Model``'s calls."""

    calls: int = 0
    cache_hits: int = 0
    backend_calls: int = 0
    attempts: int = 0
    failures: int = 0
    invalid_outputs: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    by_endpoint: Counter[str] = field(default_factory=Counter)
    attempt_failures: Counter[str] = field(default_factory=Counter)


def as_messages(messages: MessagesLike) -> list[Message]:
    """Messages from a plain user string, ``Message`` objects or role/content dicts."""
    if isinstance(messages, str):
        return [Message(role="user", content=messages)]
    return [m if isinstance(m, Message) else Message.model_validate(m) for m in messages]


_CALL_PREFIX = uuid.uuid4().hex[:16]
_call_counter = itertools.count()


def new_call_id() -> str:
    """A call id unique across processes: a random per-process prefix and a counter.

    Cheaper than a uuid4 per call, which matters on the hot path of thousands of fake calls.
    """
    return f"{_CALL_PREFIX}{next(_call_counter):08x}"


def sample_seed(seed: int, sample: int) -> int:
    """The seed of sample ``sample``: sample 0 keeps ``seed``; later samples get distinct seeds."""
    if sample == 0:
        return seed
    digest = hashlib.sha256(f"{seed}:{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class _Outcome(NamedTuple):
    """A finished backend call before it is reported."""

    completion: Completion
    reply: BackendReply
    record: CallRecord
    base_key: str | None = None  # the cache key of the request as asked (before a fresh sample)


#: ``Structured[X]`` per output model, held strongly: pydantic keeps parametrized generics in a
#: weak cache, so without a reference each call could build the class again (milliseconds).
_STRUCTURED: dict[type[BaseModel], type[Structured[Any]]] = {}


def _structured(output_model: type[T]) -> type[Structured[T]]:
    found = _STRUCTURED.get(output_model)
    if found is None:
        found = _STRUCTURED[output_model] = Structured[output_model]  # type: ignore[valid-type]
    return found


def _validate(completion: Completion, output_model: type[BaseModel]) -> Validation:
    outcome = validate_reply(completion.text, output_model)
    if outcome.error is not None and completion.finish_reason == "length":
        return Validation(None, f"{outcome.error} (the reply was cut off at max_tokens)")
    return outcome


class Model:
    """A loaded model: async ``generate``, ``generate_structured`` and ``score_choices``.

    Build one with ``cogwm.models.load(spec, **options)``. One instance may serve many concurrent
    tasks; calls wait for a free slot on the least busy endpoint.
    """

    def __init__(
        self, spec: str, backend: Backend, pool: EndpointPool, options: CommonOptions
    ) -> None:
        self.spec = spec
        self.backend = backend
        self.pool = pool
        self.identity = options.identity or backend.identity
        self.stats = ModelStats()
        self.sleep: Sleep = asyncio.sleep  # replaceable so tests can observe backoff delays
        self._options = options
        self._timeout_s = options.timeout_s if options.timeout_s else backend.default_timeout_s
        self._policy = RetryPolicy(
            options.max_attempts, options.backoff_base_s, options.backoff_max_s
        )
        self._rng = random.Random()
        self._cache: ReplyCache | None = None
        self._demoted: dict[str, set[StructuredMode]] = {}
        # What the cache key names: an explicit ``identity`` option as given, else the backend's
        # identity with what its server says it serves (asked at the first cached call).
        self._key_identity: str | None = options.identity

    def __repr__(self) -> str:
        return f"Model({self.spec!r}, endpoints={self.pool.endpoints!r})"

    @property
    def endpoints(self) -> list[str]:
        """Labels of the endpoints calls are spread over (never credentials)."""
        return list(self.pool.endpoints)

    # ----------------------------------------------------------------------------- public API

    async def generate(
        self,
        messages: MessagesLike,
        sampling: Sampling | None = None,
        *,
        sample: int = 0,
        tag: str | None = None,
        logprobs: int | None = None,
        cache: bool | None = None,
    ) -> Completion:
        """Generate a reply.

        Args:
            messages: The conversation (a plain string is one user message).
            sampling: Sampling parameters (default: greedy, see ``Sampling``).
            sample: Index of this sample; distinct samples of one prompt are cached apart and,
                with a seed, get distinct derived seeds.
            tag: What the call is for; goes into the ``CallRecord``.
            logprobs: Return this many top alternatives per generated token.
            cache: Override the model's cache setting for this call.

        Raises:
            ModelCallError: The call failed after the retries (``UnsupportedFeatureError`` when
                the endpoint cannot return log-probabilities).
        """
        request = BackendRequest(
            messages=as_messages(messages),
            sampling=sampling or Sampling(),
            logprobs=logprobs,
            sample=sample,
        )
        outcome = await self._call(request, tag=tag, cache=cache)
        emit(outcome.record)
        return outcome.completion

    async def generate_structured(
        self,
        messages: MessagesLike,
        output_model: type[T],
        sampling: Sampling | None = None,
        *,
        sample: int = 0,
        tag: str | None = None,
        cache: bool | None = None,
    ) -> Structured[T]:
        """Generate a reply that validates against ``output_model``.

        The backend enforces the JSON schema where it can (grammar, ``response_format``); the reply
        is validated; an invalid reply gets one repair attempt (the error is sent back).

        Raises:
            StructuredOutputError: Still invalid after the repair attempt (``raw`` holds the text).
            ModelCallError: A call failed after the retries.
        """
        conversation = as_messages(messages)
        request = BackendRequest(
            messages=conversation,
            sampling=sampling or Sampling(),
            json_schema=schema_for(output_model),
            schema_name=output_model.__name__,
            sample=sample,
        )
        first = await self._call(request, tag=tag, cache=cache)
        value, error = _validate(first.completion, output_model)
        if value is not None:
            emit(first.record)
            return _structured(output_model)(value=value, completion=first.completion)
        self._report_invalid(first.record, error)
        repair = request.model_copy(
            update={"messages": repair_messages(conversation, first.completion.text, str(error))}
        )
        second = await self._call(repair, tag=tag, cache=cache)
        value, error = _validate(second.completion, output_model)
        if value is not None:
            emit(second.record)
            return _structured(output_model)(
                value=value, completion=second.completion, repaired=True
            )
        self._report_invalid(second.record, error)
        self._forget_invalid(first)
        raise StructuredOutputError(
            f"reply does not match {output_model.__name__} after one repair attempt: {error}",
            model=self.spec,
            raw=second.completion.text,
            call_id=second.record.call_id,
        )

    async def score_choices(
        self,
        messages: MessagesLike,
        letters: Sequence[str],
        *,
        tag: str | None = None,
        cache: bool | None = None,
    ) -> ChoiceScores:
        """Probability of each option letter as the answer to ``messages``, from one call.

        Backends with full logits score the next token over the whole vocabulary (path
        ``logits``); endpoints with token log-probabilities use the top-k alternatives at the first
        answer position (``top_logprobs``); when a letter is missing from the top k, or the
        backend has no log-probabilities, the letter is parsed from the generated text
        (``parsed``, one-hot probabilities, empty when nothing parses).

        Args:
            messages: The question with its lettered options and the answer instruction.
            letters: The option letters, e.g. ``["A", "B", "C", "D"]``.
        """
        if len(set(letters)) != len(letters) or not letters:
            raise ValueError(f"letters must be distinct and non-empty, got {list(letters)!r}")
        candidates = [v for letter in letters for v in letter_variants(letter)]
        request = BackendRequest(
            messages=as_messages(messages),
            sampling=Sampling(temperature=0.0, max_tokens=SCORING_MAX_TOKENS),
            logprobs=SCORING_TOP_LOGPROBS,
            candidates=candidates,
        )
        outcome = await self._call(request, tag=tag, cache=cache, logprobs_optional=True)
        emit(outcome.record)
        return self._choice_scores(outcome, list(letters))

    async def capabilities(self, endpoint: str | None = None) -> Capabilities:
        """What ``endpoint`` (default: the first) supports, probing it if not done yet."""
        endpoint = endpoint or self.pool.endpoints[0]
        caps = await self.backend.capabilities(endpoint)
        demoted = self._demoted.get(endpoint)
        if not demoted:
            return caps  # the hot path: nothing demoted, no copy
        return caps.model_copy(update={"modes": [m for m in caps.modes if m not in demoted]})

    async def aclose(self) -> None:
        """Release the backend's clients (a loaded in-process model stays shared)."""
        await self.backend.aclose()

    # ------------------------------------------------------------------------------ internals

    def _choice_scores(self, outcome: _Outcome, letters: list[str]) -> ChoiceScores:
        reply, call_id = outcome.reply, outcome.record.call_id
        if reply.candidate_logprobs:
            per_letter: dict[str, float] = {}
            for letter in letters:
                found = [
                    reply.candidate_logprobs[v]
                    for v in letter_variants(letter)
                    if v in reply.candidate_logprobs
                ]
                if found:
                    per_letter[letter] = logsumexp(found)
            if len(per_letter) == len(letters):
                probs = normalize(per_letter)
                raw = json.dumps(reply.candidate_logprobs, sort_keys=True)
                return ChoiceScores(
                    probs=probs,
                    choice=choose(probs),
                    path=ChoicePath.LOGITS,
                    raw=raw,
                    call_id=call_id,
                )
        if reply.logprobs:
            letter_logprobs = from_top_logprobs(reply.logprobs[0], letters)
            if letter_logprobs is not None:
                probs = normalize(letter_logprobs)
                raw = json.dumps(reply.logprobs[0].top, sort_keys=True)
                return ChoiceScores(
                    probs=probs,
                    choice=choose(probs),
                    path=ChoicePath.TOP_LOGPROBS,
                    raw=raw,
                    call_id=call_id,
                )
        probs, choice = scores_from_parsed(reply.text, letters)
        return ChoiceScores(
            probs=probs, choice=choice, path=ChoicePath.PARSED, raw=reply.text, call_id=call_id
        )

    def _forget_invalid(self, first: _Outcome) -> None:
        """Never replay this failure: the same request next time gets a fresh sample."""
        if first.base_key is not None and self._cache is not None:
            self._cache.mark_invalid(first.base_key)

    def _report_invalid(self, record: CallRecord, error: str | None) -> None:
        self.stats.invalid_outputs += 1
        emit(
            record.model_copy(
                update={
                    "ok": False,
                    "error": f"{FailureKind.INVALID_OUTPUT.value}: {error}",
                    "error_kind": FailureKind.INVALID_OUTPUT,
                }
            )
        )

    def _use_cache(self, sampling: Sampling, override: bool | None) -> ReplyCache | None:
        wanted = override if override is not None else self._options.cache
        if wanted is None:
            wanted = self.backend.cache_by_default and sampling.temperature == 0.0
        if not wanted:
            return None
        if self._cache is None:
            path = Path(self._options.cache_path) if self._options.cache_path else None
            self._cache = open_cache(path)
        return self._cache

    def _effective(self, request: BackendRequest) -> BackendRequest:
        sampling = self.backend.effective_sampling(request.sampling)
        if sampling.seed is not None and request.sample:
            sampling = sampling.model_copy(
                update={"seed": sample_seed(sampling.seed, request.sample)}
            )
        if sampling is request.sampling:
            return request
        return request.model_copy(update={"sampling": sampling})

    async def _call(
        self,
        request: BackendRequest,
        *,
        tag: str | None,
        cache: bool | None,
        logprobs_optional: bool = False,
    ) -> _Outcome:
        asked = request
        request = self._effective(request)
        started = time.time()
        clock = time.perf_counter()
        call_id = new_call_id()
        self.stats.calls += 1
        store = self._use_cache(request.sampling, cache)
        key = base_key = None
        planned: StructuredMode | None = None
        identity = self.identity
        if store is not None:
            identity = self._key_identity or await self._served_identity()
            planned = await self._planned_mode(request)
            key = base_key = self._key(request, identity, planned)
            fresh = store.invalid_count(key) if request.json_schema is not None else 0
            if fresh:
                # This request failed validation for good before: ask for a new sample (a new
                # derived seed) instead of replaying the invalid reply from the cache.
                request = self._effective(asked.model_copy(update={"sample": asked.sample + fresh}))
                key = self._key(request, identity, planned)
            hit = store.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                outcome = self._outcome(hit, call_id, started, clock, tag, cached=True, attempts=0)
                return outcome._replace(base_key=base_key)

        tried: list[str] = []  # endpoints in attempt order, for the failure record
        used: list[StructuredMode | None] = []  # the structured mode of each attempt

        async def attempt() -> BackendReply:
            return await self._attempt(request, logprobs_optional, tried, used)

        try:
            reply, attempts = await with_retries(
                attempt, self._policy, sleep=self.sleep, rng=self._rng, on_retry=self._log_retry
            )
        except AttemptFailureError as failure:
            endpoint = tried[-1] if tried else None
            raise self._failed(failure, call_id, started, clock, tag, endpoint) from None
        self.stats.attempts += attempts
        if store is not None and key is not None:
            if used and used[-1] is not planned:
                key = self._key(request, identity, used[-1])  # under the mode that produced it
            store.put(key, identity, reply)
        outcome = self._outcome(
            reply, call_id, started, clock, tag, cached=False, attempts=attempts
        )
        return outcome._replace(base_key=base_key)

    async def _planned_mode(self, request: BackendRequest) -> StructuredMode | None:
        """The structured mode a request would be sent in (the first endpoint's best)."""
        if request.json_schema is None:
            return None
        caps = await self.capabilities(self.pool.endpoints[0])
        return caps.modes[0] if caps.modes else StructuredMode.PROMPT

    async def _served_identity(self) -> str:
        self._key_identity = await self.backend.served_identity()
        return self._key_identity

    def _key(
        self, request: BackendRequest, identity: str, mode: StructuredMode | None = None
    ) -> str:
        return cache_key(
            identity=identity,
            messages=request.messages,
            sampling=request.sampling,
            sample=request.sample,
            json_schema=request.json_schema,
            logprobs=request.logprobs,
            candidates=request.candidates,
            mode=None if mode is None else mode.value,
        )

    async def _attempt(
        self,
        request: BackendRequest,
        logprobs_optional: bool,
        tried: list[str],
        used: list[StructuredMode | None],
    ) -> BackendReply:
        async with self.pool.slot(avoid=tried[-1] if tried else None) as endpoint:
            tried.append(endpoint)
            while True:
                shaped = request
                if request.json_schema is not None or request.logprobs is not None:
                    caps = await self.capabilities(endpoint)
                    shaped = self._shape(request, caps, logprobs_optional)
                try:
                    reply = await self._complete(shaped, endpoint)
                except BackendError as error:
                    if error.kind is FailureKind.UNSUPPORTED and self._demote(shaped, endpoint):
                        continue  # fall back to the next structured mode on this endpoint
                    self.stats.attempt_failures[error.kind.value] += 1
                    raise
                self.stats.backend_calls += 1
                self.stats.by_endpoint[endpoint] += 1
                used.append(shaped.mode)
                if reply.endpoint != endpoint:
                    # Not model_copy: this is the hot path, and the reply is already validated.
                    reply.__dict__["endpoint"] = endpoint
                return reply

    async def _complete(self, request: BackendRequest, endpoint: str) -> BackendReply:
        if self._timeout_s is None:
            return await self.backend.complete(request, endpoint)
        try:
            # Not asyncio.timeout: a timer per call crowds the loop's timer heap when a thousand
            # calls are in flight; Deadline shares one per slice and is as strict.
            with Deadline(self._timeout_s):
                return await self.backend.complete(request, endpoint)
        except TimeoutError:
            raise BackendError(
                FailureKind.TIMEOUT, f"no reply within {self._timeout_s:g} s"
            ) from None

    def _shape(
        self, request: BackendRequest, caps: Capabilities, logprobs_optional: bool
    ) -> BackendRequest:
        """Fit a request to what the chosen endpoint supports."""
        update: dict[str, Any] = {}
        if request.logprobs is not None and not caps.logprobs:
            if not logprobs_optional:
                raise BackendError(FailureKind.UNSUPPORTED, "endpoint returns no log-probabilities")
            update["logprobs"] = None
        if request.json_schema is not None:
            mode = caps.modes[0] if caps.modes else StructuredMode.PROMPT
            update["mode"] = mode
            update["messages"] = with_schema_hint(request.messages, request.json_schema, mode)
        return request.model_copy(update=update) if update else request

    def _demote(self, request: BackendRequest, endpoint: str) -> bool:
        """Stop using the request's structured mode on ``endpoint``; False if nothing to fall to."""
        if request.mode is None or request.mode is StructuredMode.PROMPT:
            return False
        log.info("%s: %s unsupported on %s, falling back", self.spec, request.mode.value, endpoint)
        self._demoted.setdefault(endpoint, set()).add(request.mode)
        return True

    def _outcome(
        self,
        reply: BackendReply,
        call_id: str,
        started: float,
        clock: float,
        tag: str | None,
        *,
        cached: bool,
        attempts: int,
    ) -> _Outcome:
        latency = time.perf_counter() - clock
        usage = reply.usage
        cost = 0.0 if cached else self._cost(usage)
        if not cached:
            self.stats.prompt_tokens += usage.prompt_tokens
            self.stats.completion_tokens += usage.completion_tokens
            self.stats.cost_usd += cost
        completion = Completion(
            text=reply.text,
            usage=usage,
            logprobs=reply.logprobs,
            finish_reason=reply.finish_reason,
            reasoning=reply.reasoning,
            model=self.spec,
            endpoint=reply.endpoint,
            cached=cached,
            latency_s=latency,
            call_id=call_id,
        )
        record = CallRecord(
            call_id=call_id,
            model=self.spec,
            endpoint=reply.endpoint,
            started_at=started,
            latency_s=latency,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=cost,
            cached=cached,
            ok=True,
            attempts=attempts,
            tag=tag,
        )
        return _Outcome(completion=completion, reply=reply, record=record)

    def _cost(self, usage: Usage) -> float:
        return (
            usage.prompt_tokens * self._options.cost_per_1k_prompt
            + usage.completion_tokens * self._options.cost_per_1k_completion
        ) / 1000.0

    def _failed(
        self,
        failure: AttemptFailureError,
        call_id: str,
        started: float,
        clock: float,
        tag: str | None,
        endpoint: str | None,
    ) -> ModelCallError:
        error, attempts = failure.failure
        self.stats.failures += 1
        self.stats.attempts += attempts
        reason = self._scrub(error.detail)
        emit(
            CallRecord(
                call_id=call_id,
                model=self.spec,
                endpoint=endpoint,
                started_at=started,
                latency_s=time.perf_counter() - clock,
                prompt_tokens=0,
                completion_tokens=0,
                cached=False,
                ok=False,
                error=f"{error.kind.value}: {reason}",
                error_kind=error.kind,
                attempts=attempts,
                tag=tag,
            )
        )
        message = f"{error.kind.value}: {reason} (after {attempts} attempt(s))"
        if error.kind is FailureKind.UNSUPPORTED:
            return UnsupportedFeatureError(message, model=self.spec, call_id=call_id)
        return ModelCallError(
            message,
            model=self.spec,
            retryable=error.kind.retryable,
            kind=error.kind,
            attempts=attempts,
            call_id=call_id,
        )

    def _scrub(self, text: str) -> str:
        for secret in self.backend.secrets():
            if secret:
                text = text.replace(secret, "***")
        return text

    def _log_retry(self, error: BackendError, attempt: int, wait_s: float) -> None:
        log.info(
            "%s: attempt %d failed (%s: %s); retrying in %.2f s",
            self.spec,
            attempt,
            error.kind.value,
            self._scrub(error.detail),
            wait_s,
        )
