"""The ``openai:<model>`` backend: any OpenAI-compatible chat endpoint (vLLM, SGLang, llama.cpp's
server, Ollama, hosted APIs) through the ``openai`` client.

Base URLs come from ``base_url=`` or ``$COGWM_BASE_URL`` (comma-separated: several equivalent
endpoints, calls are spread over them); the key from ``api_key=``, ``$COGWM_API_KEY`` or
``$OPENAI_API_KEY``. What an endpoint supports (``json_schema``, ``json_object``, token logprobs)
is probed once, with tiny requests, the first time a call needs it. The key never leaves this
module: it is scrubbed from every error message and never part of a label, record or cache entry.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import logging
import os
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from cogwm.errors import ConfigError
from cogwm.models.backend import Backend
from cogwm.models.structured import bounded_ints_as_enums
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

if TYPE_CHECKING:
    from openai import AsyncOpenAI

log = logging.getLogger("cogwm.models")

BASE_URL_ENV = "COGWM_BASE_URL"
API_KEY_ENVS = ("COGWM_API_KEY", "OPENAI_API_KEY")
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Local servers ignore the key, but the client insists on having one.
_NO_KEY = "no-key"
_MAX_TOP_LOGPROBS = 20
_PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
_ENFORCEMENT_WORD = "zebra"
_ENFORCEMENT_SCHEMA = {
    "type": "object",
    "properties": {"animal": {"const": _ENFORCEMENT_WORD}},
    "required": ["animal"],
}


class OpenAIOptions(BaseModel):
    """Options of ``openai:`` models."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | list[str] | None = Field(
        default=None, description=f"Endpoint URL(s); default ${BASE_URL_ENV} or the OpenAI API."
    )
    api_key: SecretStr | None = Field(
        default=None, description="Prefer $COGWM_API_KEY; given here it is still never shown."
    )
    modes: list[StructuredMode] | None = Field(
        default=None, description="Structured modes to use instead of probing."
    )
    logprobs: bool | None = Field(default=None, description="Logprob support instead of probing.")
    repeat_penalty_field: str = Field(
        default="repeat_penalty",
        description="Request field for Sampling.repeat_penalty (vLLM: repetition_penalty).",
    )
    extra_body: dict[str, Any] = Field(default_factory=dict, description="Sent with every call.")
    headers_env: dict[str, str] = Field(
        default_factory=dict,
        description="HTTP headers sent with every call, as header name -> the environment "
        "variable holding its value (values are never stored, shown or cached).",
    )


#: The model id each endpoint reported for a model name, by (model name, endpoint label): what
#: the process learnt, so that it asks each endpoint once (``OpenAIBackend.served_models``).
#: Run digests never read it; they are handed the answers.
_SERVED: dict[tuple[str, str], str] = {}


