"""Task specs as data: roles, score dimensions, weights, GoodOutcome criterion."""

from __future__ import annotations

from pydantic import Field, model_validator

from cogwm.errors import CogwmError
from cogwm.schema.base import Record
from cogwm.schema.state import BDI, Dimension


class TaskCapabilityError(CogwmError):
    """Asked a task for something it does not define (e.g. DAILY's weights)."""


class DimensionSpec(Record):
    """What one score dimension means in a task (e.g. belief = reality in ESC)."""

    name: str
    meaning: str


class TaskWeights(Record):
    """Composite-score weights ``w_E, w_B, w_D, w_I`` (paper Table 13)."""

    emotion: float = Field(ge=0)
    belief: float = Field(ge=0)
    desire: float = Field(ge=0)
    intention: float = Field(ge=0)

    @model_validator(mode="after")
    def _sum_to_one(self) -> TaskWeights:
        total = self.emotion + self.belief + self.desire + self.intention
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"weights must sum to 1, got {total}")
        return self

    def of(self, dimension: Dimension) -> float:
        """The weight of one B/D/I dimension."""
        return float(getattr(self, dimension.value))


class TaskSpec(Record):
    """One task: which corpus, who plays whom, what the scores mean and what success is."""

    name: str
    title: str
    corpus: str
    user_role: str
    agent_role: str
    initiator_role: str = Field(description="Role name of the initiator in the corpus.")
    scenario: str
    dimensions: dict[Dimension, DimensionSpec]
    weights: TaskWeights | None = None
    score_range: tuple[float, float] = (0.0, 2.0)
    good_outcome: str | None = None

    @model_validator(mode="after")
    def _check(self) -> TaskSpec:
        missing = [d.value for d in BDI if d not in self.dimensions]
        if missing:
            raise ValueError(f"task {self.name}: dimensions missing {missing}")
        low, high = self.score_range
        if not low < high:
            raise ValueError(f"task {self.name}: score range {self.score_range} is empty")
        return self

    def require_weights(self) -> TaskWeights:
        """The composite weights; a clear error for tasks without them (DAILY)."""
        if self.weights is None:
            raise TaskCapabilityError(
                f"task {self.name} has no composite weights (it is training data only)"
            )
        return self.weights

    def require_good_outcome(self) -> str:
        """The GoodOutcome criterion; a clear error for tasks without one (DAILY)."""
        if self.good_outcome is None:
            raise TaskCapabilityError(f"task {self.name} has no GoodOutcome criterion")
        return self.good_outcome
