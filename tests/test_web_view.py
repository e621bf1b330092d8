"""`cogwm view --db`: the self-contained HTML report, checked by parsing what it writes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from cogwm import tasks
from cogwm.arena.run_data import ConversationData
from cogwm.metrics.trajectory import composite_series
from cogwm.report import build_report, load_run
from cogwm.schema import CognitiveState
from cogwm.store import RunStore
from cogwm.web.figures import curves
from cogwm.web.page import report_html, unpack
from helpers_arena import FAKE_NAME
from helpers_web import XSS, Page, cogwm, external_references, make_run

RESAMPLES = 200


pytestmark = pytest.mark.usefixtures("fake_arena_models")


@pytest.fixture()
def run_db(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run.sqlite")


@pytest.fixture()
def html(run_db: Path) -> str:
    with RunStore(run_db, create=False) as store:
        return report_html(store, n_resamples=RESAMPLES)


def data_of(html: str) -> dict[str, object]:
    page = Page(html)
    (attrs, blob), *_ = [(a, t) for a, t in page.scripts if a.get("id") == "cogwm-data"]
    assert attrs.get("data-encoding") == "gzip+base64"
    found = unpack(blob.strip())
    assert isinstance(found, dict)
    return found


def test_page_loads_nothing_from_elsewhere(html: str) -> None:
    page = Page(html)
    assert external_references(html) == []
    for tag, attrs in page.elements:
        assert "src" not in attrs or tag == "img", f"{tag} loads {attrs.get('src')}"
        assert not (tag == "link" and attrs.get("rel") == "stylesheet")
    csp = page.find("meta", http_equiv="Content-Security-Policy")
    assert csp and "default-src 'none'" in (csp[0]["content"] or "")
    # The script is inlined (and is the package's own file).
    assert any("class Browser" in text for attrs, text in page.scripts if not attrs)


def test_every_conversation_with_its_states(run_db: Path, html: str) -> None:
    records = data_of(html)["conversations"]
    assert isinstance(records, list)
    with RunStore(run_db, create=False) as store:
        rows = store.conversations()
        turns = store.all_turns()
    assert [r["id"] for r in records] == [r.id for r in rows]
    for record, row in zip(records, rows, strict=True):
        stored = turns[row.id]
        assert [t[3] for t in record["turns"]] == [t.text for t in stored]
        states = []
        for shown, turn in zip(record["turns"], stored, strict=True):
            role, _, _, _, state, reasoning = shown
            assert role == turn.role and reasoning == turn.reasoning
            if turn.role == "user" and turn.state_json is not None:
                real = CognitiveState.model_validate_json(turn.state_json)
                states.append(real)
                assert state["e"][:2] == [real.emotion.label, real.emotion.intensity]
                assert [i[:2] for i in state["b"]] == [[b.text, b.score] for b in real.beliefs]
                assert [i[0] for i in state["i"]] == [b.text for b in real.intentions]
            else:
                assert state is None
        expected = composite_series(states, tasks.get(row.task))
        assert record["s"] == pytest.approx(expected, abs=1e-4)
        assert [t[4]["s"] for t in record["turns"] if t[4]] == record["s"]
    failed = [r for r in records if r["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["error"] == "HTTP 500 (scripted)"


def test_leaderboard_shows_the_report_numbers(run_db: Path, html: str) -> None:
    with RunStore(run_db, create=False) as store:
        report = build_report(load_run(store), n_resamples=RESAMPLES)
    page = Page(html)
    rows = [a["data-arm"] for a in page.find("tr") if a.get("data-arm") and "data-task" not in a]
    by_cts = sorted(report.arms, key=lambda r: -r.cells["cts"].mean)  # type: ignore[union-attr]
    assert rows == [r.arm for r in by_cts]
    shown = [float(a["data-mean"] or "nan") for a in page.find("td", data_metric="cts")]
    assert shown[: len(by_cts)] == [r.cells["cts"].mean for r in by_cts]  # type: ignore[union-attr]
    psr = [float(a["data-mean"] or "nan") for a in page.find("td", data_metric="psr")]
    assert psr == [r.cells["psr"].mean for r in by_cts]  # type: ignore[union-attr]
    # The failed conversation is counted in its arm's row, with its kind.
    failed = Page(html).find("td", data_metric="failed")
    assert sorted(a.get("title") or "" for a in failed) == ["", "", "agent 1", "infrastructure 1"]
    assert sum(r.errors for r in report.arms) == 1
    assert sum(r.agent_failures for r in report.arms) == 1


def test_markup_in_utterances_stays_data(html: str) -> None:
    # The transcripts travel compressed; the page has no markup from them anywhere.
    assert "__pwned" not in html
    texts = [t[3] for r in data_of(html)["conversations"] for t in r["turns"]]  # type: ignore[attr-defined]
    assert XSS[0] in texts and XSS[1] in texts
    # The script never builds markup from strings.
    page = Page(html)
    script = next(text for attrs, text in page.scripts if not attrs)
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script
    assert "document.write" not in script


def test_ids_are_unique(html: str) -> None:
    ids = [a["id"] for _, a in Page(html).elements if a.get("id")]
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    records = data_of(html)["conversations"]
    fragments = [f"c-{r['id']}" for r in records]  # type: ignore[index]
    assert len(set(fragments)) == len(fragments)
    assert not set(fragments) & set(ids)


def test_figures_are_inline_svg(html: str) -> None:
    page = Page(html)
    titles = [t for t, _ in page.elements if t == "svg"]
    # 2 tasks x 5 dimensions + 2 grids of 2 tasks x 4 dimensions + the cross-task mean
    # trajectory and its 4 BDI/E panels + the heatmap.
    assert len(titles) == 10 + 16 + 1 + 4 + 1
    assert html.count("Δ") > 16


def test_paper_grid_prints_each_lines_delta(run_db: Path) -> None:
    from cogwm.web.figures import paper_grid

    with RunStore(run_db, create=False) as store:
        data = load_run(store)
    (esc, _pd) = paper_grid(data)
    convs = [c for c in data.conversations if c.task == "ESC"]
    belief = curves(convs, "belief", data.empty)
    shown = [p for p in Page(esc[1]).elements if p[0] == "text"]
    assert len(shown) > len(belief)
    for curve in belief:
        assert curve.delta is not None and f"Δ{curve.delta:+.2f}" in esc[1]


_ids = iter(range(1, 1000))


def _conv(values: list[float | None], arm: str = "a/no_cot") -> ConversationData:
    def state(v: float | None) -> CognitiveState:
        beliefs = [] if v is None else [{"text": "x", "score": v}]
        return CognitiveState.model_validate(
            {"emotion": {"label": "hope", "intensity": 1}, "beliefs": beliefs}
        )

    agent, condition = arm.split("/")
    return ConversationData(
        next(_ids),
        "ESC",
        agent,
        condition,
        "s",
        "max_rounds",
        2,
        [state(v) for v in values],
        {},
        None,
    )


def test_mean_curve_and_sem_by_hand() -> None:
    from cogwm.metrics.trajectory import EmptyPolicy

    found = curves([_conv([0, 2]), _conv([0, 0])], "belief", EmptyPolicy.ZERO)
    (curve,) = found
    assert curve.n == 2
    assert curve.mean[0] == 0 and curve.mean[-1] == 1 and curve.mean[10] == 0.5
    assert curve.sem[-1] == pytest.approx(np.std([2, 0], ddof=1) / np.sqrt(2), abs=1e-4)
    assert curve.delta == 1
    # Non-zero turns only: the zero turns are dropped; a series needs two known points.
    nz = curves([_conv([0, 1, 2]), _conv([0, 0, 0])], "belief", EmptyPolicy.ZERO, nonzero_only=True)
    (only,) = nz
    assert only.n == 1
    assert only.mean[:10] == [None] * 10 and only.mean[10] == 1 and only.mean[-1] == 2


def test_cli_writes_the_file(
    run_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out" / "report.html"
    assert cogwm("view", "--db", str(run_db), "--out", str(out), "--resamples", "50") == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert "MB" in capsys.readouterr().err


def test_cli_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cogwm("view", "--out", str(tmp_path / "x.html")) == 2
    assert "exactly one of --db" in capsys.readouterr().err
    assert cogwm("view", "--db", str(tmp_path / "missing.sqlite")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "does not exist" in err and "Traceback" not in err
    empty = tmp_path / "empty.sqlite"
    RunStore(empty).close()
    assert cogwm("view", "--db", str(empty), "--out", str(tmp_path / "y.html")) == 2
    assert "holds no run" in capsys.readouterr().err


def test_quickstart_ends_with_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "qs.sqlite"
    args = ("quickstart", "--db", str(db), "--out", str(tmp_path / "plots"), "--no-progress")
    assert cogwm(*args, "--dialogues", "1", "--model", f"fake:{FAKE_NAME}") == 0
    html = db.with_suffix(".html")
    assert f"report: {html.resolve()}" in capsys.readouterr().err.replace("\n", "")
    records = data_of(html.read_text())["conversations"]
    assert len(records) == 6  # type: ignore[arg-type]
    assert html.stat().st_size < 5_000_000


def test_undefined_composite_draws_no_curve() -> None:
    from cogwm.metrics.trajectory import EmptyPolicy

    no_emotion = [
        CognitiveState.model_validate({"beliefs": [{"text": "x", "score": v}]}) for v in (1, 2)
    ]
    conv = ConversationData(7, "ESC", "a", "no_cot", "s", "max_rounds", 2, no_emotion, {}, None)
    assert curves([conv], "comp", EmptyPolicy.ZERO) == []
    (belief,) = curves([conv], "belief", EmptyPolicy.ZERO)
    assert belief.delta == 1


def _status_div(html: str) -> tuple[str, str]:
    """The class and text of the simulated user's status line."""
    import html as markup
    import re

    found = re.search(r'<div class="(\w+)" id="simulator-status">(.*?)</div>', html)
    assert found, "no simulator status line"
    return found.group(1), markup.unescape(found.group(2))


