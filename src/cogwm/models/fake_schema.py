"""Deterministic schema-valid example values for the ``fake:schema`` backend.

Walks a pydantic JSON schema (``$ref``/``$defs``, ``anyOf``/``oneOf``/``allOf``, ``enum``/``const``
from enums and Literals, numeric bounds, string lengths and formats, arrays and objects) and builds
one value, choosing among enum members, ``examples`` and within ranges with a seeded generator: the
same prompt always gets the same answer, different prompts get varied ones. Constraints that only a
validator knows (a label checked against a lexicon) cannot be seen in the schema: give such fields
an ``enum`` or ``examples`` in their JSON schema.
"""

from __future__ import annotations

import math
import random
from typing import Any

JSON = Any

_MAX_DEPTH = 12
_WORDS = ("calm", "hopeful", "tired", "worried", "ready", "unsure", "glad", "busy")


class SchemaExampleError(ValueError):
    """The schema uses something the generator cannot satisfy (e.g. an unbounded recursion)."""


def example_for_schema(schema: dict[str, Any], rng: random.Random) -> JSON:
    """One value that validates against ``schema``.

    Args:
        schema: A JSON schema as produced by ``BaseModel.model_json_schema()``.
        rng: Source of the (deterministic) choices.
    """
    return _Walker(schema.get("$defs", {}), rng).value(schema, depth=0)


class _Walker:
    def __init__(self, defs: dict[str, Any], rng: random.Random) -> None:
        self.defs = defs
        self.rng = rng

    def value(self, schema: dict[str, Any], depth: int) -> JSON:
        if depth > _MAX_DEPTH:
            raise SchemaExampleError(
                "schema nests too deeply (recursive model without a base case)"
            )
        schema = self._resolve(schema)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        if schema.get("examples"):
            # Examples name valid values that validators may demand beyond the schema.
            return self.rng.choice(schema["examples"])
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self._one_of(schema[key], depth)
        if "allOf" in schema:
            return self.value(_merge(schema["allOf"], self._resolve), depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            non_null = [k for k in kind if k != "null"]
            kind = non_null[0] if non_null else "null"
        if kind is None and "default" in schema:
            return schema["default"]
        if kind is None:
            kind = "object" if "properties" in schema else "string"
        maker = {
            "object": self._object,
            "array": self._array,
            "string": self._string,
            "integer": self._integer,
            "number": self._number,
            "boolean": self._boolean,
            "null": self._null,
        }.get(kind)
        if maker is None:
            raise SchemaExampleError(f"unsupported schema type {kind!r}")
        return maker(schema, depth)

    def _boolean(self, schema: dict[str, Any], depth: int) -> JSON:
        return self.rng.random() < 0.5

    def _null(self, schema: dict[str, Any], depth: int) -> JSON:
        return None

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        seen = 0
        while "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            if name not in self.defs:
                raise SchemaExampleError(f"unresolved $ref {schema['$ref']!r}")
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**self.defs[name], **rest}
            seen += 1
            if seen > _MAX_DEPTH:
                raise SchemaExampleError("circular $ref")
        return schema

    def _one_of(self, options: list[dict[str, Any]], depth: int) -> JSON:
        # Prefer a real value over null so optional fields carry content.
        non_null = [o for o in options if self._resolve(o).get("type") != "null"]
        return self.value((non_null or options)[0], depth + 1)

    def _object(self, schema: dict[str, Any], depth: int) -> JSON:
        properties: dict[str, Any] = schema.get("properties", {})
        out = {name: self.value(sub, depth + 1) for name, sub in properties.items()}
        extra = schema.get("additionalProperties")
        needed = max(0, int(schema.get("minProperties", 0)) - len(out))
        if needed and isinstance(extra, dict):
            for i in range(needed):
                out[f"key{i}"] = self.value(extra, depth + 1)
        return out

    def _array(self, schema: dict[str, Any], depth: int) -> JSON:
        prefix = schema.get("prefixItems")
        if prefix is not None:
            return [self.value(item, depth + 1) for item in prefix]
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", low + 2))
        # At least one item whenever the schema allows it, so lists carry content.
        count = self.rng.randint(min(max(low, 1), high), high)
        items = schema.get("items", {})
        values = [self.value(items, depth + 1) for _ in range(count)]
        if schema.get("uniqueItems"):
            unique: list[JSON] = []
            for v in values:
                if v not in unique:
                    unique.append(v)
            values = unique
        return values

    def _string(self, schema: dict[str, Any], depth: int) -> JSON:
        fmt = schema.get("format")
        if fmt == "date-time":
            return "2024-01-01T00:00:00Z"
        if fmt == "date":
            return "2024-01-01"
        if fmt == "time":
            return "00:00:00"
        if fmt == "uuid":
            return "00000000-0000-4000-8000-000000000000"
        if fmt == "email":
            return "someone@example.org"
        if fmt in ("uri", "url"):
            return "https://example.org/"
        low = int(schema.get("minLength", 1))
        high = int(schema.get("maxLength", max(low, 40)))
        text = " ".join(self.rng.choice(_WORDS) for _ in range(3))
        while len(text) < low:
            text += " " + self.rng.choice(_WORDS)
        return text[:high] if high >= low else text[:low]

    def _bounds(self, schema: dict[str, Any], integer: bool) -> tuple[float, float]:
        step = 1.0 if integer else 1e-6
        low = schema.get("minimum", -math.inf)
        high = schema.get("maximum", math.inf)
        if "exclusiveMinimum" in schema:
            low = max(low, schema["exclusiveMinimum"] + step)
        if "exclusiveMaximum" in schema:
            high = min(high, schema["exclusiveMaximum"] - step)
        if math.isinf(low) and math.isinf(high):
            low, high = 0, 10
        elif math.isinf(low):
            low = high - 10
        elif math.isinf(high):
            high = low + 10
        if low > high:
            raise SchemaExampleError(f"empty numeric range {schema}")
        return float(low), float(high)

    def _integer(self, schema: dict[str, Any], depth: int) -> JSON:
        low, high = self._bounds(schema, integer=True)
        value = self.rng.randint(math.ceil(low), math.floor(high))
        step = schema.get("multipleOf")
        if step:
            value = int(math.ceil(low / step) * step)
        return value

    def _number(self, schema: dict[str, Any], depth: int) -> JSON:
        low, high = self._bounds(schema, integer=False)
        step = schema.get("multipleOf")
        if step:
            return math.ceil(low / step) * step
        # Two decimals keep the JSON readable; clamp so rounding cannot leave the range.
        return min(high, max(low, round(self.rng.uniform(low, high), 2)))


def _merge(parts: list[dict[str, Any]], resolve: Any) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for part in parts:
        part = resolve(part)
        for key, val in part.items():
            if key == "properties":
                merged.setdefault("properties", {}).update(val)
            elif key == "required":
                merged.setdefault("required", []).extend(val)
            else:
                merged[key] = val
    return merged
