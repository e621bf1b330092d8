"""Running many conversations from a config, with a store that makes the run resumable.

Three layers (as in tau2-bench): ``Conversation`` plays one conversation of a ``Cast`` (the
participants, made from the config); ``ArenaRunner`` runs each unit's conversation against the
store (scenario preparation, judge verdict, metrics); ``run_arena`` plans the units, checks the
stored run, and runs every unit concurrently under one semaphore (no fixed batches, so one slow
conversation stalls nothing else).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pydantic import Field

from cogwm import tasks
from cogwm.arena.budget import Budget
from cogwm.arena.cast import Cast, Roles
from cogwm.arena.collector import steady_collector
from cogwm.arena.config import ArenaConfig, ModelConfig, ServedModels, config_hash, stored_config
from cogwm.arena.conversation import Conversation, Limits, Outcome
from cogwm.arena.digests import Digests, ask_served_models
from cogwm.arena.opening import Opening
from cogwm.arena.progress import RunProgress
from cogwm.arena.provenance import git_revision, package_versions, simulator_identity
from cogwm.arena.scenarios import Scenario, ScenarioSource, ScenarioSplit
from cogwm.arena.scoring import finished_metrics
from cogwm.arena.termination import Condition, ConversationStatus, FailureOrigin, Termination
from cogwm.arena.transcript import ArenaTurn, UserSetup, derive_seed
from cogwm.arena.units import Shard, Unit, planned_units, shard_units
from cogwm.arena.windows import Windows, resolve_windows
from cogwm.errors import CogwmError, ConfigError
from cogwm.models import Model, load, recording
from cogwm.models.types import CallRecord, ModelCallError
from cogwm.schema import CognitiveState, Profile, Record, TaskSpec
from cogwm.store.db import HEARTBEAT_S, PrepRow, RunRow, RunStore, TurnRow, UnitRow

log = logging.getLogger("cogwm.arena")

T = TypeVar("T")


class RunSummary(Record):
    """What a call of ``run_arena`` did."""

    planned: int = Field(description="Units in this run (or shard).")
    skipped: int = Field(description="Units already finished in the store.")
    stale: int = Field(
        default=0,
        description="Finished units run again because what decides their output changed.",
    )
    finished: int
    failed: int
    interrupted: bool = False
    budget_reached: str | None = Field(
        default=None, description="Why a cap stopped the run (see cogwm.arena.budget)."
    )
    elapsed_s: float
    calls: int
    tokens: int
    cost_usd: float


class Prep(Record):
    """A scenario's preparation: the user's profile and the state read from the opening."""

    profile: Profile
    initial_state: CognitiveState
    call_id: str | None = None


class ArenaRunner:
    """Builds and runs conversations of one config against one store."""

    def __init__(
        self,
        config: ArenaConfig,
        store: RunStore,
        run_id: int,
        progress: RunProgress,
        *,
        load_model: Callable[..., Model] = load,
        digests: Digests | None = None,
        budget: Budget | None = None,
    ):
        self.config = config
        self.budget = budget
        self.digests = digests or Digests(config)
        self.writer = TurnWriter(store)
        self.store = store
        self.run_id = run_id
        self.progress = progress
        self._load_model = load_model
        self._models: dict[str, Model] = {}
        self._by_spec: dict[int, tuple[ModelConfig, Model]] = {}
        self._preps: dict[tuple[str, str], asyncio.Task[Prep]] = {}
        self._stored_preps = store.preps(run_id)
        # Derived once for every cast of the run.
        self.roles = Roles(config, self.digests.windows)
        self.limits = Limits(
            max_rounds=config.max_rounds, intent_from_round=config.intent_from_round
        )

    def model(self, spec: ModelConfig) -> Model:
        """One ``Model`` per distinct address and options (the backend is shared anyway)."""
        known = self._by_spec.get(id(spec))
        if known is not None and known[0] is spec:  # the hot path: the same config object
            return known[1]
        key = json.dumps([spec.model, spec.options], sort_keys=True)
        if key not in self._models:
            # A model's own ``cache`` option wins over the run's setting.
            options = {"cache": self.config.cache, **spec.options}
            self._models[key] = self._load_model(spec.model, **options)
        self._by_spec[id(spec)] = (spec, self._models[key])
        return self._models[key]

    async def aclose(self) -> None:
        """Stop preparations no conversation waits for any more and release model clients."""
        for prep in self._preps.values():
            prep.cancel()  # a no-op on finished ones
        # Also retrieves the failure of one made ahead for a unit that never started.
        await asyncio.gather(*self._preps.values(), return_exceptions=True)
        for model in self._models.values():
            await model.aclose()

    # ------------------------------------------------------------------- scenario preparation

    def prepare_ahead(self, unit: Unit) -> None:
        """Start the preparation of ``unit``'s scenario now, before the unit starts."""
        self.prep(tasks.get(unit.task), unit.scenario)

    def prep(self, task: TaskSpec, scenario: Scenario) -> asyncio.Task[Prep]:
        """The (shared) preparation of a scenario; started once, awaited by every agent on it.

        It runs in a fresh context, so its model calls are not counted to whichever conversation
        happened to start it; they are stored as run-level calls.
        """
        key = (task.name, scenario.id)
        if key not in self._preps:
            self._preps[key] = asyncio.create_task(
                self._prepare(task, scenario), context=contextvars.Context()
            )
        return self._preps[key]

    async def _prepare(self, task: TaskSpec, scenario: Scenario) -> Prep:
        stored = self._stored_preps.get((task.name, scenario.id))
        digest = self.digests.prep(task.name, scenario)
        # A preparation made under other models, prompts or seed is made again, never reused.
        if stored is not None and stored.digest == digest:
            return Prep(
                profile=Profile.model_validate_json(stored.profile_json),
                initial_state=CognitiveState.model_validate_json(stored.initial_state_json),
                call_id=stored.call_id,
            )
        with recording(lambda record: self._on_call(None, record)):
            cast = self._cast(task, scenario)
            opening = await cast.prepare(seed=derive_seed(self.config.seed, task.name, scenario.id))
        profile = opening.setup.profile
        prep = Prep(
            profile=profile, initial_state=opening.initial_state, call_id=opening.reading_call_id
        )
        self.store.add_prep(
            self.run_id,
            PrepRow(
                task.name,
                scenario.id,
                profile.model_dump_json(),
                profile.source,
                prep.initial_state.model_dump_json(),
                prep.call_id,
                digest,
            ),
            replace=True,
        )
        return prep

    def _cast(self, task: TaskSpec, scenario: Scenario, unit: Unit | None = None) -> Cast:
        """The participants of ``unit``'s conversation (without a unit: the user's side)."""
        return Cast.from_config(
            self.config,
            task,
            scenario,
            model=self.model,
            agent=None if unit is None else unit.agent,
            condition=Condition.NO_COT if unit is None else unit.condition,
            roles=self.roles,
        )

    # ------------------------------------------------------------------------ one conversation

    async def run_unit(self, unit: Unit) -> bool:
        """Run one unit to its end and store it; returns False if it ended with an error.

        Whatever goes wrong inside the unit (a model call failing for good, a corrupt cache row,
        a store error, a bug) ends this conversation as failed with its reason; the batch goes
        on. Cancellation is never swallowed.
        """
        task = tasks.get(unit.task)
        # The scenario's (shared) preparation goes on while the start is committed.
        self.prep(task, unit.scenario)
        row = self._unit_row(unit)
        conversation_id = await self.writer.submit(
            lambda: self.store.start_conversation(self.run_id, row)
        )
        with recording(lambda record: self._on_call(conversation_id, record)):
            try:
                return await self._play(unit, task, conversation_id)
            except Exception as exc:  # one bad conversation never ends the batch
                return await self._fail(conversation_id, None, failure_reason(exc))

    async def _play(self, unit: Unit, task: TaskSpec, conversation_id: int) -> bool:
        conversation, outcome = await self._converse(unit, task, conversation_id)
        if outcome.termination is Termination.ERROR:
            return await self._fail(conversation_id, outcome.rounds, outcome.error)
        # GoodOutcome from the judge; undefined (not asked) when the config switches it off.
        verdict = await conversation.judge()
        metrics = finished_metrics(outcome.turns, task)
        metrics["go"] = None if verdict.good is None else float(verdict.good)
        # An agent failure is scored like any ending (the trajectory up to it, the judge's
        # verdict on it), so it counts against the agent instead of dropping out of the ranking.
        agent_failed = outcome.termination is Termination.AGENT_FAILURE
        # In the group commit (atomic in its savepoint): conversations that end together, as a
        # batch's do, no longer take a transaction each on the event loop, one after another.
        await self.writer.submit(
            lambda: self.store.finish_conversation(
                conversation_id,
                status=ConversationStatus.FINISHED,
                termination=outcome.termination,
                rounds=outcome.rounds,
                error=outcome.error,
                failure_kind=FailureOrigin.AGENT if agent_failed else None,
                metrics=metrics,
                details={"go": verdict.detail},
            )
        )
        self.progress.on_conversation(failed=False)
        return True

    async def _converse(
        self, unit: Unit, task: TaskSpec, conversation_id: int
    ) -> tuple[Conversation, Outcome]:
        """Play ``unit``'s conversation to its end, its turns committed as they happen; the
        conversation and how it ended."""
        # Shielded: a cancelled conversation must not cancel a preparation others share.
        prep = await asyncio.shield(self.prep(task, unit.scenario))
        source = prep.profile.source
        # Committed with the cold-start turns and awaited with the first of them (before any
        # model call), not in a group commit of its own.
        sourced = self.writer.submit(lambda: self.store.set_profile_source(conversation_id, source))
        opening = Opening(
            scenario=unit.scenario,
            setup=UserSetup(context=unit.scenario.context, profile=prep.profile),
            initial_state=prep.initial_state,
            reading_call_id=prep.call_id,
        )
        sink = _StoreSink(self.writer, conversation_id, before=sourced)
        agent_seed, user_seed = unit.seeds(self.config)
        conversation = Conversation(
            self._cast(task, unit.scenario, unit),
            self.limits,
            seed=agent_seed,
            user_seed=user_seed,
            sink=sink,
        )
        outcome = await conversation.run(opening)
        await sink.settle()
        return conversation, outcome

    async def _fail(self, conversation_id: int, rounds: int | None, error: str | None) -> bool:
        await self.writer.submit(
            lambda: self.store.finish_conversation(
                conversation_id,
                status=ConversationStatus.FAILED,
                termination=Termination.ERROR,
                rounds=rounds or 0,
                error=error,
                failure_kind=FailureOrigin.INFRASTRUCTURE,
            )
        )
        self.progress.on_conversation(failed=True)
        return False

    def _unit_row(self, unit: Unit) -> UnitRow:
        return UnitRow(
            unit_key=unit.key,
            task=unit.task,
            agent=unit.agent.name,
            condition=unit.condition.value,
            scenario=unit.scenario.id,
            scenario_source=unit.scenario.source,
            agent_model=unit.agent.label(),
            simulator_model=self.config.simulator.label(),
            seed=unit.seed(self.config.seed),
            trial=unit.trial,
            digest=self.digests.unit(unit),
        )

    def _on_call(self, conversation_id: int | None, record: CallRecord) -> None:
        self.store.add_call(self.run_id, conversation_id, record)
        self.progress.on_call(record)
        if self.budget is not None:
            self.budget.charge(record)


