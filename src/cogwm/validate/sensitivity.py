"""Arena sensitivity: does the simulated user's state follow how the agent treats it?

Three scripted agents (``cogwm.arena.scripted``: supportive, dismissive, hostile; fixed lines,
no model) talk to the simulator on ESC and PD through the normal arena runner and store (so a
run is resumable and safe to kill). Every agent meets the same scenarios with the same user
seeds (common random numbers), conversations last a fixed number of rounds (the intent
detector is never asked) and GoodOutcome is not judged: the figure is CTS alone. Per task the
check reports the paired CTS differences supportive − dismissive, dismissive − hostile and
supportive − hostile over scenarios, with percentile-bootstrap 95 % CIs over scenarios.

Beside every figure stand two yardsticks: the rule simulator (``SentimentMeter``, a sentiment
meter with no model: what a trivial simulator achieves) and a copy machine (a simulator that
repeats the opening state every turn: computed on the same conversations, its differences are
0 whenever every conversation lasts the same number of rounds).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from cogwm.arena.config import ArenaConfig, parse_config
from cogwm.arena.preflight import preflight
from cogwm.arena.scenarios import ScenarioSource, builtin_scenarios
from cogwm.arena.scoring import conversation_metrics
from cogwm.errors import InputError
from cogwm.stats.means import (
    DEFAULT_RESAMPLES,
    DifferenceEstimate,
    paired_difference,
    scenario_table,
)
from cogwm.validate.card import CARD_SCHEMA, Card, Check
from cogwm.validate.status import MIN_SEPARATION_SCENARIOS

#: The check's name in a validity card.
CHECK_NAME = "arena_sensitivity"
#: The scripted agents by behaviour, in the order the pass rule wants their mean CTS.
AGENTS: tuple[str, ...] = ("supportive", "dismissive", "hostile")
#: Their factories (each reads its task from the arena's brief).
AGENT_FACTORIES = {name: f"cogwm.arena.scripted:{name.title()}" for name in AGENTS}
#: The paired differences reported, a − b.
CONTRASTS: tuple[tuple[str, str], ...] = (
    ("supportive", "dismissive"),
    ("dismissive", "hostile"),
    ("supportive", "hostile"),
)
#: The contrast the pass rule bounds (and the check's metric).
MAIN_CONTRAST = CONTRASTS[0]
METRIC = "cts_supportive_minus_dismissive"
#: Tasks of the check.
TASKS: tuple[str, ...] = ("ESC", "PD")
#: Scenarios per task, rounds per conversation (cold start included) and the arena seed.
DEFAULT_SCENARIOS = 20
DEFAULT_ROUNDS = 10
DEFAULT_SEED = 0
#: The rule simulator beside the simulator under test.
RULE_SIMULATOR = "python:cogwm.simulator.rule:SentimentMeter"
#: The pass rule, fixed: per task.
PASS_RULE = (
    "mean CTS supportive > dismissive > hostile, and the 95% CI of the paired difference "
    "supportive − dismissive (bootstrap over scenarios) lies above 0; undecided under "
    f"{MIN_SEPARATION_SCENARIOS} paired scenarios or when any conversation failed"
)


class TaskResult(NamedTuple):
    """One simulator's sensitivity on one task."""

    task: str
    simulator: str
    means: dict[str, float | None]
    differences: dict[tuple[str, str], DifferenceEstimate | None]
    copy_machine: DifferenceEstimate | None
    n_failed: int
    passed: bool | None
    elapsed_s: float = 0.0


def passes(
    means: dict[str, float | None], main: DifferenceEstimate | None, *, n_failed: int = 0
) -> bool | None:
    """The pass rule (``PASS_RULE``); None (undecided) when a mean or the interval is
    undefined, the paired scenarios are fewer than ``MIN_SEPARATION_SCENARIOS`` or any
    conversation failed (the survivors may be a biased sample)."""
    ordered = [means.get(agent) for agent in AGENTS]
    if main is None or main.difference.ci_low is None or any(m is None for m in ordered):
        return None
    if main.n_shared < MIN_SEPARATION_SCENARIOS or n_failed > 0:
        return None
    supportive, dismissive, hostile = (float(m) for m in ordered if m is not None)
    return supportive > dismissive > hostile and main.difference.ci_low > 0