def test_the_report_names_the_simulated_user_and_withholds_separation(html: str) -> None:
    kind, line = _status_div(html)
    assert kind == "warn"
    assert line.startswith(f"Simulated user: fake:{FAKE_NAME} — no validity card")
    assert "Rankings from this simulator are not validated" in line
    assert ">separated</th>" not in html
    assert "never ran an arena-sensitivity check" in html


def test_a_passing_card_gives_the_verdicts_back(
    run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogwm.validate import status
    from cogwm.validate.card import Card, Check

    monkeypatch.setenv("COGWM_CARDS_DIR", str(tmp_path / "cards"))
    # A passing check on every task of the run (ESC and PD): trust is per task.
    checks = [
        Check(
            name="arena_sensitivity", task=task, metric="cts_difference", value=0.3,
            ci_low=0.1, ci_high=0.5, n=20, passed=True, rule="lower bound above 0",
        )
        for task in ("ESC", "PD")
    ]  # fmt: skip
    card = Card(
        label="fake", model=f"fake:{FAKE_NAME}", model_identity=f"fake:{FAKE_NAME}", seed=0,
        limit=None, resamples=100, created="2025-01-01T00:00:00+00:00", checks=checks,
    )  # fmt: skip
    status.register_card(card)

    def page() -> str:
        with RunStore(run_db, create=False) as store:
            return report_html(store, n_resamples=RESAMPLES)

    shown = page()
    kind, line = _status_div(shown)
    assert kind == "meta" and "arena sensitivity: passed (ESC 0.30 [0.10, 0.50], n 20)" in line
    # Four scenarios per pair: still no verdict.
    assert ">separated</th>" not in shown and "at least 20 paired scenarios" in shown
    monkeypatch.setattr(status, "MIN_SEPARATION_SCENARIOS", 1)
    shown = page()
    table = shown[shown.index('id="differences-table"') :]
    table = table[: table.index("</table>")]
    rows = table.count("<tr>") - 1  # the header's row
    assert ">separated</th>" in table and rows > 0
    assert table.count('<td class="l">yes</td>') + table.count('<td class="l">no</td>') == rows
