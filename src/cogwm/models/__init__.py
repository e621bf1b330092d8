"""One model interface for every LLM use (docs/architecture.md, "Models").

Contract (implemented in this package):

- ``load(spec, **options) -> Model`` where ``spec`` is an address string:
  ``llamacpp:smollm2`` (embedded default) or ``llamacpp:/path/model.gguf``;
  ``openai:<model>`` (base URL(s) from ``base_url=`` or ``$COGWM_BASE_URL``, comma-separated for
  several endpoints; key from ``$COGWM_API_KEY`` / ``$OPENAI_API_KEY``);
  ``hf:<path>[+<adapter dir>]``; ``fake:<name>`` (tests).
- ``Model.generate(messages, sampling=Sampling(), *, sample=0, tag=None, logprobs=None)``
  -> ``Completion`` (async).
- ``Model.generate_structured(messages, OutputModel, sampling=..., *, sample=0, tag=None)``
  -> ``Structured[OutputModel]`` (async); raises ``StructuredOutputError`` after one repair.
- ``Model.score_choices(messages, letters, *, tag=None)`` -> ``ChoiceScores`` (async).
- ``recording(callback)``: a context manager; every call made inside it (including in tasks
  started inside it) is reported to ``callback(CallRecord)``.

Also:

- ``messages`` may be a plain string (one user message), ``Message`` objects or role/content
  dicts. Every call method takes ``cache=True|False`` to override the model's cache setting.
- Options every backend takes (``CommonOptions``): ``cache`` (None: temperature-0 calls of real
  backends are cached, fakes' only when asked: ``cache=True`` here or per call, as the arena's
  ``cache = true`` does), ``cache_path`` (default ``$COGWM_CACHE_DIR/models.sqlite``),
  ``max_concurrency`` (per endpoint), ``timeout_s`` (per attempt), ``max_attempts``,
  ``backoff_base_s``, ``backoff_max_s``, ``cost_per_1k_prompt``, ``cost_per_1k_completion``,
  ``identity``. Backend options: ``LlamaCppOptions``, ``OpenAIOptions``, ``HFOptions``,
  ``FakeOptions``; an unknown option is a ``ConfigError``.
- Failures: ``ModelCallError`` (``kind``: a ``FailureKind``; ``call_id``: the ``CallRecord``
  that reports it), ``UnsupportedFeatureError`` (never retried), ``StructuredOutputError``
  (``raw`` text). ``Model.stats`` keeps running totals (calls, cache hits, tokens, cost).
- Fakes: ``fake:schema`` (deterministic schema-valid JSON; enum/Literal/``examples`` values,
  numeric bounds, nested models, lists), ``fake:echo``, and ``register_fake(name, replies,
  latency_s=..., faults=Faults(server_error=..., rate_limit=..., timeout=..., malformed_json=...,
  seed=...), endpoints=..., modes=..., logprobs=..., full_logits=...)`` where ``replies`` is a
  list or a callable ``(messages) -> str | BackendReply`` (sync or async).
"""

from cogwm.models.cache import cache_key, default_cache_path, open_cache
from cogwm.models.choices import parse_letter
from cogwm.models.dispatch import RetryPolicy
from cogwm.models.fake import Faults, register_fake, registered_fakes, unregister_fake
from cogwm.models.fake_schema import example_for_schema
from cogwm.models.model import Model, ModelStats
from cogwm.models.recording import recording
from cogwm.models.registry import list_backends, load
from cogwm.models.spec import BackendKind, ModelSpec, parse_spec
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
    TokenLogprob,
    UnsupportedFeatureError,
    Usage,
)

__all__ = [
    "BackendError",
    "BackendKind",
    "BackendReply",
    "BackendRequest",
    "CallRecord",
    "Capabilities",
    "ChoicePath",
    "ChoiceScores",
    "Completion",
    "FailureKind",
    "Faults",
    "Message",
    "Model",
    "ModelCallError",
    "ModelSpec",
    "ModelStats",
    "RetryPolicy",
    "Sampling",
    "Structured",
    "StructuredMode",
    "StructuredOutputError",
    "TokenLogprob",
    "UnsupportedFeatureError",
    "Usage",
    "cache_key",
    "default_cache_path",
    "example_for_schema",
    "list_backends",
    "load",
    "open_cache",
    "parse_letter",
    "parse_spec",
    "recording",
    "register_fake",
    "registered_fakes",
    "unregister_fake",
]
