"""``load(spec)``: from an address string to a ``Model``; what is installed and known."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import threading
from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel, SecretStr, ValidationError

from cogwm.errors import ConfigError
from cogwm.models.backend import COMMON_OPTION_NAMES, Backend, CommonOptions
from cogwm.models.dispatch import EndpointPool
from cogwm.models.model import Model
from cogwm.models.spec import BackendKind, ModelSpec, parse_spec


class BackendInfo(NamedTuple):
    """One backend as ``cogwm models list`` shows it."""

    kind: BackendKind
    installed: bool
    requires: str
    install_hint: str
    example: str


_BACKENDS = {
    BackendKind.LLAMACPP: (("llama_cpp",), "llama-cpp-python", "pip install 'cogwm[local]'"),
    BackendKind.OPENAI: (("openai",), "openai", "pip install cogwm"),
    BackendKind.HF: (
        ("transformers", "torch"),
        "transformers, torch (peft for adapters)",
        "pip install 'cogwm[train]'",
    ),
    BackendKind.FAKE: ((), "-", "-"),
}
_EXAMPLES = {
    BackendKind.LLAMACPP: "llamacpp:smollm2",
    BackendKind.OPENAI: "openai:<served model> --base-url http://host:8000/v1",
    BackendKind.HF: "hf:<model dir or .gguf>[+<adapter dir>]",
    BackendKind.FAKE: "fake:schema",
}


def is_installed(module: str) -> bool:
    """Whether ``module`` can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def list_backends() -> list[BackendInfo]:
    """Every backend with whether its libraries are installed."""
    return [
        BackendInfo(kind, all(is_installed(m) for m in modules), requires, hint, _EXAMPLES[kind])
        for kind, (modules, requires, hint) in _BACKENDS.items()
    ]


def require(kind: BackendKind) -> None:
    """Raise a ``ConfigError`` with the install command when ``kind``'s libraries are missing."""
    modules, requires, hint = _BACKENDS[kind]
    missing = [m for m in modules if not is_installed(m)]
    if missing:
        raise ConfigError(
            f"the {kind.value} backend needs {requires} (missing: {', '.join(missing)}); "
            f"install with: {hint}"
        )


_shared: dict[str, tuple[Backend, EndpointPool]] = {}
_shared_lock = threading.Lock()


def load(spec: str, **options: Any) -> Model:
    """Load the model at address ``spec``.

    Backends other than fakes are shared: loading the same address with the same backend options
    twice gives two ``Model`` objects over one backend (one model in memory, one concurrency limit
    per endpoint), each with its own cache and retry settings.

    Args:
        spec: ``llamacpp:smollm2`` | ``llamacpp:<file.gguf>`` | ``openai:<model>`` |
            ``hf:<path>[+<adapter dir>]`` | ``fake:<name>``.
        **options: ``CommonOptions`` (cache, cache_path, max_concurrency, timeout_s,
            max_attempts, backoff_base_s, backoff_max_s, cost_per_1k_prompt,
            cost_per_1k_completion, identity) and the backend's own options.

    Raises:
        InputError: ``spec`` is not a valid address.
        ConfigError: An unknown or invalid option, a missing library or model file.
    """
    parsed = parse_spec(spec)
    common = _common_options(parsed, options)
    backend_options = {k: v for k, v in options.items() if k not in COMMON_OPTION_NAMES}
    backend, pool = _backend_and_pool(parsed, backend_options, common.max_concurrency)
    return Model(str(parsed), backend, pool, common)


def check_options(parsed: ModelSpec, options: Mapping[str, Any]) -> None:
    """Validate ``options`` as ``load`` would, without building the backend (no file opened,
    no network). A fake's options join those it was registered with, so fakes are skipped.

    Raises:
        ConfigError: ``model <address>: option <name>: <what is wrong>``.
    """
    if parsed.kind is BackendKind.FAKE:
        return
    _common_options(parsed, dict(options))
    backend_options = {k: v for k, v in options.items() if k not in COMMON_OPTION_NAMES}
    try:
        _options_class(parsed.kind).model_validate(backend_options)
    except ValidationError as exc:
        raise ConfigError(f"model {parsed}: {_first_error(exc)}") from None


def _options_class(kind: BackendKind) -> type[BaseModel]:
    """The options model of a backend other than the fake one."""
    if kind is BackendKind.LLAMACPP:
        from cogwm.models.llamacpp import LlamaCppOptions

        return LlamaCppOptions
    if kind is BackendKind.OPENAI:
        from cogwm.models.openai_api import OpenAIOptions

        return OpenAIOptions
    from cogwm.models.hf import HFOptions

    return HFOptions


def _common_options(parsed: ModelSpec, options: dict[str, Any]) -> CommonOptions:
    try:
        return CommonOptions(**{k: v for k, v in options.items() if k in COMMON_OPTION_NAMES})
    except ValidationError as exc:
        raise ConfigError(f"model {parsed}: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"option {where}: {err.get('msg')}"


def _backend_and_pool(
    parsed: ModelSpec, options: dict[str, Any], max_concurrency: int | None
) -> tuple[Backend, EndpointPool]:
    if parsed.kind is BackendKind.FAKE:
        backend = _make_backend(parsed, options)
        return backend, EndpointPool(
            backend.endpoints, max_concurrency or backend.default_concurrency
        )
    if isinstance(options.get("api_key"), str):
        options = {**options, "api_key": SecretStr(options["api_key"])}
    key = json.dumps([str(parsed), options, max_concurrency], sort_keys=True, default=_memo_part)
    with _shared_lock:
        if key not in _shared:
            backend = _make_backend(parsed, options)
            limit = max_concurrency or backend.default_concurrency
            _shared[key] = (backend, EndpointPool(backend.endpoints, limit))
        return _shared[key]


def _memo_part(value: Any) -> str:
    # Secrets enter the key only as a digest (two keys, two backends; neither key stored).
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
        return "secret:" + hashlib.sha256(value.encode()).hexdigest()
    return repr(value)


def _make_backend(parsed: ModelSpec, options: dict[str, Any]) -> Backend:
    require(parsed.kind)
    try:
        if parsed.kind is BackendKind.FAKE:
            from cogwm.models.fake import make_fake

            return make_fake(parsed.target, options)
        if parsed.kind is BackendKind.LLAMACPP:
            from cogwm.models.llamacpp import make_llamacpp

            return make_llamacpp(parsed.target, options)
        if parsed.kind is BackendKind.OPENAI:
            from cogwm.models.openai_api import make_openai

            return make_openai(parsed.target, options)
        from cogwm.models.hf import make_hf

        return make_hf(parsed.target, options)
    except ValidationError as exc:
        raise ConfigError(f"model {parsed}: {_first_error(exc)}") from None


def clear_shared() -> None:
    """Forget shared backends (tests; the next ``load`` builds them again)."""
    with _shared_lock:
        _shared.clear()
