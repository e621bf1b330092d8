"""Per-conversation trajectory metrics (the metrics package does the math).

The metrics are computed once, when a conversation finishes, by :func:`conversation_metrics`
under :data:`STORED_POLICY`, and stored with it; every reader (the report, the pages, the
case-study export) takes them through :func:`stored_metrics`, which returns the stored values and
computes them with the same function only where the store cannot answer: for another empty-state
policy (a report-time option), or where a finished conversation has none stored (a store written
before they were stored, a conversation played on the play page before its end was scored) or
they count another number of states than its stored turns hold (turns cut after its end).
Stored metrics are trusted as they are: a change to their formulas must come with a store
migration that deletes the stored ones (GoodOutcome, a model's verdict, stays), after which this
fallback computes them anew.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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

#: The empty-state policy of the stored metrics (the paper's reading).
STORED_POLICY = EmptyPolicy.ZERO


def user_states(turns: Sequence[ArenaTurn]) -> list[CognitiveState]:
    """The trajectory's states: the initial state, then one per simulated user turn."""
    return [t.state for t in turns if t.role is Role.USER and t.state is not None]


def finished_metrics(turns: Sequence[ArenaTurn], task: TaskSpec) -> dict[str, float | None]:
    """The metrics stored when a conversation finishes: its user states' under
    :data:`STORED_POLICY`."""
    return conversation_metrics(user_states(turns), task, STORED_POLICY)


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


def stored_metrics(
    stored: Mapping[str, float | None],
    states: Sequence[CognitiveState],
    task: TaskSpec,
    empty: EmptyPolicy | str = STORED_POLICY,
) -> dict[str, float | None]:
    """A finished conversation's metrics as stored when it finished, in ``CONVERSATION_METRICS``
    order; :func:`conversation_metrics` of ``states`` where the stored ones cannot answer.

    Args:
        stored: What the store holds for the conversation (GoodOutcome among it is ignored).
        states: Its user states in order (counted against the stored N; scored only when the
            metrics are computed).
        task: Its task.
        empty: The empty-state policy asked for; the stored metrics are under
            :data:`STORED_POLICY`, so another policy computes them.
    """
    if EmptyPolicy(empty) is STORED_POLICY and answers_for(stored, states):
        return {name: stored[name] for name in CONVERSATION_METRICS}
    return conversation_metrics(states, task, empty)


def answers_for(stored: Mapping[str, float | None], states: Sequence[CognitiveState]) -> bool:
    """Whether ``stored`` holds every metric and was computed over as many states as there are.

    A store whose turns were cut after its metrics were stored (an edited copy) fails the count,
    so its metrics are computed from the turns it holds rather than read stale.
    """
    return all(k in stored for k in CONVERSATION_METRICS) and stored["n"] == len(states)
