"""Dawid-Skene aggregation of crowd votes (expectation-maximisation, written out here).

Dawid & Skene (1979): each worker w has a confusion matrix ``pi_w[k, l]`` = P(w says l | the true
label is k), and the labels have prior ``p_k``. EM alternates

- E-step: ``T[i, k] ∝ p_k * prod over the votes (w, l) on task i of pi_w[k, l]``;
- M-step: ``p_k = mean_i T[i, k]``, ``pi_w[k, l] ∝ sum over w's votes l on task i of T[i, k]``,

starting from the majority-vote shares of each task, until the posteriors move less than ``tol``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from cogwm.stats._validate import StatsInputError, is_missing

#: Probabilities are floored here before the log so that an unseen (worker, label) pair makes a
#: class very unlikely instead of producing -inf and NaN posteriors.
_LOG_FLOOR = 1e-12


class DawidSkeneResult(NamedTuple):
    """Aggregated label and posterior per task, with the fitted worker model."""

    labels: dict[Hashable, Hashable]
    posteriors: dict[Hashable, dict[Hashable, float]]
    priors: dict[Hashable, float]
    confusions: dict[Hashable, npt.NDArray[np.float64]]
    label_order: tuple[Hashable, ...]
    iterations: int
    converged: bool


class _Votes(NamedTuple):
    tasks: list[Hashable]
    workers: list[Hashable]
    labels: list[Hashable]
    task_idx: npt.NDArray[np.intp]
    worker_idx: npt.NDArray[np.intp]
    label_idx: npt.NDArray[np.intp]


def _index(values: Iterable[Hashable]) -> dict[Hashable, int]:
    out: dict[Hashable, int] = {}
    for v in values:
        out.setdefault(v, len(out))
    return out


def _parse_votes(votes: Iterable[Sequence[Hashable]], labels: Sequence[Hashable] | None) -> _Votes:
    rows: list[tuple[Hashable, Hashable, Hashable]] = []
    for n, row in enumerate(votes):
        if isinstance(row, str) or not isinstance(row, Sequence) or len(row) != 3:
            raise StatsInputError(f"votes: row {n} must be (task, worker, label), got {row!r:.80}")
        if any(is_missing(v) for v in row):
            raise StatsInputError(f"votes: row {n} has a missing task, worker or label: {row!r}")
        rows.append((row[0], row[1], row[2]))
    if not rows:
        raise StatsInputError("votes: no votes")
    seen_labels = sorted({r[2] for r in rows}, key=repr)
    label_list = list(labels) if labels is not None else seen_labels
    unknown = [v for v in seen_labels if v not in label_list]
    if unknown:
        raise StatsInputError(f"votes: label {unknown[0]!r} is not one of {label_list}")
    if len(label_list) < 2:
        raise StatsInputError(f"votes: needs at least 2 labels, got {label_list}")
    task_ix = _index(r[0] for r in rows)
    worker_ix = _index(r[1] for r in rows)
    label_ix = {v: k for k, v in enumerate(label_list)}
    return _Votes(
        tasks=list(task_ix),
        workers=list(worker_ix),
        labels=label_list,
        task_idx=np.array([task_ix[r[0]] for r in rows], dtype=np.intp),
        worker_idx=np.array([worker_ix[r[1]] for r in rows], dtype=np.intp),
        label_idx=np.array([label_ix[r[2]] for r in rows], dtype=np.intp),
    )


def _majority_shares(v: _Votes) -> npt.NDArray[np.float64]:
    shares = np.zeros((len(v.tasks), len(v.labels)))
    np.add.at(shares, (v.task_idx, v.label_idx), 1.0)
    normalised: npt.NDArray[np.float64] = shares / shares.sum(axis=1, keepdims=True)
    return normalised


def _m_step(
    v: _Votes, posteriors: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    n_labels = len(v.labels)
    priors = posteriors.mean(axis=0)
    # Accumulated as (worker, given label, true label), then turned to (worker, true, given).
    given_true = np.zeros((len(v.workers), n_labels, n_labels))
    np.add.at(given_true, (v.worker_idx, v.label_idx), posteriors[v.task_idx])
    confusion = given_true.transpose(0, 2, 1)
    mass = confusion.sum(axis=2, keepdims=True)
    # A worker who never saw a task of true class k tells nothing about it: uniform row.
    confusion = np.where(mass > 0, confusion / np.where(mass > 0, mass, 1.0), 1.0 / n_labels)
    return priors, confusion


def _e_step(
    v: _Votes, priors: npt.NDArray[np.float64], confusion: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    log_conf = np.log(np.maximum(confusion, _LOG_FLOOR))
    log_post = np.tile(np.log(np.maximum(priors, _LOG_FLOOR)), (len(v.tasks), 1))
    np.add.at(log_post, v.task_idx, log_conf[v.worker_idx, :, v.label_idx])
    log_post -= log_post.max(axis=1, keepdims=True)
    post = np.exp(log_post)
    normalised: npt.NDArray[np.float64] = post / post.sum(axis=1, keepdims=True)
    return normalised


def dawid_skene(
    votes: Iterable[Sequence[Hashable]],
    *,
    labels: Sequence[Hashable] | None = None,
    max_iter: int = 100,
    tol: float = 1e-6,
) -> DawidSkeneResult:
    """Aggregate crowd votes with the Dawid-Skene model.

    Args:
        votes: Rows ``(task, worker, label)``; a worker may vote on any subset of the tasks.
        labels: The label set (default: the labels that occur, sorted).
        max_iter: At most this many EM iterations (each is one M-step then one E-step).
        tol: Stop when no posterior moves by more than this.

    Returns:
        Per task the label with the highest posterior (ties go to the earlier label in
        ``label_order``) and the posterior over all labels; the class priors and each
        worker's confusion matrix (rows: true label, columns: given label, in ``label_order``).

    Raises:
        StatsInputError: A row that is not a triple, a missing value, no votes, fewer than two
            labels, or a label outside ``labels``.
    """
    if max_iter < 1:
        raise StatsInputError(f"max_iter must be at least 1, got {max_iter}")
    v = _parse_votes(votes, labels)
    posteriors = _majority_shares(v)
    priors, confusion = _m_step(v, posteriors)
    converged = False
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        updated = _e_step(v, priors, confusion)
        shift = float(np.max(np.abs(updated - posteriors)))
        posteriors = updated
        priors, confusion = _m_step(v, posteriors)
        if shift < tol:
            converged = True
            break
    best = posteriors.argmax(axis=1)
    return DawidSkeneResult(
        labels={t: v.labels[int(best[i])] for i, t in enumerate(v.tasks)},
        posteriors={
            t: {lab: float(posteriors[i, k]) for k, lab in enumerate(v.labels)}
            for i, t in enumerate(v.tasks)
        },
        priors={lab: float(priors[k]) for k, lab in enumerate(v.labels)},
        confusions={w: confusion[j] for j, w in enumerate(v.workers)},
        label_order=tuple(v.labels),
        iterations=iterations,
        converged=converged,
    )
