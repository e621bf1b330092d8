"""Model address strings: ``<backend>:<target>``."""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from cogwm.errors import InputError


class BackendKind(StrEnum):
    """The backends a model address can name."""

    LLAMACPP = "llamacpp"
    OPENAI = "openai"
    HF = "hf"
    FAKE = "fake"


class ModelSpec(NamedTuple):
    """A parsed model address."""

    kind: BackendKind
    target: str

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.target}"


def parse_spec(spec: str) -> ModelSpec:
    """Split ``spec`` into backend and target.

    Args:
        spec: An address such as ``llamacpp:smollm2``, ``openai:gpt-4o-mini``,
            ``hf:./merged+./adapter`` or ``fake:schema``.

    Raises:
        InputError: The string names no known backend or has an empty target.
    """
    kinds = ", ".join(k.value for k in BackendKind)
    prefix, sep, target = spec.strip().partition(":")
    if not sep:
        raise InputError(f"model {spec!r}: expected <backend>:<model> with backend one of {kinds}")
    try:
        kind = BackendKind(prefix.lower())
    except ValueError:
        raise InputError(f"model {spec!r}: unknown backend {prefix!r} (known: {kinds})") from None
    if not target.strip():
        raise InputError(f"model {spec!r}: nothing after '{prefix}:'")
    return ModelSpec(kind, target.strip())
