"""The user's profile from corpus metadata: the dialogue's own, or Big Five from the corpus's
trait rows (PersuasionForGood, INSPIRED). Arena scenarios and simulator samples both use it."""

from __future__ import annotations

from typing import Any

from cogwm.schema import BigFive, Dialogue, Profile
from cogwm.schema.labels import InspiredMeta, P4GMeta

_BIG_FIVE_KEYS = {
    "openness": ("open",),
    "conscientiousness": ("conscien",),
    "extraversion": ("extrover", "extraver"),
    "agreeableness": ("agreeab",),
    "neuroticism": ("neurot",),
}


def profile_from_metadata(dialogue: Dialogue) -> Profile | None:
    """The user's profile from corpus metadata: the dialogue's own, or Big Five (P4G, INSPIRED)."""
    if dialogue.profile is not None:
        return dialogue.profile
    traits: dict[str, Any] = {}
    meta = dialogue.meta
    if isinstance(meta, P4GMeta) and meta.persuadee is not None:
        traits = dict(meta.persuadee.traits)
    elif isinstance(meta, InspiredMeta) and meta.survey is not None:
        traits = dict(meta.survey.seeker_personality or {})
    big_five = _big_five(traits)
    if big_five is None:
        return None
    return Profile(big_five=big_five, confidence=3, source="corpus")


def _big_five(traits: dict[str, Any]) -> BigFive | None:
    """Big Five from a corpus trait row (P4G and INSPIRED both ask on 1-5)."""
    values: dict[str, float] = {}
    lowered = {str(k).lower(): v for k, v in traits.items()}
    for field, prefixes in _BIG_FIVE_KEYS.items():
        found = next(
            (v for k, v in lowered.items() if k.startswith(prefixes) and _is_number(v)), None
        )
        if found is None:
            return None
        values[field] = min(5.0, max(1.0, float(found)))
    return BigFive(**values)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
