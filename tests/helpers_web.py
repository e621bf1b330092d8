"""Stores and page parsing for the web tests: a small arena run on the scripted fake, with a
failed conversation and hostile utterances, and an HTML parser that collects what tests check."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.store import RunStore
from helpers_arena import config
from helpers_cli import cogwm as cogwm  # the web tests take it from here

#: Utterances that must show as text, never as markup.
XSS = ("<script>window.__pwned = 1</script>", '"><img src=x onerror="window.__pwned=2">')


def make_run(path: Path, **overrides: Any) -> Path:
    """An arena run on the scripted fake (three arms, ESC and PD), one conversation failed and
    two utterances replaced by markup."""
    raw = config(**overrides)
    raw["agents"].append(
        {"name": "solver", "model": "fake:arena-script", "prompt": "builtin:solution_first"}
    )
    with RunStore(path) as store:
        asyncio.run(run_arena(parse_config(raw, source="test"), store, show_progress=False))
    db = sqlite3.connect(path)
    with db:
        first = db.execute("SELECT MIN(id) FROM conversations").fetchone()[0]
        db.execute(
            "UPDATE turns SET text = ? WHERE conversation_id = ? AND idx = 2", (XSS[0], first)
        )
        db.execute(
            "UPDATE turns SET text = ? WHERE conversation_id = ? AND idx = 3", (XSS[1], first)
        )
        last = db.execute("SELECT MAX(id) FROM conversations").fetchone()[0]
        db.execute(
            "UPDATE conversations SET status = 'failed', termination = 'error',"
            " error = 'HTTP 500 (scripted)', failure_kind = 'infrastructure' WHERE id = ?",
            (last,),
        )
        # One agent that broke its output format (a finished, scored conversation).
        db.execute(
            "UPDATE conversations SET termination = 'agent_failure', failure_kind = 'agent'"
            " WHERE id = (SELECT MIN(id) FROM conversations WHERE agent = 'cold')"
        )
    db.close()
    return path


class Page(HTMLParser):
    """Every element's tag and attributes, and the text of ``<script>`` elements."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag == "script":
            self._script = dict(attrs)
            self.scripts.append((self._script, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        """Attributes of every ``tag`` element whose attributes include ``attrs``."""
        want = {k.replace("_", "-"): v for k, v in attrs.items()}
        return [
            a for t, a in self.elements if t == tag and all(a.get(k) == v for k, v in want.items())
        ]


#: XML namespaces name, they do not fetch.
NAMESPACES = {"http://www.w3.org/2000/svg"}


def external_references(html: str) -> list[str]:
    """Every http(s) or protocol-relative address in the file, namespaces aside."""
    found = []
    for m in re.finditer(r"""https?://[^\s"'<>)]+|(?<=["'(])//[^\s"'<>)]+""", html):
        if m.group(0) not in NAMESPACES:
            found.append(m.group(0))
    return found


def chromium() -> str:
    """The headless browser the browser tests drive (Debian's chromium)."""
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if Path(candidate).exists():
            return candidate
    raise AssertionError(
        "headless Chromium is missing: install Debian's chromium package (apt-get install chromium)"
    )
