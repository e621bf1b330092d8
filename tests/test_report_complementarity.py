"""CTS against GoodOutcome in the arena report: Kendall's tau-b across arms and the per-conversation
2x2 of GoodOutcome against improvement, on conversations built by hand.

Three arms (a, b, c) play scenarios s1..s4 of task ESC. Each arm's conversations share one CTS
and one Δ, and its GO verdicts give it a GO rate, so the two rankings are known by hand.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from cogwm.arena.run_data import ConversationData
from cogwm.report.complementarity import ALL_TASKS, complementarity
from cogwm.report.render import render, to_json
from cogwm.stats.bootstrap import Settings
from cogwm.stats.concordance import kendall_tau_b, tau_of_unit_means, two_by_two
from test_report_tables import _report, _write_run

SCENARIOS = ("s1", "s2", "s3", "s4")
_IDS = itertools.count(1)


def _conversation(
    agent: str,
    scenario: str,
    *,
    cts: float | None,
    delta: float | None,
    go: bool | None,
    task: str = "ESC",
) -> ConversationData:
    return ConversationData(
        id=next(_IDS),
        task=task,
        agent=agent,
        condition="no_cot",
        scenario=scenario,
        termination="max_rounds",
        rounds=4,
        states=[],
        metrics={"cts": cts, "delta": delta},
        go=go,
    )


def _arms(cts: dict[str, float], go_scenarios: dict[str, int]) -> list[ConversationData]:
    """Each arm: its CTS (and Δ = CTS) in every scenario, GO true in its first n scenarios."""
    return [
        _conversation(agent, s, cts=value, delta=value, go=i < go_scenarios[agent])
        for agent, value in cts.items()
        for i, s in enumerate(SCENARIOS)
    ]


def _overall(conversations: list[ConversationData]):  # type: ignore[no-untyped-def]
    figures = complementarity(conversations, n_resamples=200)
    assert [f.scope for f in figures] == ["ESC", ALL_TASKS]
    return figures[-1]


def test_tau_is_one_when_cts_and_go_rank_the_arms_alike() -> None:
    # Catches: tau computed on the wrong pair of columns, or with a sign flipped.
    convs = _arms({"a": 0.6, "b": 0.2, "c": -0.3}, {"a": 4, "b": 2, "c": 1})
    tau = _overall(convs).tau
    assert tau.value == pytest.approx(1.0)
    assert (tau.n, tau.n_clusters, tau.units_left_out) == (3, 4, 0)


def test_tau_is_minus_one_when_the_rankings_are_reversed() -> None:
    convs = _arms({"a": 0.6, "b": 0.2, "c": -0.3}, {"a": 1, "b": 2, "c": 4})
    assert _overall(convs).tau.value == pytest.approx(-1.0)


def test_tau_is_undefined_with_two_arms_or_a_constant_ranking() -> None:
    # Catches: an undefined tau reported as 0 (or as +-1 from two arms).
    two = _arms({"a": 0.6, "b": 0.2}, {"a": 3, "b": 1})
    tau = _overall(two).tau
    assert tau.value is None and tau.ci is None and tau.n == 2
    same_go = _arms({"a": 0.6, "b": 0.2, "c": -0.3}, {"a": 2, "b": 2, "c": 2})
    assert _overall(same_go).tau.value is None


def test_an_arm_without_a_judged_conversation_is_left_out_of_tau_and_counted() -> None:
    convs = _arms({"a": 0.6, "b": 0.2, "c": -0.3, "d": 0.1}, {"a": 4, "b": 2, "c": 1, "d": 0})
    unjudged = [c._replace(go=None) if c.agent == "d" else c for c in convs]
    figure = _overall(unjudged)
    assert (figure.tau.n, figure.tau.units_left_out) == (3, 1)
    assert figure.tau.value == pytest.approx(1.0)
    assert figure.no_verdict == 4


def test_the_table_counts_a_good_outcome_without_improvement() -> None:
    # Catches: Δ <= 0 with GO true not counted as discordant (e.g. Δ >= 0 taken as improvement,
    # or the cells swapped), and left-out conversations counted in the table.
    convs = [
        _conversation("a", "s1", cts=0.5, delta=0.4, go=True),  # concordant
        _conversation("a", "s2", cts=-0.2, delta=-0.3, go=True),  # planted: GO, no improvement
        _conversation("a", "s3", cts=0.1, delta=0.0, go=False),  # Δ = 0 is no improvement
        _conversation("b", "s1", cts=0.3, delta=0.2, go=False),  # improvement, no GO
        _conversation("b", "s2", cts=0.3, delta=None, go=True),  # no Δ: left out
        _conversation("b", "s3", cts=0.3, delta=0.2, go=None),  # no verdict: left out
    ]
    figure = _overall(convs)
    t = figure.table
    assert (t.both, t.first_only, t.second_only, t.neither) == (1, 1, 1, 1)
    assert t.discordant.value == pytest.approx(0.5) and t.discordant.n == 4
    assert (figure.no_verdict, figure.no_delta) == (1, 1)


def test_figures_per_task_and_over_all_tasks() -> None:
    esc = _arms({"a": 0.6, "b": 0.2, "c": -0.3}, {"a": 4, "b": 2, "c": 1})
    pd = [
        _conversation(c.agent, c.scenario, cts=c.metrics["cts"], delta=-1.0, go=c.go, task="PD")
        for c in esc
    ]
    figures = complementarity(esc + pd, n_resamples=100)
    assert [f.scope for f in figures] == ["ESC", "PD", ALL_TASKS]
    assert [f.table.n for f in figures] == [12, 12, 24]
    assert figures[2].tau.n_clusters == 8  # a scenario is task:scenario
    assert complementarity([], n_resamples=10) == []


def test_kendall_tau_b_corrects_for_ties() -> None:
    # scipy's tau-b on a tied ranking (not tau-a): 5 concordant pairs of 6, one tie in x.
    assert kendall_tau_b([1, 2, 3, 4], [1, 2, 3, 4]) == pytest.approx(1.0)
    assert kendall_tau_b([1, 1, 2, 3], [1, 2, 3, 4]) == pytest.approx(5 / (6 * 5) ** 0.5)
    assert kendall_tau_b([1, 2], [2, 1]) is None


def test_inputs_of_different_lengths_are_refused() -> None:
    from cogwm.errors import InputError

    settings = Settings(resamples=10, seed=0)
    with pytest.raises(InputError):
        tau_of_unit_means(["a", "b"], [1.0], [1.0, 2.0], ["s", "s"], settings)
    with pytest.raises(InputError):
        two_by_two([True], [True, False], ["s", "s"], settings)


def test_report_json_adds_the_figures_after_every_earlier_key(tmp_path: Path) -> None:
    # Catches: the new key placed among the old ones (old stores' JSON compared byte for byte).
    models = {"a": "fake:sim", "b": "fake:b", "c": "fake:c"}
    _, report = _report(_write_run(tmp_path / "runs.sqlite", "fake:sim", models))
    payload = json.loads(json.dumps(to_json(report)))
    keys = list(payload)
    assert keys[-1] == "cts_go_complementarity" and keys[-2] == "simulator_status"
    esc = payload["cts_go_complementarity"][0]
    assert esc["scope"] == "ESC" and esc["tau_cts_go"]["value"] is None  # two arms only
    assert esc["go_by_improvement"]["left_out"] == {"no_verdict": 1, "no_delta": 0}
    console = Console(width=250, record=True)
    render(report, console)
    assert "CTS and GoodOutcome" in console.export_text()


def test_pages_can_skip_the_figures_and_the_rest_of_the_report_stays(tmp_path: Path) -> None:
    # Catches: the switch ignored (pages paying for a bootstrap they never show), or skipping the
    # figures changing any other table.
    from cogwm.report.tables import build_report

    models = {"a": "fake:sim", "b": "fake:b", "c": "fake:c"}
    data, full = _report(_write_run(tmp_path / "runs.sqlite", "fake:sim", models))
    lean = build_report(data, n_resamples=200, with_complementarity=False)
    assert full.complementarity and lean.complementarity == []
    assert lean._replace(complementarity=full.complementarity) == full


@pytest.mark.parametrize("sparse", [False, True])
def test_tau_interval_is_scipy_tau_b_of_each_resample(sparse: bool) -> None:
    # Catches: resamples drawn otherwise than cluster_bootstrap draws them, means over the wrong
    # items, batched taus mapped back to the wrong resamples, and (sparse: one unit judged in
    # two scenarios only, so that some resamples rank four units) those resamples left out.
    from scipy.stats import kendalltau

    from cogwm.stats.bootstrap import cluster_bootstrap

    rng = np.random.default_rng(3)
    units = [u for _ in range(12) for u in range(5)]
    groups = [f"s{s}" for s in range(12) for _ in range(5)]
    first = rng.standard_normal(len(units))
    second = (rng.random(len(units)) < 0.5).astype(float)
    pairs = zip(units, groups, strict=True)
    judged = np.array([not sparse or u != 4 or g in ("s0", "s1") for u, g in pairs])
    unit_ids = np.array(units)
    settings = Settings(resamples=300, seed=1)

    def direct(idx: np.ndarray) -> float | None:  # type: ignore[type-arg]
        def means(values: np.ndarray, weights: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
            counts = np.bincount(unit_ids[idx], weights[idx], 5)
            with np.errstate(invalid="ignore"):
                return np.bincount(unit_ids[idx], (values * weights)[idx], 5) / counts

        a, b = means(first, np.ones_like(first)), means(second, judged.astype(float))
        a, b = a[~np.isnan(b)], b[~np.isnan(b)]
        if np.all(b == b[0]):
            return None
        return float(kendalltau(a, b).statistic)

    answers = [float(v) if j else None for v, j in zip(second, judged, strict=True)]
    found = tau_of_unit_means(units, first.tolist(), answers, groups, settings)
    assert found.value == pytest.approx(direct(np.arange(len(units))))
    assert found.ci == pytest.approx(cluster_bootstrap(direct, groups, settings))
