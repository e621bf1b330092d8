"""The base of every record: strict validation, unknown fields rejected."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A strict pydantic record (``extra="forbid"`` also keeps JSON schemas strict-mode valid)."""

    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)
