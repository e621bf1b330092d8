"""Every count a config or a command line gives has a documented upper bound: above it, one line
naming the key and the bound (exit 2), before anything is planned or run. And the dry run's plan
of a long conversation costs time linear in its rounds."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from cogwm import limits
from cogwm.arena.budget import estimate
from cogwm.arena.config import parse_config
from cogwm.arena.runner import planned_units
from cogwm.errors import ConfigError
from test_fail_loudly_cli import ARENA, _items, one_error

pytestmark = pytest.mark.usefixtures("fake_arena_models")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_task"
HUGE = 9223372036854775807


def _never_serve(*args: object, **kwargs: object) -> None:
    raise AssertionError("serve started with a count above its bound")


def _raw(**top: Any) -> dict[str, Any]:
    raw = tomllib.loads(ARENA.format(agent="fake:arena-script"))
    raw.update(top)
    return raw


@pytest.mark.parametrize(
    ("change", "key", "bound"),
    [
        ({"max_rounds": HUGE}, "max_rounds", limits.MAX_ROUNDS),
        ({"intent_from_round": HUGE}, "intent_from_round", limits.MAX_ROUNDS),
        ({"dialogues_per_task": HUGE}, "dialogues_per_task", limits.MAX_DIALOGUES_PER_TASK),
        ({"trials": 10**6}, "trials", limits.MAX_TRIALS),
        ({"concurrency": 10**6}, "concurrency", limits.MAX_CONCURRENCY),
        ({"history_turns": HUGE}, "history_turns", limits.MAX_HISTORY_TURNS),
        (
            {"simulator": {"model": "fake:arena-script", "max_tokens": HUGE}},
            "simulator.max_tokens",
            limits.MAX_REPLY_TOKENS,
        ),
        (
            {"judge": {"model": "fake:arena-script", "max_tokens": HUGE}},
            "judge.max_tokens",
            limits.MAX_REPLY_TOKENS,
        ),
        (
            {"simulator": {"model": "fake:arena-script", "context_tokens": HUGE}},
            "simulator.context_tokens",
            limits.MAX_CONTEXT_TOKENS,
        ),
    ],
)
def test_a_count_above_its_bound_is_one_line_naming_key_and_bound(
    change: dict[str, Any], key: str, bound: int
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(_raw(**change), source="a.toml")
    message = str(caught.value)
    assert message.startswith(f"a.toml: {key}: ") and "\n" not in message
    assert f"{bound}" in message


@pytest.mark.parametrize(
    ("key", "bound"),
    [
        ("max_tokens", limits.MAX_REPLY_TOKENS),
        ("reasoning_max_tokens", limits.MAX_REPLY_TOKENS),
        ("history_turns", limits.MAX_HISTORY_TURNS),
        ("context_tokens", limits.MAX_CONTEXT_TOKENS),
    ],
)
def test_agent_counts_are_bounded_too(key: str, bound: int) -> None:
    raw = _raw()
    raw["agents"][0][key] = bound + 1
    with pytest.raises(ConfigError, match=rf"agents\.0\.{key}: .*{bound}"):
        parse_config(raw)
    raw["agents"][0][key] = bound  # the bound itself is allowed
    raw["agents"][0]["context_tokens"] = limits.MAX_CONTEXT_TOKENS
    parse_config(raw)


def test_the_caps_themselves_are_accepted() -> None:
    config = parse_config(
        _raw(max_rounds=limits.MAX_ROUNDS, trials=limits.MAX_TRIALS, concurrency=1024)
    )
    assert config.max_rounds == limits.MAX_ROUNDS


def test_the_plan_of_repeated_trials_is_the_plan_of_one_times_the_trials() -> None:
    one = parse_config(_raw(max_rounds=40, intent_from_round=30))
    many = parse_config(_raw(max_rounds=40, intent_from_round=30, trials=7))
    single, repeated = estimate(one, planned_units(one)), estimate(many, planned_units(many))
    assert repeated.units == 7 * single.units
    assert repeated.preparations == single.preparations  # a scenario is prepared once
    for a, b in zip(single.roles, repeated.roles, strict=True):
        if a.role == "simulator":  # its preparation calls are not repeated
            assert b.calls - single.preparations == 7 * (a.calls - single.preparations)
            continue
        assert (b.calls, b.prompt_tokens, b.completion_tokens) == (
            7 * a.calls,
            7 * a.prompt_tokens,
            7 * a.completion_tokens,
        )


# ------------------------------------------------------------------------------ the commands


def test_arena_dry_run_refuses_an_absurd_max_rounds_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(
        ARENA.format(agent="fake:arena-script").replace("max_rounds = 4", f"max_rounds = {HUGE}")
    )
    line = one_error(capsys, "arena", "run", str(config), "--dry-run")
    assert "max_rounds" in line and f"{limits.MAX_ROUNDS}" in line


@pytest.mark.parametrize(
    ("args", "option", "bound"),
    [
        (["quickstart", "--dialogues"], "--dialogues", limits.MAX_DIALOGUES_PER_TASK),
        (["serve", "--max-rounds"], "--max-rounds", limits.MAX_ROUNDS),
        (
            ["arena", "sensitivity", "--simulator", "fake:x", "--rounds"],
            "--rounds",
            limits.MAX_ROUNDS,
        ),
        (
            ["arena", "sensitivity", "--simulator", "fake:x", "--scenarios"],
            "--scenarios",
            limits.MAX_DIALOGUES_PER_TASK,
        ),
        (
            ["annotate", "run", str(EXAMPLE / "dialogues.jsonl"), "--concurrency"],
            "--concurrency",
            limits.MAX_CONCURRENCY,
        ),
        (["validate", "--resamples"], "--resamples", limits.MAX_RESAMPLES),
        (["arena", "report", "--resamples"], "--resamples", limits.MAX_RESAMPLES),
    ],
)
def test_command_line_counts_are_bounded(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    option: str,
    bound: int,
) -> None:
    monkeypatch.setattr("uvicorn.run", _never_serve)  # a regression must fail, not serve forever
    line = one_error(capsys, *args, str(HUGE))
    assert f"'{option}'" in line and f"less than or equal to {bound}" in line


def test_tom_eval_concurrency_is_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["tom", "eval", str(_items(tmp_path)), "--model", "fake:schema"]
    line = one_error(capsys, *args, "--concurrency", str(HUGE))
    assert "'--concurrency'" in line and f"less than or equal to {limits.MAX_CONCURRENCY}" in line