def failure_reason(exc: Exception) -> str:
    """A one-line reason for a failed conversation (the type is named unless it is ours)."""
    if isinstance(exc, ModelCallError | CogwmError):
        return str(exc)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


class TurnWriter:
    """Group commit of turns: every turn added during one turn of the event loop is written in
    one transaction at the start of the next, and each adder's future resolves only when that
    transaction has committed. Conversations await their turn's future before their next model
    call, so a killed process still loses at most turns that were never acknowledged.

    Other small writes of a conversation (its start, its profile's source, its finish) join the
    same group commit through ``submit``, each in its own savepoint, so one that fails fails
    alone.

    The commit stays on the event loop on purpose: a writer thread was measured on
    bench/bench_arena.py and gained nothing (a conversation still resumes only at an event-loop
    turn after its commit, and the GIL hand-offs cost CPU); the long stalls were WAL checkpoints,
    which ``RunStore.background_checkpoints`` takes off the loop.
    """

    def __init__(self, store: RunStore):
        self.store = store
        self._rows: list[TurnRow] = []
        self._waiting: list[asyncio.Future[None]] = []
        self._writes: list[tuple[Callable[[], Any], asyncio.Future[Any]]] = []
        self._scheduled = False

    def add(self, row: TurnRow) -> asyncio.Future[None]:
        """Queue one turn; the future resolves when it is committed (or fails with the error)."""
        done: asyncio.Future[None] = self._schedule()
        self._rows.append(row)
        self._waiting.append(done)
        return done

    def submit(self, write: Callable[[], T]) -> asyncio.Future[T]:
        """Run ``write`` (store calls) in the next group commit; the future holds its result once
        that transaction has committed, or the error it raised."""
        done: asyncio.Future[T] = self._schedule()
        self._writes.append((write, done))
        return done

    def _schedule(self) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)
        return loop.create_future()

    def _flush(self) -> None:
        rows, waiting, writes = self._rows, self._waiting, self._writes
        self._rows, self._waiting, self._writes, self._scheduled = [], [], [], False
        results: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        try:
            with self.store.transaction():
                for write, done in writes:
                    results.append((done, *self._one(write)))
                if rows:
                    self.store.add_turns(rows)
        except Exception as exc:  # each conversation in the batch fails with the store's error
            for done in [*waiting, *(done for _, done in writes)]:
                if not done.done():
                    done.set_exception(exc)
            return
        for done, value, error in results:
            if done.done():
                continue
            if error is None:
                done.set_result(value)
            else:
                done.set_exception(error)
        for done in waiting:
            if not done.done():
                done.set_result(None)

    def _one(self, write: Callable[[], Any]) -> tuple[Any, BaseException | None]:
        """One write in its own savepoint: its failure is rolled back and reported to it alone."""
        db = self.store.db
        db.execute("SAVEPOINT cogwm_write")
        try:
            value = write()
        except Exception as exc:
            db.execute("ROLLBACK TO cogwm_write")
            db.execute("RELEASE cogwm_write")
            return None, exc
        db.execute("RELEASE cogwm_write")
        return value, None


