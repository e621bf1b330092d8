"""``cogwm serve``: a local web app to browse runs, watch a run live and play the agent.

The app can only do what its routes name: show the stores and play with the models it was started
with (chosen by position in those lists, never by a path or URL from the browser). It refuses
requests whose Host header is not the address it serves, every state-changing request must carry
the page's CSRF token (and a same-origin ``Origin`` where the browser sends one), and every page
forbids loading anything from elsewhere (Content-Security-Policy). Dialogue text reaches pages
only as JSON drawn with ``textContent``.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from cogwm.arena.scenarios import Scenario, builtin_scenarios
from cogwm.arena.termination import ConversationStatus, FailureOrigin
from cogwm.errors import CogwmError, InputError
from cogwm.models import Model
from cogwm.models.types import ModelCallError
from cogwm.report.tables import ArmRow, ranked_arms
from cogwm.store import RunStore
from cogwm.web.glossary import help_json
from cogwm.web.page import asset, environment, failure_count, failure_text, report_html
from cogwm.web.payload import is_play_config
from cogwm.web.play import PlaySession, find_scenario, new_session

CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'"
)
#: Tasks a person can play (those with composite weights and built-in scenarios).
PLAY_TASKS = ("ESC", "PD", "CR")
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


@dataclass
class ServerConfig:
    """What the server may show and use: an allow-list of stores and models."""

    stores: list[Path]
    models: list[str]
    play_store: Path
    host: str = "127.0.0.1"
    port: int = 8765
    scenarios: dict[str, list[Scenario]] = field(default_factory=dict)
    max_rounds: int = 20
    model_options: dict[str, Any] = field(default_factory=dict)


@dataclass
class State:
    """The running server's state: loaded models, play sessions, the CSRF token."""

    config: ServerConfig
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    loaded: dict[str, Model] = field(default_factory=dict)
    sessions: dict[str, PlaySession] = field(default_factory=dict)
    reports: dict[Path, tuple[tuple[int, ...], str]] = field(default_factory=dict)

    def report(self, path: Path) -> str:
        """The store's HTML report, made again only when the store has changed since."""
        stamp = tuple(
            p.stat().st_mtime_ns for p in (path, path.with_name(path.name + "-wal")) if p.exists()
        )
        cached = self.reports.get(path)
        if cached is None or cached[0] != stamp:
            with RunStore(path, read_only=True) as store:
                cached = (stamp, report_html(store, n_resamples=500))
            self.reports[path] = cached
        return cached[1]

    def model(self, index: int) -> tuple[str, Model]:
        """The allow-listed model at ``index`` (loaded once)."""
        from cogwm.models import load

        if not 0 <= index < len(self.config.models):
            raise InputError("no such model")
        address = self.config.models[index]
        if address not in self.loaded:
            self.loaded[address] = load(address, **self.config.model_options)
        return address, self.loaded[address]

    def store(self, index: int) -> Path:
        """The allow-listed store at ``index``."""
        if not 0 <= index < len(self.config.stores):
            raise InputError("no such store")
        return self.config.stores[index]


def allowed_hosts(config: ServerConfig) -> set[str]:
    """Host header values the server answers: its own address and the loopback names."""
    names = {config.host, *LOOPBACK}
    return {f"{n}:{config.port}" for n in names} | names


class Guard(BaseHTTPMiddleware):
    """Refuse foreign Host headers and state-changing requests without the CSRF token; add CSP."""

    def __init__(self, app: Any, state: State) -> None:
        super().__init__(app)
        self.state = state
        self.hosts = allowed_hosts(state.config)

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        host = request.headers.get("host", "")
        if host not in self.hosts:
            return JSONResponse({"error": "unknown host"}, status_code=400)
        if request.method not in ("GET", "HEAD"):
            token = request.headers.get("x-csrf-token", "")
            if not secrets.compare_digest(token, self.state.token):
                return JSONResponse({"error": "missing or wrong CSRF token"}, status_code=403)
            origin = request.headers.get("origin")
            if origin is not None and origin.split("://", 1)[-1] not in self.hosts:
                return JSONResponse({"error": "cross-origin request"}, status_code=403)
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response


def _page(state: State, template: str, **context: Any) -> HTMLResponse:
    html = (
        environment()
        .from_string(asset(template))
        .render(
            css=asset("report.css"),
            js=Markup(asset("report.js")),
            help_json=help_json(),
            token=state.token,
            **context,
        )
    )
    return HTMLResponse(html)


def _run_summary(path: Path, index: int) -> dict[str, Any]:
    with RunStore(path, read_only=True) as store:
        run = store.run()
        rows = store.conversations()
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    return {
        "index": index,
        "file": path.name,
        "name": None if run is None else run.name,
        "counts": counts,
        "played": run is not None and is_play_config(json.loads(run.config_json)),
    }


