"""``cogwm arena``: run agents against the user simulator, merge shards, report the results."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer
from rich.console import Console

from cogwm.cli.common import (
    EXIT_BUDGET_REACHED,
    EXIT_UNITS_FAILED,
    DataDirOption,
    MaxTokensOption,
    PreflightOption,
    console,
    err_console,
    print_json,
    require_resumable,
)
from cogwm.cli.options import JsonOption, ProgressOption, ResamplesOption, ResumeOption, SeedOption
from cogwm.limits import MAX_DIALOGUES_PER_TASK, MAX_ROUNDS

app = typer.Typer(
    help="Agents under test talk to a cognitive user simulator; rank them by how they move the "
    "user's beliefs, desires, intentions and emotion.",
    no_args_is_help=True,
)

if TYPE_CHECKING:
    from rich.table import Table

    from cogwm.arena.budget import Spending
    from cogwm.arena.config import ArenaConfig, ServedModels
    from cogwm.arena.failures import FailureCause
    from cogwm.arena.runner import RunSummary
    from cogwm.arena.units import Shard
    from cogwm.models.budget import Budget
    from cogwm.validate.card import Check
    from cogwm.validate.sensitivity import TaskResult

DbOption = Annotated[Path, typer.Option("--db", help="SQLite run store.")]


def report_console(*, err: bool = False) -> Console:
    """The console for tables (the shared consoles are full width off a terminal)."""
    return err_console if err else console


ConfigArgument = Annotated[Path, typer.Argument(metavar="CONFIG", help="TOML arena config.")]
ForceConfigOption = Annotated[
    bool, typer.Option("--force", help="With --resume, accept a config that changed.")
]
ShardOption = Annotated[
    str | None, typer.Option("--shard", help="Run part i of n (e.g. 2/4); merge afterwards.")
]
ConfigDataDirOption = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Corpora directory (overrides the config's data_dir)."),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Print the planned conversations and at most how many model calls, tokens "
        "and (with prices in the model options) dollars they take; run nothing.",
    ),
]
MaxCostOption = Annotated[
    float | None,
    typer.Option(
        "--max-cost-usd",
        help="Stop when this invocation's calls have cost this many dollars (exit 3; "
        "--resume continues).",
        show_default=False,
    ),
]


@app.command("run")
def run_command(
    config_path: ConfigArgument,
    db: DbOption = Path("runs.sqlite"),
    resume: ResumeOption = False,
    force: ForceConfigOption = False,
    shard: ShardOption = None,
    data_dir: ConfigDataDirOption = None,
    progress: ProgressOption = True,
    dry_run: DryRunOption = False,
    max_cost_usd: MaxCostOption = None,
    max_tokens_total: MaxTokensOption = None,
    network_preflight: PreflightOption = True,
    as_json: JsonOption = False,
) -> None:
    """Run (or resume) the arena described by CONFIG; every turn is committed to --db."""
    from cogwm.arena.config import load_config
    from cogwm.arena.preflight import preflight, preflight_network
    from cogwm.arena.runner import refuse_opening
    from cogwm.arena.units import Shard
    from cogwm.models.budget import Budget
    from cogwm.store import stored_run

    require_resumable(db, resume=resume)
    config = load_config(config_path)
    if data_dir is not None:
        config = config.model_copy(update={"data_dir": str(data_dir)})
    preflight(config)
    parsed_shard = Shard.parse(shard) if shard else None
    budget = Budget(max_cost_usd=max_cost_usd, max_tokens_total=max_tokens_total)
    if dry_run:
        _print_plan(config, parsed_shard, as_json=as_json)
        return
    if network_preflight:
        preflight_network(config)
    created = not db.exists()
    # A refused run is decided on a read-only store, so it changes no byte of it. The stored
    # hash names the weights each `openai:` server reported, so a resumed run asks them first.
    stored = stored_run(db)
    served = _served_models(config) if stored is not None and resume else None
    refuse_opening(
        config, stored, db, resume=resume, force=force, shard=parsed_shard, served=served
    )
    run = _RunOptions(resume, force, parsed_shard, progress, budget if budget.capped else None)
    summary, causes = _run_in_store(config, db, run, created=created)
    _print_outcome(summary, causes, db, as_json=as_json)


def _served_models(config: ArenaConfig) -> ServedModels:
    """The model ids the config's ``openai:`` servers report (each server asked once per
    process, so the run itself does not ask again)."""
    from cogwm.arena.digests import ask_served_models
    from cogwm.models import load

    return asyncio.run(ask_served_models(config, load))


class _RunOptions(NamedTuple):
    """How ``arena run`` runs: what it resumes, which shard, with which display and budget."""

    resume: bool
    force: bool
    shard: Shard | None
    show_progress: bool
    budget: Budget | None


def _run_in_store(
    config: ArenaConfig, db: Path, run: _RunOptions, *, created: bool
) -> tuple[RunSummary, list[FailureCause]]:
    """Run the arena into ``db``; its summary and, when some failed, the failure causes.

    A run refused before it started leaves no file behind when ``created`` (``db`` was not
    there before the command).
    """
    from cogwm.arena.failures import failure_causes
    from cogwm.arena.runner import run_arena
    from cogwm.errors import CogwmError
    from cogwm.store import RunStore

    try:
        with RunStore(db) as store:
            summary = asyncio.run(
                run_arena(
                    config,
                    store,
                    resume=run.resume,
                    force=run.force,
                    shard=run.shard,
                    show_progress=run.show_progress,
                    budget=run.budget,
                )
            )
            causes = failure_causes(store.conversations()) if summary.failed else []
    except CogwmError:
        if created:
            for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
                path.unlink(missing_ok=True)
        raise
    return summary, causes


def _print_outcome(
    summary: RunSummary, causes: list[FailureCause], db: Path, *, as_json: bool
) -> None:
    """The run's summary line, its failures and budget; exits 130, 3 or 1 as the run ended."""
    from cogwm.arena.failures import failure_table

    if as_json:
        print_json(
            {
                "db": str(db),
                **summary.model_dump(mode="json"),
                "failure_causes": [c._asdict() for c in causes],
            }
        )
    rerun = f" ({summary.stale} re-run: their config changed)" if summary.stale else ""
    err_console.print(
        f"{summary.finished} finished, {summary.failed} failed, {summary.skipped} already done "
        f"of {summary.planned}{rerun} · {summary.tokens:,} tokens · ${summary.cost_usd:.4f} · "
        f"{summary.elapsed_s:.0f}s"
    )
    if summary.interrupted:
        err_console.print(
            f"interrupted: finished conversations are kept; resume with --resume --db {db}"
        )
        raise typer.Exit(130)
    if summary.failed:
        if not as_json:  # the JSON has the same causes
            report_console(err=True).print(failure_table(causes))
        err_console.print(
            f"{summary.failed} conversations failed (infrastructure; excluded from the report): "
            f"fix the cause and rerun with --resume --db {db}"
        )
    if summary.budget_reached:
        left = summary.planned - summary.skipped - summary.finished - summary.failed
        err_console.print(
            f"budget reached ({summary.budget_reached}): stopped with {left} conversations not "
            f"run or not finished; finished ones are kept, --resume --db {db} continues (with a "
            "new allowance)",
            markup=False,
        )
        raise typer.Exit(EXIT_BUDGET_REACHED)
    if summary.failed:
        raise typer.Exit(EXIT_UNITS_FAILED)


