"""The finite states of an arena conversation, for the arena's modules and their tests: the
types live in :mod:`cogwm.schema.termination`, below the simulators that play the arena's user."""

from cogwm.schema.termination import (
    Condition,
    ConversationStatus,
    FailureOrigin,
    Phase,
    Termination,
)

__all__ = ["Condition", "ConversationStatus", "FailureOrigin", "Phase", "Termination"]