class _StoreSink:
    """Sends a conversation's turns to the run's group commit.

    ``before``, a write already queued, is awaited with the first turn (or by ``settle``).
    """

    def __init__(
        self, writer: TurnWriter, conversation_id: int, before: Awaitable[Any] | None = None
    ):
        self.writer = writer
        self.conversation_id = conversation_id
        self._before = before

    async def settle(self) -> None:
        """Await ``before`` if no turn has."""
        before, self._before = self._before, None
        if before is not None:
            await before

    def add_turn(self, turn: ArenaTurn) -> Awaitable[None]:
        stored = self._add(turn)
        before, self._before = self._before, None
        return stored if before is None else _both(before, stored)

    def _add(self, turn: ArenaTurn) -> asyncio.Future[None]:
        state = turn.state
        return self.writer.add(
            TurnRow(
                self.conversation_id,
                turn.index,
                turn.round,
                # str() of a StrEnum is its value, without Enum.value's descriptor (hot path).
                str(turn.role),
                str(turn.phase),
                turn.text,
                None if state is None else state.model_dump_json(exclude_none=True),
                turn.reasoning,
                turn.call_id,
            )
        )


async def _both(first: Awaitable[Any], then: Awaitable[None]) -> None:
    await first
    await then


# ----------------------------------------------------------------------------------- the batch


