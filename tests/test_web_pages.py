"""What a newcomer sees on the report and live pages, checked in headless Chromium: the ranking
puts undefined CTS last, legends and labels carry their line's colour, heatmap numbers stay
readable, anchors land below the tab bar, tables sort, the page fits a narrow window, dialogue
text cannot reorder itself, and every metric header explains itself."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cogwm.arena.scenarios import builtin_scenarios
from cogwm.models import load, unregister_fake
from cogwm.report import build_report, load_run
from cogwm.report.tables import ranked_arms
from cogwm.store import RunStore
from cogwm.web.glossary import METRIC_HELP, header_cell, metric_help
from cogwm.web.page import asset, failure_count, report_html, write_report
from cogwm.web.play import new_session
from cogwm.web.server import ServerConfig, create_app, progress
from cogwm.web.svg import heatmap
from helpers_arena import FAKE_NAME, register
from helpers_web import chromium, cogwm, make_run

#: The arm whose every scored conversation broke off after the cold start: CTS undefined.
UNDEFINED_ARM = "solver/no_cot"
#: A conversation given hostile text: bidi controls and a 5,000-character word.
HOSTILE_ID = 5
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
BIDI_TEXT = "I read \u202eevil\u202c and \u2067right\u2069 here"
LONG_WORD = "W" * 5000
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
]


def _break_arm(db: sqlite3.Connection, agent: str) -> None:
    """Every finished conversation of ``agent`` ends when the agent breaks its format right after
    the cold start: only the initial state is left, so no trajectory metric is defined."""
    ids = [
        r[0]
        for r in db.execute(
            "SELECT id FROM conversations WHERE agent = ? AND status = 'finished'", (agent,)
        )
    ]
    for conversation in ids:
        db.execute(
            "DELETE FROM turns WHERE conversation_id = ? AND phase = 'simulated'", (conversation,)
        )
        db.execute(
            "UPDATE conversations SET termination = 'agent_failure', failure_kind = 'agent'"
            " WHERE id = ?",
            (conversation,),
        )


def build_store(path: Path) -> Path:
    """The browser tests' run (helpers_web.make_run) with an arm whose CTS is undefined, a
    conversation whose turns hold bidi controls and a 5,000-character word, and a run name
    with a bidi override."""
    make_run(path)
    db = sqlite3.connect(path)
    with db:
        _break_arm(db, "solver")
        db.execute(
            "UPDATE turns SET text = ? WHERE conversation_id = ? AND idx = 5",
            (BIDI_TEXT, HOSTILE_ID),
        )
        db.execute(
            "UPDATE turns SET text = ? WHERE conversation_id = ? AND idx = 6",
            (f"before {LONG_WORD} after", HOSTILE_ID),
        )
        db.execute("UPDATE runs SET name = ?", ("run \u202eeman\u202c",))
    db.close()
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pages")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COGWM_CACHE_DIR", str(folder / "cache"))
        register()
        try:
            return off_loop(build_store, folder / "run.sqlite")
        finally:
            unregister_fake(FAKE_NAME)


@pytest.fixture(scope="module")
def report_url(store: Path) -> str:
    out = store.with_name("report.html")
    off_loop(write_report, store, out, n_resamples=200)
    return out.as_uri()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=BROWSER_ARGS)
        yield b
        b.close()


def open_page(browser: Any, url: str, width: int = 1300) -> Any:
    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")
    return page


@pytest.fixture()
def page(browser: Any, report_url: str) -> Iterator[Any]:
    found = open_page(browser, report_url)
    yield found
    found.context.close()


def off_loop(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` in a thread: Playwright's sync API keeps an event loop in this one."""
    found: list[Any] = []
    worker = threading.Thread(target=lambda: found.append(fn(*args, **kwargs)))
    worker.start()
    worker.join()
    assert found, f"{fn.__name__} failed"
    return found[0]


# ------------------------------------------------------------------------------ ranking


