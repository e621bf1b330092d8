"""Python agents and a scripted OpenAI-compatible agent service for arena agent tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from cogwm.arena.agents import AgentBrief
from cogwm.arena.transcript import ArenaTurn, TurnOutput


class EchoAgent:
    """A synchronous Python agent that repeats the user's last words; records what it saw."""

    version = "echo-2"
    seen: ClassVar[list[tuple[AgentBrief, list[ArenaTurn]]]] = []

    def __init__(self, brief: AgentBrief):
        self.brief = brief

    def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
        EchoAgent.seen.append((self.brief, list(history)))
        return TurnOutput(text=f"I hear you: {history[-1].text}")


class AsyncSilentAgent:
    """An asynchronous Python agent (no brief) that answers with blanks from its second turn."""

    def __init__(self) -> None:
        self.turns = 0

    async def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> str:
        self.turns += 1
        return "tell me more" if self.turns < 2 else "   "


@dataclass
class Service:
    """What the scripted service answers: ``mode`` is ``ok``, ``empty``, ``long`` or ``down``."""

    mode: str = "ok"
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


def _handler(service: Service) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            service.requests.append(body)
            service.headers.append({k.lower(): v for k, v in self.headers.items()})
            if service.mode == "down":
                self._send(503, {"error": {"message": "overloaded"}})
                return
            text = {"ok": f"noted {len(body['messages'])}", "empty": "", "long": "word " * 400}
            tokens = {"ok": 2, "empty": 0, "long": 400}
            self._send(
                200,
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text[service.mode]},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": 5,
                        "completion_tokens": tokens[service.mode],
                        "total_tokens": 5 + tokens[service.mode],
                    },
                },
            )

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def serving(service: Service) -> Iterator[str]:
    """Serve ``service`` on 127.0.0.1 (a free port); yields its base URL (``.../v1``)."""
    with serving_handler(_handler(service)) as url:
        yield url


@contextmanager
def serving_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 (a free port) in a thread; yields its base URL
    (``.../v1``) and stops the server afterwards."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