def progress(path: Path) -> dict[str, Any]:
    """A run's progress for the live page: counts, failures, recent turns, leaderboard so far."""
    from cogwm.report import build_report, load_run

    with RunStore(path, read_only=True) as store:
        run = store.run()
        rows = store.conversations()
        counts: dict[str, int] = {}
        for row in rows:
            counts[row.status] = counts.get(row.status, 0) + 1
        # Both kinds, as the report counts them: infrastructure errors (failed, excluded) and
        # agents that broke their output format (finished and scored).
        failures = [
            {
                "id": r.id,
                "arm": f"{r.agent}/{r.condition}",
                "error": r.error or r.termination,
                "kind": getattr(r, "failure_kind", None),
            }
            for r in rows
            if r.status == ConversationStatus.FAILED
            or getattr(r, "failure_kind", None) == FailureOrigin.AGENT
        ]
        running = [r for r in rows if r.status == "running"]
        recent = []
        for r in running[-5:]:
            turns = store.turns(r.id)
            recent.append(
                {
                    "id": r.id,
                    "arm": f"{r.agent}/{r.condition}",
                    "task": r.task,
                    "scenario": r.scenario,
                    "turns": len(turns),
                    "last": turns[-1].text if turns else "",
                }
            )
        board = []
        if run is not None and counts.get("finished"):
            report = build_report(load_run(store), n_resamples=200, with_complementarity=False)
            board = [_board_row(arm) for arm in ranked_arms(report.arms)]
    return {
        "name": None if run is None else run.name,
        "simulator": None if run is None else _simulator_line(run.config_json),
        "played": run is not None and is_play_config(json.loads(run.config_json)),
        "counts": counts,
        "agent_failures": sum(1 for f in failures if f["kind"] == FailureOrigin.AGENT),
        "failures": failures,
        "running": recent,
        "leaderboard": board,
    }


def _simulator_line(config_json: str) -> str:
    """The run's simulated user and its validity card's checks, in one line."""
    from cogwm.report.tables import run_simulator_status

    return run_simulator_status(json.loads(config_json)).line()


def _board_row(arm: ArmRow) -> dict[str, Any]:
    """One arm on the live leaderboard, its failures counted as the report counts them."""
    cts = arm.cells.get("cts")
    return {
        "arm": arm.arm,
        "n": arm.n,
        "cts": None if cts is None else cts.mean,
        "failed": failure_count(arm),
        "failures": failure_text(arm),
    }


def create_app(config: ServerConfig) -> Starlette:
    """The web app for ``config``."""
    state = State(config)
    app = Starlette(
        routes=[*_report_routes(state), *_play_routes(state)],
        middleware=[Middleware(Guard, state=state)],
        exception_handlers={CogwmError: _on_error, ModelCallError: _on_model_error},
    )
    app.state.cogwm = state
    return app


def _report_routes(state: State) -> list[Route]:
    """The pages of the runs: the index, a run's report, its live page and progress."""
    config = state.config

    async def index(request: Request) -> Response:
        runs = [_run_summary(p, i) for i, p in enumerate(config.stores) if p.is_file()]
        return _page(state, "index.html.j2", runs=runs, models=config.models)

    async def run_page(request: Request) -> Response:
        return HTMLResponse(state.report(state.store(int(request.path_params["index"]))))

    async def live_page(request: Request) -> Response:
        index = int(request.path_params["index"])
        state.store(index)
        return _page(state, "live.html.j2", index=index)

    async def live_data(request: Request) -> Response:
        return JSONResponse(progress(state.store(int(request.path_params["index"]))))

    return [
        Route("/", index),
        Route("/runs/{index:int}", run_page),
        Route("/runs/{index:int}/live", live_page),
        Route("/api/runs/{index:int}/progress", live_data),
    ]


def _play_routes(state: State) -> list[Route]:
    """The play page and its API: start a dialogue, say a turn, end it."""
    config = state.config

    async def play_page(request: Request) -> Response:
        choices = {
            t: [
                {"id": s.id, "title": s.title or s.id}
                for s in (*builtin_scenarios(t), *config.scenarios.get(t, []))
            ]
            for t in PLAY_TASKS
        }
        return _page(
            state,
            "play.html.j2",
            choices=Markup(json.dumps(choices).replace("<", "\\u003c")),
            models=config.models,
        )

    async def play_start(request: Request) -> Response:
        body = await _json(request)
        task = str(body.get("task", ""))
        if task not in PLAY_TASKS:
            raise InputError(f"task must be one of {', '.join(PLAY_TASKS)}")
        scenario = find_scenario(task, str(body.get("scenario", "")), config.scenarios)
        address, model = state.model(_int(body.get("model", 0)))
        session = new_session(
            name=str(body.get("name", "")),
            task=task,
            scenario=scenario,
            model=model,
            model_address=address,
            store_path=config.play_store,
            max_rounds=config.max_rounds,
        )
        await session.start()
        state.sessions[session.id] = session
        return JSONResponse(session.view())

    async def play_turn(request: Request) -> Response:
        session = _session(state, request)
        body = await _json(request)
        await session.say(str(body.get("text", "")))
        return JSONResponse(session.view())

    async def play_end(request: Request) -> Response:
        session = _session(state, request)
        session.finish()
        return JSONResponse(session.view())

    return [
        Route("/play", play_page),
        Route("/api/play", play_start, methods=["POST"]),
        Route("/api/play/{sid}/turn", play_turn, methods=["POST"]),
        Route("/api/play/{sid}/end", play_end, methods=["POST"]),
    ]


async def _on_error(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": str(exc)}, status_code=400)


async def _on_model_error(request: Request, exc: Exception) -> Response:
    # The simulator's call failed for good (after retries): the dialogue can go on.
    return JSONResponse({"error": f"the simulator failed: {exc}"}, status_code=502)


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise InputError("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise InputError("the request body must be a JSON object")
    return body


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InputError("expected a number") from None


def _session(state: State, request: Request) -> PlaySession:
    session = state.sessions.get(str(request.path_params["sid"]))
    if session is None:
        raise InputError("no such dialogue")
    return session
