"""Trajectory tier: the composite score per turn and the dynamics of a series.

Per turn, ``Comp_t = w_E * E_val_t + w_B * B_t + w_D * D_t + w_I * I_t`` with the task's
weights (``TaskSpec.require_weights``), ``E_val`` the valence of the emotion label and ``B_t``
etc. the mean score of a dimension's scored items. Over a series ``s_1 .. s_N``:

- ``AUC = (1/N) * sum_{t=1}^{N-1} (s_t + s_{t+1}) / 2`` (divides by N as the paper does, so a
  constant c scores c (N-1)/N; report the mean length beside it);
- ``Δ = s_N - s_1``;
- ``PSR = (1/(N-1)) * #{t : s_{t+1} > s_t}``;
- ``Mono = (1/(N-1)) * #{t : sign(s_{t+1} - s_t) = sign(Δ)}`` with sign(0) = 0;
- ``CTS = 0.40 AUC + 0.30 PSR + 0.30 Δ`` (``cogwm.metrics.task``).

With N < 2 every metric is undefined (None), never 0. Differences within ``FLAT_TOLERANCE`` of
zero count as flat, so that float rounding inside the weighted sum cannot invent a step.

**Empty dimensions.** ``empty="zero"`` (the paper's reading): an empty B/D/I (no scored item)
contributes 0 at that turn. ``empty="carry"``: the last known value of that dimension is carried
forward (0 until a first value is seen). **A missing emotion is an error**, never 0: the valence
scale has no neutral point (0 would be a positive emotion relative to most labels). With
``carry`` the last known emotion is carried forward; only a missing emotion with nothing to
carry (e.g. at the first turn) raises ``MissingEmotionError``.

**Per-dimension deltas** ``E-Δ = e_N - e_1`` with ``e = valence * intensity``, and ``B-Δ``,
``D-Δ``, ``I-Δ`` on the dimension values. They follow the same policy: with ``zero`` an empty
B/D/I endpoint counts as 0 (consistent with Comp); with ``carry`` an endpoint that has no value
yet (the dimension empty from the first turn up to it) makes that Δ None. E-Δ is None when an
endpoint has no emotion (after carrying, under ``carry``). ``nz%`` (the share of turns with any
B/D/I item) is reported beside them because the zero policy reads "unknown" as "lowest".
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from enum import StrEnum
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from cogwm.errors import InputError
from cogwm.metrics.task import CTS_WEIGHTS, cts
from cogwm.schema import BDI, CognitiveState, TaskSpec

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Steps (and Δ) whose absolute size is at most this count as flat (sign 0).
FLAT_TOLERANCE = 1e-9

#: Names of the trajectory metrics, in report order.
METRIC_NAMES: tuple[str, ...] = ("auc", "delta", "psr", "mono", "cts")


class EmptyPolicy(StrEnum):
    """How an empty B/D/I dimension enters the composite score."""

    ZERO = "zero"
    CARRY = "carry"


class MissingEmotionError(InputError):
    """A state without an emotion where the composite score needs one."""


class TrajectoryMetrics(NamedTuple):
    """Dynamics of one score series; every metric is None when ``n`` < 2."""

    auc: float | None
    delta: float | None
    psr: float | None
    mono: float | None
    cts: float | None
    n: int


class DimensionDeltas(NamedTuple):
    """Per-dimension endpoint changes (E-Δ on valence x intensity); None where undefined."""

    emotion: float | None
    belief: float | None
    desire: float | None
    intention: float | None


class TrajectoryReport(NamedTuple):
    """Everything the trajectory tier says about one conversation."""

    scores: list[float]
    metrics: TrajectoryMetrics
    deltas: DimensionDeltas
    nz: float | None


# --- one state, one series --------------------------------------------------------------------


def _policy(empty: EmptyPolicy | str) -> EmptyPolicy:
    try:
        return EmptyPolicy(empty)
    except ValueError as exc:
        raise InputError(f"empty must be 'zero' or 'carry', got {empty!r}") from exc


def composite(state: CognitiveState, task: TaskSpec) -> float:
    """``Comp_t`` of one state with the task's weights; an empty B/D/I contributes 0.

    Raises:
        MissingEmotionError: The state has no emotion.
        TaskCapabilityError: The task has no weights (DAILY).
    """
    weights = task.require_weights()
    if state.emotion is None:
        raise MissingEmotionError("the state has no emotion, so its composite score is undefined")
    total = weights.emotion * state.emotion.valence
    for dim in BDI:
        value = state.dimension_value(dim)
        if value is not None:
            total += weights.of(dim) * value
    return total


def composite_series(
    states: Sequence[CognitiveState], task: TaskSpec, empty: EmptyPolicy | str = "zero"
) -> list[float]:
    """``Comp_t`` for each state of a conversation (``s_1`` is the initial state).

    Args:
        states: The user's states in turn order.
        task: The task whose weights apply.
        empty: ``zero`` (an empty B/D/I contributes 0) or ``carry`` (last known value forward;
            a missing emotion is carried forward too).

    Raises:
        MissingEmotionError: A state has no emotion (and, with ``carry``, none came before it);
            the message names the turn.
        TaskCapabilityError: The task has no weights (DAILY).
    """
    return _composite_series(states, _bdi_values(states), task, _policy(empty))


def _bdi_values(states: Sequence[CognitiveState]) -> list[tuple[float | None, ...]]:
    """Each state's B/D/I values in ``BDI`` order, computed once for the series and the deltas."""
    return [tuple(state.dimension_value(dim) for dim in BDI) for state in states]


