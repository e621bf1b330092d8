"""The one thing a backend implements, and the settings every backend shares."""

from __future__ import annotations

from abc import ABC, abstractmethod

from pydantic import BaseModel, ConfigDict, Field

from cogwm.models.types import BackendReply, BackendRequest, Capabilities, Sampling


class Backend(ABC):
    """A model runtime. Subclasses implement ``complete``; the generate path does the rest.

    Attributes:
        identity: What makes this model's outputs what they are (name plus weights fingerprint or
            served model id). It enters the cache key; endpoints do not.
        endpoints: Labels of the equivalent endpoints that can answer (never credentials).
        cache_by_default: Whether temperature-0 calls are cached unless the caller says otherwise.
        default_concurrency: In-flight calls per endpoint unless ``max_concurrency`` is given.
        default_timeout_s: Per-attempt timeout unless ``timeout_s`` is given (None: no timeout).
    """

    identity: str
    endpoints: list[str]
    cache_by_default: bool = True
    default_concurrency: int = 8
    default_timeout_s: float | None = 120.0

    @abstractmethod
    async def complete(self, request: BackendRequest, endpoint: str) -> BackendReply:
        """Answer one request on ``endpoint``.

        Raises:
            BackendError: One failed attempt, classified so the caller can decide on a retry.
        """

    async def capabilities(self, endpoint: str) -> Capabilities:
        """What ``endpoint`` supports; probed at most once per endpoint by backends that probe."""
        return Capabilities(modes=[], logprobs=False)

    async def served_identity(self) -> str:
        """The identity as the cache key uses it: backends that can ask their server which model
        it actually serves add that (``openai:``); others return ``identity``."""
        return self.identity

    async def served_models(self) -> dict[tuple[str, str], str]:
        """The model id each endpoint reports serving, by (model name, endpoint label); empty
        for backends that cannot ask (all but ``openai:``)."""
        return {}

    def effective_sampling(self, sampling: Sampling) -> Sampling:
        """The sampling actually used (defaults filled in, caps applied); enters the cache key."""
        return sampling

    def secrets(self) -> list[str]:
        """Strings that must never leave the backend (API keys); scrubbed from every message."""
        return []

    def describe(self) -> dict[str, str]:
        """A few key-free facts for ``cogwm models check`` (file, server, template...)."""
        return {}

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release network clients or model memory."""


class CommonOptions(BaseModel):
    """Options every backend accepts in ``load(spec, **options)``."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    cache: bool | None = Field(
        default=None,
        description="True: cache every call; False: never; None: cache temperature-0 calls "
        "(real backends) and nothing for fakes.",
    )
    cache_path: str | None = Field(default=None, description="SQLite file of the reply cache.")
    max_concurrency: int | None = Field(default=None, ge=1, description="In-flight per endpoint.")
    timeout_s: float | None = Field(default=None, gt=0, description="Per-attempt timeout.")
    max_attempts: int = Field(default=4, ge=1, description="Attempts per call, retries included.")
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    cost_per_1k_prompt: float = Field(default=0.0, ge=0, description="USD per 1,000 prompt tokens.")
    cost_per_1k_completion: float = Field(default=0.0, ge=0)
    identity: str | None = Field(
        default=None, description="Override the model identity used in the cache key."
    )


COMMON_OPTION_NAMES = frozenset(CommonOptions.model_fields)


def local_sampling(sampling: Sampling, *, repeat_penalty: float, max_tokens_cap: int) -> Sampling:
    """Sampling for an in-process model: a default repetition penalty and a max_tokens cap.

    Tiny local models loop under greedy decoding ("I'm sorry, I'm sorry, ..."), so both
    in-process backends apply the same two guards unless the caller sets them.
    """
    update: dict[str, float | int] = {}
    if sampling.repeat_penalty is None:
        update["repeat_penalty"] = repeat_penalty
    if sampling.max_tokens > max_tokens_cap:
        update["max_tokens"] = max_tokens_cap
    return sampling.model_copy(update=update) if update else sampling