def test_undefined_cts_ranks_last_on_the_page(page: Any) -> None:
    rows = page.locator("#leaderboard-table tbody tr")
    arms = [rows.nth(i).get_attribute("data-arm") for i in range(rows.count())]
    assert arms[-1] == UNDEFINED_ARM
    means = [
        float(v)
        for v in page.eval_on_selector_all(
            "#leaderboard-table tbody td[data-metric='cts']", "els => els.map(e => e.dataset.mean)"
        )
        if v is not None
    ]
    assert len(means) == len(arms) - 1 and means == sorted(means, reverse=True)
    # The unranked arm has no rank number.
    assert rows.last.locator("td").first.inner_text() == "–"


def test_undefined_cts_ranks_last_in_the_terminal_and_json(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cogwm("arena", "report", "--db", store, "--json", "--resamples", 100) == 0
    agents = json.loads(capsys.readouterr().out)["agents"]
    assert agents[-1]["arm"] == UNDEFINED_ARM and agents[-1]["metrics"]["cts"] is None
    means = [a["metrics"]["cts"]["mean"] for a in agents[:-1]]
    assert means == sorted(means, reverse=True)
    assert cogwm("arena", "report", "--db", store, "--resamples", 100) == 0
    table = capsys.readouterr().out.split("Agents, dimensions")[0]
    order = [a["arm"] for a in agents]
    assert sorted(order, key=table.index) == order


def test_live_board_ranks_and_counts_failures_as_the_report(store: Path) -> None:
    live = progress(store)
    with RunStore(store, read_only=True) as opened:
        report = build_report(load_run(opened), n_resamples=200)
    ranked = ranked_arms(report.arms)
    assert [r["arm"] for r in live["leaderboard"]] == [a.arm for a in ranked]
    assert live["leaderboard"][-1]["arm"] == UNDEFINED_ARM
    assert [r["failed"] for r in live["leaderboard"]] == [failure_count(a) for a in ranked]
    # solver: 3 agent failures and 1 infrastructure error; cold: 1 agent failure.
    by_arm = {r["arm"]: r["failed"] for r in live["leaderboard"]}
    assert by_arm[UNDEFINED_ARM] == 4 and by_arm["cold/no_cot"] == 1
    assert live["agent_failures"] == 4


# ------------------------------------------------------------------------------ figures


def _colours_match(page: Any, chart: str, marks: str) -> int:
    """For every ``marks`` element in ``chart`` SVGs, its computed fill equals the computed
    stroke of the line with the same ``data-series``; how many were compared."""
    pairs = page.eval_on_selector_all(
        chart,
        """(svgs, marks) => svgs.flatMap(svg => [...svg.querySelectorAll(marks)].map(m => {
             const k = m.dataset.series;
             const line = svg.querySelector(
               `polyline[data-series="${k}"], path[data-series="${k}"]`);
             return [getComputedStyle(m).fill, line ? getComputedStyle(line).stroke : null];
           }))""",
        marks,
    )
    for fill, stroke in pairs:
        assert fill == stroke, (fill, stroke)
    return len(pairs)


def test_legend_swatches_and_delta_labels_carry_their_line_colour(page: Any) -> None:
    # The side-by-side chart drawn by the page's script.
    first = page.locator("#conversation-list tbody tr a").first
    first.click()
    page.locator("#detail a[href^='#cmp-']").first.click()
    page.wait_for_selector("[data-compare] svg.chart")
    assert _colours_match(page, "[data-compare] svg.chart", "rect.swatch") == 2
    # The server-drawn trajectory charts and the paper grid's Δ labels.
    assert _colours_match(page, "#trajectories svg.chart", "rect.swatch") > 0
    assert _colours_match(page, "#paper-figures svg.chart", ".series-note") > 0


def test_cross_task_figure_renders_one_line_per_agent_with_its_legend(page: Any) -> None:
    chart = page.locator("#cross-task svg.chart")
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    assert box is not None and box["width"] > 400 and box["height"] > 250
    # Three arms have trajectories; the arm cut back to its initial state has no line.
    assert _colours_match(page, "#cross-task svg.chart", "rect.swatch") == 3
    assert _colours_match(page, "#cross-task svg.chart", ".series-note") == 3
    legend = chart.locator("text.legend")
    assert legend.count() == 3
    for i in range(3):
        assert legend.nth(i).is_visible()
        swatch = chart.locator(f"rect.swatch[data-series='{i}']").bounding_box()
        assert swatch is not None and swatch["width"] > 0 and swatch["height"] > 0
    labels = legend.all_text_contents()
    assert len(labels) == 3 and not any(text.startswith(UNDEFINED_ARM) for text in labels)
    assert f"no line for {UNDEFINED_ARM}" in page.locator("#cross-task .figcaption").inner_text()


def _luminance(rgb: str) -> float:
    channels = [int(c) / 255 for c in re.findall(r"\d+", rgb)[:3]]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


CELL_COLOURS = """svg => [...svg.querySelectorAll('text.cell')].map(t => {
    const rect = t.previousElementSibling;
    return [t.textContent, getComputedStyle(t).fill, getComputedStyle(rect).fill];
})"""


def test_heatmap_numbers_are_readable_on_every_cell(browser: Any) -> None:
    values = [[1.0, -1.0, 0.6, -0.9], [-1.0, 1.0, -0.45, 0.3], [0.6, -0.45, 1.0, None]]
    values.append([-0.9, 0.3, None, 1.0])
    svg = heatmap(["a", "b", "c", "d"], values, title="r")
    page = browser.new_page()
    page.set_content(f"<style>{asset('report.css')}</style>{svg}")
    cells = page.eval_on_selector("svg", CELL_COLOURS)
    page.close()
    assert len(cells) == 16
    for text, fg, bg in cells:
        assert _contrast(fg, bg) >= 4.5, (text, fg, bg)


def test_report_heatmap_cells_are_readable(page: Any) -> None:
    cells = page.eval_on_selector("#analysis svg.chart", CELL_COLOURS)
    assert cells
    for text, fg, bg in cells:
        assert _contrast(fg, bg) >= 4.5, (text, fg, bg)


# ------------------------------------------------------------------------------ navigation


@pytest.mark.parametrize("width", [1300, 800, 520])
def test_anchor_links_land_below_the_tab_bar(browser: Any, report_url: str, width: int) -> None:
    page = open_page(browser, f"{report_url}#c-{HOSTILE_ID}", width)
    try:
        for target in (f"#c-{HOSTILE_ID}", f"#cmp-{HOSTILE_ID}-6", "#per-task"):
            page.evaluate("h => { location.hash = h; }", target)
            page.wait_for_selector(target)
            page.wait_for_timeout(100)
            tabs = page.eval_on_selector("nav.tabs", "e => e.getBoundingClientRect().bottom")
            top = page.eval_on_selector(target, "e => e.getBoundingClientRect().top")
            assert tabs <= top, (target, tabs, top)
    finally:
        page.context.close()


def test_loading_line_goes_once_loaded(page: Any) -> None:
    assert page.get_by_text("loading…").count() == 0


def _column(page: Any, table: str, col: int) -> list[float | None]:
    return [
        None if v is None else float(v)
        for v in page.eval_on_selector_all(
            f"{table} tbody tr",
            """(rows, col) => rows.map(r => {
                 const td = r.cells[col];
                 if (td.dataset.mean !== undefined) return td.dataset.mean;
                 const n = parseFloat(td.textContent);
                 return Number.isFinite(n) ? String(n) : null;
               })""",
            col,
        )
    ]


def _sorted_with_undefined_last(values: list[float | None], descending: bool) -> bool:
    known = [v for v in values if v is not None]
    first_none = values.index(None) if None in values else len(values)
    return (
        all(v is None for v in values[first_none:])
        and known == sorted(known, reverse=descending)
        and len(known) == first_none
    )


def test_numeric_columns_sort_on_click_with_undefined_last(page: Any) -> None:
    table = "#leaderboard-table"
    headers = page.locator(f"{table} thead th")
    names = [headers.nth(i).inner_text() for i in range(headers.count())]
    for name in ("AUC", "Δ"):
        col = names.index(name)
        headers.nth(col).click()
        first = _column(page, table, col)
        headers.nth(col).click()
        second = _column(page, table, col)
        assert None in first and len({v for v in first if v is not None}) > 1
        directions = {d for d in (True, False) if _sorted_with_undefined_last(first, d)}
        assert directions, first
        descending = directions.pop()
        assert _sorted_with_undefined_last(second, not descending), second
    # The conversation list (drawn by the script, paginated) sorts over every page.
    cts = page.locator("#conversation-list thead th", has_text="CTS")
    for _ in range(2):
        cts.click()
        values = _column(page, "#conversation-list", 7)
        assert None in values
        assert _sorted_with_undefined_last(values, True) or _sorted_with_undefined_last(
            values, False
        ), values


def test_sorting_reads_thousands_separators_and_leaves_dashes_last(browser: Any) -> None:
    cells = ["1,234", "–", "987", "12,000", "−5", ""]
    rows = "".join(f"<tr><td>{c}</td></tr>" for c in cells)
    page = browser.new_page()
    page.set_content(
        f'<table class="data"><thead><tr><th>needed</th></tr></thead><tbody>{rows}</tbody>'
        f"</table><script>{asset('report.js')}</script>"
    )
    shown = "els => els.map(e => e.textContent)"
    page.click("th")
    first = page.eval_on_selector_all("tbody td", shown)
    page.click("th")
    second = page.eval_on_selector_all("tbody td", shown)
    page.close()
    assert first == ["12,000", "1,234", "987", "−5", "–", ""]
    assert second == ["−5", "987", "1,234", "12,000", "–", ""]


def test_page_fits_an_800px_window(browser: Any, report_url: str) -> None:
    page = open_page(browser, report_url, 800)
    try:
        assert page.evaluate("document.documentElement.scrollWidth") <= 800
        page.evaluate(f"location.hash = '#cmp-{HOSTILE_ID}-6'")
        page.wait_for_selector("[data-compare]")
        assert page.evaluate("document.documentElement.scrollWidth") <= 800
    finally:
        page.context.close()


# ------------------------------------------------------------------------------ text safety


def test_bidi_controls_are_not_shown_and_long_words_wrap(page: Any) -> None:
    page.evaluate(f"location.hash = '#c-{HOSTILE_ID}'")
    card = page.locator(f"#c-{HOSTILE_ID}")
    card.wait_for()
    text = page.evaluate("document.body.innerText")
    assert "evil" in text and "right" in text and "run eman" in text
    assert not set(BIDI) & set(text)
    assert card.evaluate("e => e.scrollWidth <= e.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_state_card_keeps_valence_clear_of_s_t(page: Any) -> None:
    boxes = page.evaluate(
        """() => {
          const out = [];
          for (const width of [150, 200, 260]) {
            const holder = document.createElement('div');
            holder.style.width = width + 'px';
            document.body.prepend(holder);
            holder.appendChild(window.cogwm.stateBox({e: ['helplessness', 3, -1.6666666667, null],
                                                      b: [], d: [], i: [], s: -0.45671234}));
            const st = holder.querySelector('.st').getBoundingClientRect();
            const range = document.createRange();
            range.selectNodeContents(holder.querySelector('.val'));
            const val = [...range.getClientRects()];
            out.push([holder.querySelector('.val').textContent,
                      [st.left, st.top, st.right, st.bottom],
                      val.map(r => [r.left, r.top, r.right, r.bottom])]);
            holder.remove();
          }
          return out;
        }"""
    )
    for text, (l1, t1, r1, b1), rects in boxes:
        assert text.endswith("valence -1.67")
        for l2, t2, r2, b2 in rects:
            assert r2 <= l1 or r1 <= l2 or b2 <= t1 or b1 <= t2, (text, rects)


# ------------------------------------------------------------------------------ live and play


class Served:
    """uvicorn serving the app on a free loopback port, in a thread."""

    def __init__(self, config: ServerConfig) -> None:
        import uvicorn

        server_config = uvicorn.Config(
            create_app(config), host="127.0.0.1", port=config.port, log_level="error"
        )
        self.server = uvicorn.Server(server_config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_live_page_counts_failures_as_the_report_page_and_keeps_its_sort(
    browser: Any, store: Path, report_url: str
) -> None:
    config = ServerConfig(
        stores=[store], models=[], play_store=store.with_name("play.sqlite"), port=free_port()
    )
    report = open_page(browser, report_url)
    expected = {
        r.get_attribute("data-arm"): r.locator("td[data-metric='failed']").inner_text()
        for r in report.locator("#leaderboard-table tbody tr").all()
    }
    report.context.close()
    with Served(config):
        page = open_page(browser, f"http://127.0.0.1:{config.port}/runs/0/live")
        try:
            rows = page.locator("#board tbody tr")
            found = {
                r.locator("td").first.inner_text(): r.locator("[data-metric='failed']").inner_text()
                for r in rows.all()
            }
            assert rows.last.locator("td").first.inner_text() == UNDEFINED_ARM
            # The run's name carries a bidi override; the live page drops it too.
            shown = page.evaluate("document.body.innerText")
            assert "run eman" in shown and not set(BIDI) & set(shown)
            cts = page.locator("#board th", has_text="CTS")
            assert cts.get_attribute("title") == METRIC_HELP["CTS"]
            # A sorted column stays sorted when the board is drawn again (every 2 s).
            cts.click()
            cts.click()
            page.evaluate("document.querySelector('#board table').dataset.seen = '1'")
            page.wait_for_selector("#board table:not([data-seen])")
            values = _column(page, "#board table", 2)
            assert _sorted_with_undefined_last(values, False) and None in values, values
        finally:
            page.context.close()
    assert {arm: text.split()[0] for arm, text in found.items()} == {
        arm: text.split()[0] for arm, text in expected.items()
    }
    assert expected["cold/no_cot"].split()[0] == "1"


def _abandoned_play_store(tmp_path: Path) -> Path:
    """A play store whose one dialogue was started and then left (the person closed the tab)."""
    play = tmp_path / "play.sqlite"
    session = new_session(
        name="walker",
        task="ESC",
        scenario=builtin_scenarios("ESC")[0],
        model=load(f"fake:{FAKE_NAME}"),
        model_address=f"fake:{FAKE_NAME}",
        store_path=play,
    )
    off_loop(asyncio.run, session.start())
    return play


def test_an_abandoned_play_dialogue_is_not_a_run_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    register()
    try:
        play = _abandoned_play_store(tmp_path)
        with RunStore(play, read_only=True) as opened:
            html = report_html(opened, n_resamples=50)
        live = progress(play)
        config = ServerConfig(stores=[play], models=[], play_store=play)
        index = TestClient(create_app(config), base_url="http://127.0.0.1:8765").get("/").text
    finally:
        unregister_fake(FAKE_NAME)
    assert "resume the run" not in html and "unfinished" not in html
    assert "1 played dialogue(s) were left open" in html
    assert live["played"] is True
    assert '<td data-field="running">1<small>left open</small></td>' in index


# ------------------------------------------------------------------------------ tooltips


def test_every_metric_header_explains_itself(page: Any) -> None:
    titles = page.eval_on_selector_all(
        "#leaderboard-table thead th, #task-table thead th, #conversation-list thead th",
        "els => els.map(e => [e.textContent.trim(), e.getAttribute('title')])",
    )
    shown = {name for name, _ in titles}
    for header in ("CTS", "AUC", "Δ", "PSR", "Mono", "nz%", "GO%", "E-Δ", "C-Δ"):
        assert header in shown
    for name, title in titles:
        assert title == metric_help(name), name
    assert 'title="' + METRIC_HELP["pass^k"] in header_cell("GO pass^3")


def test_readme_lists_the_same_sentences() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    listed = dict(re.findall(r"^- \*\*(.+?)\*\*: (.+)$", readme, flags=re.MULTILINE))
    assert {k: listed.get(k) for k in METRIC_HELP} == METRIC_HELP


def test_the_terminal_report_of_a_play_store_says_left_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``arena report`` on a play store: an open dialogue is a person who stopped playing, not
    a run to resume (the same words as the page)."""
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    register()
    try:
        play = _abandoned_play_store(tmp_path)
    finally:
        unregister_fake(FAKE_NAME)
    assert cogwm("arena", "report", "--db", play, "--resamples", 50) == 0
    shown = " ".join(capsys.readouterr().out.split())  # the table wraps long notes
    assert "resume the run" not in shown
    assert "1 played dialogue(s) were left open" in shown
