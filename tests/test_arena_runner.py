"""The runner and its store: every unit once, resume, failures, forced config changes, shards,
seeds independent of scheduling, and no API key in the store."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cogwm import tasks
from cogwm.arena.budget import Budget
from cogwm.arena.config import parse_config
from cogwm.arena.provenance import git_revision
from cogwm.arena.runner import RunSummary, run_arena
from cogwm.arena.units import Shard
from cogwm.errors import ConfigError
from cogwm.models import unregister_fake
from cogwm.models.types import Message, Sampling
from cogwm.report import build_report, load_run
from cogwm.store import RunStore, merge_stores
from helpers_arena import FAKE_NAME, Script, config, make_reply, register, run_recording

# 2 tasks x 2 scenarios x (warm: no_cot + cot, cold: no_cot) = 12 units.
UNITS = 12


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def script() -> Iterator[Script]:
    yield register(Script())
    unregister_fake(FAKE_NAME)


def _run(db: Path, raw: dict[str, Any] | None = None, **kwargs: Any) -> RunSummary:
    with RunStore(db) as store:
        return asyncio.run(
            run_arena(parse_config(raw or config()), store, show_progress=False, **kwargs)
        )


def _snapshot(db: Path) -> dict[str, Any]:
    """Per unit: status, termination, turns (text and state) and metrics."""
    with RunStore(db) as store:
        run = store.run()
        assert run is not None
        metrics = store.metrics(run.id)
        return {
            c.unit_key: (
                c.status,
                c.termination,
                [(t.idx, t.role, t.text, t.state_json) for t in store.turns(c.id)],
                metrics.get(c.id),
            )
            for c in store.conversations(run.id)
        }


def test_a_run_stores_every_unit_once(tmp_path: Path, script: Script) -> None:
    db = tmp_path / "runs.sqlite"
    summary = _run(db)
    assert (summary.planned, summary.finished, summary.failed, summary.skipped) == (
        UNITS,
        UNITS,
        0,
        0,
    )
    snap = _snapshot(db)
    assert len(snap) == UNITS
    for status, termination, turns, metrics in snap.values():
        assert status == "finished" and termination == "max_rounds"
        assert [t[0] for t in turns] == list(range(len(turns)))
        assert metrics is not None and metrics["n"] == 5.0  # initial state + 4 simulated turns
        assert set(metrics) >= {"cts", "auc", "delta", "psr", "mono", "nz", "go"}
    # The opening is read once per scenario and shared by every agent on it.
    assert script.calls["opening"] == 4
    with RunStore(db) as store:
        run = store.run()
        assert run is not None and run.git_revision == git_revision()
        assert '"cogwm"' in run.packages_json and run.prompts_json.count('"id"') >= 8
        preps = store.preps(run.id)
        assert len(preps) == 4
        assert all(p.profile_source == "scenario" for p in preps.values())


def test_rerunning_needs_resume_and_resume_skips_finished(tmp_path: Path, script: Script) -> None:
    db = tmp_path / "runs.sqlite"
    _run(db)
    with pytest.raises(ConfigError, match="--resume"):
        _run(db)
    calls_before = sum(script.calls.values())
    summary = _run(db, resume=True)
    assert (summary.skipped, summary.finished) == (UNITS, 0)
    assert sum(script.calls.values()) == calls_before


def test_failed_conversations_are_counted_excluded_and_rerun(
    tmp_path: Path, script: Script
) -> None:
    db = tmp_path / "runs.sqlite"
    script.fail_when = "Eight years there"  # the cold start of builtin:esc-01
    summary = _run(db)
    failed = {k for k, v in _snapshot(db).items() if v[0] == "failed"}
    assert summary.failed == len(failed) == 3  # the three arms on esc-01
    assert all(_snapshot(db)[k][1] == "error" for k in failed)
    with RunStore(db) as store:
        data = load_run(store)
    report = build_report(data, n_resamples=50)
    assert report.errors == 3 and report.finished == UNITS - 3
    assert sum(row.errors for row in report.arms) == 3
    script.fail_when = None
    summary = _run(db, resume=True)
    assert (summary.finished, summary.skipped) == (3, UNITS - 3)
    snap = _snapshot(db)
    assert len(snap) == UNITS and all(v[0] == "finished" for v in snap.values())


def test_changed_config_is_refused_unless_forced(tmp_path: Path, script: Script) -> None:
    db = tmp_path / "runs.sqlite"
    _run(db)
    _run(db, config(concurrency=1), resume=True)  # concurrency is not part of the hash
    changed = config(seed=12)
    with pytest.raises(ConfigError, match="config changed"):
        _run(db, changed, resume=True)
    summary = _run(db, changed, resume=True, force=True)
    assert summary.planned == UNITS
    with RunStore(db) as store:
        run = store.run()
        assert run is not None and '"seed": 12' in run.config_json


def _fresh_cache(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """A reply cache of its own, so equal results are never cache replay."""
    monkeypatch.setenv("COGWM_CACHE_DIR", str(folder))


def test_results_do_not_depend_on_concurrency(
    tmp_path: Path, script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fresh_cache(monkeypatch, tmp_path / "cache-a")
    _run(tmp_path / "a.sqlite", config(concurrency=1))
    _fresh_cache(monkeypatch, tmp_path / "cache-b")
    _run(tmp_path / "b.sqlite", config(concurrency=12))
    with RunStore(tmp_path / "b.sqlite") as store:
        assert store.call_totals().calls > 0
        cached = store.db.execute("SELECT COUNT(*) FROM model_calls WHERE cached = 1").fetchone()
    assert cached[0] == 0  # every reply was produced again, none replayed
    assert _snapshot(tmp_path / "a.sqlite") == _snapshot(tmp_path / "b.sqlite")


def test_the_seed_decides_the_conversations(
    tmp_path: Path, script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Catches: a fake that ignores the seed makes every seed test pass vacuously.
    _fresh_cache(monkeypatch, tmp_path / "cache-a")
    _run(tmp_path / "a.sqlite", config(seed=11))
    _fresh_cache(monkeypatch, tmp_path / "cache-b")
    _run(tmp_path / "b.sqlite", config(seed=12))
    a, b = _snapshot(tmp_path / "a.sqlite"), _snapshot(tmp_path / "b.sqlite")
    assert a.keys() == b.keys()
    assert all(a[k][2] != b[k][2] for k in a)  # every conversation's turns differ


def test_shards_merge_into_the_full_run(tmp_path: Path, script: Script) -> None:
    _run(tmp_path / "full.sqlite")
    shards = [tmp_path / f"s{i}.sqlite" for i in (1, 2, 3)]
    for i, path in enumerate(shards, start=1):
        summary = _run(path, shard=Shard(i, 3))
        assert summary.planned == UNITS // 3
    with pytest.raises(ConfigError, match="--shard"):
        _run(shards[0], shard=Shard(2, 3), resume=True)
    merged = tmp_path / "merged.sqlite"
    result = merge_stores(merged, shards)
    assert (result.conversations, result.duplicates, result.unfinished) == (UNITS, 0, 0)
    assert _snapshot(merged) == _snapshot(tmp_path / "full.sqlite")
    with RunStore(merged) as store:
        run = store.run()
        assert run is not None and run.shard is None
        assert len(store.preps(run.id)) == 4


def test_merge_refuses_different_configs(tmp_path: Path, script: Script) -> None:
    _run(tmp_path / "a.sqlite", shard=Shard(1, 2))
    _run(tmp_path / "b.sqlite", config(seed=99), shard=Shard(2, 2))
    with pytest.raises(ConfigError, match="different configs"):
        merge_stores(tmp_path / "m.sqlite", [tmp_path / "a.sqlite", tmp_path / "b.sqlite"])
    assert not (tmp_path / "m.sqlite").exists()


def test_shard_parsing() -> None:
    assert Shard.parse("2/4") == Shard(2, 4)
    for bad in ("0/4", "5/4", "2", "a/b"):
        with pytest.raises(ConfigError, match="--shard"):
            Shard.parse(bad)


def test_api_keys_never_reach_the_store(
    tmp_path: Path, script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("COGWM_API_KEY", secret)
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    db = tmp_path / "runs.sqlite"
    _run(db)
    with sqlite3.connect(db) as raw:
        raw.execute("PRAGMA wal_checkpoint(FULL)")
    for path in tmp_path.glob("runs.sqlite*"):
        assert secret.encode() not in path.read_bytes()


def test_profile_annotator_is_used_when_asked(
    tmp_path: Path, script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogwm.arena.scenarios import Scenario, builtin_scenarios

    # Built-in scenarios carry profiles; without one the runner annotates or uses the default.
    bare = [s.model_copy(update={"profile": None}) for s in builtin_scenarios("ESC")[:2]]

    def no_profile(task: Any, count: int, source: Any, **_: Any) -> list[Scenario]:
        return bare[:count]

    monkeypatch.setattr("cogwm.arena.units.select_scenarios", no_profile)
    _run(tmp_path / "a.sqlite", config(tasks=["ESC"], annotate_profiles=True))
    _run(tmp_path / "n.sqlite", config(tasks=["ESC"]))
    for name, source in (("a.sqlite", "annotator"), ("n.sqlite", "default")):
        with RunStore(tmp_path / name) as store:
            assert {c.profile_source for c in store.conversations()} == {source}
    assert script.calls["profile"] == 2


def _with(raw: dict[str, Any], section: str, **changes: Any) -> dict[str, Any]:
    """``raw`` with ``changes`` applied to the simulator (``section="simulator"``) or an agent."""
    if section == "simulator":
        raw["simulator"] = {**raw["simulator"], **changes}
    else:
        raw["agents"] = [{**a, **changes} if a["name"] == section else a for a in raw["agents"]]
    return raw


def test_forced_config_change_reruns_exactly_the_units_it_changes(
    tmp_path: Path, script: Script
) -> None:
    # Catches: --force kept every finished unit (matched on task|scenario|agent|condition) and
    # reused the stored preparations, so old conversations counted under the new config.
    db = tmp_path / "runs.sqlite"
    _run(db)
    cold = _with(config(), "cold", temperature=0.1)  # 'cold' has 4 units (one condition)
    summary = _run(db, cold, resume=True, force=True)
    assert (summary.finished, summary.skipped) == (4, UNITS - 4)
    assert summary.stale == 4
    assert script.calls["opening"] == 4  # the preparations did not change: reused
    hotter = _with(cold, "simulator", temperature=0.9)
    summary = _run(db, hotter, resume=True, force=True)
    assert (summary.finished, summary.skipped, summary.stale) == (UNITS, 0, UNITS)
    assert script.calls["opening"] == 8  # every preparation was made again
    summary = _run(db, hotter, resume=True)  # now everything is current
    assert (summary.finished, summary.skipped) == (0, UNITS)
    with RunStore(db) as store:
        rows = store.conversations()
        assert len(rows) == UNITS and all(r.digest and r.status == "finished" for r in rows)
        assert len({r.digest for r in rows}) == UNITS


def test_an_unexpected_exception_fails_only_its_conversations(
    tmp_path: Path, script: Script
) -> None:
    # Catches: an exception other than ModelCallError/CogwmError escaped the unit and the task
    # group cancelled the whole batch.
    db = tmp_path / "runs.sqlite"
    script.raise_when = "Eight years there"  # the cold start of builtin:esc-01
    summary = _run(db)
    assert (summary.failed, summary.finished) == (3, UNITS - 3)
    with RunStore(db) as store:
        failed = [c for c in store.conversations() if c.status == "failed"]
    assert len(failed) == 3
    assert all(c.error == "RuntimeError: scripted backend bug" for c in failed)
    assert {c.failure_kind for c in failed} == {"infrastructure"}
    script.raise_when = None
    summary = _run(db, resume=True)
    assert (summary.finished, summary.skipped) == (3, UNITS - 3)


def test_a_store_error_inside_a_unit_fails_only_its_conversations(
    tmp_path: Path, script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = RunStore.add_turns
    broken: list[int] = []

    def flaky(self: RunStore, rows: list[Any]) -> None:
        if any(r.phase == "simulated" for r in rows) and not broken:
            broken.extend(sorted({r.conversation_id for r in rows}))
            raise sqlite3.OperationalError("disk I/O error")
        original(self, rows)

    monkeypatch.setattr(RunStore, "add_turns", flaky)
    db = tmp_path / "runs.sqlite"
    summary = _run(db)
    # The conversations of the one failed group commit fail; every other one finishes.
    assert (summary.failed, summary.finished) == (len(broken), UNITS - len(broken))
    with RunStore(db) as store:
        failed = [c for c in store.conversations() if c.status == "failed"]
    assert sorted(c.id for c in failed) == broken
    assert all(c.error == "OperationalError: disk I/O error" for c in failed)
    summary = _run(db, resume=True)
    assert (summary.finished, summary.skipped) == (len(broken), UNITS - len(broken))


def test_cancellation_is_never_swallowed(tmp_path: Path, script: Script) -> None:
    from cogwm.arena.progress import RunProgress
    from cogwm.arena.runner import ArenaRunner, open_run
    from cogwm.arena.scenarios import builtin_scenarios
    from cogwm.arena.termination import Condition
    from cogwm.arena.units import Unit

    cfg = parse_config(config())
    unit = Unit("ESC", builtin_scenarios("ESC")[0], cfg.agents[0], Condition.NO_COT)

    async def cancelled_midway() -> None:
        with RunStore(tmp_path / "runs.sqlite") as store:
            opened = open_run(cfg, store, resume=False, force=False, shard=None)
            runner = ArenaRunner(cfg, store, opened.id, RunProgress(1, enabled=False))

            async def cancel(*_: Any, **__: Any) -> Any:
                raise asyncio.CancelledError

            runner._converse = cancel  # type: ignore[method-assign]
            await runner.run_unit(unit)

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled_midway())


def test_an_agent_that_breaks_its_format_is_scored_and_counted_against_it(
    tmp_path: Path, script: Script
) -> None:
    # Catches: an invalid CoT reply made the conversation an infrastructure error, dropped from
    # the ranking, which biased cot against no_cot.
    db = tmp_path / "runs.sqlite"
    script.cot_invalid_from = 2  # the second simulated round
    summary = _run(db)
    assert (summary.finished, summary.failed) == (UNITS, 0)
    with RunStore(db) as store:
        rows = store.conversations()
        data = load_run(store)
    cot = [r for r in rows if r.condition == "cot"]
    assert len(cot) == 4
    for row in cot:
        assert (row.status, row.termination, row.failure_kind) == (
            "finished",
            "agent_failure",
            "agent",
        )
        assert row.rounds == 3 and row.error and "agent output" in row.error
    assert all(r.failure_kind is None for r in rows if r.condition == "no_cot")
    report = build_report(data, n_resamples=20)
    by_arm = {row.arm: row for row in report.arms}
    assert (by_arm["warm/cot"].n, by_arm["warm/cot"].agent_failures) == (4, 4)
    assert by_arm["warm/cot"].errors == 0 and by_arm["warm/no_cot"].agent_failures == 0
    assert report.agent_failures == 4 and report.errors == 0
    assert by_arm["warm/cot"].cells["cts"] is not None  # scored, not dropped


def _simulator_seeds(raw: dict[str, Any], db: Path) -> set[int]:
    """The distinct seeds of the simulated user's turn calls in a run of ``raw``."""
    _, requests = run_recording(db, raw)
    return {
        r.sampling.seed or 0
        for r in requests
        if "Give your new state and your reply." in r.messages[-1].content
    }