def _composite_series(
    states: Sequence[CognitiveState],
    values: Sequence[tuple[float | None, ...]],
    task: TaskSpec,
    policy: EmptyPolicy,
) -> list[float]:
    weights = task.require_weights()
    dim_weights = [weights.of(dim) for dim in BDI]
    scores: list[float] = []
    last_valence: float | None = None
    last_value: list[float | None] = [None] * len(BDI)
    for t, (state, row) in enumerate(zip(states, values, strict=True)):
        if state.emotion is not None:
            last_valence = state.emotion.valence
        elif policy is EmptyPolicy.ZERO or last_valence is None:
            raise MissingEmotionError(
                f"state {t} has no emotion, so its composite score is undefined"
                + (
                    " (and there is no earlier emotion to carry)"
                    if policy is EmptyPolicy.CARRY
                    else ""
                )
            )
        total = weights.emotion * last_valence
        for i, value in enumerate(row):
            if value is not None:
                last_value[i] = value
            elif policy is EmptyPolicy.CARRY:
                value = last_value[i]
            if value is not None:
                total += dim_weights[i] * value
        scores.append(total)
    return scores


def _sign(x: float) -> int:
    return 0 if abs(x) <= FLAT_TOLERANCE else (1 if x > 0 else -1)


def trajectory_metrics(scores: Sequence[float]) -> TrajectoryMetrics:
    """AUC, Δ, PSR, Mono and CTS of one score series exactly as docs/architecture.md writes them.

    Raises:
        InputError: A score is not a finite number.
    """
    values = [float(s) for s in scores]
    bad = next((i for i, v in enumerate(values) if not math.isfinite(v)), None)
    if bad is not None:
        raise InputError(f"score {bad} is not a finite number: {values[bad]}")
    n = len(values)
    if n < 2:
        return TrajectoryMetrics(None, None, None, None, None, n)
    steps = [b - a for a, b in itertools.pairwise(values)]
    auc = sum((a + b) / 2 for a, b in itertools.pairwise(values)) / n
    delta = values[-1] - values[0]
    psr = sum(1 for d in steps if d > FLAT_TOLERANCE) / (n - 1)
    direction = _sign(delta)
    mono = sum(1 for d in steps if _sign(d) == direction) / (n - 1)
    return TrajectoryMetrics(auc, delta, psr, mono, cts(auc, psr, delta), n)


def dimension_deltas(
    states: Sequence[CognitiveState], empty: EmptyPolicy | str = "zero"
) -> DimensionDeltas:
    """E-Δ (on ``valence * intensity``), B-Δ, D-Δ and I-Δ between the first and last state.

    See the module docstring for empty endpoints. With fewer than two states all are None.
    """
    policy = _policy(empty)
    if len(states) < 2:
        return DimensionDeltas(None, None, None, None)
    return _dimension_deltas(states, _bdi_values(states), policy)


