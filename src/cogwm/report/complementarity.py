"""CTS and GoodOutcome as two dimensions: how far the trajectory and the judge's verdict agree.

Per task and over all tasks: Kendall's tau-b between the agents' (agent x condition arms') mean
CTS and their GoodOutcome rate, and, per conversation, GoodOutcome against improvement (the
composite Δ above 0, or not) as a 2x2 table with the share of discordant conversations (a good
outcome without improvement, or improvement without a good outcome). Both intervals resample
scenarios with all their conversations. A conversation without a verdict or without a defined Δ
is left out of the table and counted; an arm without a CTS or without a judged conversation is
left out of tau and counted.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from cogwm.arena.run_data import ConversationData
from cogwm.stats.bootstrap import Settings
from cogwm.stats.concordance import TauEstimate, TwoByTwo, tau_of_unit_means, two_by_two

#: The scope of the figures over every task of the run.
ALL_TASKS = "all"


class Complementarity(NamedTuple):
    """The CTS-GoodOutcome figures of one task (or of all tasks)."""

    scope: str  # a task, or ALL_TASKS
    tau: TauEstimate  # mean CTS against GO rate across arms
    table: TwoByTwo  # first: GO true, second: Δ > 0
    no_verdict: int  # conversations left out: the judge gave no verdict
    no_delta: int  # conversations left out: judged, but Δ is undefined

    def to_json(self) -> dict[str, Any]:
        """The figures as a JSON-ready object."""
        t = self.table
        return {
            "scope": self.scope,
            "tau_cts_go": self.tau.model_dump(),
            "go_by_improvement": {
                "go_improved": t.both,
                "go_not_improved": t.first_only,
                "no_go_improved": t.second_only,
                "no_go_not_improved": t.neither,
                "n": t.n,
                "discordant_share": t.discordant.model_dump(),
                "left_out": {"no_verdict": self.no_verdict, "no_delta": self.no_delta},
            },
        }


def _tau(conversations: list[ConversationData], settings: Settings) -> TauEstimate:
    def go(c: ConversationData) -> float | None:
        return None if c.go is None else float(c.go)

    return tau_of_unit_means(
        [c.arm for c in conversations],
        [c.metrics.get("cts") for c in conversations],
        [go(c) for c in conversations],
        [c.scenario_key for c in conversations],
        settings,
    )


def _table(conversations: list[ConversationData], settings: Settings) -> Complementarity:
    kept = [
        (c, delta)
        for c in conversations
        if c.go is not None and (delta := c.metrics.get("delta")) is not None
    ]
    no_verdict = sum(1 for c in conversations if c.go is None)
    table = two_by_two(
        [bool(c.go) for c, _ in kept],
        [delta > 0 for _, delta in kept],
        [c.scenario_key for c, _ in kept],
        settings,
    )
    return Complementarity(
        scope="",
        tau=_tau(conversations, settings),
        table=table,
        no_verdict=no_verdict,
        no_delta=len(conversations) - no_verdict - len(kept),
    )


def complementarity(
    conversations: list[ConversationData], *, n_resamples: int = 2000, seed: int = 0
) -> list[Complementarity]:
    """The figures per task (sorted by name), then over all tasks; empty without conversations."""
    if not conversations:
        return []
    settings = Settings(resamples=n_resamples, seed=seed)
    tasks = sorted({c.task for c in conversations})
    scopes = [(t, [c for c in conversations if c.task == t]) for t in tasks]
    scopes.append((ALL_TASKS, conversations))
    return [_table(convs, settings)._replace(scope=scope) for scope, convs in scopes]