def _print_plan(config: ArenaConfig, shard: Shard | None, *, as_json: bool = False) -> None:
    """``arena run --dry-run``: the planned units and the upper bound of what they cost."""
    from collections import Counter

    from rich.table import Table

    from cogwm.arena.budget import estimate
    from cogwm.arena.units import planned_units, shard_units
    from cogwm.arena.windows import resolve_windows

    everything = planned_units(config)
    units = shard_units(everything, shard)
    windows = resolve_windows(config, everything)  # as the run: over every shard's scenarios
    arms = Counter((u.task, f"{u.agent.name}/{u.condition.value}") for u in units)
    plan = estimate(config, units, windows)
    if as_json:
        print_json(
            {
                "conversations": [
                    {"task": task, "arm": arm, "conversations": n}
                    for (task, arm), n in arms.items()
                ],
                "units": plan.units,
                "preparations": plan.preparations,
                "roles": [role._asdict() for role in plan.roles],
                "calls": plan.calls,
                "tokens": plan.tokens,
                "cost_usd": plan.cost_usd,
                "windows": windows.to_json(),
            }
        )
        return
    planned = Table(title="Planned conversations")
    for column in ("task", "agent/condition", "conversations"):
        planned.add_column(column, justify="right" if column == "conversations" else "left")
    for (task, arm), n in arms.items():
        planned.add_row(task, arm, str(n))
    report_console().print(planned)
    report_console().print(windows.describe(), markup=False, highlight=False)
    _print_plan_calls(plan)


