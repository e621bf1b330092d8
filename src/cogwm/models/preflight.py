"""Checks made before a command calls models, so that it cannot fail the same way hundreds of
times: every address parses, every backend's libraries are installed, every local model's files
are there (found, not loaded), every model's options are valid, every ``openai:`` model has a
base URL it was given (never the public API by accident), and each distinct endpoint answers
one cheap request.

Every command that runs models (``arena run``, ``quickstart``, ``tom eval``, ``tom build
--source llm``, ``annotate run``, ``validate``, ``serve --model``) goes through these; a
failure is one line naming the role (what the model is for) and the address.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from pydantic import SecretStr

from cogwm.errors import ConfigError, InputError
from cogwm.models.spec import BackendKind, ModelSpec, parse_spec

#: Seconds one endpoint has to answer the preflight request: long enough for a busy server,
#: short enough that a wrong address is reported at once.
PREFLIGHT_TIMEOUT_S = 5.0
#: HTTP answers that mean every real call would fail too: the key was refused, or a gateway
#: says the server behind it is down. Any other answer (even 404 from a service that has no
#: model list) shows that something is listening.
_FAILING_STATUS = frozenset({401, 403, 500, 502, 503, 504})


class ModelUse(NamedTuple):
    """A model a command will call: what for (``simulator``, ``--model``), address, options."""

    role: str
    address: str
    options: Mapping[str, Any] = {}


def check_address(use: ModelUse, *, base_url_hint: str | None = "options.base_url") -> ModelSpec:
    """The parsed address of ``use``; refuses one that cannot be called as written.

    Args:
        use: The model and its role.
        base_url_hint: Where the user gives a base URL (a config key or a command-line option),
            named in the error; None where only the environment variable can give one.

    Raises:
        ConfigError: One line naming the role and the address: an address that does not parse,
            a backend whose libraries are not installed (with the install command), a local
            model that is not there, an option the backend refuses, or an ``openai:`` model
            without a base URL (option or ``$COGWM_BASE_URL``).
    """
    from cogwm.models.openai_api import BASE_URL_ENV, DEFAULT_BASE_URL
    from cogwm.models.registry import check_options, require

    try:
        parsed = parse_spec(use.address)
    except InputError as exc:
        raise ConfigError(f"{use.role}: {exc}") from None
    try:
        require(parsed.kind)
    except ConfigError as exc:
        raise ConfigError(f"{use.role}: model {use.address!r}: {exc}") from None
    check_resolvable(use, parsed)
    try:
        check_options(parsed, use.options)
    except ConfigError as exc:
        detail = str(exc).removeprefix(f"model {parsed}: ")
        raise ConfigError(f"{use.role}: model {use.address!r}: {detail}") from None
    has_url = bool(use.options.get("base_url")) or bool(os.environ.get(BASE_URL_ENV))
    if parsed.kind is BackendKind.OPENAI and not has_url:
        fix = (
            f"set {base_url_hint} (that URL to use the public API on purpose) or the environment "
            "variable"
            if base_url_hint
            else "set the environment variable (to that URL to use the public API on purpose)"
        )
        raise ConfigError(
            f"{use.role}: model {use.address!r} has no base_url and ${BASE_URL_ENV} is not set, "
            f"so it would call {DEFAULT_BASE_URL}; {fix}"
        )
    return parsed


def check_resolvable(use: ModelUse, parsed: ModelSpec) -> None:
    """Refuse an address that names no model on this machine, without loading any weights.

    A ``llamacpp:`` alias needs its package installed and a path its file (and a LoRA's); an
    ``hf:`` path must exist, a folder with a ``config.json``. ``openai:`` models are asked by
    ``check_endpoints``; ``fake:`` test doubles are registered at run time and not checked.

    Raises:
        ConfigError: One line naming the role, the address and what is missing.
    """
    try:
        if parsed.kind is BackendKind.LLAMACPP:
            from cogwm.models.llamacpp import check_target

            check_target(parsed.target)
        elif parsed.kind is BackendKind.HF:
            from cogwm.models.hf import split_target

            split_target(parsed.target)
    except ConfigError as exc:
        # The backends' messages start with the address, which the new prefix already names.
        detail = str(exc).removeprefix(f"{parsed.kind.value}:{parsed.target}").lstrip(": ")
        raise ConfigError(f"{use.role}: unknown model {use.address!r}: {detail}") from None


class _Probe(NamedTuple):
    use: ModelUse
    url: str
    headers: dict[str, str]


def check_endpoints(uses: Iterable[ModelUse], *, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> None:
    """Send one cheap request (the model list) to each distinct endpoint of the ``openai:``
    models in ``uses``; other backends need no network and are skipped.

    Endpoints are asked at once, so several down ones cost one timeout, not one each.

    Raises:
        ConfigError: One line naming the role, the address and the endpoint that did not
            answer (refused, timed out, key refused, or a gateway error), and how to skip the
            check.
    """
    probes = _probes(uses)
    if not probes:
        return
    with ThreadPoolExecutor(max_workers=min(8, len(probes))) as pool:
        problems = list(pool.map(lambda p: _ask(p, timeout_s), probes))
    for probe, problem in zip(probes, problems, strict=True):
        if problem is not None:
            from cogwm.models.openai_api import endpoint_label

            raise ConfigError(
                f"{probe.use.role}: model {probe.use.address!r}: endpoint "
                f"{endpoint_label(probe.url)} {problem} (--no-preflight skips this check)"
            )


def _probes(uses: Iterable[ModelUse]) -> list[_Probe]:
    """One probe per distinct endpoint URL (the first role that uses it is named)."""
    from cogwm.models.openai_api import api_key, base_urls, header_values

    probes: dict[str, _Probe] = {}
    for use in uses:
        if parse_spec(use.address).kind is not BackendKind.OPENAI:
            continue
        try:  # a header variable that is not set, a URL that is not http(s)
            headers = header_values(dict(use.options.get("headers_env") or {}))
            urls = base_urls(use.options.get("base_url"))
        except ConfigError as exc:
            raise ConfigError(f"{use.role}: model {use.address!r}: {exc}") from None
        raw_key = use.options.get("api_key")
        key = api_key(SecretStr(raw_key) if isinstance(raw_key, str) else raw_key)
        headers.setdefault("Authorization", f"Bearer {key}")
        for url in urls:
            probes.setdefault(url.rstrip("/"), _Probe(use, url.rstrip("/"), headers))
    return list(probes.values())


def _ask(probe: _Probe, timeout_s: float) -> str | None:
    """None when the endpoint answered; otherwise what went wrong, in a few words."""
    request = urllib.request.Request(f"{probe.url}/models", headers=probe.headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):
            return None
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code in (401, 403):
            return f"refused the API key (HTTP {exc.code}); set $COGWM_API_KEY"
        if exc.code in _FAILING_STATUS:
            return f"answered HTTP {exc.code}; is the server behind it up?"
        return None
    except TimeoutError:
        return f"did not answer within {timeout_s:g}s; start the server or fix the base URL"
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            return f"did not answer within {timeout_s:g}s; start the server or fix the base URL"
        text = getattr(reason, "strerror", None) or str(reason)
        return f"cannot be reached ({str(text).lower()}); start the server or fix the base URL"
    except OSError as exc:  # a connection reset mid-answer
        text = (exc.strerror or str(exc)).lower()
        return f"cannot be reached ({text}); start the server or fix the base URL"
