"""The scripted control agents: they keep to their script in a real arena run."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.arena.scripted import Dismissive, Supportive
from cogwm.models import unregister_fake
from cogwm.store import RunStore
from helpers_arena import FAKE_NAME, Script, config, register

#: Words of sympathy or validation; a dismissive line has none of them.
SYMPATHY = re.compile(r"\b(sorry|hard|understand|feel|coping|support|help)\w*", re.IGNORECASE)


@pytest.fixture(autouse=True)
def _fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Script]:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    yield register(Script())
    unregister_fake(FAKE_NAME)


def test_the_scripts_say_what_their_names_say() -> None:
    assert Dismissive.lines and Supportive.lines
    assert not any(SYMPATHY.search(line) for line in Dismissive.lines)
    assert all(SYMPATHY.search(line) and line.endswith("?") for line in Supportive.lines)


def test_both_scripts_play_a_whole_arena_run_and_replay_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = config(
        tasks=["ESC"],
        dialogues_per_task=2,
        agents=[
            {"name": "supportive", "python": "cogwm.arena.scripted:Supportive"},
            {"name": "dismissive", "python": "cogwm.arena.scripted:Dismissive"},
        ],
    )

    def replies(db: Path) -> dict[tuple[str, str], list[str]]:
        monkeypatch.setenv("COGWM_CACHE_DIR", str(db.with_suffix(".cache")))  # nothing replayed
        with RunStore(db) as store:
            asyncio.run(run_arena(parse_config(raw), store, show_progress=False))
            said: dict[tuple[str, str], list[str]] = {}
            for conversation in store.conversations():
                assert conversation.status == "finished"
                said[(conversation.agent, conversation.scenario)] = [
                    t.text
                    for t in store.turns(conversation.id)
                    if t.role == "agent" and t.phase == "simulated"
                ]
        return said

    first = replies(tmp_path / "a.sqlite")
    assert len(first) == 4 and all(first.values())
    for (agent, _), lines in first.items():
        script = Supportive.lines if agent == "supportive" else Dismissive.lines
        assert set(lines) <= set(script)
    # No model and no randomness of its own: a second run says the same (fresh store and cache).
    assert replies(tmp_path / "b.sqlite") == first