def _print_plan_calls(plan: Spending) -> None:
    """The planned model calls per role, and their total, of ``arena run --dry-run``."""
    from rich.table import Table

    table = Table(title="Planned model calls (upper bound)")
    for column in ("role", "model", "calls", "prompt tokens", "completion tokens", "cost"):
        table.add_column(column, justify="left" if column in ("role", "model") else "right")
    for role in plan.roles:
        cost = "-" if role.cost_usd is None else f"${role.cost_usd:,.4f}"
        table.add_row(
            role.role,
            role.model,
            f"{role.calls:,}",
            f"{role.prompt_tokens:,}",
            f"{role.completion_tokens:,}",
            cost,
        )
    report_console().print(table)
    cost = (
        "no prices in the model options (cost_per_1k_prompt, cost_per_1k_completion)"
        if plan.cost_usd is None
        else f"${plan.cost_usd:,.4f}"
    )
    report_console().print(
        f"{plan.units} conversations, {plan.preparations} scenario preparations: at most "
        f"{plan.calls:,} model calls, {plan.tokens:,} tokens, cost {cost} (every conversation "
        "to max_rounds, every reply at max_tokens, nothing from the cache; with --resume, "
        "finished conversations are skipped). Nothing was run.",
        markup=False,
        highlight=False,
    )


@app.command("report")
def report_command(
    db: DbOption = Path("runs.sqlite"),
    as_json: JsonOption = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print long-format CSV.")] = False,
    plots: Annotated[
        Path | None, typer.Option("--plots", help="Write trajectory and heatmap PNGs here.")
    ] = None,
    empty: Annotated[
        str, typer.Option(help="Empty B/D/I: 'zero' (paper) or 'carry' (last known value).")
    ] = "zero",
    resamples: ResamplesOption = 2000,
    seed: SeedOption = 0,
    detect: Annotated[
        float | None,
        typer.Option(
            "--detect",
            min=0.0,
            help="A CTS difference D: also print the scenarios needed to detect D at 80% power.",
        ),
    ] = None,
) -> None:
    """Tables (Table 6, per task, discriminability, typology, correlations, scenarios needed
    for 80% power) and plots of a run."""
    from cogwm.arena.failures import failure_causes, failure_table
    from cogwm.errors import InputError
    from cogwm.report import build_report, load_run, render, to_csv, to_json, write_plots
    from cogwm.store import RunStore

    if as_json and as_csv:
        raise InputError("--json and --csv exclude each other")
    if plots is not None and plots.exists() and not plots.is_dir():
        raise InputError(f"--plots {plots} is a file; give a directory for the PNGs")
    if empty not in ("zero", "carry"):
        raise InputError(f"--empty must be 'zero' or 'carry', got {empty!r}")
    with RunStore(db, read_only=True) as store:
        data = load_run(store, empty=empty)
        causes = failure_causes(store.conversations())
    if detect is not None and detect <= 0:
        raise InputError(f"--detect must be a positive CTS difference, got {detect:g}")
    report = build_report(data, n_resamples=resamples, seed=seed, detect=detect)
    if as_json:
        print_json({**to_json(report), "failure_causes": [c._asdict() for c in causes]})
    elif as_csv:
        typer.echo(to_csv(report), nl=False)
    else:
        render(report, report_console())
        if causes:
            report_console().print(failure_table(causes))
    if plots is not None:
        written = write_plots(data, report, plots)
        err_console.print(f"wrote {len(written)} plots to {plots}")