def _dimension_deltas(
    states: Sequence[CognitiveState],
    values: Sequence[tuple[float | None, ...]],
    policy: EmptyPolicy,
) -> DimensionDeltas:
    if len(states) < 2:
        return DimensionDeltas(None, None, None, None)
    emotions: list[float | None] = []
    dims: list[list[float | None]] = [[] for _ in BDI]
    last_e: float | None = None
    last: list[float | None] = [None] * len(BDI)
    for state, row in zip(states, values, strict=True):
        e = state.emotion.quantified if state.emotion is not None else None
        if policy is EmptyPolicy.CARRY:
            last_e = e if e is not None else last_e
            e = last_e
        emotions.append(e)
        for i, value in enumerate(row):
            if policy is EmptyPolicy.ZERO:
                dims[i].append(0.0 if value is None else value)
            else:
                last[i] = value if value is not None else last[i]
                dims[i].append(last[i])

    def _delta(series: list[float | None]) -> float | None:
        first, final = series[0], series[-1]
        return None if first is None or final is None else final - first

    return DimensionDeltas(
        emotion=_delta(emotions),
        belief=_delta(dims[0]),
        desire=_delta(dims[1]),
        intention=_delta(dims[2]),
    )


def nz_share(states: Sequence[CognitiveState]) -> float | None:
    """Share of states with any B/D/I item (nz%, as a fraction); None for no states."""
    if not states:
        return None
    return sum(1 for s in states if s.has_bdi()) / len(states)


def trajectory_report(
    states: Sequence[CognitiveState], task: TaskSpec, empty: EmptyPolicy | str = "zero"
) -> TrajectoryReport:
    """Composite series, its metrics, the per-dimension deltas and nz% of one conversation."""
    policy = _policy(empty)
    values = _bdi_values(states)  # once: the series and the deltas read the same values
    scores = _composite_series(states, values, task, policy)
    return TrajectoryReport(
        scores=scores,
        metrics=trajectory_metrics(scores),
        deltas=_dimension_deltas(states, values, policy),
        nz=nz_share(states),
    )


# --- many trajectories at once (numpy) ------------------------------------------------------


class TrajectoryBatch(NamedTuple):
    """Metrics of many trajectories as arrays; NaN where undefined (``n`` < 2)."""

    n: IntArray
    auc: FloatArray
    delta: FloatArray
    psr: FloatArray
    mono: FloatArray
    cts: FloatArray

    def row(self, i: int) -> TrajectoryMetrics:
        """Trajectory ``i`` as a ``TrajectoryMetrics`` (NaN turned back into None)."""

        def opt(x: float) -> float | None:
            return None if math.isnan(x) else float(x)

        return TrajectoryMetrics(
            auc=opt(self.auc[i]),
            delta=opt(self.delta[i]),
            psr=opt(self.psr[i]),
            mono=opt(self.mono[i]),
            cts=opt(self.cts[i]),
            n=int(self.n[i]),
        )

    def columns(self) -> dict[str, list[float | None]]:
        """The metrics as named columns (None where undefined), e.g. for a correlation matrix."""
        return {
            name: [None if math.isnan(x) else float(x) for x in getattr(self, name)]
            for name in METRIC_NAMES
        }


def pad_series(series: Sequence[Sequence[float]]) -> tuple[FloatArray, IntArray]:
    """Ragged score series as a NaN-padded (trajectories, max length) array plus the lengths."""
    lengths = np.fromiter((len(s) for s in series), dtype=np.int64, count=len(series))
    width = int(lengths.max()) if lengths.size else 0
    padded = np.full((len(series), width), np.nan)
    for i, s in enumerate(series):
        padded[i, : len(s)] = s
    return padded, lengths


