"""The one estimate type: a statistic with its confidence interval and the count behind it.

Every number cogwm reports with an interval is an :class:`Estimate` or a record that extends one:
a mean with its cluster-bootstrap interval (:class:`cogwm.stats.means.MeanEstimate`), a paired
difference, an AUROC or an F1 over dialogues, a correctness rate with its Wilson interval, a
figure of the validity card or of the annotation-quality sheet. An undefined value or bound is
None, never 0.

Records keep the JSON form they had before they shared this type: a subclass lists the fields it
writes first, in order (:attr:`Estimate.json_fields`; the others follow in declaration order),
the fields it never writes (:attr:`Estimate.json_omitted`, left at their defaults) and the key of
each field whose key is not its name (:attr:`Estimate.json_names`, e.g. ``value`` written as
``mean``). Reading accepts those keys as well as the field names, so a record read back from its
own JSON equals the record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

#: Coverage of every interval unless a caller asks otherwise.
CONFIDENCE = 0.95


class Estimate(BaseModel):
    """A point estimate with its standard error, its confidence interval and its n.

    ``value`` None: the statistic is undefined on these items (one class only for an AUROC, no
    item at all). ``ci_low`` and ``ci_high`` None: no interval (fewer than two dialogues or
    scenarios to resample, or no defined resample). ``se`` None: not computed or undefined.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The fields a record writes to JSON first, in this order; the others follow in
    #: declaration order.
    json_fields: ClassVar[tuple[str, ...]] = ()
    #: Fields a record never writes (they keep their defaults).
    json_omitted: ClassVar[frozenset[str]] = frozenset()
    #: Keys of the fields whose JSON key is not their name (field name -> key).
    json_names: ClassVar[Mapping[str, str]] = {}

    value: float | None = Field(description="Point estimate; None: undefined on these items.")
    se: float | None = Field(default=None, description="Standard error; None: not computed.")
    ci_low: float | None = Field(default=None, description="Lower bound; None: no interval.")
    ci_high: float | None = Field(default=None, description="Upper bound; None: no interval.")
    n: int = Field(description="Items (or units) the value is computed on.")
    confidence: float = Field(default=CONFIDENCE, description="Coverage of the interval.")

    @property
    def ci(self) -> tuple[float, float] | None:
        """``(ci_low, ci_high)``, or None when either bound is undefined."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_low, self.ci_high

    def interval(self) -> dict[str, Any]:
        """``value``, ``ci_low``, ``ci_high`` and ``n``: the keyword arguments of a record that
        reports this estimate's point and interval (and nothing of how it was drawn)."""
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n}

    @model_validator(mode="before")
    @classmethod
    def _read_json_names(cls, data: Any) -> Any:
        """Accept a record's JSON keys (``mean``) for its fields (``value``)."""
        if not isinstance(data, dict) or not cls.json_names:
            return data
        renamed = dict(data)
        for name, key in cls.json_names.items():
            if key in renamed and name not in renamed:
                renamed[name] = renamed.pop(key)
        return renamed

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied; ``update`` may name fields by their JSON keys."""
        if update and self.json_names:
            fields = {key: name for name, key in self.json_names.items()}
            update = {fields.get(key, key): value for key, value in update.items()}
        return super().model_copy(update=update, deep=deep)

    @model_serializer(mode="wrap")
    def _write_json_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Write the record's fields in its order, under its keys."""
        data: dict[str, Any] = handler(self)
        if not (self.json_fields or self.json_omitted or self.json_names):
            return data
        rest = [name for name in data if name not in self.json_fields]
        order = [name for name in (*self.json_fields, *rest) if name not in self.json_omitted]
        return {self.json_names.get(name, name): data[name] for name in order if name in data}