@app.command("merge")
def merge_command(
    out: Annotated[Path, typer.Argument(help="New store to create.")],
    shards: Annotated[list[Path], typer.Argument(help="Shard stores to merge.")],
) -> None:
    """Merge the stores of a sharded run into OUT."""
    from cogwm.store import merge_stores

    summary = merge_stores(out, shards)
    err_console.print(
        f"merged {summary.shards} shards into {out}: {summary.conversations} conversations "
        f"({summary.unfinished} unfinished, {summary.duplicates} duplicates dropped)"
    )
    if summary.missing:
        err_console.print(
            f"warning: shard(s) {', '.join(summary.missing)} of the run were not given: their "
            f"conversations are missing; merge again with them, or --resume --db {out} runs them",
            markup=False,
        )


@app.command("export")
def export_command(
    conversation: Annotated[int, typer.Option("--conversation", help="Conversation id.")],
    db: DbOption = Path("runs.sqlite"),
    fmt: Annotated[str, typer.Option("--format", help="'md' (Markdown) or 'tex' (LaTeX).")] = "md",
    out: Annotated[
        Path | None, typer.Option("--out", help="Write here instead of standard output.")
    ] = None,
    empty: Annotated[
        str, typer.Option(help="Empty B/D/I: 'zero' (paper) or 'carry' (last known value).")
    ] = "zero",
) -> None:
    """A case-study transcript of one conversation with the user's state at each user turn."""
    from cogwm.errors import InputError
    from cogwm.store import RunStore
    from cogwm.web.export import ExportFormat, export_conversation

    if fmt not in {f.value for f in ExportFormat}:
        raise InputError(f"--format must be 'md' or 'tex', got {fmt!r}")
    if empty not in ("zero", "carry"):
        raise InputError(f"--empty must be 'zero' or 'carry', got {empty!r}")
    with RunStore(db, read_only=True) as store:
        text = export_conversation(store, conversation, fmt, empty=empty)
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        err_console.print(f"wrote {out}")


SimulatorOption = Annotated[
    str,
    typer.Option(
        "--simulator",
        help="The simulated user under test: a model address (llamacpp:smollm2-wm) or "
        "python:<package.module:factory>.",
    ),
]
CardOption = Annotated[
    Path | None,
    typer.Option(
        "--card",
        help="Validity card to write the checks into (created if absent). The checks are "
        "registered in the cards folder either way, where reports find them.",
    ),
]
StoresFolderOption = Annotated[
    Path, typer.Option("--db", help="Folder of the run stores (one per simulator and task).")
]
ScenariosOption = Annotated[
    int,
    typer.Option(
        min=2,
        max=MAX_DIALOGUES_PER_TASK,
        help="Scenarios per task (under 20 the checks are undecided).",
    ),
]
SensitivityTaskOption = Annotated[
    list[str] | None,
    typer.Option("--task", help="Check this task only (repeatable; default ESC and PD)."),
]
RoundsOption = Annotated[
    int, typer.Option(min=3, max=MAX_ROUNDS, help="Rounds per conversation, cold start included.")
]
RuleKOption = Annotated[
    float, typer.Option("--rule-k", help="The rule simulator's gain (above 0).")
]
ForceStoresOption = Annotated[
    bool, typer.Option("--force", help="Continue stores whose config changed.")
]