def _as_batch(
    scores: FloatArray | Sequence[Sequence[float]], lengths: npt.ArrayLike | None
) -> tuple[FloatArray, IntArray]:
    if lengths is None and not isinstance(scores, np.ndarray):
        return pad_series(scores)
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2:
        raise InputError(f"scores: expected a 2-d (trajectories, turns) array, got {matrix.shape}")
    if lengths is None:
        return matrix, np.full(matrix.shape[0], matrix.shape[1], dtype=np.int64)
    n = np.asarray(lengths, dtype=np.int64)
    if n.shape != (matrix.shape[0],) or np.any(n < 0) or np.any(n > matrix.shape[1]):
        raise InputError(
            f"lengths: expected {matrix.shape[0]} lengths between 0 and {matrix.shape[1]}"
        )
    return matrix, n


def trajectory_metrics_batch(
    scores: FloatArray | Sequence[Sequence[float]], lengths: npt.ArrayLike | None = None
) -> TrajectoryBatch:
    """``trajectory_metrics`` for many trajectories at once, vectorized with numpy.

    Args:
        scores: A (trajectories, turns) array, or a list of ragged series (padded here).
        lengths: The length of each row of a padded array (positions past it are ignored).
            Without it every row of an array is taken as full.

    Raises:
        InputError: Wrong shapes, or a non-finite score inside a trajectory's length.
    """
    matrix, n = _as_batch(scores, lengths)
    count, width = matrix.shape
    positions = np.arange(width)
    inside = positions[None, :] < n[:, None]
    bad = inside & ~np.isfinite(matrix)
    if bad.any():
        row, col = (int(x[0]) for x in np.nonzero(bad))
        raise InputError(f"trajectory {row}: score {col} is not a finite number")
    values = np.where(inside, matrix, 0.0)
    step_ok = positions[None, : max(width - 1, 0)] < (n[:, None] - 1)
    steps = np.where(step_ok, values[:, 1:] - values[:, :-1], 0.0)
    pair_sums = np.where(step_ok, values[:, 1:] + values[:, :-1], 0.0).sum(axis=1) / 2
    defined = n >= 2
    safe_n = np.where(defined, n, 1)
    rows = np.arange(count)
    delta = values[rows, np.maximum(safe_n - 1, 0)] - values[:, 0] if width else np.zeros(count)
    step_sign = np.where(np.abs(steps) <= FLAT_TOLERANCE, 0, np.sign(steps))
    delta_sign = np.where(np.abs(delta) <= FLAT_TOLERANCE, 0, np.sign(delta))
    up = ((steps > FLAT_TOLERANCE) & step_ok).sum(axis=1)
    agree = ((step_sign == delta_sign[:, None]) & step_ok).sum(axis=1)
    denom = np.where(defined, n - 1, 1)
    auc = np.where(defined, pair_sums / safe_n, np.nan)
    delta = np.where(defined, delta, np.nan)
    psr = np.where(defined, up / denom, np.nan)
    mono = np.where(defined, agree / denom, np.nan)
    cts_values = CTS_WEIGHTS.auc * auc + CTS_WEIGHTS.psr * psr + CTS_WEIGHTS.delta * delta
    return TrajectoryBatch(n=n, auc=auc, delta=delta, psr=psr, mono=mono, cts=cts_values)


class StateArrays(NamedTuple):
    """Many conversations' states as padded arrays (NaN = unknown), for vectorized scoring.

    ``valence``, ``intensity``: (trajectories, turns); ``dims``: (trajectories, turns, 3) with
    the B, D, I values; ``has_bdi``: whether a turn has any B/D/I item; ``lengths``.
    """

    valence: FloatArray
    intensity: FloatArray
    dims: FloatArray
    has_bdi: npt.NDArray[np.bool_]
    lengths: IntArray


