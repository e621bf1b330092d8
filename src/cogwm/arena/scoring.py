"""Per-conversation trajectory metrics from stored states (the metrics package does the math)."""

from __future__ import annotations

from collections.abc import Sequence

from cogwm.arena.transcript import ArenaTurn
from cogwm.metrics.trajectory import EmptyPolicy, trajectory_report
from cogwm.schema import CognitiveState, Role, TaskSpec

#: Names of the per-conversation metrics stored with each finished conversation.
CONVERSATION_METRICS: tuple[str, ...] = (
    "n",
    "auc",
    "delta",
    "psr",
    "mono",
    "cts",
    "e_delta",
    "b_delta",
    "d_delta",
    "i_delta",
    "nz",
)


def user_states(turns: Sequence[ArenaTurn]) -> list[CognitiveState]:
    """The trajectory's states: the initial state, then one per simulated user turn."""
    return [t.state for t in turns if t.role is Role.USER and t.state is not None]


def conversation_metrics(
    states: Sequence[CognitiveState], task: TaskSpec, empty: EmptyPolicy | str = EmptyPolicy.ZERO
) -> dict[str, float | None]:
    """AUC, Δ, PSR, Mono, CTS, E/B/D/I-Δ, nz% (a fraction) and N of one conversation.

    Args:
        states: The user's states in order (initial state first).
        task: The task whose weights apply.
        empty: How an empty B/D/I enters the composite (``zero``, the paper's reading, or
            ``carry``).
    """
    report = trajectory_report(states, task, empty)
    m, d = report.metrics, report.deltas
    return {
        "n": float(m.n),
        "auc": m.auc,
        "delta": m.delta,
        "psr": m.psr,
        "mono": m.mono,
        "cts": m.cts,
        "e_delta": d.emotion,
        "b_delta": d.belief,
        "d_delta": d.desire,
        "i_delta": d.intention,
        "nz": report.nz,
    }
