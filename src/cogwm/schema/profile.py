"""User profile: the conditioning input of the simulator.

See docs/architecture.md, "Cognitive state".
"""

from __future__ import annotations

from pydantic import Field

from cogwm.schema.base import Record

_TRAIT = Field(ge=1.0, le=5.0)


class BigFive(Record):
    """Big Five traits on 1-5."""

    openness: float = _TRAIT
    conscientiousness: float = _TRAIT
    extraversion: float = _TRAIT
    agreeableness: float = _TRAIT
    neuroticism: float = _TRAIT


class Profile(Record):
    """Who the user is. ``confidence`` (1-3) says how well the profile is grounded."""

    big_five: BigFive | None = None
    communication_style: str = ""
    decision_style: str = ""
    task_features: dict[str, str] = Field(default_factory=dict)
    confidence: int = Field(default=1, ge=1, le=3)
    source: str = Field(
        default="default",
        description="Where the profile came from: corpus metadata, an annotator call, or default.",
    )

    @classmethod
    def neutral(cls) -> Profile:
        """A neutral default profile (mid-scale traits, lowest confidence)."""
        mid = 3.0
        return cls(
            big_five=BigFive(
                openness=mid,
                conscientiousness=mid,
                extraversion=mid,
                agreeableness=mid,
                neuroticism=mid,
            ),
            communication_style="plain and cooperative",
            decision_style="balanced",
            confidence=1,
            source="default",
        )
