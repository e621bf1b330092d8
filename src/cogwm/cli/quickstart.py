"""``cogwm quickstart``: the arena on the embedded model, then the leaderboard and plots."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cogwm.cli.arena import report_console
from cogwm.cli.common import EXIT_UNITS_FAILED, err_console, print_json
from cogwm.cli.options import JsonOption, ProgressOption
from cogwm.limits import MAX_DIALOGUES_PER_TASK

if TYPE_CHECKING:
    from cogwm.arena.config import ArenaConfig
    from cogwm.arena.failures import FailureCause


QuickstartDbOption = Annotated[
    Path, typer.Option("--db", help="SQLite run store (resumed if it exists).")
]
PlotsDirOption = Annotated[Path, typer.Option("--out", help="Directory for the plots.")]
PresetOption = Annotated[
    str,
    typer.Option(
        help="'quick' (short conversations, ~5 min on 2 cores) or 'full' (paper protocol)."
    ),
]
DialoguesOption = Annotated[
    int | None,
    typer.Option(
        min=1, max=MAX_DIALOGUES_PER_TASK, help="Scenarios per task (overrides the preset)."
    ),
]
AgentsModelOption = Annotated[
    str,
    typer.Option(
        hidden=True,
        help="Model of the agents, detector and judge, and of the user unless it is the "
        "embedded model (tests use a fake).",
    ),
]
SimulatorOption = Annotated[
    str | None,
    typer.Option(
        "--simulator",
        help="The simulated user (default: the world model shipped with cogwm, "
        "llamacpp:smollm2-wm-merged; or any model address, e.g. llamacpp:smollm2-wm, its "
        "LoRA applied at run time).",
    ),
]


def quickstart(
    db: QuickstartDbOption = Path("cogwm-quickstart.sqlite"),
    out: PlotsDirOption = Path("cogwm-quickstart-plots"),
    preset: PresetOption = "quick",
    dialogues: DialoguesOption = None,
    progress: ProgressOption = True,
    model: AgentsModelOption = "llamacpp:smollm2",
    simulator: SimulatorOption = None,
    as_json: JsonOption = False,
) -> None:
    """Three agents that differ on purpose (empathetic, solution-first, scripted dismissive
    control) on ESC and PD with the embedded SmolLM2 model; prints the leaderboard, with the
    simulated user's validity status, and writes the plots."""
    from cogwm.arena.failures import failure_causes
    from cogwm.arena.runner import run_arena
    from cogwm.report import build_report, load_run, render, to_json, write_plots
    from cogwm.store import RunStore

    config = _config(preset, dialogues, model, simulator, db)
    with RunStore(db) as store:
        summary = asyncio.run(run_arena(config, store, resume=True, show_progress=progress))
        if summary.interrupted:
            err_console.print(f"interrupted: run `cogwm quickstart --db {db}` again to continue")
            raise typer.Exit(130)
        data = load_run(store)
        causes = failure_causes(store.conversations()) if summary.failed else []
    report = build_report(data)
    written = write_plots(data, report, out)
    from cogwm.web import write_report

    html = db.with_suffix(".html")
    write_report(db, html)
    if as_json:
        print_json(
            {
                **to_json(report),
                "failure_causes": [c._asdict() for c in causes],
                "plots": [str(path) for path in written],
                "html": str(html),
            }
        )
    else:
        render(report, report_console())
    err_console.print(
        f"{summary.elapsed_s:.0f}s · wrote {len(written)} plots to {out} · run store {db}"
    )
    err_console.print(f"report: {html.resolve()} (open it in a browser; it works offline)")
    if summary.failed:
        _report_failures(summary.failed, causes, db, as_json=as_json)


def _config(
    preset: str, dialogues: int | None, model: str, simulator: str | None, db: Path
) -> ArenaConfig:
    """The quickstart arena's config, checked, and checked against the run already in ``db``."""
    from cogwm.arena.config import config_hash
    from cogwm.arena.preflight import preflight
    from cogwm.arena.quickstart import Preset, quickstart_config
    from cogwm.errors import ConfigError, InputError
    from cogwm.store import stored_run

    try:
        chosen = Preset(preset)
    except ValueError:
        raise InputError(f"--preset must be 'quick' or 'full', got {preset!r}") from None
    config = quickstart_config(chosen, dialogues=dialogues, model=model, simulator_model=simulator)
    preflight(config)  # a model that cannot be found stops here, before the store is created
    stored = stored_run(db)  # read without writing: a refused store is left as it was
    if stored is not None and stored.config_hash != config_hash(config):
        raise ConfigError(
            f"{db} holds a different run ({stored.name}: other settings, or made by an "
            "older cogwm); pass another --db or delete it"
        )
    return config


def _report_failures(failed: int, causes: list[FailureCause], db: Path, *, as_json: bool) -> None:
    """Say how many conversations failed and why (unless the JSON has it); exit 1."""
    from cogwm.arena.failures import failure_table

    if not as_json:  # the JSON has the same causes
        err_console.print(failure_table(causes))
    err_console.print(
        f"{failed} conversations failed; run `cogwm quickstart --db {db}` again to retry them",
        markup=False,
    )
    raise typer.Exit(EXIT_UNITS_FAILED)
