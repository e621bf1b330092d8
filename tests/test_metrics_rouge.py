"""ROUGE-L through rapidrouge: the numbers rouge-score 0.1.2 gives on fixed pairs.

The expected values were computed with ``rouge_score.rouge_scorer.RougeScorer(["rougeL"],
use_stemmer=True)`` 0.1.2, the package rapidrouge replaced; stemming, punctuation, case,
non-ASCII letters, an empty gold and repeated words are covered.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from cogwm.metrics.text import utterance_scores

# (gold, prediction, precision, recall, F) from rouge-score 0.1.2.
PAIRS = [
    (
        "I feel so lonely since I moved to the city.",
        "Since moving to the city I have been feeling lonely.",
        0.5,
        0.5,
        0.5,
    ),
    ("The jobs were running late.", "The job runs late.", 1.0, 0.8, 0.888888888888889),
    ("Thank you, that really helps!", "thanks, it helped a lot", 0.4, 0.4, 0.4000000000000001),
    (
        "My manager does not value my work.",
        "I don't think my boss values the work I do.",
        0.2727272727272727,
        0.42857142857142855,
        0.33333333333333326,
    ),
    ("Café résumé naïve", "cafe resume naive", 0.0, 0.0, 0.0),
    ("", "anything at all", 0.0, 0.0, 0.0),
    ("the the the", "the", 1.0, 0.3333333333333333, 0.5),
]


@pytest.mark.parametrize(("gold", "prediction", "precision", "recall", "f"), PAIRS)
def test_rouge_l_matches_rouge_score_on_fixed_pairs(
    gold: str, prediction: str, precision: float, recall: float, f: float
) -> None:
    from rapidrouge import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)  # type: ignore[no-untyped-call]
    score = scorer.score(gold, prediction)  # type: ignore[no-untyped-call]
    assert score["rougeL"].precision == pytest.approx(precision, abs=1e-12)
    assert score["rougeL"].recall == pytest.approx(recall, abs=1e-12)
    assert score["rougeL"].fmeasure == pytest.approx(f, abs=1e-12)
    assert utterance_scores(prediction, gold).rouge_l == pytest.approx(f, abs=1e-12)


def test_the_metric_no_longer_needs_rouge_score() -> None:
    code = (
        "import sys; from cogwm.metrics.text import utterance_scores; "
        "utterance_scores('a b', 'a c'); "
        "print('rouge_score' in sys.modules, 'rapidrouge' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "True"]
