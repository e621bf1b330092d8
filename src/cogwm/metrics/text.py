"""Utterance metrics of the turn tier: ROUGE-L, BLEU-1, BLEU-4, length ratio and Distinct-1.

Tokenization, stated once for all of them:

- **ROUGE-L**: ``rapidrouge``, a maintained drop-in for Google's ``rouge-score`` with the same
  numbers (checked on fixed pairs in the tests): its default tokenizer (lower-cased, every
  non-alphanumeric character a separator) with NLTK's Porter stemmer; the F-measure of the
  longest common subsequence, in [0, 1].
- **BLEU-1 / BLEU-4**: ``sacrebleu`` sentence BLEU against the one gold utterance, its ``13a``
  tokenizer (the WMT standard: punctuation split off, case kept), ``exp`` smoothing and
  effective order (so a short hypothesis is not zero for lacking 4-grams); brevity penalty
  included; divided by 100 to lie in [0, 1].
- **LenR** = (tokens of the prediction) / (tokens of the gold), both with the ``13a`` tokenizer;
  1 is ideal. Undefined (None) when the gold has no token.
- **Distinct-1** = distinct unigrams / all unigrams over *all* predictions together (a corpus
  ratio, not a per-sample mean), ``13a`` tokens lower-cased.

Beside them, :func:`malformed_utterance` says whether a generated turn is text a person could
have said at all (the arena counts the simulated user's malformed turns per agent).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple


class UtteranceScores(NamedTuple):
    """The per-sample utterance metrics; ``len_ratio`` is None when the gold has no token."""

    rouge_l: float
    bleu1: float
    bleu4: float
    len_ratio: float | None


class _Scorers(NamedTuple):
    rouge: Any
    bleu1: Any
    bleu4: Any
    tokenize: Any


@lru_cache(maxsize=1)
def _scorers() -> _Scorers:
    from rapidrouge import rouge_scorer
    from sacrebleu.metrics.bleu import BLEU
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return _Scorers(
        rouge=rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True),  # type: ignore[no-untyped-call]
        bleu1=BLEU(max_ngram_order=1, effective_order=True, tokenize="13a"),
        bleu4=BLEU(max_ngram_order=4, effective_order=True, tokenize="13a"),
        tokenize=Tokenizer13a(),  # type: ignore[no-untyped-call]
    )


def tokens(text: str) -> list[str]:
    """``13a`` tokens of ``text`` (as BLEU sees them)."""
    tokenized: str = _scorers().tokenize(text)
    return tokenized.split()


def utterance_scores(prediction: str, gold: str) -> UtteranceScores:
    """ROUGE-L F, BLEU-1, BLEU-4 (all in [0, 1]) and LenR of one predicted utterance."""
    s = _scorers()
    gold_len = len(tokens(gold))
    return UtteranceScores(
        rouge_l=float(s.rouge.score(gold, prediction)["rougeL"].fmeasure),
        bleu1=float(s.bleu1.sentence_score(prediction, [gold]).score) / 100.0,
        bleu4=float(s.bleu4.sentence_score(prediction, [gold]).score) / 100.0,
        len_ratio=len(tokens(prediction)) / gold_len if gold_len else None,
    )


class DistinctResult(NamedTuple):
    """Distinct-1 over a set of predictions; ``value`` is None when they have no token."""

    value: float | None
    distinct: int
    total: int


def distinct_1(predictions: Iterable[str]) -> DistinctResult:
    """Distinct unigrams over all unigrams of all predictions (lower-cased ``13a`` tokens)."""
    seen: set[str] = set()
    total = 0
    for text in predictions:
        toks = [t.lower() for t in tokens(text)]
        seen.update(toks)
        total += len(toks)
    return DistinctResult(len(seen) / total if total else None, len(seen), total)


#: Two letters in a row (any script): the least a spoken word has.
_WORD = re.compile(r"[^\W\d_]{2}")
#: A quoted JSON key and its colon: structured output written into the text. Any key, so the
#: check follows every task's output format without listing its fields.
_FIELD = re.compile(r'"\w+"\s*:')


def malformed_utterance(text: str) -> str | None:
    """Why ``text`` cannot be a person's turn, or None when it can.

    - ``empty``: nothing but white space;
    - ``json``: the structured output leaked into the text: it starts with ``{`` or ``[``, or
      holds a quoted key followed by a colon (``"emotion":``);
    - ``no words``: no two letters in a row anywhere (``"..."``, ``"1"``, ``"?!"``).

    Short answers people give ("ok", "no", "hm") are words and pass.
    """
    stripped = text.strip()
    if not stripped:
        return "empty"
    if stripped[0] in "{[" or _FIELD.search(stripped):
        return "json"
    if not _WORD.search(stripped):
        return "no words"
    return None
