"""The user's profile and situation from corpus metadata: the dialogue's own profile, or Big Five
from the corpus's questionnaire rows (``Corpus.profile_traits``: PersuasionForGood, INSPIRED);
the situation a corpus states (``Corpus.situation``). Arena scenarios and simulator samples use
them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cogwm.corpora.registry import EVERY
from cogwm.schema import BigFive, Dialogue, Profile

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
    big_five = _big_five(_traits(dialogue))
    if big_five is None:
        return None
    return Profile(big_five=big_five, confidence=3, source="corpus")


def situation_from_metadata(dialogue: Dialogue) -> str | None:
    """The user's situation as the corpus metadata states it (``Corpus.situation``: ESConv and
    FailedESConv), or None."""
    for corpus in EVERY:
        if corpus.situation is not None:
            found = corpus.situation(dialogue)
            if found is not None:
                return found
    return None


def _traits(dialogue: Dialogue) -> Mapping[str, object]:
    """The first questionnaire row a corpus reads from the dialogue's metadata (each corpus
    recognises only its own metadata), or nothing."""
    for corpus in EVERY:
        if corpus.profile_traits is not None:
            traits = corpus.profile_traits(dialogue)
            if traits is not None:
                return traits
    return {}


def _big_five(traits: Mapping[str, Any]) -> BigFive | None:
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