@app.command("sensitivity")
def sensitivity_command(
    simulator: SimulatorOption,
    card: CardOption = None,
    db: StoresFolderOption = Path("sensitivity-runs"),
    scenarios: ScenariosOption = 20,
    task: SensitivityTaskOption = None,
    rounds: RoundsOption = 10,
    seed: SeedOption = 0,
    data_dir: DataDirOption = None,
    rule_k: RuleKOption = 1.0,
    resamples: ResamplesOption = 2000,
    force: ForceStoresOption = False,
    progress: ProgressOption = True,
    as_json: JsonOption = False,
) -> None:
    """Scripted supportive, dismissive and hostile agents on ESC and PD: does the simulator's
    state follow how it is treated? Beside it, the rule simulator (a sentiment meter)."""
    import os

    from cogwm.cli.common import DATA_DIR_ENV
    from cogwm.errors import InputError
    from cogwm.validate import sensitivity as check

    if rule_k <= 0:
        raise InputError(f"--rule-k must be above 0, got {rule_k:g}")
    if data_dir is None and os.environ.get(DATA_DIR_ENV):
        data_dir = Path(os.environ[DATA_DIR_ENV])
    chosen = tuple(dict.fromkeys(task or check.TASKS))
    unknown = [t for t in chosen if t not in check.TASKS]
    if unknown:
        raise InputError(f"--task must be one of {', '.join(check.TASKS)}, got {unknown[0]!r}")
    base = check.Plan(
        simulator=simulator, folder=db, tasks=chosen, scenarios=scenarios, rounds=rounds,
        seed=seed, data_dir=data_dir, force=force,
    )  # fmt: skip
    rule_plan = base._replace(simulator=check.RULE_SIMULATOR, simulator_options={"k": rule_k})
    if simulator == check.RULE_SIMULATOR:
        base = rule_plan
    results = check.run_sensitivity(base, show_progress=progress, n_resamples=resamples)
    rule = (
        results
        if base is rule_plan
        else check.run_sensitivity(rule_plan, show_progress=progress, n_resamples=resamples)
    )
    checks = check.checks(results, rule)
    written = check.record_checks(base, checks, card=card, seed=seed, resamples=resamples)
    if written is None:
        err_console.print(
            f"{simulator}: its identity cannot be read, so the checks were not recorded",
            markup=False,
        )
    else:
        err_console.print(f"wrote {len(checks)} checks to {written}", markup=False)
    _print_sensitivity(checks, [*results, *([] if rule is results else rule)], db, as_json=as_json)


def _print_sensitivity(
    checks: list[Check], shown: list[TaskResult], db: Path, *, as_json: bool
) -> None:
    """The checks (JSON) or the table of the results; exits 1 when conversations failed."""
    if as_json:
        print_json({"checks": [c.model_dump(mode="json") for c in checks]})
    else:
        report_console().print(_sensitivity_table(shown))
    failed = sum(r.n_failed for r in shown)
    if failed:
        err_console.print(
            f"{failed} conversations failed (left out of the figures): fix the cause and run "
            f"the command again (finished conversations in {db} are kept)"
        )
        raise typer.Exit(EXIT_UNITS_FAILED)


def _sensitivity_table(results: list[TaskResult]) -> Table:
    from rich.table import Table

    from cogwm.validate.sensitivity import AGENTS, CONTRASTS, interval_text, signed_text

    table = Table(title="Arena sensitivity: paired CTS differences over scenarios (95% CI)")
    for column in ("task", "simulator", *(f"CTS {a}" for a in AGENTS)):
        table.add_column(column)
    for a, b in CONTRASTS:
        table.add_column(f"{a} − {b}")
    for column in ("copy machine", "failed", "time", "passed"):
        table.add_column(column)
    for result in results:
        copy = result.copy_machine
        table.add_row(
            result.task,
            result.simulator,
            *(signed_text(result.means[a]) for a in AGENTS),
            *(interval_text(result.differences[pair]) for pair in CONTRASTS),
            "undefined" if copy is None else f"{copy.difference.mean:+.3f}",
            str(result.n_failed),
            f"{result.elapsed_s:.0f}s",
            {True: "yes", False: "no", None: "undecided"}[result.passed],
        )
    return table
