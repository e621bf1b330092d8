"""Dialogues: utterances as the corpus has them, grouped into turns on demand.

Words (docs/architecture.md, "Cognitive state"): an *utterance* is one corpus row; a *turn* is a
maximal run of consecutive utterances by one speaker; a *user turn* is a turn by the user role;
a *round* is one agent turn followed by one user turn.
"""

from __future__ import annotations

from enum import StrEnum
from itertools import pairwise

from pydantic import Field

from cogwm.schema.base import Record
from cogwm.schema.labels import DialogueMeta, UtteranceLabels
from cogwm.schema.profile import Profile
from cogwm.schema.state import CognitiveState


class Role(StrEnum):
    """Who speaks: the user (seeker, persuadee, client) or the agent (supporter, persuader...)."""

    USER = "user"
    AGENT = "agent"


class Utterance(Record):
    """One corpus row."""

    index: int = Field(ge=0)
    speaker: str = Field(description="The speaker as the corpus names them.")
    role: Role
    text: str
    labels: UtteranceLabels | None = None
    state: CognitiveState | None = Field(
        default=None, description="Annotated cognitive state after this utterance, if any."
    )


class Turn(Record):
    """A maximal run of consecutive utterances by one speaker."""

    index: int = Field(ge=0)
    speaker: str
    role: Role
    utterances: list[Utterance]

    @property
    def text(self) -> str:
        """The turn's utterances joined by a space."""
        return " ".join(u.text for u in self.utterances)

    @property
    def labels(self) -> list[UtteranceLabels | None]:
        """The original labels of each utterance of the turn, in order."""
        return [u.labels for u in self.utterances]


class Dialogue(Record):
    """One conversation with its original labels and metadata."""

    id: str = Field(description="Stable id, e.g. 'esconv:train:17'.")
    corpus: str
    split: str | None = None
    task: str | None = None
    utterances: list[Utterance]
    meta: DialogueMeta | None = None
    profile: Profile | None = None

    def turns(self) -> list[Turn]:
        """Group utterances into turns (maximal same-speaker runs)."""
        turns: list[Turn] = []
        for utt in self.utterances:
            if turns and turns[-1].speaker == utt.speaker:
                turns[-1].utterances.append(utt)
            else:
                turns.append(
                    Turn(index=len(turns), speaker=utt.speaker, role=utt.role, utterances=[utt])
                )
        return turns

    def user_turns(self) -> list[Turn]:
        """The turns spoken by the user role."""
        return [t for t in self.turns() if t.role is Role.USER]

    def rounds(self) -> int:
        """Number of rounds: agent turns immediately followed by a user turn."""
        turns = self.turns()
        return sum(1 for a, b in pairwise(turns) if a.role is Role.AGENT and b.role is Role.USER)
