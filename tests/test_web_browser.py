"""The report and the local app in a real browser: headless Chromium (Debian's package) driven by
Playwright. These tests fail, never skip, when the browser is missing. Screenshots go to the
test's temporary folder."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cogwm.models import register_fake, unregister_fake
from cogwm.models.types import Message
from cogwm.store import RunStore
from cogwm.web.page import write_report
from cogwm.web.server import ServerConfig, create_app
from helpers_arena import FAKE_NAME, Script, make_reply, register
from helpers_web import XSS, chromium, make_run

#: A simulator whose every utterance is hostile markup (the simulator's format has no quotes).
HOSTILE = "arena-hostile"
HOSTILE_TEXT = "<script>window.__pwned=1</script> <img src=x onerror=window.__pwned=2>"
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(autouse=True)
def _fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    register()
    scripted = make_reply(Script())

    def hostile(messages: list[Message], sampling: Any = None) -> str:
        answer = scripted(messages, sampling)
        try:
            data = json.loads(answer)
        except ValueError:
            return answer
        if isinstance(data, dict) and "utterance" in data:  # the simulator's turn
            data["utterance"] = HOSTILE_TEXT
            return json.dumps(data)
        return answer

    register_fake(HOSTILE, hostile)
    yield
    unregister_fake(FAKE_NAME)
    unregister_fake(HOSTILE)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=BROWSER_ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    page.requests = []  # type: ignore[attr-defined]
    page.on("request", lambda r: page.requests.append(r.url))
    yield page
    context.close()


def off_loop(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` in a thread: Playwright's sync API keeps an event loop in this one."""
    found: list[Any] = []
    worker = threading.Thread(target=lambda: found.append(fn(*args, **kwargs)))
    worker.start()
    worker.join()
    assert found, f"{fn.__name__} failed"
    return found[0]


def offsite(urls: list[str], allowed: tuple[str, ...]) -> list[str]:
    return [u for u in urls if not u.startswith(allowed)]


def test_static_report(tmp_path: Path, page: Any) -> None:
    db = off_loop(make_run, tmp_path / "run.sqlite")
    out = tmp_path / "report.html"
    off_loop(write_report, db, out, n_resamples=200)
    page.goto(out.as_uri())
    page.wait_for_selector("body[data-ready='1']")
    page.screenshot(path=str(tmp_path / "report.png"))
    # The ranking names its simulated user and says it is not validated (no card).
    status = page.inner_text("#simulator-status")
    assert status.startswith(f"Simulated user: fake:{FAKE_NAME} — no validity card")
    assert "not validated" in status
    first = page.locator("#leaderboard-table tbody tr").first
    assert first.get_attribute("data-arm") in {
        "warm/no_cot",
        "warm/cot",
        "cold/no_cot",
        "solver/no_cot",
    }
    rows = page.locator("#conversation-list tbody tr")
    with RunStore(db, create=False) as store:
        conversations = store.conversations()
    assert rows.count() == len(conversations)

    # Filter by agent: only that agent's conversations remain.
    page.select_option("select[data-filter='agent']", "cold")
    cold = [c for c in conversations if c.agent == "cold"]
    assert rows.count() == len(cold)
    page.select_option("select[data-filter='agent']", "")

    # Search finds the conversation with the hostile utterance; it renders as text.
    page.fill("input[data-filter='q']", "__pwned")
    assert rows.count() == 1
    rows.first.locator("a").click()
    transcript = page.locator("#detail .conv")
    transcript.wait_for()
    assert XSS[0] in transcript.inner_text()
    assert page.evaluate("window.__pwned") is None
    assert transcript.locator("img").count() == 0
    # Every user turn with a stored state shows it beside the utterance.
    conv_id = int(transcript.get_attribute("data-conversation"))
    with RunStore(db, create=False) as store:
        with_state = [t for t in store.turns(conv_id) if t.role == "user" and t.state_json]
    assert transcript.locator(".turn.user .state").count() == len(with_state)
    page.screenshot(path=str(tmp_path / "transcript.png"))

    # Side by side: same scenario, other agent, two transcripts and two overlaid curves.
    page.locator("#detail a[href^='#cmp-']").first.click()
    pair = page.locator("[data-compare]")
    pair.wait_for()
    assert pair.locator(".conv").count() == 2
    assert pair.locator("svg.chart").first.locator("polyline").count() == 2
    page.screenshot(path=str(tmp_path / "compare.png"))
    assert offsite(page.requests, ("file://", "data:")) == []


