"""Model address strings: ``<backend>:<target>``."""

from __future__ import annotations

from enum import StrEnum
from functools import cache
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


def base_model(spec: str) -> str | None:
    """The model that ``spec`` applies an adapter over, or None when it names a plain model.

    ``llamacpp:smollm2+lora.gguf``, the shipped ``llamacpp:smollm2-wm`` and its merged form
    ``llamacpp:smollm2-wm-merged`` are ``smollm2`` with a LoRA: all give ``llamacpp:smollm2``;
    ``hf:./base+./adapter`` gives ``hf:./base``. Reports
    use it to say when the agents run on the model the simulator was fine-tuned from.
    """
    try:
        kind, target = parse_spec(spec)
    except InputError:
        return None
    if kind is BackendKind.LLAMACPP:
        from cogwm.models.llamacpp import shipped_adapter_of

        shipped = shipped_adapter_of(target)
        if shipped is not None:
            return f"{kind.value}:{shipped.base}"
    model, plus, adapter = target.rpartition("+")
    if not (plus and model and adapter):
        return None
    if kind is BackendKind.HF or (
        kind is BackendKind.LLAMACPP and adapter.lower().endswith(".gguf")
    ):
        return f"{kind.value}:{model}"
    return None


@cache  # asked once per conversation of a report, with a handful of distinct addresses
def runs_on_base_of(agent: str, simulator: str) -> bool:
    """Whether ``agent`` is the model that the ``simulator`` address applies an adapter over.

    Backends and ``llamacpp:`` aliases are compared case-insensitively, as they are resolved.
    """
    base = base_model(simulator)
    return base is not None and _comparable(agent) == _comparable(base)


def _comparable(spec: str) -> str:
    try:
        kind, target = parse_spec(spec)
    except InputError:
        return spec
    is_alias = kind is BackendKind.LLAMACPP and "/" not in target and "." not in target
    return f"{kind.value}:{target.lower() if is_alias else target}"