def test_every_agent_meets_the_same_user_draws(tmp_path: Path, script: Script) -> None:
    # Catches: the simulated user's seed was derived from the agent's unit seed, so agents
    # met different user draws and paired differences carried that noise.
    from cogwm.arena.scenarios import builtin_scenarios
    from cogwm.arena.termination import Condition
    from cogwm.arena.units import Unit

    cfg = parse_config(config(trials=3))
    scenario = builtin_scenarios("ESC")[0]
    warm, cold = cfg.agents
    units = [
        Unit("ESC", scenario, agent, condition, trial)
        for trial in range(3)
        for agent, condition in (
            (warm, Condition.NO_COT),
            (warm, Condition.COT),
            (cold, Condition.NO_COT),
        )
    ]
    users = {(u.trial, u.seeds(cfg)[1]) for u in units}
    assert len(users) == 3  # one user seed per trial, shared by the three arms
    agents = {u.seeds(cfg)[0] for u in units}
    assert len(agents) == 9  # the agents' own seeds all differ
    unpaired = parse_config(config(trials=3, paired_seeds=False))
    assert all(u.seeds(unpaired)[1] == u.seeds(unpaired)[0] for u in units)
    # In a run, the simulator's call at a round carries the same seed for every arm: 4
    # scenarios x 4 simulated rounds x 1 trial seeds, against 12 units x 4 rounds unpaired.
    assert len(_simulator_seeds(config(), tmp_path / "p.sqlite")) == 4 * 4
    assert len(_simulator_seeds(config(paired_seeds=False), tmp_path / "u.sqlite")) == 12 * 4
    summary = _run(tmp_path / "runs.sqlite", config(trials=2))
    assert summary.planned == 2 * UNITS and summary.finished == 2 * UNITS
    with RunStore(tmp_path / "runs.sqlite") as store:
        keys = [c.unit_key for c in store.conversations()]
        assert len(set(keys)) == 2 * UNITS
        assert {c.trial for c in store.conversations()} == {0, 1}
        data = load_run(store)
    report = build_report(data, n_resamples=20)
    for row in report.arms:
        assert row.go_pass_k is not None and (row.go_pass_k.k, row.go_pass_k.scenarios) == (2, 4)


