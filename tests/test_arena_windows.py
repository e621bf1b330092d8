"""History windows: the simulator sees its trained window, agents the whole conversation where it
fits their context and else the most turns that fit; the windows enter the digests, and the
report states them beside how many users left early."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cogwm.arena.config import parse_config
from cogwm.arena.digests import Digests
from cogwm.arena.prompts import AGENT_PERSONAS
from cogwm.arena.runner import RunSummary, planned_units
from cogwm.arena.windows import resolve_windows
from cogwm.errors import ConfigError
from cogwm.models.types import Message
from cogwm.report import build_report, load_run, render, to_json
from cogwm.store import RunStore
from helpers_arena import FAKE_NAME, Script, config, register, run_recording
from helpers_cli import cogwm
from test_arena_agents import _isolated_cache, script  # noqa: F401 - the fixtures
from test_fail_loudly_cli import ARENA, one_error

MAX_ROUNDS = 8
SIMULATED = MAX_ROUNDS - 2  # rounds after the two of the cold start
OPENING = 5  # turns of the built-in ESC cold starts
SIMULATOR_ASKS = "Give your new state and your reply."

pytestmark = pytest.mark.usefixtures("script")  # the scripted fake, registered for each test


def _raw(**overrides: Any) -> dict[str, Any]:
    """One ESC scenario, two agents, 8 rounds, no window set anywhere (the new defaults)."""
    raw = config(tasks=["ESC"], dialogues_per_task=1, max_rounds=MAX_ROUNDS, cache=False)
    raw.pop("history_turns")
    raw.update(overrides)
    return raw


def _run(db: Path, raw: dict[str, Any], **kwargs: Any) -> tuple[RunSummary, list[list[Message]]]:
    """Run ``raw``; also the messages of every request the fake models received."""
    summary, requests = run_recording(db, raw, **kwargs)
    return summary, [r.messages for r in requests]


def _simulator_turns_shown(requests: list[list[Message]]) -> list[int]:
    """Simulated turns in each simulated-user prompt (the fake says 'user words' and 'agent
    says'; the built-in openings say neither)."""
    return [
        m[-1].content.count("user words ") + m[-1].content.count("agent says ")
        for m in requests
        if SIMULATOR_ASKS in m[-1].content
    ]


def _agent_turns_shown(requests: list[list[Message]], persona: str) -> list[int]:
    """Turns in each prompt of the agent with this built-in persona (all but the system)."""
    text = AGENT_PERSONAS[persona].text
    return [len(m) - 1 for m in requests if m[0].role == "system" and text in m[0].content]


def _report(db: Path) -> dict[str, Any]:
    with RunStore(db, read_only=True) as store:
        return to_json(build_report(load_run(store), n_resamples=50))


def test_the_simulator_sees_at_most_its_window_and_agents_the_whole_conversation(
    tmp_path: Path,
) -> None:
    # Catches: one history_turns for every model, so the simulator and the agents saw the same
    # window (an agent cut to the simulator's trained 8 turns, or the simulator shown more
    # than it was trained on).
    raw = _raw(simulator={"model": f"fake:{FAKE_NAME}", "history_turns": 4})
    summary, requests = _run(tmp_path / "r.sqlite", raw)
    assert summary.finished == 3 and summary.failed == 0
    shown = _simulator_turns_shown(requests)
    assert shown and max(shown) == 4  # the conversation grew past it: the window held
    # The agent's last call shows the opening and every simulated turn before its reply.
    whole = OPENING + 2 * (SIMULATED - 1)
    assert max(_agent_turns_shown(requests, "dismissive")) == whole
    assert max(_agent_turns_shown(requests, "empathetic")) == whole
    report = _report(tmp_path / "r.sqlite")
    assert report["windows"]["simulator"]["shown"] == "last 4 turns"
    assert report["windows"]["agents"]["cold"]["shown"] == "whole conversation"


def test_a_small_context_forces_a_window_and_the_report_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches: an agent whose model cannot hold the longest conversation was shown all of it
    # (its late calls would overflow the context and fail), or cut without the report saying.
    raw = _raw()
    raw["agents"][1]["context_tokens"] = 600
    db = tmp_path / "r.sqlite"
    _, requests = _run(db, raw)
    window = _report(db)["windows"]["agents"]["cold"]
    turns = window["turns"]
    assert window["chosen"] and 2 <= turns < OPENING + 2 * (SIMULATED - 1)
    assert window["peak_tokens"] <= window["context_tokens"] == 600
    assert max(_agent_turns_shown(requests, "dismissive")) == turns
    # The other agent's context is unknown (the fake): the whole conversation.
    assert _report(db)["windows"]["agents"]["warm"]["shown"] == "whole conversation"
    with RunStore(db, read_only=True) as store:
        render(build_report(load_run(store), n_resamples=50), Console(width=400))
    out = capsys.readouterr().out
    assert f"cold last {turns} turns (the most that fit its context of 600 tokens)" in out
    assert "simulator last 8 turns" in out and "warm whole conversation" in out


def test_a_window_set_beyond_the_context_is_a_config_error() -> None:
    # Catches: a window that cannot fit was used anyway (the late calls overflow the context).
    raw = _raw()
    raw["agents"][1].update(context_tokens=600, history_turns=14)
    with pytest.raises(ConfigError, match=r"agents\.1\.history_turns: 14 turns may need .* 600"):
        resolve_windows(parse_config(raw))
    raw["agents"][1]["context_tokens"] = 100
    raw["agents"][1].pop("history_turns")
    with pytest.raises(ConfigError, match=r"agents\.1 \(cold\): not even 2 turns fit"):
        resolve_windows(parse_config(raw))


def _digests(raw: dict[str, Any]) -> dict[str, str]:
    config = parse_config(raw)
    digests = Digests(config)
    return {u.key: digests.unit(u) for u in planned_units(config)}


def test_a_changed_window_changes_the_unit_digests() -> None:
    # Catches: the digests held one history_turns, so changing a window left finished
    # conversations current and --resume --force reused results made with the old window.
    base = _digests(_raw())
    narrower = _raw()
    narrower["agents"][1]["history_turns"] = 6
    changed = {k for k, v in _digests(narrower).items() if base[k] != v}
    assert changed == {k for k in base if "|cold|" in k}
    simulator = _raw(simulator={"model": f"fake:{FAKE_NAME}", "history_turns": 4})
    assert all(base[k] != v for k, v in _digests(simulator).items())
    # A context that still fits the whole conversation changes no window: no digest.
    roomy = _raw()
    roomy["agents"][1]["context_tokens"] = 100_000
    assert _digests(roomy) == base


def test_the_old_single_window_sets_both_and_keeps_its_digests() -> None:
    # Catches: older configs' top-level history_turns stopped applying to the agents (their
    # stored conversations would be rerun, or compared with runs under other windows).
    old = _raw(history_turns=6)
    config = parse_config(old)
    windows = resolve_windows(config)
    assert windows.simulator.turns == 6
    assert {w.turns for w in windows.agents.values()} == {6}
    both = _raw(simulator={"model": f"fake:{FAKE_NAME}", "history_turns": 6})
    for agent in both["agents"]:
        agent["history_turns"] = 6
    assert _digests(both) == _digests(old)


def test_resume_reruns_exactly_the_units_whose_window_changed(tmp_path: Path) -> None:
    # Catches: a changed agent window resumed without --force, or reran every conversation
    # (or none) instead of that agent's.
    db = tmp_path / "r.sqlite"
    _run(db, _raw())
    narrower = _raw()
    narrower["agents"][1]["history_turns"] = 4
    with pytest.raises(ConfigError, match="config changed"):
        _run(db, narrower, resume=True)
    summary, _ = _run(db, narrower, resume=True, force=True)
    assert (summary.stale, summary.skipped) == (1, 2)


def test_the_report_counts_the_users_who_left_early(tmp_path: Path) -> None:
    # Catches: the report gave no per-agent count of conversations that ended before
    # max_rounds, so a world-model simulator that walks out of most of them looked the same.
    register(Script(leave_at=2))  # in place of the fixture's (which unregisters it after)
    db = tmp_path / "r.sqlite"
    _run(db, _raw())
    arms = {a["arm"]: a for a in _report(db)["agents"]}
    assert {a: (r["left_early"], r["ended_early"]) for a, r in arms.items()} == {
        "warm/no_cot": (1, 0),
        "warm/cot": (1, 0),
        "cold/no_cot": (1, 0),
    }
    assert arms["cold/no_cot"]["endings"] == {"user_left": 1}


@pytest.mark.parametrize("garble", [False, True])
def test_the_report_counts_the_simulated_users_malformed_turns(
    tmp_path: Path, garble: bool
) -> None:
    # Catches: a simulator that writes "{" as its every utterance looked like a fluent one in the
    # report; or the count took in the cold start's turns, which real people said.
    register(Script(garble=garble))
    db = tmp_path / "r.sqlite"
    _run(db, _raw())
    arms = {a["arm"]: a for a in _report(db)["agents"]}
    counts = {a: (r["malformed_user_turns"], r["user_turns"]) for a, r in arms.items()}
    bad = SIMULATED if garble else 0
    assert counts == dict.fromkeys(arms, (bad, SIMULATED))
    console = Console(width=400, record=True)
    with RunStore(db, read_only=True) as store:
        render(build_report(load_run(store), n_resamples=50), console)
    text = console.export_text()
    assert f"{bad}/{SIMULATED}" in text and "Bad/Said" in text


WINDOWED = ARENA.replace("history_turns = 20\n", "") + "context_tokens = {context}\n"


def test_the_dry_run_states_the_windows_and_a_window_that_cannot_fit_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches: the plan was priced with one window for every model and never said which
    # history each agent would be shown; a context too small failed mid-run instead of at once.
    path = tmp_path / "arena.toml"
    path.write_text(WINDOWED.format(agent=f"fake:{FAKE_NAME}", context=100_000))
    assert cogwm("arena", "run", str(path), "--dry-run") == 0
    out = capsys.readouterr().out
    assert "History shown: simulator last 8 turns; warm whole conversation." in out
    path.write_text(WINDOWED.format(agent=f"fake:{FAKE_NAME}", context=100))
    db = tmp_path / "r.sqlite"
    line = one_error(capsys, "arena", "run", str(path), "--db", str(db))
    assert "agents.0 (warm): not even 2 turns fit the context of 100 tokens" in line
    assert not db.exists()


def test_runs_stored_before_the_windows_report_the_one_window_they_used() -> None:
    # Catches: a report of an older run claimed the new defaults (agents shown the whole
    # conversation) for agents that saw the top-level history_turns; Python agents saw it all.
    from cogwm.arena.windows import Windows

    stored = {"history_turns": 20, "agents": [{"name": "a"}, {"name": "p", "python": "m:f"}]}
    windows = Windows.from_stored(stored)
    assert windows.describe() == (
        "History shown: simulator last 20 turns; a last 20 turns; p whole conversation."
    )


def test_a_window_on_a_python_agent_is_a_config_error() -> None:
    # Catches: a window set on a Python agent was accepted and silently did nothing.
    raw = _raw()
    raw["agents"][1] = {"name": "py", "python": "helpers_agents:EchoAgent", "history_turns": 4}
    with pytest.raises(ConfigError, match=r"agents\.1\.history_turns: a python agent is handed"):
        parse_config(raw)