class OpenedRun(NamedTuple):
    """The run a call of ``run_arena`` works on."""

    id: int
    config_changed: bool


def _split_hint(config: ArenaConfig, stored_json: str) -> str:
    """For a corpus run whose stored config predates ``scenario_split`` (its cold starts came
    from every split), the setting that resumes it; else nothing."""
    if config.scenarios != ScenarioSource.CORPUS or config.scenario_split is ScenarioSplit.ALL:
        return ""
    try:
        stored = json.loads(stored_json)
    except ValueError:
        return ""
    if not isinstance(stored, dict) or "scenario_split" in stored:
        return ""
    return (
        "; this corpus run predates scenario_split and drew cold starts from every split: set "
        'scenario_split = "all" to resume it'
    )


def open_run(
    config: ArenaConfig,
    store: RunStore,
    *,
    resume: bool,
    force: bool,
    shard: Shard | None,
    windows: Windows | None = None,
    simulator_identity: str | None = None,
    served: ServedModels | None = None,
) -> OpenedRun:
    """The run in ``store`` for ``config``: a new run, or the stored one when resuming.

    The stored config also holds the history windows used and ``simulator_identity`` (the
    simulated user's backend identity, by which a report finds its validity card). ``served``:
    the model ids the ``openai:`` endpoints reported (``ask_served_models``), part of the hash.

    Raises:
        ConfigError: The store holds a run and ``resume`` is off; the stored config differs and
            ``force`` is off; or the shard differs from the stored one.
    """
    digest = config_hash(config, served)
    prompts = [p.model_dump(mode="json") for p in config.prompts()]
    # The windows used are stored with the config, for the report.
    shown = (windows or resolve_windows(config)).to_json()
    recorded = {**stored_config(config, shown), "simulator_identity": simulator_identity}
    stored = store.run()
    refuse_opening(
        config, stored, store.path, resume=resume, force=force, shard=shard, served=served
    )
    if stored is None:
        run_id = store.create_run(
            name=config.name,
            config=recorded,
            config_hash=digest,
            prompts=prompts,
            git_revision=git_revision(),
            packages=package_versions(),
            seed=config.seed,
            shard=None if shard is None else str(shard),
        )
        return OpenedRun(run_id, config_changed=False)
    if stored.config_hash != digest:
        store.update_run(
            stored.id,
            config=recorded,
            config_hash=digest,
            prompts=prompts,
            git_revision=git_revision(),
            packages=package_versions(),
        )
        return OpenedRun(stored.id, config_changed=True)
    return OpenedRun(stored.id, config_changed=False)


