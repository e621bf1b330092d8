"""Multiple-choice scoring: option-letter probabilities from logits, top-k logprobs or the text."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from cogwm.models.types import ChoicePath, TokenLogprob

# How many tokens the one scoring call may generate: enough to hold "Answer: (B)" for the parsed
# path, while the log-probabilities are read at the first generated position.
SCORING_MAX_TOKENS = 8
SCORING_TOP_LOGPROBS = 20


def letter_variants(letter: str) -> list[str]:
    """Token spellings that mean ``letter`` at the start of an answer."""
    return [letter, f" {letter}", f"({letter}", f" ({letter}"]


def normalize(logprobs: Mapping[str, float]) -> dict[str, float]:
    """Softmax of log-probabilities, renormalised over the given letters."""
    top = max(logprobs.values())
    weights = {k: math.exp(v - top) for k, v in logprobs.items()}
    total = sum(weights.values())
    return {k: w / total for k, w in weights.items()}


def logsumexp(values: Sequence[float]) -> float:
    """log(sum(exp(values))) without overflow."""
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def from_top_logprobs(first: TokenLogprob, letters: Sequence[str]) -> dict[str, float] | None:
    """Letter log-probabilities from the first generated position's top-k alternatives.

    Every spelling of a letter (``"B"``, ``" B"``, ``"(B"``) counts towards it. Returns None when a
    letter is missing from the top k, because its probability is then unknown.
    """
    alternatives = dict(first.top)
    alternatives.setdefault(first.token, first.logprob)
    found: dict[str, float] = {}
    for letter in letters:
        spellings = [alternatives[v] for v in letter_variants(letter) if v in alternatives]
        if not spellings:
            return None
        found[letter] = logsumexp(spellings)
    return found


_ANSWER_PATTERNS = (
    r"(?i:answer)\s*(?:is|:)?\s*[:\-]?\s*\(?\s*({letters})\b(?!\s+[a-z])",
    r"^\W*\(?({letters})(?:[.):,]|\s*$|\s*\n)",
    r"\(({letters})\)",
    # A bare letter followed by a lower-case word is more likely the article "A" than an answer.
    r"\b({letters})\b(?!\s+[a-z])",
)


def parse_letter(text: str, letters: Sequence[str]) -> str | None:
    """The option letter ``text`` answers with, or None.

    Tries, in order: "answer is B" / "Answer: (B)", a reply that starts with the letter, a
    parenthesised letter, then the first standalone letter.
    """
    alternation = "|".join(re.escape(letter) for letter in letters)
    for pattern in _ANSWER_PATTERNS:
        match = re.search(pattern.format(letters=alternation), text.strip())
        if match:
            by_case = {letter.casefold(): letter for letter in letters}
            return by_case.get(match.group(1).casefold())
    return None


def scores_from_parsed(text: str, letters: Sequence[str]) -> tuple[dict[str, float], str | None]:
    """One-hot probabilities for the parsed letter (empty when nothing parses)."""
    letter = parse_letter(text, letters)
    if letter is None:
        return {}, None
    return {x: 1.0 if x == letter else 0.0 for x in letters}, letter


def choose(probs: Mapping[str, float]) -> str | None:
    """The most probable letter (first in order on ties); None for an empty distribution."""
    return max(probs, key=lambda k: probs[k]) if probs else None


__all__ = [
    "SCORING_MAX_TOKENS",
    "SCORING_TOP_LOGPROBS",
    "ChoicePath",
    "choose",
    "from_top_logprobs",
    "normalize",
    "parse_letter",
    "scores_from_parsed",
]