def simulator_section(address: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``[simulator]`` of a run: ``python:<package.module:factory>``, ``transition:FILE``
    (a fitted transition model, as ``cogwm validate --simulator`` takes it),
    ``two-part:FILE[@MODEL]`` (its states and a world model's words) or a model address."""
    if address.startswith("two-part:"):
        from cogwm.validate.python_sim import TWO_PART_FACTORY, two_part_options

        found = two_part_options(address.removeprefix("two-part:"))
        return {"python": TWO_PART_FACTORY, "options": {**(options or {}), **found}}
    if address.startswith("transition:"):
        from cogwm.validate.python_sim import TRANSITION_FACTORY

        path = address.removeprefix("transition:")
        return {"python": TRANSITION_FACTORY, "options": {**(options or {}), "path": path}}
    if address.startswith("python:"):
        return {"python": address.removeprefix("python:"), "options": dict(options or {})}
    return {"model": address, "options": dict(options or {})}


def scenario_source(task: str, count: int) -> ScenarioSource:
    """Built-in scenarios where the task has ``count`` of them, else corpus cold starts."""
    if len(builtin_scenarios(task)) >= count:
        return ScenarioSource.BUILTIN
    return ScenarioSource.CORPUS


def sensitivity_config(
    simulator: str,
    task: str,
    *,
    scenarios: int = DEFAULT_SCENARIOS,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = DEFAULT_SEED,
    data_dir: Path | None = None,
    simulator_options: dict[str, Any] | None = None,
    concurrency: int = 4,
    scenario_split: str = "test",
) -> ArenaConfig:
    """The arena config of one simulator on one task: the three scripted agents, paired seeds,
    ``rounds`` rounds every conversation (no intent detector), no GoodOutcome judge.

    ``scenario_split`` other than ``test`` (e.g. ``val``, to choose among candidates without
    meeting the check's own scenarios) takes corpus cold starts from that split on every task.

    Raises:
        ConfigError: A bad address, too few scenarios, or corpus cold starts without a data dir.
    """
    raw: dict[str, Any] = {
        "name": f"sensitivity-{task.lower()}",
        "seed": seed,
        "tasks": [task],
        "dialogues_per_task": scenarios,
        "max_rounds": rounds,
        "intent_from_round": rounds,  # never asked: every conversation lasts `rounds` rounds
        "good_outcome": False,
        "paired_seeds": True,
        "concurrency": concurrency,
        "scenarios": scenario_source(task, scenarios).value,
        "simulator": simulator_section(simulator, simulator_options),
        "agents": [{"name": name, "python": factory} for name, factory in AGENT_FACTORIES.items()],
    }
    if scenario_split != "test":
        raw["scenarios"], raw["scenario_split"] = "corpus", scenario_split
    if data_dir is not None:
        raw["data_dir"] = str(data_dir)
    config = parse_config(raw, source=f"sensitivity {task}")
    preflight(config)  # an address that cannot be loaded fails here, not in every conversation
    return config


def store_path(folder: Path, simulator: str, task: str) -> Path:
    """The run store of one simulator and task inside ``folder``."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", simulator).strip("-").lower()
    return folder / f"{slug}-{task.lower()}.sqlite"


class Conversation(NamedTuple):
    """What the check reads of one finished conversation."""

    agent: str
    scenario: str
    cts: float | None
    copy_cts: float | None


def task_result(
    task: str,
    simulator: str,
    conversations: Sequence[Conversation],
    *,
    n_failed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    elapsed_s: float = 0.0,
) -> TaskResult:
    """Means, paired differences, the copy machine and the verdict from the conversations."""
    rows = [(c.agent, c.scenario, c.cts) for c in conversations if c.cts is not None]
    means: dict[str, float | None] = {}
    for agent in AGENTS:
        values = [v for a, _, v in rows if a == agent]
        means[agent] = sum(values) / len(values) if values else None
    differences = {
        pair: _difference([(a, s, v) for a, s, v in rows], pair, n_resamples, seed)
        for pair in CONTRASTS
    }
    copies = [(c.agent, c.scenario, c.copy_cts) for c in conversations if c.copy_cts is not None]
    copy = _difference([(a, s, v) for a, s, v in copies], MAIN_CONTRAST, n_resamples, seed)
    main = differences[MAIN_CONTRAST]
    verdict = passes(means, main, n_failed=n_failed)
    return TaskResult(task, simulator, means, differences, copy, n_failed, verdict, elapsed_s)


def _difference(
    rows: list[tuple[str, str, float]], pair: tuple[str, str], n_resamples: int, seed: int
) -> DifferenceEstimate | None:
    agents = {a for a, _, _ in rows}
    if not set(pair) <= agents:
        return None
    table = scenario_table(rows)
    try:
        return paired_difference(table, *pair, n_resamples=n_resamples, seed=seed)
    except InputError:  # the two agents share no scenario
        return None


def read_conversations(db: Path) -> tuple[list[Conversation], int]:
    """The finished conversations of the run in ``db`` and how many failed or did not finish."""
    from cogwm.arena.run_data import load_run
    from cogwm.store import RunStore

    with RunStore(db, read_only=True) as store:
        data = load_run(store)
    found = []
    for c in data.conversations:
        copied = [c.states[0]] * len(c.states) if c.states else []
        spec = data.catalog.get(c.task)
        copy_cts = conversation_metrics(copied, spec)["cts"] if copied else None
        found.append(Conversation(c.agent, c.scenario_key, c.metrics.get("cts"), copy_cts))
    lost = sum(data.errors.values()) + sum(data.unfinished.values())
    return found, lost


def checks(results: Sequence[TaskResult], rule: Sequence[TaskResult]) -> list[Check]:
    """One ``Check`` per task of ``results``, with the rule simulator's figure beside it."""
    by_task = {r.task: r for r in rule}
    return [_check(result, by_task.get(result.task)) for result in results]


def _check(result: TaskResult, rule: TaskResult | None) -> Check:
    main = result.differences[MAIN_CONTRAST]
    estimate = None if main is None else main.difference
    baselines: dict[str, float | None] = {}
    if rule is not None:
        rule_main = rule.differences[MAIN_CONTRAST]
        rule_estimate = None if rule_main is None else rule_main.difference
        baselines = {
            "rule_simulator": None if rule_estimate is None else rule_estimate.mean,
            "rule_simulator_ci_low": None if rule_estimate is None else rule_estimate.ci_low,
            "rule_simulator_ci_high": None if rule_estimate is None else rule_estimate.ci_high,
            "rule_simulator_passed": None if rule.passed is None else float(rule.passed),
        }
    copy = None if result.copy_machine is None else result.copy_machine.difference.mean
    return Check(
        name=CHECK_NAME,
        task=result.task,
        metric=METRIC,
        value=None if estimate is None else estimate.mean,
        ci_low=None if estimate is None else estimate.ci_low,
        ci_high=None if estimate is None else estimate.ci_high,
        n=0 if main is None else main.n_shared,
        n_failed=result.n_failed,
        copy_machine=copy,
        baselines=baselines,
        passed=result.passed,
        rule=PASS_RULE,
        note=describe(result),
    )


def describe(result: TaskResult) -> str:
    """The means and every contrast in one line (the check's note)."""
    means = ", ".join(f"{a} {signed_text(result.means[a])}" for a in AGENTS)
    contrasts = "; ".join(
        f"{a} − {b} {interval_text(result.differences[(a, b)])}" for a, b in CONTRASTS
    )
    return f"mean CTS {means}; {contrasts} (paired over scenarios, 95% CI)"


def signed_text(value: float | None) -> str:
    """A mean with its sign, or 'undefined'."""
    return "undefined" if value is None else f"{value:+.3f}"


def interval_text(estimate: DifferenceEstimate | None) -> str:
    """A paired difference with its CI and n, or 'undefined'."""
    if estimate is None:
        return "undefined"
    d = estimate.difference
    if d.ci_low is None or d.ci_high is None:
        return f"{d.mean:+.3f} (n {estimate.n_shared}, no CI)"
    return f"{d.mean:+.3f} [{d.ci_low:+.3f}, {d.ci_high:+.3f}] (n {estimate.n_shared})"


def _new_card(
    model: str, identity: str, seed: int, resamples: int, versions: dict[str, str]
) -> Card:
    """A card naming the simulator and no checks yet."""
    return Card.model_validate(
        {
            "schema": CARD_SCHEMA,
            "label": model,
            "model": model,
            "model_identity": identity,
            "seed": seed,
            "limit": None,
            "resamples": resamples,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "versions": versions,
        }
    )


def update_card(
    path: Path,
    new: Sequence[Check],
    *,
    model: str,
    identity: str,
    seed: int,
    resamples: int,
    versions: dict[str, str],
) -> Card:
    """The card at ``path`` with ``new`` in place of its checks of the same name and task (a
    minimal card naming the simulator when the file does not exist); written back, dated now
    (its newest checks are from now, and reports take each check from the newest card).

    Raises:
        InputError: The file is not a card, or a card of another simulator (another model
            address or backend identity).
    """
    from cogwm.validate.card import read_card, write_card

    if path.exists():
        card = read_card(path)
        if card.model != model:
            raise InputError(f"{path}: the card is of {card.model!r}, not {model!r}")
        if card.model_identity != identity:
            raise InputError(
                f"{path}: the card was measured on {card.model_identity!r}, but {model} is "
                f"now {identity!r}"
            )
    else:
        card = _new_card(model, identity, seed, resamples, versions)
    replaced = {(c.name, c.task) for c in new}
    kept = [c for c in card.checks if (c.name, c.task) not in replaced]
    now = datetime.now(UTC).isoformat(timespec="seconds")
    card = card.model_copy(update={"checks": [*kept, *new], "created": now})
    write_card(card, path)
    return card


class Plan(NamedTuple):
    """What to run: the simulator, tasks, sizes, seed and where the stores go."""

    simulator: str
    folder: Path
    tasks: tuple[str, ...] = TASKS
    scenarios: int = DEFAULT_SCENARIOS
    rounds: int = DEFAULT_ROUNDS
    seed: int = DEFAULT_SEED
    data_dir: Path | None = None
    simulator_options: dict[str, Any] | None = None
    concurrency: int = 4
    force: bool = False
    scenario_split: str = "test"


def run_sensitivity(
    plan: Plan,
    *,
    show_progress: bool = True,
    n_resamples: int = DEFAULT_RESAMPLES,
    load_model: Any = None,
) -> list[TaskResult]:
    """Run (or resume) the check of ``plan.simulator`` on every task and compute its figures.

    Each task's run has its own store in ``plan.folder``; finished conversations are kept, so
    a second call resumes (``plan.force``: continue a store whose config changed).

    Raises:
        ConfigError: A bad address or options, too few scenarios, a store holding another
            config (without ``force``).
    """
    configs = _task_configs(plan)  # every config checked before any run starts
    plan.folder.mkdir(parents=True, exist_ok=True)
    results = []
    for task, config in configs.items():
        db = store_path(plan.folder, plan.simulator, task)
        elapsed = _run_task(config, db, plan.force, show_progress, load_model)
        conversations, lost = read_conversations(db)
        results.append(
            task_result(
                task,
                plan.simulator,
                conversations,
                n_failed=lost,
                n_resamples=n_resamples,
                seed=plan.seed,
                elapsed_s=elapsed,
            )
        )
    return results


def _task_configs(plan: Plan) -> dict[str, ArenaConfig]:
    """Each task's arena config (all checked, so a bad one fails before any run).

    Raises:
        ConfigError: A bad address or options, or too few scenarios.
    """
    return {
        task: sensitivity_config(
            plan.simulator,
            task,
            scenarios=plan.scenarios,
            rounds=plan.rounds,
            seed=plan.seed,
            data_dir=plan.data_dir,
            simulator_options=plan.simulator_options,
            concurrency=plan.concurrency,
            scenario_split=plan.scenario_split,
        )
        for task in plan.tasks
    }


def _run_task(
    config: ArenaConfig, db: Path, force: bool, show_progress: bool, load_model: Any
) -> float:
    """Run (or resume) one task's arena into its store ``db``; the seconds it took."""
    import asyncio
    import time

    from cogwm.arena.runner import run_arena
    from cogwm.models import load
    from cogwm.store import RunStore

    started = time.monotonic()
    with RunStore(db) as store:
        asyncio.run(
            run_arena(
                config,
                store,
                resume=True,
                force=force,
                show_progress=show_progress,
                load_model=load_model or load,
            )
        )
    return time.monotonic() - started


def plan_identity(plan: Plan, load_model: Any = None) -> str | None:
    """The backend identity of ``plan.simulator`` as its runs record it (None: the model cannot
    be loaded)."""
    import asyncio

    from cogwm.arena.provenance import simulator_identity
    from cogwm.models import load

    config = sensitivity_config(
        plan.simulator,
        plan.tasks[0],
        scenarios=plan.scenarios,
        rounds=plan.rounds,
        seed=plan.seed,
        data_dir=plan.data_dir,
        simulator_options=plan.simulator_options,
    )
    return asyncio.run(simulator_identity(config, load_model or load))


def record_checks(
    plan: Plan,
    new: Sequence[Check],
    *,
    card: Path | None,
    seed: int,
    resamples: int,
    load_model: Any = None,
) -> Path | None:
    """Write ``new`` into the card at ``card`` (None: the simulator's sensitivity card in the
    cards folder) and register it, where reports find it by identity. Returns the card's file;
    None when the simulator's identity cannot be read (nothing is written).

    Raises:
        InputError: ``card`` holds a card of another simulator, or the cards folder cannot
            be written.
    """
    from cogwm.arena.provenance import package_versions
    from cogwm.validate.status import cards_dir, register_card, registered_name

    identity = plan_identity(plan, load_model)
    if identity is None:
        return None
    versions = package_versions()
    if card is None:
        stub = _new_card(plan.simulator, identity, seed, resamples, versions)
        card = cards_dir() / registered_name(stub, CHECK_NAME)
    written = update_card(
        card,
        new,
        model=plan.simulator,
        identity=identity,
        seed=seed,
        resamples=resamples,
        versions=versions,
    )
    register_card(written, part=CHECK_NAME)
    return card
