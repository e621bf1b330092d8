"""Network preflight: before a command calls models, each distinct ``openai:`` endpoint answers
one cheap request; one that does not is one error line naming the role and address (exit 2),
and ``--no-preflight`` skips the check.

Endpoints are tiny HTTP servers on 127.0.0.1 (up), or a port nobody listens on (down).
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from cogwm.cli.common import EXIT_UNITS_FAILED
from cogwm.errors import ConfigError
from cogwm.models.preflight import ModelUse, check_endpoints
from helpers_agents import serving_handler
from test_fail_loudly_cli import ARENA, _items, cogwm, one_error

pytestmark = pytest.mark.usefixtures("fake_arena_models")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_task"


@contextmanager
def models_server(status: int = 200) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """An endpoint answering ``GET /v1/models`` with ``status``; yields its base URL and the
    (path, Authorization header) of every request it got."""
    seen: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("Authorization", "")))
            body = json.dumps({"object": "list", "data": [{"id": "qwen"}]}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving_handler(Handler) as url:
        yield url, seen


def down_url() -> str:
    """The base URL of a port that was free a moment ago: connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# ------------------------------------------------------------------------------ the check


def test_an_endpoint_that_answers_passes_with_one_request_per_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COGWM_API_KEY", "sk-test")
    with models_server() as (url, seen):
        options = {"base_url": url}
        check_endpoints(
            [
                ModelUse("simulator", "openai:qwen", options),
                ModelUse("judge", "openai:qwen", options),
                ModelUse("agents.warm", "fake:schema"),  # no network for other backends
            ]
        )
    assert seen == [("/v1/models", "Bearer sk-test")]


def test_an_endpoint_that_is_down_is_named_with_its_role_and_address() -> None:
    url = down_url()
    uses = [
        ModelUse("agents.warm", "fake:schema"),
        ModelUse("judge", "openai:qwen", {"base_url": url}),
    ]
    with pytest.raises(ConfigError) as info:
        check_endpoints(uses, timeout_s=2)
    message = str(info.value)
    assert message.startswith(f"judge: model 'openai:qwen': endpoint {url} cannot be reached")
    assert "--no-preflight" in message and "\n" not in message