def refuse_opening(
    config: ArenaConfig,
    stored: RunRow | None,
    path: Path,
    *,
    resume: bool,
    force: bool,
    shard: Shard | None,
    served: ServedModels | None = None,
) -> None:
    """Refuse to run ``config`` into a store holding ``stored`` (at ``path``), as ``open_run``
    would; callers check with a read-only store first, so a refused run writes nothing.
    ``served`` as ``open_run`` takes it.

    Raises:
        ConfigError: The store holds a run and ``resume`` is off; the shard differs from the
            stored one; or the stored config differs and ``force`` is off.
    """
    if stored is None:
        return
    if not resume:
        raise ConfigError(
            f"{path} already holds run {stored.name!r}; pass --resume to continue it "
            "or choose another --db"
        )
    if (stored.shard or None) != (None if shard is None else str(shard)):
        raise ConfigError(
            f"--shard: {path} holds shard {stored.shard or 'none'}, not {shard or 'none'}"
        )
    digest = config_hash(config, served)
    if stored.config_hash != digest and not force:
        raise ConfigError(
            f"config changed since the run started (hash {stored.config_hash[:12]} -> "
            f"{digest[:12]}){_split_hint(config, stored.config_json)}; pass --force to "
            "continue with the new config"
        )


async def run_arena(
    config: ArenaConfig,
    store: RunStore,
    *,
    resume: bool = False,
    force: bool = False,
    shard: Shard | None = None,
    show_progress: bool = True,
    load_model: Callable[..., Model] = load,
    budget: Budget | None = None,
) -> RunSummary:
    """Run (or resume) every unit of ``config``; finished units in the store are skipped.

    Conversations run concurrently, at most ``config.concurrency`` at a time. Cancelling this
    coroutine (Ctrl-C) stops it cleanly: finished conversations stay stored, unfinished ones are
    restarted by the next ``--resume``. A finished conversation whose digest (see
    ``cogwm.arena.digests``) differs from the current config's is run again. The process holds
    the store's lease (with a heartbeat) while it runs: a second process on the same store is
    refused with ``StoreBusyError``. When a cap of ``budget`` is reached, conversations in
    flight are stopped as by Ctrl-C and no new one starts (``RunSummary.budget_reached``).
    """
    store.acquire_lease()
    heartbeat = asyncio.create_task(_heartbeat(store))
    try:
        # The config's tasks (and the emotion labels they add) are known for this run only.
        with steady_collector(), store.background_checkpoints(), config.catalog.active():
            return await _run_leased(
                config,
                store,
                resume=resume,
                force=force,
                shard=shard,
                show_progress=show_progress,
                load_model=load_model,
                budget=budget,
            )
    finally:
        heartbeat.cancel()
        store.release_lease()