def encode_states(trajectories: Sequence[Sequence[CognitiveState]]) -> StateArrays:
    """Read many conversations' states into ``StateArrays`` (one pass of Python, once)."""
    lengths = np.fromiter((len(t) for t in trajectories), dtype=np.int64, count=len(trajectories))
    width = int(lengths.max()) if lengths.size else 0
    shape = (len(trajectories), width)
    valence = np.full(shape, np.nan)
    intensity = np.full(shape, np.nan)
    dims = np.full((*shape, len(BDI)), np.nan)
    has_bdi = np.zeros(shape, dtype=bool)
    for i, states in enumerate(trajectories):
        for t, state in enumerate(states):
            if state.emotion is not None:
                valence[i, t] = state.emotion.valence
                intensity[i, t] = state.emotion.intensity
            for d, dim in enumerate(BDI):
                value = state.dimension_value(dim)
                if value is not None:
                    dims[i, t, d] = value
            has_bdi[i, t] = state.has_bdi()
    return StateArrays(valence, intensity, dims, has_bdi, lengths)


def _forward_fill(values: FloatArray) -> FloatArray:
    """Carry the last non-NaN value forward along axis 1 (leading NaNs stay NaN)."""
    width = values.shape[1]
    known = ~np.isnan(values)
    source = np.where(known, np.arange(width).reshape((1, width) + (1,) * (values.ndim - 2)), 0)
    source = np.maximum.accumulate(source, axis=1)
    return np.take_along_axis(values, source, axis=1)


def _inside(arrays: StateArrays) -> npt.NDArray[np.bool_]:
    return np.arange(arrays.valence.shape[1])[None, :] < arrays.lengths[:, None]


def composite_batch(
    arrays: StateArrays, task: TaskSpec, empty: EmptyPolicy | str = "zero"
) -> FloatArray:
    """``composite_series`` for many conversations: a (trajectories, turns) array, NaN padded.

    Raises:
        MissingEmotionError: Names the first trajectory and turn without a usable emotion.
    """
    policy = _policy(empty)
    weights = task.require_weights()
    valence, dims = arrays.valence, arrays.dims
    if policy is EmptyPolicy.CARRY and valence.size:
        valence, dims = _forward_fill(valence), _forward_fill(dims)
    inside = _inside(arrays)
    missing = inside & np.isnan(valence)
    if missing.any():
        row, col = (int(x[0]) for x in np.nonzero(missing))
        raise MissingEmotionError(
            f"trajectory {row}: state {col} has no emotion, so its composite score is undefined"
        )
    bdi_weights = np.array([weights.of(d) for d in BDI])
    scores = weights.emotion * valence + (np.nan_to_num(dims, nan=0.0) * bdi_weights).sum(axis=2)
    return np.where(inside, scores, np.nan)


class DeltaBatch(NamedTuple):
    """Per-dimension deltas of many conversations (NaN where undefined)."""

    emotion: FloatArray
    belief: FloatArray
    desire: FloatArray
    intention: FloatArray
    nz: FloatArray


def dimension_deltas_batch(arrays: StateArrays, empty: EmptyPolicy | str = "zero") -> DeltaBatch:
    """``dimension_deltas`` and ``nz_share`` for many conversations at once."""
    policy = _policy(empty)
    count = arrays.lengths.size
    quantified = arrays.valence * arrays.intensity
    dims = arrays.dims
    if policy is EmptyPolicy.CARRY and quantified.size:
        quantified, dims = _forward_fill(quantified), _forward_fill(dims)
    elif dims.size:
        dims = np.nan_to_num(dims, nan=0.0)
    defined = arrays.lengths >= 2
    rows = np.arange(count)
    last = np.maximum(arrays.lengths - 1, 0)

    def endpoint_change(values: FloatArray) -> FloatArray:
        if not values.size:
            return np.full(count, np.nan)
        change = values[rows, last] - values[:, 0]
        return np.where(defined, change, np.nan)

    inside = _inside(arrays)
    with np.errstate(invalid="ignore", divide="ignore"):
        nz = np.where(
            arrays.lengths > 0,
            (arrays.has_bdi & inside).sum(axis=1) / np.maximum(arrays.lengths, 1),
            np.nan,
        )
    return DeltaBatch(
        emotion=endpoint_change(quantified),
        belief=endpoint_change(dims[..., 0]) if dims.size else np.full(count, np.nan),
        desire=endpoint_change(dims[..., 1]) if dims.size else np.full(count, np.nan),
        intention=endpoint_change(dims[..., 2]) if dims.size else np.full(count, np.nan),
        nz=nz,
    )
