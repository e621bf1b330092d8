"""Spend only what was allowed: ``arena run --dry-run`` plans without running, and
``--max-cost-usd`` / ``--max-tokens-total`` stop a run cleanly so that ``--resume`` continues."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from cogwm.arena.budget import Budget, estimate
from cogwm.arena.config import load_config
from cogwm.arena.runner import planned_units
from cogwm.cli.common import EXIT_BUDGET_REACHED
from cogwm.errors import InputError
from cogwm.models.types import CallRecord
from cogwm.store import RunStore
from test_fail_loudly_cli import ARENA, cogwm, one_error

pytestmark = pytest.mark.usefixtures("fake_arena_models")

PRICES = "options = { cost_per_1k_prompt = 2.0, cost_per_1k_completion = 4.0 }"


def _config(tmp_path: Path, *, priced: bool = False) -> Path:
    # One conversation at a time; no cache, so a second run spends again (cache hits are free).
    text = ARENA.format(agent="fake:arena-script").replace(
        "history_turns = 20", "history_turns = 20\nconcurrency = 1\ncache = false"
    )
    if priced:  # prices on the simulator (its intent detector and judge inherit them)
        text = text.replace(
            'model = "fake:arena-script"\n\n[[agents]]',
            f'model = "fake:arena-script"\n{PRICES}\n\n[[agents]]',
        )
    path = tmp_path / "arena.toml"
    path.write_text(text)
    return path


def _record(tokens: int, *, cost: float = 0.0, cached: bool = False) -> CallRecord:
    return CallRecord(
        call_id="c",
        model="fake:x",
        endpoint=None,
        started_at=0.0,
        latency_s=0.0,
        prompt_tokens=tokens,
        completion_tokens=0,
        cost_usd=cost,
        cached=cached,
        ok=True,
    )


# ------------------------------------------------------------------------------- dry run


def test_dry_run_plans_without_touching_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    assert cogwm("arena", "run", str(_config(tmp_path)), "--db", str(db), "--dry-run") == 0
    out = capsys.readouterr().out
    # 2 conversations of 2 simulated rounds: 2 agent + 2 simulator + 1 intent + 1 judge calls
    # each, and one opening reading per scenario
    assert "2 conversations, 2 scenario preparations: at most 14 model calls" in out
    assert "no prices in the model options" in out
    assert re.search(r"ESC\W+warm/no_cot\W+2\b", out), out  # the planned conversations
    assert not db.exists()


def test_dry_run_prices_the_calls_from_the_model_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, priced=True)
    assert cogwm("arena", "run", str(config), "--db", str(tmp_path / "r.sqlite"), "--dry-run") == 0
    out = capsys.readouterr().out
    plan = estimate(load_config(config), planned_units(load_config(config)))
    user_side = [r for r in plan.roles if not r.role.startswith("agents.")]
    expected = sum(2 * r.prompt_tokens + 4 * r.completion_tokens for r in user_side) / 1000
    assert plan.cost_usd == pytest.approx(expected) and expected > 0
    assert f"cost ${expected:,.4f}" in out
    assert [r.cost_usd for r in plan.roles if r.role.startswith("agents.")] == [None]


def test_the_estimate_bounds_what_a_run_spends(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, priced=True))
    units = planned_units(config)
    plan = estimate(config, units)
    from cogwm.arena.runner import run_arena

    with RunStore(tmp_path / "r.sqlite") as store:
        summary = asyncio.run(run_arena(config, store, show_progress=False))
    # the scripted user never leaves: every conversation runs to max_rounds, so the calls are
    # exactly as planned, and tokens and cost stay under the bound
    assert summary.finished == len(units) == plan.units
    assert summary.calls == plan.calls
    assert 0 < summary.tokens <= plan.tokens
    assert 0 < summary.cost_usd <= (plan.cost_usd or 0)


# ---------------------------------------------------------------------------------- caps


def test_budget_counts_calls_made_and_stops_once() -> None:
    stops: list[int] = []
    budget = Budget(max_tokens_total=100)
    budget.on_reached(lambda: stops.append(1))
    budget.charge(_record(60))
    budget.charge(_record(500, cached=True))  # a cache hit costs nothing
    assert budget.reached is None and budget.tokens == 60
    budget.charge(_record(40))
    budget.charge(_record(40))
    assert budget.reached == "100 tokens spent, --max-tokens-total 100"
    assert stops == [1]
    late: list[int] = []
    budget.on_reached(lambda: late.append(1))  # already reached: stopped at once
    assert late == [1]


def test_budget_caps_must_be_positive() -> None:
    with pytest.raises(InputError, match="--max-cost-usd must be positive"):
        Budget(max_cost_usd=0)
    with pytest.raises(InputError, match="--max-tokens-total must be positive"):
        Budget(max_tokens_total=-5)
    assert not Budget().capped


def _finished(db: Path) -> int:
    with RunStore(db, read_only=True) as store:
        return sum(1 for c in store.conversations() if c.status == "finished")


@pytest.mark.parametrize("cap", ["--max-tokens-total", "--max-cost-usd"])
def test_a_cap_stops_the_run_cleanly_and_resume_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cap: str
) -> None:
    config = _config(tmp_path, priced=True)
    full = tmp_path / "full.sqlite"
    assert cogwm("arena", "run", str(config), "--db", str(full), "--no-progress") == 0
    err = capsys.readouterr().err
    tokens = int(re.search(r"· ([\d,]+) tokens", err).group(1).replace(",", ""))  # type: ignore[union-attr]
    cost = float(re.search(r"tokens · \$([\d.]+)", err).group(1))  # type: ignore[union-attr]
    # a cap a little over one conversation's share: the first finishes, the second is stopped
    value = str(int(tokens * 0.6)) if cap == "--max-tokens-total" else f"{cost * 0.6:.6f}"
    db = tmp_path / "r.sqlite"
    args = ["arena", "run", str(config), "--db", str(db), "--no-progress"]
    assert cogwm(*args, cap, value) == EXIT_BUDGET_REACHED
    err = capsys.readouterr().err
    assert "budget reached" in err and cap in err and f"--resume --db {db}" in err
    assert "stopped with 1 conversations not run or not finished" in err
    assert "Traceback" not in err
    assert _finished(db) == 1
    assert cogwm(*args, "--resume") == 0
    assert _finished(db) == 2


def test_a_bad_cap_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.sqlite"
    args = ["arena", "run", str(_config(tmp_path)), "--db", str(db), "--max-tokens-total", "0"]
    assert "--max-tokens-total must be positive" in one_error(capsys, *args)
    assert not db.exists()


def test_annotate_run_stops_at_the_token_cap_and_resume_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    example = Path(__file__).resolve().parents[1] / "examples" / "custom_task"
    args = ["annotate", "run", str(example / "dialogues.jsonl"), "--task"]
    args += [str(example / "task.toml"), "--model", "fake:schema", "--no-progress", "--limit", "3"]
    assert cogwm(*args, "--db", str(tmp_path / "full.sqlite")) == 0
    err = capsys.readouterr().err
    tokens = int(re.search(r"([\d,]+) tokens", err).group(1).replace(",", ""))  # type: ignore[union-attr]
    db = tmp_path / "a.sqlite"
    code = cogwm(*args, "--db", str(db), "--max-tokens-total", str(tokens // 2))
    err = capsys.readouterr().err
    assert code == EXIT_BUDGET_REACHED and "budget reached" in err and "--resume" in err, err

    def stored() -> int:
        with sqlite3.connect(db) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM dialogues").fetchone()[0])

    assert 0 < stored() < 3
    assert cogwm(*args, "--db", str(db), "--resume") == 0
    assert stored() == 3