class Served:
    """uvicorn serving the app on a free loopback port, in a thread."""

    def __init__(self, config: ServerConfig) -> None:
        import uvicorn

        self.server = uvicorn.Server(
            uvicorn.Config(
                create_app(config), host="127.0.0.1", port=config.port, log_level="error"
            )
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise AssertionError("the server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_play_three_turns_and_live(tmp_path: Path, page: Any) -> None:
    run = off_loop(make_run, tmp_path / "run.sqlite")
    play = tmp_path / "play.sqlite"
    config = ServerConfig(
        stores=[run, play], models=[f"fake:{HOSTILE}"], play_store=play, port=free_port()
    )
    base = f"http://127.0.0.1:{config.port}"
    with Served(config):
        page.goto(f"{base}/play")
        page.wait_for_selector("body[data-ready='1']")
        page.fill("#name", "browser")
        page.select_option("#task", "ESC")
        page.click("#start")
        page.wait_for_selector("#dialogue:not(.hidden)")
        opening = int(page.get_attribute("body", "data-turns"))
        states = []
        for n in range(3):
            page.fill("#text", f"What would help you most right now? ({n})")
            page.click("#send")
            page.wait_for_selector(f"body[data-turns='{opening + 2 * (n + 1)}']")
            states.append(page.inner_text("#state"))
            assert page.locator("#curve polyline").count() == 1
        assert all(states) and len(set(states)) > 1  # the state panel moved
        text = page.inner_text("#transcript")
        assert HOSTILE_TEXT in text
        assert page.evaluate("window.__pwned") is None
        assert page.locator("#transcript img").count() == 0
        page.screenshot(path=str(tmp_path / "play.png"))

        page.goto(f"{base}/runs/0/live")
        page.wait_for_selector("body[data-ready='1']")
        assert "finished" in page.inner_text("#status")
        assert page.locator("#board tbody tr").count() == 4
        status = page.inner_text("#simulator-status")
        assert status.startswith(f"Simulated user: fake:{FAKE_NAME} — no validity card")
        page.screenshot(path=str(tmp_path / "live.png"))
        assert offsite(page.requests, (base, "data:")) == []
    with RunStore(play, create=False) as store:
        (row,) = store.conversations()
    assert row.agent == "human:browser"


class ServedProcess:
    """``cogwm serve`` in its own process (the embedded model runs in the server's process)."""

    def __init__(self, *args: str, port: int, env: dict[str, str]) -> None:
        self.port = port
        self.command = [sys.executable, "-m", "cogwm.cli.main", "serve", "--port", str(port), *args]
        self.env = env

    def __enter__(self) -> ServedProcess:
        self.process = subprocess.Popen(self.command, env=self.env)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"cogwm serve exited with {self.process.returncode}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if time.monotonic() > deadline:
                raise AssertionError("cogwm serve did not start")
            time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


@pytest.mark.integration
def test_play_three_turns_on_the_embedded_model(tmp_path: Path, page: Any) -> None:
    play = tmp_path / "play.sqlite"
    port = free_port()
    env = {**os.environ, "COGWM_CACHE_DIR": str(tmp_path / "cache")}
    args = ("--model", "llamacpp:smollm2", "--play-db", str(play), "--max-rounds", "6")
    with ServedProcess(*args, port=port, env=env) as served:
        played = 0
        texts = (
            "That sounds really hard. How are you feeling right now?",
            "It makes sense to feel worried about rent. What support do you have?",
            "Would it help to make a short plan for the next week together?",
        )
        while played < len(texts):
            # A new dialogue at the start, and again if the simulated user left early (the
            # 135M model may): the test is about playing turns through the page, not about
            # how long this model stays.
            page.goto(f"http://127.0.0.1:{port}/play")
            page.wait_for_selector("body[data-ready='1']")
            page.select_option("#task", "ESC")
            page.click("#start")
            page.wait_for_selector("#text:enabled, #error:not(:empty)", timeout=180_000)
            assert page.inner_text("#error") == "", f"server: {served.process.poll()}"
            turns = int(page.get_attribute("body", "data-turns"))
            while played < len(texts) and page.is_enabled("#text"):
                page.fill("#text", texts[played])
                page.click("#send")
                turns += 2
                page.wait_for_selector(
                    f"body[data-turns='{turns}'], #error:not(:empty)", timeout=180_000
                )
                assert page.inner_text("#error") == "", f"server: {served.process.poll()}"
                assert page.locator("#state .state .emo").count() == 1
                played += 1
        page.screenshot(path=str(tmp_path / "play-embedded.png"))
        assert served.process.poll() is None
    with RunStore(play, create=False) as store:
        rows = store.conversations()
        simulated = [
            t
            for row in rows
            for t in store.turns(row.id)
            if t.role == "user" and t.state_json and t.phase == "simulated"
        ]
    assert {row.agent for row in rows} == {"human:guest"}
    # Every played turn got a simulated user reply with a state.
    assert len(simulated) == len(texts)
