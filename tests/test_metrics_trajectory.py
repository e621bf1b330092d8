"""Trajectory tier: composite score, AUC/Δ/PSR/Mono/CTS, per-dimension deltas, nz%, and the
vectorized versions. Expected values are worked out by hand in each test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cogwm import tasks
from cogwm.errors import InputError
from cogwm.metrics.task import cts
from cogwm.metrics.trajectory import (
    MissingEmotionError,
    TrajectoryMetrics,
    composite,
    composite_batch,
    composite_series,
    dimension_deltas,
    dimension_deltas_batch,
    encode_states,
    nz_share,
    pad_series,
    trajectory_metrics,
    trajectory_metrics_batch,
    trajectory_report,
)
from cogwm.schema import CognitiveState, Emotion, StateItem, TaskCapabilityError

ESC = tasks.get("ESC")  # w_E = 1/2, w_B = w_D = w_I = 1/6
PD = tasks.get("PD")  # w_E = 1/10, w_B = w_D = w_I = 3/10


def state(
    emotion: tuple[str, int] | None = None,
    beliefs: list[float | None] | None = None,
    desires: list[float | None] | None = None,
    intentions: list[float | None] | None = None,
) -> CognitiveState:
    def items(scores: list[float | None] | None, name: str) -> list[StateItem]:
        return [StateItem(text=f"{name} {i}", score=s) for i, s in enumerate(scores or [])]

    return CognitiveState(
        emotion=Emotion(label=emotion[0], intensity=emotion[1]) if emotion else None,
        beliefs=items(beliefs, "b"),
        desires=items(desires, "d"),
        intentions=items(intentions, "i"),
    )


# --- composite --------------------------------------------------------------------------------


def test_composite_by_hand_for_esc_and_pd() -> None:
    s = state(("sadness", 3), beliefs=[1.0, 2.0], intentions=[0.0])
    # B = (1 + 2) / 2 = 1.5, D empty, I = 0; sadness valence -2 (intensity does not enter).
    # ESC: 0.5 * -2 + 1.5 / 6 + 0 + 0 / 6 = -0.75
    assert composite(s, ESC) == pytest.approx(-0.75)
    # PD: 0.1 * -2 + 0.3 * 1.5 + 0 + 0.3 * 0 = 0.25
    assert composite(s, PD) == pytest.approx(0.25)


def test_composite_ignores_unscored_items() -> None:
    # A text-only item (score None) gives the dimension no value: it contributes 0.
    s = state(("hope", 1), beliefs=[None])
    assert composite(s, ESC) == pytest.approx(1.0)  # 0.5 * 2.0


def test_composite_without_emotion_is_an_error_not_zero() -> None:
    with pytest.raises(MissingEmotionError, match="no emotion"):
        composite(state(beliefs=[2.0]), ESC)


def test_composite_for_daily_is_a_clear_error() -> None:
    with pytest.raises(TaskCapabilityError, match="DAILY"):
        composite(state(("hope", 1)), tasks.get("DAILY"))


def _carry_states() -> list[CognitiveState]:
    return [
        state(("hope", 1), beliefs=[1.0]),
        state(("anxiety", 2), desires=[2.0]),
        state(None, beliefs=[0.0]),
    ]


def test_composite_series_zero_policy_names_the_turn_without_emotion() -> None:
    with pytest.raises(MissingEmotionError, match="state 2"):
        composite_series(_carry_states(), ESC, empty="zero")


def test_composite_series_zero_by_hand() -> None:
    states = _carry_states()[:2]
    # s1 = 0.5 * 2 + 1/6 * 1 = 1.16667; s2 = 0.5 * -2 + 1/6 * 2 = -0.66667 (B empty -> 0)
    assert composite_series(states, ESC) == pytest.approx([1 + 1 / 6, -1 + 2 / 6])


def test_composite_series_carry_by_hand() -> None:
    # s1 = 1 + 1/6 = 1.16667
    # s2 = -1 + 1/6 * 1 (B carried) + 1/6 * 2 = -0.5
    # s3 = -1 (anxiety carried) + 1/6 * 0 + 1/6 * 2 (D carried) = -0.66667
    assert composite_series(_carry_states(), ESC, empty="carry") == pytest.approx(
        [1 + 1 / 6, -0.5, -1 + 2 / 6]
    )


def test_composite_series_carry_cannot_invent_a_first_emotion() -> None:
    with pytest.raises(MissingEmotionError, match="state 0"):
        composite_series([state(None, beliefs=[1.0])], ESC, empty="carry")


def test_composite_series_rejects_unknown_policy() -> None:
    with pytest.raises(InputError, match="'zero' or 'carry'"):
        composite_series(_carry_states(), ESC, empty="mean")


# --- trajectory metrics -----------------------------------------------------------------------


def test_trajectory_metrics_by_hand() -> None:
    # s = 0, 1, 1, 0.5 (N = 4)
    # AUC = ((0+1)/2 + (1+1)/2 + (1+0.5)/2) / 4 = (0.5 + 1 + 0.75) / 4 = 0.5625
    # Δ = 0.5 - 0 = 0.5; PSR = 1/3 (only 0 -> 1 rises)
    # Mono: sign(Δ) = +1; step signs +1, 0, -1 -> 1/3
    # CTS = 0.4 * 0.5625 + 0.3 * 1/3 + 0.3 * 0.5 = 0.225 + 0.1 + 0.15 = 0.475
    m = trajectory_metrics([0.0, 1.0, 1.0, 0.5])
    assert m.n == 4
    assert m.auc == pytest.approx(0.5625)
    assert m.delta == pytest.approx(0.5)
    assert m.psr == pytest.approx(1 / 3)
    assert m.mono == pytest.approx(1 / 3)
    assert m.cts == pytest.approx(0.475)


def test_mono_with_zero_delta_is_the_share_of_flat_steps() -> None:
    # s = 1, 2, 2, 1: Δ = 0, steps +1, 0, -1 -> one flat step of 3.
    m = trajectory_metrics([1.0, 2.0, 2.0, 1.0])
    assert m.delta == 0.0
    assert m.mono == pytest.approx(1 / 3)
    assert m.psr == pytest.approx(1 / 3)
    # AUC = (1.5 + 2 + 1.5) / 4 = 1.25
    assert m.auc == pytest.approx(1.25)


def test_constant_trajectory_is_length_biased_as_written() -> None:
    # c = 2, N = 5: AUC = 4 * 2 / 5 = 1.6 = c (N - 1) / N; Δ = 0; PSR = 0; Mono = 4/4 = 1
    m = trajectory_metrics([2.0] * 5)
    assert m == TrajectoryMetrics(
        auc=pytest.approx(1.6), delta=0.0, psr=0.0, mono=1.0, cts=pytest.approx(0.64), n=5
    )


def test_float_noise_does_not_invent_a_step() -> None:
    noisy = [0.1 + 0.2, 0.3]  # 0.30000000000000004 vs 0.3
    assert noisy[0] != noisy[1]
    m = trajectory_metrics(noisy)
    assert m.psr == 0.0
    assert m.mono == 1.0


@pytest.mark.parametrize("scores", [[], [0.7]])
def test_fewer_than_two_values_are_undefined_not_zero(scores: list[float]) -> None:
    m = trajectory_metrics(scores)
    assert m == TrajectoryMetrics(None, None, None, None, None, len(scores))


def test_non_finite_score_is_rejected() -> None:
    with pytest.raises(InputError, match="score 1"):
        trajectory_metrics([0.0, math.nan])


def test_cts_is_undefined_when_a_component_is() -> None:
    assert cts(None, 0.5, 0.5) is None
    assert cts(1.0, 0.5, -1.0) == pytest.approx(0.4 + 0.15 - 0.3)


# --- per-dimension deltas and nz% ---------------------------------------------------------------


def _delta_states() -> list[CognitiveState]:
    return [
        state(("sadness", 3), beliefs=[1.0]),  # e = -2 * 3 = -6
        state(("hope", 2), desires=[2.0]),  # e = 2 * 2 = 4
    ]


def test_dimension_deltas_zero_policy_by_hand() -> None:
    d = dimension_deltas(_delta_states(), empty="zero")
    assert d.emotion == pytest.approx(10.0)  # 4 - (-6)
    assert d.belief == pytest.approx(-1.0)  # 0 (empty) - 1
    assert d.desire == pytest.approx(2.0)  # 2 - 0 (empty)
    assert d.intention == 0.0  # 0 - 0


def test_dimension_deltas_carry_policy_by_hand() -> None:
    d = dimension_deltas(_delta_states(), empty="carry")
    assert d.emotion == pytest.approx(10.0)
    assert d.belief == 0.0  # 1 carried to the end: 1 - 1
    assert d.desire is None  # no value at the first turn
    assert d.intention is None  # never a value


def test_emotion_delta_is_undefined_without_an_endpoint_emotion() -> None:
    states = [state(("hope", 1)), state(None, beliefs=[1.0])]
    assert dimension_deltas(states, empty="zero").emotion is None
    assert dimension_deltas(states, empty="carry").emotion == 0.0  # hope carried


def test_nz_share() -> None:
    states = [*_delta_states(), state(("hope", 1))]
    assert nz_share(states) == pytest.approx(2 / 3)
    assert nz_share([]) is None


def test_trajectory_report_bundles_the_tier() -> None:
    report = trajectory_report(_delta_states(), ESC)
    # s1 = 0.5 * -2 + 1/6 = -0.83333; s2 = 0.5 * 2 + 2/6 = 1.33333
    assert report.scores == pytest.approx([-1 + 1 / 6, 1 + 2 / 6])
    assert report.metrics.delta == pytest.approx(2 + 1 / 6)
    assert report.nz == 1.0


# --- vectorized ---------------------------------------------------------------------------------


def test_batch_matches_the_scalar_loop_on_ragged_series() -> None:
    rng = np.random.default_rng(0)
    series = [
        # Integer-valued steps make flat steps and Δ = 0 common, which exercises sign(0).
        [float(x) for x in rng.integers(-2, 3, size=int(n))]
        for n in rng.integers(0, 12, size=400)
    ]
    batch = trajectory_metrics_batch(series)
    for i, s in enumerate(series):
        expected = trajectory_metrics(s)
        got = batch.row(i)
        assert got.n == expected.n
        for name in ("auc", "delta", "psr", "mono", "cts"):
            e, g = getattr(expected, name), getattr(got, name)
            assert (e is None and g is None) or g == pytest.approx(e), (i, name)


def test_batch_accepts_padded_array_with_lengths() -> None:
    padded, lengths = pad_series([[0.0, 1.0, 1.0, 0.5], [3.0]])
    assert padded.shape == (2, 4)
    assert math.isnan(padded[1, 1])
    batch = trajectory_metrics_batch(padded, lengths)
    assert batch.auc[0] == pytest.approx(0.5625)
    assert math.isnan(batch.auc[1])
    full = trajectory_metrics_batch(np.array([[1.0, 2.0, 2.0, 1.0]]))
    assert full.mono[0] == pytest.approx(1 / 3)


def test_batch_rejects_nan_inside_a_trajectory() -> None:
    with pytest.raises(InputError, match="trajectory 0: score 1"):
        trajectory_metrics_batch(np.array([[1.0, np.nan]]), [2])
    with pytest.raises(InputError, match="lengths"):
        trajectory_metrics_batch(np.zeros((2, 3)), [1, 4])


def test_batch_columns_for_correlations() -> None:
    columns = trajectory_metrics_batch([[0.0, 1.0], [5.0]]).columns()
    assert columns["psr"] == [1.0, None]


@pytest.mark.parametrize("policy", ["zero", "carry"])
def test_state_batch_matches_scalar_functions(policy: str) -> None:
    conversations = [
        _carry_states()[:2],
        _delta_states(),
        [state(("fear", 2)), state(("relief", 3), intentions=[1.0, 0.0]), state(("hope", 1))],
        [state(("guilt", 1))],
        [],
    ]
    if policy == "carry":
        conversations.append(_carry_states())
    arrays = encode_states(conversations)
    scores = composite_batch(arrays, ESC, empty=policy)
    deltas = dimension_deltas_batch(arrays, empty=policy)
    for i, states in enumerate(conversations):
        expected = composite_series(states, ESC, empty=policy)
        np.testing.assert_allclose(scores[i, : len(states)], expected)
        d = dimension_deltas(states, empty=policy)
        for name in ("emotion", "belief", "desire", "intention"):
            e, g = getattr(d, name), float(getattr(deltas, name)[i])
            assert (e is None and math.isnan(g)) or g == pytest.approx(e), (i, name)
        nz = nz_share(states)
        assert (nz is None and math.isnan(deltas.nz[i])) or deltas.nz[i] == pytest.approx(nz)


def test_state_batch_names_the_missing_emotion() -> None:
    arrays = encode_states([_delta_states(), _carry_states()])
    with pytest.raises(MissingEmotionError, match="trajectory 1: state 2"):
        composite_batch(arrays, ESC, empty="zero")
