"""The turns of an arena conversation, for the arena's modules and their tests: the types live in
:mod:`cogwm.schema.transcript`, below the simulators that play the arena's user."""

from cogwm.schema.transcript import (
    ArenaTurn,
    SeedSeries,
    TurnOutput,
    UserSetup,
    derive_seed,
    latest_state,
)

__all__ = ["ArenaTurn", "SeedSeries", "TurnOutput", "UserSetup", "derive_seed", "latest_state"]
