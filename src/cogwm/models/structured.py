"""Structured output: schemas sent to backends, pulling JSON out of replies, validation, repair."""

from __future__ import annotations

import functools
import json
import math
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from cogwm.models.types import Message, StructuredMode
from cogwm.schema.lexicon import Lexicon, active_lexicon

# Modes in which nothing but the prompt tells the model the schema.
UNENFORCED_MODES = frozenset({StructuredMode.PROMPT, StructuredMode.JSON_OBJECT})


def schema_for(output_model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of ``output_model`` as sent to backends (shared: do not mutate it).

    Building a schema costs milliseconds, which dominates a fast backend's call; it is built once
    per output model and lexicon (the emotion enum follows lexicon extensions).
    """
    return _schema_cached(output_model, active_lexicon())


@functools.lru_cache(maxsize=256)
def _schema_cached(output_model: type[BaseModel], _lexicon: Lexicon) -> dict[str, Any]:
    return output_model.model_json_schema()


_MAX_ENUM_SPAN = 64


def bounded_ints_as_enums(schema: Any) -> Any:
    """A copy of ``schema`` where integers with a small closed range become enums.

    llama.cpp's JSON-schema grammar ignores ``minimum``/``maximum``; an enum of the allowed values
    is something it enforces (an intensity 1-3 cannot come out as 7).
    """
    if isinstance(schema, list):
        return [bounded_ints_as_enums(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: bounded_ints_as_enums(value) for key, value in schema.items()}
    if out.get("type") == "integer" and "enum" not in out:
        first = _int_bound(out, "minimum", "exclusiveMinimum", lower=True)
        last = _int_bound(out, "maximum", "exclusiveMaximum", lower=False)
        if first is not None and last is not None and 0 <= last - first < _MAX_ENUM_SPAN:
            out["enum"] = list(range(first, last + 1))
    return out


def grammar_unsafe_literals(schema: Any) -> list[str]:
    """``enum``/``const`` strings in ``schema`` that contain a quote mark or a backslash.

    llama-cpp-python 0.3.36 escapes those wrongly when it turns a JSON schema into a grammar; the
    grammar then fails to parse inside the C library and the whole process aborts instead of
    raising, so such schemas must be refused before they reach it.
    """
    found: list[str] = []
    if isinstance(schema, list):
        for item in schema:
            found += grammar_unsafe_literals(item)
    elif isinstance(schema, dict):
        literals = list(schema.get("enum") or []) + ([schema["const"]] if "const" in schema else [])
        found += [v for v in literals if isinstance(v, str) and ('"' in v or "\\" in v)]
        for key, value in schema.items():
            if key not in ("enum", "const"):
                found += grammar_unsafe_literals(value)
    return found


def _int_bound(
    schema: dict[str, Any], inclusive: str, exclusive: str, *, lower: bool
) -> int | None:
    """The smallest (``lower``) or largest allowed integer, or None when unbounded."""
    if isinstance(schema.get(inclusive), int | float):
        value = schema[inclusive]
        return int(math.ceil(value) if lower else math.floor(value))
    if isinstance(schema.get(exclusive), int | float):
        value = schema[exclusive]
        return int(math.floor(value) + 1 if lower else math.ceil(value) - 1)
    return None


def with_schema_hint(
    messages: list[Message], json_schema: dict[str, Any], mode: StructuredMode
) -> list[Message]:
    """Messages for ``mode``: where no backend enforces the schema, the prompt has to state it.

    The hint is added after the cache key is computed, so the key does not depend on which
    endpoint (and hence which mode) answered.
    """
    if mode not in UNENFORCED_MODES:
        return messages
    hint = (
        "Reply with one JSON object only, no other text. It must validate against this JSON "
        f"schema:\n{json.dumps(json_schema, separators=(',', ':'))}"
    )
    if messages and messages[0].role == "system":
        first = Message(role="system", content=f"{messages[0].content}\n\n{hint}")
        return [first, *messages[1:]]
    return [Message(role="system", content=hint), *messages]


def extract_json(text: str) -> str:
    """The JSON object inside ``text``: code fences and chatter around it are dropped.

    Raw control characters inside strings (a literal newline in an utterance) are accepted and
    re-escaped: llama.cpp's schema grammars let them through, and they change no meaning.
    Returns the text unchanged when no ``{ ... }`` span is found, so validation reports the
    original problem.
    """
    start = text.find("{")
    if start < 0:
        return text
    decoder = json.JSONDecoder(strict=False)
    for candidate_start in _brace_positions(text, start):
        try:
            value, _ = decoder.raw_decode(text, candidate_start)
        except json.JSONDecodeError:
            continue
        return json.dumps(value, ensure_ascii=False)
    return text[start:]


def _brace_positions(text: str, start: int) -> list[int]:
    return [i for i in range(start, len(text)) if text[i] == "{"][:8]


class Validation(NamedTuple):
    """The outcome of validating one reply: a value or a short error message."""

    value: BaseModel | None
    error: str | None


def validate_reply(text: str, output_model: type[BaseModel]) -> Validation:
    """Validate ``text`` (after ``extract_json``) against ``output_model``."""
    if text.startswith("{") and text.endswith("}"):
        # The common case, a bare JSON object: validated as it is, without decoding and
        # re-encoding it first; anything that fails goes the tolerant way below.
        try:
            return Validation(output_model.model_validate_json(text), None)
        except ValidationError:
            pass
    try:
        return Validation(output_model.model_validate_json(extract_json(text)), None)
    except ValidationError as exc:
        return Validation(None, summarize_errors(exc))


def summarize_errors(exc: ValidationError, limit: int = 5) -> str:
    """A short, readable list of validation problems (location: message)."""
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        parts.append(f"{where}: {err.get('msg')}")
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"... and {more} more")
    return "; ".join(parts)


def repair_messages(messages: list[Message], raw: str, error: str) -> list[Message]:
    """The conversation for the one repair attempt: the bad reply and what was wrong with it."""
    return [
        *messages,
        Message(role="assistant", content=raw),
        Message(
            role="user",
            content=f"That reply is not valid: {error}. Reply again with only the corrected JSON "
            "object, matching the schema exactly.",
        ),
    ]
