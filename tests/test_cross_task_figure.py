"""The cross-task mean trajectory (paper Figure 5): the five-region interpolation on hand-made
trajectories, the per-agent curves against the stored Δ, the PNG of `arena report --plots` and
the report page's chart (one line and one legend swatch per agent with a trajectory)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from cogwm import tasks
from cogwm.metrics.trajectory import composite_series
from cogwm.report import build_report, load_run, write_plots
from cogwm.report.regions import REGION_PROGRESS, cross_task_curves, delta_text, to_regions
from cogwm.stats.bootstrap import Settings, cluster_bootstrap, cluster_bootstrap_mean
from cogwm.store import RunStore
from cogwm.web.page import report_html
from helpers_web import Page, cogwm, make_run

RESAMPLES = 200
#: The arm left with only its initial state (one-value trajectories).
BROKEN = "cold/no_cot"


# ------------------------------------------------------------------ interpolation by hand


def test_regions_sit_at_quarters_of_progress() -> None:
    assert REGION_PROGRESS.tolist() == [0.0, 25.0, 50.0, 75.0, 100.0]


def test_a_one_value_trajectory_has_no_regions() -> None:
    # Only s_1: no progress to spread, Δ undefined; left out of the figure, not a flat line.
    assert to_regions([0.7]) is None
    assert to_regions([]) is None


def test_two_values_are_joined_by_a_straight_line() -> None:
    regions = to_regions([0.2, 1.0])
    assert regions is not None
    np.testing.assert_allclose(regions, [0.2, 0.4, 0.6, 0.8, 1.0])


def test_five_values_are_drawn_as_they_are() -> None:
    values = [0.5, 1.5, 0.25, 2.0, 1.0]
    regions = to_regions(values)
    assert regions is not None
    np.testing.assert_allclose(regions, values)


def test_nine_values_keep_every_other_one_and_the_endpoints() -> None:
    values = [0.1, 9.0, 0.3, 9.0, 0.5, 9.0, 0.7, 9.0, 1.9]
    regions = to_regions(values)
    assert regions is not None
    np.testing.assert_allclose(regions, [0.1, 0.3, 0.5, 0.7, 1.9])
    # The region endpoints are s_1 and s_N, so the plotted Δ is s_N − s_1.
    assert regions[-1] - regions[0] == pytest.approx(values[-1] - values[0])


def test_three_values_interpolate_between_turns() -> None:
    regions = to_regions([0.0, 1.0, 0.0])
    assert regions is not None
    np.testing.assert_allclose(regions, [0.0, 0.5, 1.0, 0.5, 0.0])


def test_unknown_values_before_the_first_known_stay_unknown() -> None:
    regions = to_regions([None, 1.0, 2.0])
    assert regions is not None
    assert np.isnan(regions[:2]).all()
    np.testing.assert_allclose(regions[2:], [1.0, 1.5, 2.0])


def test_the_fast_mean_interval_is_the_cluster_bootstrap_of_the_mean() -> None:
    rng = np.random.default_rng(5)
    values = rng.normal(size=40)
    groups = [f"s{i % 7}" for i in range(40)]
    settings = Settings(resamples=500, seed=3)

    def mean(idx: npt.NDArray[np.intp]) -> float:
        return float(values[idx].mean())

    low, high = cluster_bootstrap(mean, groups, settings)
    fast = cluster_bootstrap_mean(values, groups, settings)
    assert low is not None and high is not None and low < high
    assert fast == pytest.approx((low, high), abs=1e-12)
    assert cluster_bootstrap_mean(values, ["one"] * 40, settings) == (None, None)


# ------------------------------------------------------------------ a run on the fake


pytestmark = pytest.mark.usefixtures("fake_arena_models")


@pytest.fixture()
def run_db(tmp_path: Path) -> Path:
    """The web tests' run, with every conversation of ``cold`` cut back to its initial state."""
    path = make_run(tmp_path / "run.sqlite")
    db = sqlite3.connect(path)
    with db:
        db.execute(
            "DELETE FROM turns WHERE phase = 'simulated' AND conversation_id IN"
            " (SELECT id FROM conversations WHERE agent = 'cold')"
        )
    db.close()
    return path


def test_curves_pool_tasks_and_keep_the_stored_delta(run_db: Path) -> None:
    with RunStore(run_db, create=False) as store:
        data = load_run(store)
    curves = {c.arm: c for c in cross_task_curves(data, n_resamples=RESAMPLES)}
    assert set(curves) == {c.arm for c in data.conversations}
    for arm, curve in curves.items():
        mine = [c for c in data.conversations if c.arm == arm]
        assert curve.n + curve.left_out == len(mine)
        if arm == BROKEN:
            assert (curve.n, curve.delta, curve.mean) == (0, None, [None] * 5)
            assert delta_text(curve) == "Δ –"
            continue
        assert curve.n == len(mine) and curve.tasks == ["ESC", "PD"]
        # The plot's Δ is the metric's Δ = s_N − s_1, averaged over the arm's conversations.
        stored = [c.metrics["delta"] for c in mine]
        assert curve.delta == pytest.approx(np.mean([d for d in stored if d is not None]))
        # The first and last regions are the mean s_1 and s_N over both tasks' conversations.
        series = [composite_series(c.states, tasks.get(c.task), data.empty) for c in mine]
        assert curve.mean[0] == pytest.approx(np.mean([v[0] for v in series]))
        assert curve.mean[-1] == pytest.approx(np.mean([v[-1] for v in series]))
        low, high = curve.delta_ci
        assert low is not None and high is not None and low <= curve.delta <= high