def test_an_endpoint_that_cannot_be_asked_names_the_role(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_TOKEN", raising=False)
    options = {"base_url": "http://127.0.0.1:9/v1", "headers_env": {"X-Token": "AGENT_TOKEN"}}
    with pytest.raises(ConfigError, match=r"^agents.svc: model 'openai:agent': header 'X-Token'"):
        check_endpoints([ModelUse("agents.svc", "openai:agent", options)])
    with pytest.raises(ConfigError, match=r"^judge: model 'openai:q': base URL .* must start"):
        check_endpoints([ModelUse("judge", "openai:q", {"base_url": "ftp://h/v1"})])


@pytest.mark.parametrize(
    ("status", "problem"),
    [
        (401, "refused the API key (HTTP 401); set $COGWM_API_KEY"),
        (503, "answered HTTP 503"),
        (404, None),
    ],
)
def test_http_answers_that_mean_every_call_would_fail(status: int, problem: str | None) -> None:
    with models_server(status) as (url, _):
        use = ModelUse("simulator", "openai:qwen", {"base_url": url})
        if problem is None:  # a service without a model list still answers: it is up
            check_endpoints([use])
            return
        with pytest.raises(ConfigError, match=re.escape(problem)):
            check_endpoints([use])


def test_a_server_that_accepts_but_never_answers_times_out() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        with pytest.raises(ConfigError, match=r"did not answer within 0.3s"):
            check_endpoints(
                [ModelUse("simulator", "openai:qwen", {"base_url": url})], timeout_s=0.3
            )


# ------------------------------------------------------------------------- the commands


def _arena(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "arena.toml"
    agent = f'openai:qwen"\noptions = {{ base_url = "{url}", max_attempts = 1 }} #'
    config.write_text(ARENA.format(agent=agent))
    return config


def test_arena_run_refuses_an_endpoint_that_is_down_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = down_url()
    config, db = _arena(tmp_path, url), tmp_path / "r.sqlite"
    line = one_error(capsys, "arena", "run", str(config), "--db", str(db), "--no-progress")
    assert line.startswith(f"error: agents.warm: model 'openai:qwen': endpoint {url} cannot")
    assert not db.exists()
    # --no-preflight skips the check: the run starts and its conversations fail
    code = cogwm("arena", "run", str(config), "--db", str(db), "--no-progress", "--no-preflight")
    assert code == EXIT_UNITS_FAILED
    assert "Failed conversations by cause" in capsys.readouterr().err


def test_arena_run_asks_an_endpoint_agent_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = down_url()
    config = tmp_path / "arena.toml"
    text = (
        ARENA.format(agent="fake:arena-script")
        + f'\n[[agents]]\nname = "svc"\nendpoint = "{url}"\n'
    )
    config.write_text(text)
    line = one_error(capsys, "arena", "run", str(config), "--db", str(tmp_path / "r.sqlite"))
    assert line.startswith("error: agents.svc: ") and url in line


def test_arena_run_goes_on_when_the_endpoint_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with models_server() as (url, seen):
        config = _arena(tmp_path, url)
        dry = ["arena", "run", str(config), "--db", str(tmp_path / "r.sqlite"), "--dry-run"]
        assert cogwm(*dry) == 0
        assert seen == []  # a dry run calls nothing, not even the preflight
        code = cogwm(
            "arena", "run", str(config), "--db", str(tmp_path / "r.sqlite"), "--no-progress"
        )
    # the endpoint answers the model list (the preflight passes) but not chat: the run starts
    # and its conversations fail
    assert seen[0][0] == "/v1/models"
    assert code == EXIT_UNITS_FAILED, capsys.readouterr().err


def _tom_build(tmp_path: Path) -> list[str]:
    from helpers_tom import write_annomi

    write_annomi(tmp_path / "data" / "annomi", sessions=1, rounds=4)
    return [
        "tom",
        "build",
        "--corpus",
        "annomi",
        "--data-dir",
        str(tmp_path / "data"),
        "--source",
        "llm",
        "--out",
        str(tmp_path / "llm.jsonl"),
    ]


@pytest.mark.parametrize("command", ["tom eval", "tom build", "annotate run", "validate"])
def test_commands_that_call_models_refuse_an_endpoint_that_is_down(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    url = down_url()
    monkeypatch.setenv("COGWM_BASE_URL", url)
    args = {
        "tom eval": lambda: ["tom", "eval", str(_items(tmp_path)), "--db", str(tmp_path / "t.db")],
        "tom build": lambda: _tom_build(tmp_path),
        "annotate run": lambda: [
            "annotate",
            "run",
            str(EXAMPLE / "dialogues.jsonl"),
            "--task",
            str(EXAMPLE / "task.toml"),
            "--db",
            str(tmp_path / "a.db"),
        ],
        "validate": lambda: ["validate", "--data-dir", str(tmp_path)],
    }[command]()
    line = one_error(capsys, *args, "--model", "openai:qwen")
    assert line.startswith(f"error: --model: model 'openai:qwen': endpoint {url} cannot be")
    written = sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".db", ".jsonl"))
    assert written == (["items.jsonl"] if command == "tom eval" else [])


def test_commands_without_a_base_url_are_refused_before_the_network(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COGWM_BASE_URL", raising=False)
    args = ["tom", "eval", str(_items(tmp_path)), "--db", str(tmp_path / "t.db")]
    line = one_error(capsys, *args, "--model", "openai:qwen")
    assert "--model: model 'openai:qwen' has no base_url" in line and "set --base-url" in line
    line = one_error(capsys, "validate", "--data-dir", str(tmp_path), "--model", "openai:qwen")
    assert "has no base_url" in line and "--base-url" not in line


@pytest.mark.parametrize("command", ["arena run", "tom eval"])
def test_a_backend_that_is_not_installed_is_one_line_before_anything_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    from cogwm.models import registry

    monkeypatch.setattr(registry, "is_installed", lambda module: module != "llama_cpp")
    if command == "arena run":
        config = tmp_path / "arena.toml"
        config.write_text(ARENA.format(agent="llamacpp:smollm2"))
        args = ["arena", "run", str(config), "--db", str(tmp_path / "r.db"), "--no-progress"]
        role = "agents.warm"
    else:
        args = ["tom", "eval", str(_items(tmp_path)), "--db", str(tmp_path / "t.db")]
        args += ["--model", "llamacpp:smollm2"]
        role = "--model"
    line = one_error(capsys, *args)
    assert line.startswith(f"error: {role}: model 'llamacpp:smollm2': the llamacpp backend needs")
    assert "install with: pip install 'cogwm[local]'" in line
    assert not any(p.suffix == ".db" for p in tmp_path.iterdir())