def endpoint_label(url: str) -> str:
    """``url`` without user info, query or fragment (labels end up in records and logs)."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def base_urls(option: str | list[str] | None) -> list[str]:
    """The endpoint URLs from the option, ``$COGWM_BASE_URL`` or the default."""
    raw: list[str]
    if option is None:
        env = os.environ.get(BASE_URL_ENV, "")
        raw = env.split(",") if env.strip() else [DEFAULT_BASE_URL]
    elif isinstance(option, str):
        raw = option.split(",")
    else:
        raw = list(option)
    urls = [u.strip() for u in raw if u.strip()]
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ConfigError(
                f"base URL {endpoint_label(url)!r} must start with http:// or https://"
            )
        if parts.username or parts.password:
            # HTTP libraries log URLs; credentials in them would end up in logs.
            raise ConfigError(
                f"base URL {endpoint_label(url)!r} carries credentials: "
                "remove them and set $COGWM_API_KEY instead"
            )
    if not urls:
        raise ConfigError("no base URL given")
    return urls


def header_values(headers_env: dict[str, str]) -> dict[str, str]:
    """Each header's value from its environment variable.

    Raises:
        ConfigError: A variable is not set (named; its value never appears anywhere).
    """
    values: dict[str, str] = {}
    for header, variable in headers_env.items():
        value = os.environ.get(variable)
        if value is None:
            raise ConfigError(f"header {header!r}: environment variable ${variable} is not set")
        values[header] = value
    return values


def api_key(option: SecretStr | None) -> str:
    """The key from the option or the environment; a placeholder for key-less local servers."""
    if option is not None:
        return option.get_secret_value()
    for name in API_KEY_ENVS:
        value = os.environ.get(name)
        if value:
            return value
    return _NO_KEY


class OpenAIBackend(Backend):
    """Chat completions on one or more OpenAI-compatible endpoints."""

    def __init__(self, model: str, options: OpenAIOptions) -> None:
        self.model = model
        self.options = options
        urls = base_urls(options.base_url)
        self._urls = {endpoint_label(u): u for u in urls}
        self.endpoints = list(self._urls)
        # The endpoints enter the identity: two servers may serve different weights under one
        # model name, and their replies must never be served for each other from the cache.
        served = ",".join(sorted(self.endpoints))
        self.identity = f"openai:{model}@{served}" + _extra_body_suffix(options.extra_body)
        self.default_concurrency = 32
        self.default_timeout_s = 300.0
        self._key = SecretStr(api_key(options.api_key))
        self._headers = {
            name: SecretStr(v) for name, v in header_values(options.headers_env).items()
        }
        self._clients: dict[tuple[int, str], tuple[asyncio.AbstractEventLoop, AsyncOpenAI]] = {}
        self._caps: dict[str, Capabilities] = {}
        self._probe_locks: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Lock]] = {}
        self._served_identity: str | None = None

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, endpoints={self.endpoints!r})"

    # ----------------------------------------------------------------------------- Backend API

    def secrets(self) -> list[str]:
        """The API key (scrubbed from every message that leaves the backend)."""
        key = self._key.get_secret_value()
        headers = [v.get_secret_value() for v in self._headers.values()]
        return [h for h in headers if h] + ([] if key == _NO_KEY else [key])

    def describe(self) -> dict[str, str]:
        """Model, endpoints and where the key came from (never the key)."""
        source = (
            "option"
            if self.options.api_key
            else next((f"${n}" for n in API_KEY_ENVS if os.environ.get(n)), "none")
        )
        return {"model": self.model, "endpoints": ", ".join(self.endpoints), "api_key": source}

    async def capabilities(self, endpoint: str) -> Capabilities:
        """Probe ``endpoint`` once (json_schema, json_object, logprobs) unless options say."""
        known = self._caps.get(endpoint)
        if known is not None:
            return known
        async with self._lock(endpoint):
            if endpoint not in self._caps:
                self._caps[endpoint] = await self._probe(endpoint)
        return self._caps[endpoint]

    async def served_identity(self) -> str:
        """The identity plus the model id each endpoint reports in its model list.

        A server may load other weights under the same model name (vLLM reports them as the
        entry's ``root``); its replies must then never be served from the cache for the old ones.
        Asked once per endpoint and process; an endpoint that gives no list (or does not name
        the model) adds nothing, so the identity stays the name and endpoints.
        """
        if self._served_identity is None:
            found = await self.served_models()
            served = [f"{endpoint}={known}" for (_, endpoint), known in found.items()]
            suffix = f"+served:{','.join(sorted(served))}" if served else ""
            self._served_identity = self.identity + suffix
        return self._served_identity

    async def served_models(self) -> dict[tuple[str, str], str]:
        """The model id each endpoint reports for this model, by (model name, endpoint label).

        Asked once per endpoint and process (the answer is remembered for every backend of the
        process, so a run and its reply cache agree); endpoints without a list are left out.
        """
        async with self._lock("served"):
            found: dict[tuple[str, str], str] = {}
            for endpoint in self.endpoints:
                known = _SERVED.get((self.model, endpoint))
                if known is None:
                    known = await self._ask_served(endpoint)
                if known is not None:
                    _SERVED[(self.model, endpoint)] = known
                    found[(self.model, endpoint)] = known
        return found

    async def complete(self, request: BackendRequest, endpoint: str) -> BackendReply:
        """One chat completion; failures become classified, key-free ``BackendError``s."""
        try:
            response = await self._client(endpoint).chat.completions.create(
                **self._arguments(request)
            )
        except Exception as exc:
            failure = self._classify(exc, request)
        else:
            return self._reply(response)
        # Raised outside the except block: the client's exception holds the request, whose headers
        # carry the key, and ``from None`` would still keep it as ``__context__``.
        raise failure

    async def aclose(self) -> None:
        """Close the HTTP clients of the running loop."""
        loop = asyncio.get_running_loop()
        for key, (owner, client) in list(self._clients.items()):
            if owner is loop:
                await client.close()
                del self._clients[key]

    # ------------------------------------------------------------------------------ internals

    def _lock(self, name: str) -> asyncio.Lock:
        # An asyncio.Lock binds to the loop it first waits on: one per loop.
        loop = asyncio.get_running_loop()
        entry = self._probe_locks.get(name)
        if entry is None or entry[0] is not loop:
            entry = self._probe_locks[name] = (loop, asyncio.Lock())
        return entry[1]

    async def _ask_served(self, endpoint: str) -> str | None:
        """The model id ``endpoint`` lists for this model (``id`` plus vLLM's ``root``), or None."""
        try:
            page = await self._client(endpoint).models.list()
        except Exception as exc:  # no list: the identity keeps the name and endpoint only
            log.info("%s: no model list on %s (%s)", self.model, endpoint, type(exc).__name__)
            return None
        for entry in page.data:
            if entry.id == self.model:
                root = getattr(entry, "root", None)
                return f"{entry.id}:{root}" if root and root != entry.id else str(entry.id)
        return None

    def _client(self, endpoint: str) -> AsyncOpenAI:
        # HTTP connection pools belong to one event loop; keep one client per loop.
        from openai import AsyncOpenAI

        loop = asyncio.get_running_loop()
        entry = self._clients.get((id(loop), endpoint))
        if entry is None or entry[0] is not loop:
            # Forget clients of finished loops (each asyncio.run has its own), not to hold them all.
            self._clients = {k: v for k, v in self._clients.items() if not v[0].is_closed()}
            client = AsyncOpenAI(
                api_key=self._key.get_secret_value(),
                base_url=self._urls[endpoint],
                max_retries=0,  # the generate path owns retries
                timeout=600.0,  # and timeouts
                default_headers={k: v.get_secret_value() for k, v in self._headers.items()},
            )
            entry = self._clients[(id(loop), endpoint)] = (loop, client)
        return entry[1]

    def _arguments(self, request: BackendRequest) -> dict[str, Any]:
        sampling = request.sampling
        args: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.seed is not None:
            args["seed"] = sampling.seed
        if sampling.stop:
            args["stop"] = list(sampling.stop)
        extra = dict(self.options.extra_body)
        if sampling.repeat_penalty is not None:
            extra[self.options.repeat_penalty_field] = sampling.repeat_penalty
        if extra:
            args["extra_body"] = extra
        if request.json_schema is not None and request.mode is StructuredMode.JSON_SCHEMA:
            args["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema_name,
                    "schema": request.json_schema,
                    "strict": False,
                },
            }
        elif request.json_schema is not None and request.mode is StructuredMode.JSON_OBJECT_SCHEMA:
            # llama.cpp's servers turn an accompanying "schema" into a grammar (which ignores
            # integer bounds, hence the enums).
            args["response_format"] = {
                "type": "json_object",
                "schema": bounded_ints_as_enums(request.json_schema),
            }
        elif request.json_schema is not None and request.mode is StructuredMode.JSON_OBJECT:
            args["response_format"] = {"type": "json_object"}
        if request.logprobs is not None:
            args["logprobs"] = True
            args["top_logprobs"] = min(request.logprobs, _MAX_TOP_LOGPROBS)
        return args

    def _reply(self, response: Any) -> BackendReply:
        if not response.choices:
            raise BackendError(FailureKind.SERVER, "response without choices")
        choice = response.choices[0]
        usage = response.usage
        return BackendReply(
            text=choice.message.content or "",
            usage=Usage(
                prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            ),
            logprobs=_token_logprobs(choice.logprobs),
            finish_reason=choice.finish_reason,
            reasoning=_reasoning_of(choice.message),
        )

    def _classify(self, exc: Exception, request: BackendRequest) -> BackendError:
        import openai

        detail = self._scrub(_message_of(exc))
        if isinstance(exc, openai.APITimeoutError):
            return BackendError(FailureKind.TIMEOUT, "request timed out")
        if isinstance(exc, openai.APIConnectionError):
            return BackendError(FailureKind.CONNECTION, f"connection failed: {detail}")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            text = f"HTTP {status}: {detail}"
            retry_after = _retry_after(exc.response.headers)
            if status == 429:
                return BackendError(FailureKind.RATE_LIMIT, text, retry_after_s=retry_after)
            if status == 408:
                return BackendError(FailureKind.TIMEOUT, text)
            if status >= 500 or status == 409:
                return BackendError(FailureKind.SERVER, text, retry_after_s=retry_after)
            if status in (401, 403):
                return BackendError(FailureKind.CLIENT, f"HTTP {status}: authentication failed")
            if request.mode in (StructuredMode.JSON_SCHEMA, StructuredMode.JSON_OBJECT) and (
                "response_format" in detail or "json_schema" in detail
            ):
                return BackendError(FailureKind.UNSUPPORTED, text)
            return BackendError(FailureKind.CLIENT, text)
        if isinstance(exc, openai.OpenAIError):
            return BackendError(FailureKind.CLIENT, detail)
        raise exc

    def _scrub(self, text: str) -> str:
        for secret in self.secrets():
            text = text.replace(secret, "***")
        return text[:300]

    async def _probe(self, endpoint: str) -> Capabilities:
        modes = self.options.modes
        if modes is None:
            modes = []
            if await self._try(endpoint, _probe_request(StructuredMode.JSON_SCHEMA)):
                modes.append(StructuredMode.JSON_SCHEMA)
            # The probe schema demands a word the prompt never mentions: only an enforced
            # schema produces it.
            enforced = await self._try(
                endpoint,
                _probe_request(StructuredMode.JSON_OBJECT_SCHEMA, schema=_ENFORCEMENT_SCHEMA),
            )
            if enforced is not None and _ENFORCEMENT_WORD in enforced.text:
                modes.append(StructuredMode.JSON_OBJECT_SCHEMA)
            if await self._try(endpoint, _probe_request(StructuredMode.JSON_OBJECT)):
                modes.append(StructuredMode.JSON_OBJECT)
        logprobs = self.options.logprobs
        if logprobs is None:
            reply = await self._try(endpoint, _probe_request(logprobs=2))
            logprobs = bool(reply and reply.logprobs and reply.logprobs[0].top)
        return Capabilities(modes=[*modes, StructuredMode.PROMPT], logprobs=logprobs)

    async def _try(self, endpoint: str, request: BackendRequest) -> BackendReply | None:
        """The reply to a probe, or None if ``endpoint`` does not accept it.

        A server error only means 'unsupported' if a plain request to the same endpoint works;
        otherwise the endpoint is just failing, and the error is raised (and retried).
        """
        try:
            return await self.complete(request, endpoint)
        except BackendError as error:
            if error.kind in (FailureKind.RATE_LIMIT, FailureKind.TIMEOUT, FailureKind.CONNECTION):
                raise
            if error.kind is FailureKind.SERVER:
                await self.complete(_probe_request(), endpoint)  # raises if the server is down
            return None


def _extra_body_suffix(extra_body: dict[str, Any]) -> str:
    """A digest of the extra request fields for the identity (they shape replies: top_k, ...)."""
    if not extra_body:
        return ""
    canonical = json.dumps(extra_body, sort_keys=True, separators=(",", ":"), default=repr)
    return "+extra:" + hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _probe_request(
    mode: StructuredMode | None = None,
    *,
    logprobs: int | None = None,
    schema: dict[str, Any] | None = None,
) -> BackendRequest:
    return BackendRequest(
        messages=[Message(role="user", content='Reply with the JSON object {"ok": true}.')],
        sampling=Sampling(temperature=0.0, max_tokens=12 if mode else 1),
        json_schema=(schema or _PROBE_SCHEMA) if mode else None,
        mode=mode,
        schema_name="probe",
        logprobs=logprobs,
    )


def _reasoning_of(message: Any) -> str | None:
    """The thinking a reasoning server returns beside the content (vLLM, DeepSeek, llama.cpp)."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _message_of(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        if message:
            return str(message)
    return str(getattr(exc, "message", None) or exc) or type(exc).__name__


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _token_logprobs(raw: Any) -> list[TokenLogprob] | None:
    content = getattr(raw, "content", None) if raw is not None else None
    if not content:
        return None
    return [
        TokenLogprob(
            token=item.token,
            logprob=float(item.logprob),
            top={alt.token: float(alt.logprob) for alt in (item.top_logprobs or [])},
        )
        for item in content
    ]


def make_openai(target: str, options: dict[str, Any]) -> OpenAIBackend:
    """The backend for ``openai:<model>``."""
    return OpenAIBackend(target, OpenAIOptions(**options))