class _EchoingArena(BaseHTTPRequestHandler):
    """An OpenAI-compatible server playing every arena role that echoes the caller's key back:
    in a header of every reply and in the error body of the calls it fails (one scenario's)."""

    answer = staticmethod(make_reply(Script()))

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        auth = self.headers.get("Authorization", "")
        messages = [Message(role=m["role"], content=m["content"]) for m in body["messages"]]
        if any("Eight years there" in m.content for m in messages):  # builtin:esc-01
            self._send(500, {"error": {"message": f"upstream failed for {auth}"}}, auth)
            return
        text = self.answer(messages, Sampling(seed=body.get("seed")))
        choice = {"index": 0, "message": {"role": "assistant", "content": text}}
        usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
        completion = {"id": "x", "object": "chat.completion", "created": 0, "model": "m"}
        self._send(
            200,
            {**completion, "choices": [{**choice, "finish_reason": "stop"}], "usage": usage},
            auth,
        )

    def _send(self, status: int, body: dict[str, Any], auth: str) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Echo", auth)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return


def test_api_keys_never_reach_the_store_through_the_openai_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Catches what the fake-backend test cannot: the fake never sees a key. Here a real client
    # sends it and the server echoes it into headers and error bodies.
    secret = "sk-test-ECHOED-0123456789abcdef"
    monkeypatch.setenv("COGWM_API_KEY", secret)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingArena)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        options = {"base_url": url, "modes": ["json_schema"], "logprobs": False, "max_attempts": 1}
        raw = config(model_name="unused")
        raw["simulator"] = {"model": "openai:m", "options": options}
        raw["agents"] = [{**a, "model": "openai:m", "options": options} for a in raw["agents"]]
        db = tmp_path / "runs.sqlite"
        summary = _run(db, raw)
    finally:
        server.shutdown()
        server.server_close()
    assert summary.finished == UNITS - 3 and summary.failed == 3  # the server really answered
    with RunStore(db) as store:
        errors = [c.error or "" for c in store.conversations() if c.status == "failed"]
        calls = store.db.execute("SELECT error FROM model_calls WHERE ok = 0").fetchall()
    assert errors and all("***" in e for e in errors)  # the echoed key was scrubbed
    assert calls and all(secret not in (e or "") for (e,) in calls)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(FULL)")
    for path in [*tmp_path.glob("runs.sqlite*"), *tmp_path.rglob("*.sqlite*")]:
        assert secret.encode() not in path.read_bytes(), path


