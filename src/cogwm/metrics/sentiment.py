"""VADER's compound sentiment score: the lexicon rule behind the card's text baseline, the
known-groups check's agent-tone baseline and the rule simulator.

One analyser per process, built on first use (the ``vaderSentiment`` package ships its lexicon
in the wheel, so nothing is downloaded).
"""

from __future__ import annotations

from functools import cache
from importlib import metadata
from typing import Any


@cache
def _analyzer() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


@cache
def vader_compound(text: str) -> float:
    """VADER's compound score of ``text``, from -1 (negative) to 1 (positive); memoised, since
    cards and checks score the same turns many times."""
    return float(_analyzer().polarity_scores(text)["compound"])


def vader_version() -> str:
    """The installed vaderSentiment version (its lexicon decides every score)."""
    return metadata.version("vaderSentiment")
