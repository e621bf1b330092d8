"""Dawid-Skene EM on fixtures whose answer is worked out by hand."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from cogwm.stats import StatsInputError, dawid_skene


def _spammer_votes() -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """Two perfect workers (g1, g2) and two who always answer "a" (s1, s2).

    Six tasks are truly "a" (all four say a); four are truly "b" (g1, g2 say b; s1, s2 say a),
    so majority vote ties on every "b" task.
    """
    truth = {f"t{i}": "a" for i in range(6)} | {f"t{i}": "b" for i in range(6, 10)}
    votes = []
    for task, label in truth.items():
        votes += [(task, "g1", label), (task, "g2", label), (task, "s1", "a"), (task, "s2", "a")]
    return votes, truth


def test_first_em_step_by_hand() -> None:
    # Start: majority shares T = [1, 0] on "a" tasks and [0.5, 0.5] on "b" tasks.
    # M-step: prior(a) = (6 + 4 * 0.5) / 10 = 0.8.
    #   g1 (and g2): true-a row = [6, 4 * 0.5] / 8 = [0.75, 0.25]; true-b row = [0, 1].
    #   s1 (and s2): both rows = [1, 0] (always "a").
    # E-step on a "b" task: a: 0.8 * 0.25 * 0.25 * 1 * 1 = 0.05; b: 0.2 * 1 * 1 * 1 * 1 = 0.2
    #   -> posterior [0.2, 0.8]. On an "a" task: b gets 0.2 * 0 -> posterior [1, 0].
    votes, _ = _spammer_votes()
    result = dawid_skene(votes, max_iter=1)
    assert result.posteriors["t7"]["a"] == pytest.approx(0.2)
    assert result.posteriors["t7"]["b"] == pytest.approx(0.8)
    assert result.posteriors["t0"]["a"] == pytest.approx(1.0)
    assert result.iterations == 1


def test_recovers_truth_where_majority_vote_ties() -> None:
    votes, truth = _spammer_votes()
    result = dawid_skene(votes)
    assert result.converged
    assert result.labels == truth
    # The fitted model finds the spammers: given "a" whatever the truth.
    np.testing.assert_allclose(result.confusions["s1"], [[1.0, 0.0], [1.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(result.confusions["g1"], np.eye(2), atol=1e-6)
    assert result.priors["b"] == pytest.approx(0.4, abs=1e-6)
    # Majority vote (ties to the first label, "a") gets all four "b" tasks wrong.
    majority = {t: max(sorted(c), key=lambda k, c=c: c[k]) for t, c in _counts(votes).items()}
    assert sum(majority[t] != truth[t] for t in truth) == 4


def _counts(votes: list[tuple[str, str, str]]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for task, _, label in votes:
        out.setdefault(task, Counter())[label] += 1
    return out


def test_agrees_with_clear_majorities() -> None:
    rng = np.random.default_rng(7)
    labels = ["x", "y", "z"]
    votes = []
    for t in range(60):
        truth = labels[t % 3]
        for w in range(5):
            wrong = [lab for lab in labels if lab != truth]
            label = truth if rng.random() < 0.9 else wrong[int(rng.integers(2))]
            votes.append((t, f"w{w}", label))
    result = dawid_skene(votes)
    clear = 0
    for task, counts in _counts_any(votes).items():
        top, top_n = counts.most_common(1)[0]
        if top_n >= 4:  # 4 or 5 of 5 workers agree
            clear += 1
            assert result.labels[task] == top
    assert clear > 40
    for posterior in result.posteriors.values():
        assert sum(posterior.values()) == pytest.approx(1.0)


def _counts_any(votes: list[tuple[int, str, str]]) -> dict[int, Counter[str]]:
    out: dict[int, Counter[str]] = {}
    for task, _, label in votes:
        out.setdefault(task, Counter())[label] += 1
    return out


def test_workers_may_skip_tasks() -> None:
    votes = [("t1", "w1", 1), ("t1", "w2", 1), ("t2", "w2", 0), ("t2", "w3", 0), ("t3", "w1", 1)]
    result = dawid_skene(votes)
    assert result.labels == {"t1": 1, "t2": 0, "t3": 1}


@pytest.mark.parametrize(
    ("votes", "message"),
    [
        ([], "no votes"),
        ([("t", "w")], "row 0 must be"),
        ([("t", "w", "a"), ("t", None, "b")], "row 1 has a missing"),
        ([("t", "w", "a")], "at least 2 labels"),
    ],
)
def test_rejects_bad_votes(votes: list[tuple[object, ...]], message: str) -> None:
    with pytest.raises(StatsInputError, match=message):
        dawid_skene(votes)  # type: ignore[arg-type]


def test_rejects_label_outside_given_set() -> None:
    with pytest.raises(StatsInputError, match="label 'c'"):
        dawid_skene([("t", "w", "c")], labels=["a", "b"])