def test_a_second_writer_on_a_live_store_is_refused(tmp_path: Path, script: Script) -> None:
    # Catches: two processes writing one store interleaved their conversations silently.
    from cogwm.store import StoreBusyError

    db = tmp_path / "runs.sqlite"
    holder = RunStore(db)
    holder.acquire_lease()  # a live writer (this very process, another connection)
    with pytest.raises(StoreBusyError, match="being written by another cogwm process"):
        _run(db)
    holder.close()  # gives the lease up
    assert _run(db).finished == UNITS


def test_a_stale_lease_is_taken_over(tmp_path: Path, script: Script) -> None:
    import os
    import socket
    import subprocess
    import sys
    import time

    db = tmp_path / "runs.sqlite"
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = int(done.stdout)  # a process of this host that has exited (as after kill -9)
    stale = [
        ("dead", dead, socket.gethostname(), time.time()),
        ("silent", os.getpid(), "elsewhere", time.time() - 120),  # no heartbeat for 2 min
    ]
    for owner, pid, host, beat in stale:
        with RunStore(db) as store:
            store.db.execute(
                "INSERT OR REPLACE INTO lease VALUES (1, ?, ?, ?, ?, ?)",
                (owner, pid, host, beat, beat),
            )
        summary = _run(db, resume=owner != "dead")
        assert summary.planned == UNITS
        with RunStore(db) as store:
            assert store.db.execute("SELECT COUNT(*) FROM lease").fetchone()[0] == 0