async def _heartbeat(store: RunStore) -> None:
    """Keep this process's lease on the store fresh while it runs."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        if not store.heartbeat():
            log.error("%s: another process took the store over", store.path)
            return


async def _run_leased(
    config: ArenaConfig,
    store: RunStore,
    *,
    resume: bool,
    force: bool,
    shard: Shard | None,
    show_progress: bool,
    load_model: Callable[..., Model],
    budget: Budget | None,
) -> RunSummary:
    everything = planned_units(config)
    units = shard_units(everything, shard)
    windows = resolve_windows(config, everything)  # over every shard: one window for all
    served = await ask_served_models(config, load_model)  # the served model ids enter the digests
    # Opened only once the scenarios are known: a run refused here leaves no run record.
    identity = await simulator_identity(config, load_model)
    opened = open_run(
        config,
        store,
        resume=resume,
        force=force,
        shard=shard,
        windows=windows,
        simulator_identity=identity,
        served=served,
    )
    run_id = opened.id
    digests = Digests(config, windows, served)
    todo, stale = _units_to_run(store, run_id, units, digests, fill=not opened.config_changed)
    started = time.monotonic()
    progress = RunProgress(len(todo), enabled=show_progress)
    runner = ArenaRunner(
        config, store, run_id, progress, load_model=load_model, digests=digests, budget=budget
    )
    interrupted = False
    with progress:
        try:
            await _run_all(runner, todo, config.concurrency, budget)
        except asyncio.CancelledError:
            interrupted = True
        finally:
            await runner.aclose()
    return RunSummary(
        planned=len(units),
        skipped=len(units) - len(todo),
        stale=stale,
        finished=progress.ended - progress.failed,
        failed=progress.failed,
        interrupted=interrupted,
        budget_reached=None if budget is None else budget.reached,
        elapsed_s=time.monotonic() - started,
        calls=progress.calls,
        tokens=progress.tokens,
        cost_usd=progress.cost_usd,
    )


def _units_to_run(
    store: RunStore, run_id: int, units: list[Unit], digests: Digests, *, fill: bool
) -> tuple[list[Unit], int]:
    """The units not finished under their current digest, and how many of them are stale
    (finished under another config).

    With ``fill``, rows of a format-1 store (no digest) get the current digests first: under
    the config they ran with, they are current. After a config change they stay without one,
    hence stale.
    """
    current = {u.key: digests.unit(u) for u in units}
    if fill:
        preps = {(u.task, u.scenario.id): digests.prep(u.task, u.scenario) for u in units}
        store.fill_digests(run_id, current, preps)
    finished = {
        c.unit_key: c.digest
        for c in store.conversations(run_id)
        if c.status == ConversationStatus.FINISHED
    }
    todo = [u for u in units if finished.get(u.key, "") != current[u.key]]
    return todo, sum(1 for u in todo if u.key in finished)


async def _run_all(
    runner: ArenaRunner, units: list[Unit], concurrency: int, budget: Budget | None = None
) -> None:
    limit = asyncio.Semaphore(concurrency)
    # Under a spending cap nothing is spent ahead of need: a preparation made ahead could take
    # the budget that the conversations in flight needed to finish.
    ahead = concurrency if budget is None or not budget.capped else len(units)

    async def one(index: int, unit: Unit) -> None:
        async with limit:
            # The unit that will take a slot about when this one ends has its scenario prepared
            # meanwhile. Units come scenario by scenario, so preparing only when a unit starts
            # made every slot wait for a preparation whenever the run reached new scenarios.
            if index + ahead < len(units):
                runner.prepare_ahead(units[index + ahead])
            try:
                await runner.run_unit(unit)
            except Exception as exc:  # the store could not even record the failure
                # The conversation stays 'running' in the store, so --resume runs it again.
                log.error("%s: not stored: %s", unit.key, failure_reason(exc))
                runner.progress.on_conversation(failed=True)

    async with asyncio.TaskGroup() as group:
        started = [group.create_task(one(i, unit)) for i, unit in enumerate(units)]
        if budget is not None:

            def stop() -> None:
                # A stopped conversation is left unfinished, as by Ctrl-C: --resume restarts it.
                for task in started:
                    task.cancel()

            budget.on_reached(stop)
