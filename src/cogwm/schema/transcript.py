"""What participants see and produce: the turns of one arena conversation."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pydantic import Field

from cogwm.schema import CognitiveState, Profile, Record, Role
from cogwm.schema.termination import Phase


class ArenaTurn(Record):
    """One turn of an arena conversation, as stored.

    ``round`` is the round the turn belongs to (a round is an agent turn plus the user turn after
    it; a user turn before the first agent turn is round 0). ``state`` is set on user turns that
    carry a state: the last cold-start user turn holds the initial state, every simulated user turn
    its own.
    """

    index: int = Field(ge=0)
    round: int = Field(ge=0)
    role: Role
    phase: Phase
    text: str
    state: CognitiveState | None = None
    reasoning: str | None = None
    call_id: str | None = None


class TurnOutput(Record):
    """What a participant returns for its next turn."""

    text: str
    state: CognitiveState | None = None
    reasoning: str | None = None
    leave: bool = False
    call_id: str | None = None


class UserSetup(Record):
    """Who the simulated user is: situation and profile."""

    context: str
    profile: Profile


def latest_state(turns: Sequence[ArenaTurn]) -> CognitiveState | None:
    """The most recent user state in ``turns``, or None."""
    return next((t.state for t in reversed(turns) if t.state is not None), None)


def derive_seed(*parts: object) -> int:
    """A 31-bit seed from the parts (e.g. run seed, task, scenario, agent, condition).

    Derived by hashing, so a unit's seed depends on what it is and never on scheduling order.
    """
    text = "\x1f".join(map(str, parts))
    return _seed_of(hashlib.sha256(text.encode("utf-8")))


class SeedSeries:
    """``derive_seed(*prefix, part)`` for one ``prefix`` and any last part, the same numbers.

    A conversation derives a seed for every round from the same prefix (its seed and the role);
    the hash of the prefix is computed once and copied for each round.

    Raises:
        ValueError: ``prefix`` is empty.
    """

    __slots__ = ("_prefix",)

    def __init__(self, *prefix: object) -> None:
        if not prefix:
            raise ValueError("a seed series needs a prefix")
        # The separator follows the prefix, as it precedes the last part in derive_seed's text.
        self._prefix = hashlib.sha256(("\x1f".join(map(str, prefix)) + "\x1f").encode("utf-8"))

    def __call__(self, part: object) -> int:
        """``derive_seed(*prefix, part)``."""
        state = self._prefix.copy()
        state.update(str(part).encode("utf-8"))
        return _seed_of(state)


def _seed_of(state: hashlib._Hash) -> int:
    return int.from_bytes(state.digest()[:4], "big") & 0x7FFFFFFF