def test_report_plots_write_the_cross_task_figure(run_db: Path, tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    assert cogwm("arena", "report", "--db", run_db, "--plots", plots) == 0
    png = plots / "cross_task_trajectory.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    # Listed among the written plots (the CLI counts them, quickstart prints them).
    with RunStore(run_db, create=False) as store:
        data = load_run(store)
    again = write_plots(data, build_report(data, n_resamples=RESAMPLES), tmp_path / "again")
    assert tmp_path / "again" / "cross_task_trajectory.png" in again


def _cross_task_svg(html: str) -> str:
    start = html.index('<div id="cross-task">')
    return html[start : html.index("</div>", start)]


def test_page_draws_one_line_per_agent_with_its_swatch(run_db: Path) -> None:
    with RunStore(run_db, create=False) as store:
        html = report_html(store, n_resamples=RESAMPLES)
        data = load_run(store)
    figure = _cross_task_svg(html)
    elements = Page(figure).elements
    drawn = sorted({c.arm for c in data.conversations} - {BROKEN})
    lines = {a["data-series"] for t, a in elements if t == "path" and "data-series" in a}
    swatches = [a for t, a in elements if t == "rect" and a.get("class") == "swatch"]
    assert len(lines) == len(swatches) == len(drawn) == 3
    # A dot on each of the five regions of every line.
    assert sum(t == "circle" and a.get("class") == "marker" for t, a in elements) == 3 * 5
    for arm in drawn:
        assert f"{arm} (n={sum(c.arm == arm for c in data.conversations)})" in figure
    assert BROKEN + " (n=" not in figure
    assert f"no line for {BROKEN}" in html and "4 conversation(s) with fewer than 2" in html


# ------------------------------------------------------------------ the BDI/E panels


def test_bdie_panels_keep_an_empty_dimension_unknown(run_db: Path) -> None:
    """Under the report's ``zero`` policy an empty belief is 0 in the per-task lines; in the
    cross-task panels it stays unknown: an arm whose beliefs are all empty draws no belief line,
    and one whose last belief is empty has no last region (no Δ)."""
    with RunStore(run_db, create=False) as store:
        data = load_run(store)
    arms = sorted({c.arm for c in data.conversations} - {BROKEN})
    emptied, cut = arms[0], arms[1]
    for c in data.conversations:
        if c.arm == emptied:
            c.states[:] = [s.model_copy(update={"beliefs": []}) for s in c.states]
        elif c.arm == cut:
            c.states[-1] = c.states[-1].model_copy(update={"beliefs": []})
    beliefs = {c.arm: c for c in cross_task_curves(data, n_resamples=RESAMPLES, dimension="belief")}
    assert (beliefs[emptied].n, beliefs[emptied].mean) == (0, [None] * 5)
    assert beliefs[cut].n > 0 and beliefs[cut].mean[-1] is None and beliefs[cut].delta is None
    # The emotion panel's first region is the mean first e = valence x intensity.
    emotion = {
        c.arm: c for c in cross_task_curves(data, n_resamples=RESAMPLES, dimension="emotion")
    }
    mine = [c for c in data.conversations if c.arm == cut]
    first = [c.states[0].emotion.quantified for c in mine if c.states[0].emotion is not None]
    assert emotion[cut].mean[0] == pytest.approx(np.mean(first))


def test_report_plots_write_the_bdie_panels(run_db: Path, tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    assert cogwm("arena", "report", "--db", run_db, "--plots", plots) == 0
    png = plots / "cross_task_trajectory_bdie.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_page_draws_the_bdie_panels(run_db: Path) -> None:
    with RunStore(run_db, create=False) as store:
        html = report_html(store, n_resamples=RESAMPLES)
    start = html.index('<div id="cross-task-bdie"')
    section = html[start : html.index("<h3>All turns</h3>", start)]
    for name in ("emotion (valence × intensity)", "belief", "desire", "intention"):
        assert f"Cross-task mean {name} over 5 regions" in section
    elements = Page(section).elements
    lines = [a["data-series"] for t, a in elements if t == "path" and "data-series" in a]
    # Three agents with trajectories, one line each in every panel; none for the cut-back arm.
    assert len(lines) == 4 * 3 and BROKEN + " (n=" not in section