def test_the_scenario_of_the_unit_a_slot_ahead_is_prepared_as_a_unit_starts() -> None:
    # Catches: a scenario was prepared only once its first unit started. Units come scenario by
    # scenario, so whenever the run reached new scenarios every slot waited for a preparation
    # (a model call): about 5% of the wall time with 100 in flight on a 50 ms model.
    from cogwm.arena.runner import _run_all

    events: list[tuple[str, int]] = []

    class Runner:
        def prepare_ahead(self, unit: int) -> None:
            events.append(("prepare", unit))

        async def run_unit(self, unit: int) -> bool:
            events.append(("start", unit))
            await asyncio.sleep(0)
            return True

    asyncio.run(_run_all(Runner(), list(range(5)), concurrency=2))  # type: ignore[arg-type]
    prepared = [u for kind, u in events if kind == "prepare"]
    assert prepared == [2, 3, 4]  # never beyond the last unit
    for unit in prepared:
        # Asked for when the unit two places before it took its slot, before that one began.
        assert events.index(("prepare", unit)) < events.index(("start", unit - 2))
    # Under a spending cap nothing is spent ahead: it could take what the units in flight need.
    events.clear()
    capped = Budget(max_tokens_total=10**9)
    asyncio.run(_run_all(Runner(), list(range(5)), concurrency=2, budget=capped))  # type: ignore[arg-type]
    assert [kind for kind, _ in events] == ["start"] * 5


def test_a_preparation_made_ahead_for_a_unit_that_never_starts_is_stopped(tmp_path: Path) -> None:
    from cogwm.arena.progress import RunProgress
    from cogwm.arena.runner import ArenaRunner, open_run
    from cogwm.arena.scenarios import builtin_scenarios
    from cogwm.arena.termination import Condition
    from cogwm.arena.units import Unit

    register(Script(), name="slow-prep", latency_s=30.0)
    cfg = parse_config(config(model_name="slow-prep"))
    unit = Unit("ESC", builtin_scenarios("ESC")[1], cfg.agents[0], Condition.NO_COT)

    async def ahead_then_close() -> bool:
        with RunStore(tmp_path / "runs.sqlite") as store:
            opened = open_run(cfg, store, resume=False, force=False, shard=None)
            runner = ArenaRunner(cfg, store, opened.id, RunProgress(1, enabled=False))
            runner.prepare_ahead(unit)  # e.g. a budget stopped the run before the unit started
            prep = runner.prep(tasks.get("ESC"), unit.scenario)
            await asyncio.sleep(0.05)
            await asyncio.wait_for(runner.aclose(), 5)  # not 30 s
            # Stopped before the models close and the store is released, not left running.
            return prep.cancelled()

    try:
        assert asyncio.run(ahead_then_close())
    finally:
        unregister_fake("slow-prep")


def _traced_run(db: Path, raw: dict[str, Any]) -> tuple[RunSummary, list[str]]:
    """Run ``raw`` into ``db``; the summary and every SQL statement the store executed."""
    with RunStore(db) as store:
        statements: list[str] = []
        store.db.set_trace_callback(statements.append)
        summary = asyncio.run(run_arena(parse_config(raw), store, show_progress=False))
        store.db.set_trace_callback(None)
    return summary, statements


def test_a_conversations_profile_source_is_committed_with_its_cold_start_turns(
    tmp_path: Path, script: Script
) -> None:
    # Catches: the profile's source took a group commit of its own between the conversation's
    # start and its cold-start turns, one more wait per conversation before its first call.
    raw = config(tasks=["ESC"], dialogues_per_task=1, agents=config()["agents"][1:])
    _, statements = _traced_run(tmp_path / "runs.sqlite", raw)
    source = next(i for i, s in enumerate(statements) if "SET profile_source" in s)
    begin = max(i for i, s in enumerate(statements[:source]) if s.startswith("BEGIN"))
    commit = source + next(i for i, s in enumerate(statements[source:]) if s == "COMMIT")
    assert any(s.startswith("INSERT INTO turns") for s in statements[begin:commit])
    assert not any(s.startswith("INSERT INTO turns") for s in statements[:begin])


def test_conversations_that_end_together_are_finished_in_one_group_commit(
    tmp_path: Path, script: Script
) -> None:
    # Catches: each finished conversation took a transaction of its own on the event loop, so a
    # batch ending together (as 1,000 in flight do) waited for them one after another.
    summary, statements = _traced_run(tmp_path / "runs.sqlite", config(concurrency=UNITS))
    assert summary.finished == UNITS
    finishes_per_commit, finishes = [], 0
    for sql in statements:
        finishes += sql.startswith("UPDATE conversations SET status")
        if sql == "COMMIT" and finishes:
            finishes_per_commit.append(finishes)
            finishes = 0
    assert sum(finishes_per_commit) == UNITS
    assert len(finishes_per_commit) < UNITS
