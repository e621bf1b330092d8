"""``cogwm quickstart``: the arena on the embedded model, then the leaderboard and plots."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from cogwm.cli.arena import report_console
from cogwm.cli.common import EXIT_UNITS_FAILED, err_console, print_json
from cogwm.limits import MAX_DIALOGUES_PER_TASK


def quickstart(
    db: Annotated[
        Path, typer.Option("--db", help="SQLite run store (resumed if it exists).")
    ] = Path("cogwm-quickstart.sqlite"),
    out: Annotated[Path, typer.Option("--out", help="Directory for the plots.")] = Path(
        "cogwm-quickstart-plots"
    ),
    preset: Annotated[
        str,
        typer.Option(
            help="'quick' (short conversations, ~5 min on 2 cores) or 'full' (paper protocol)."
        ),
    ] = "quick",
    dialogues: Annotated[
        int | None,
        typer.Option(
            min=1, max=MAX_DIALOGUES_PER_TASK, help="Scenarios per task (overrides the preset)."
        ),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show the live progress display.")] = True,
    model: Annotated[
        str,
        typer.Option(
            hidden=True,
            help="Model of the agents, detector and judge, and of the user unless it is the "
            "embedded model (tests use a fake).",
        ),
    ] = "llamacpp:smollm2",
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the leaderboard (as `arena report --json`) as JSON."),
    ] = False,
) -> None:
    """Three agents that differ on purpose (empathetic, solution-first, scripted dismissive
    control) on ESC and PD with the embedded SmolLM2 model; prints the leaderboard, with the
    simulated user's validity status, and writes the plots."""
    from cogwm.arena.config import config_hash
    from cogwm.arena.failures import failure_causes, failure_table
    from cogwm.arena.preflight import preflight
    from cogwm.arena.quickstart import Preset, quickstart_config
    from cogwm.arena.runner import run_arena
    from cogwm.errors import ConfigError, InputError
    from cogwm.report import build_report, load_run, render, to_json, write_plots
    from cogwm.store import RunStore, stored_run

    try:
        chosen = Preset(preset)
    except ValueError:
        raise InputError(f"--preset must be 'quick' or 'full', got {preset!r}") from None
    config = quickstart_config(chosen, dialogues=dialogues, model=model)
    preflight(config)  # a model that cannot be found stops here, before the store is created
    stored = stored_run(db)  # read without writing: a refused store is left as it was
    if stored is not None and stored.config_hash != config_hash(config):
        raise ConfigError(
            f"{db} holds a different run ({stored.name}: other settings, or made by an "
            "older cogwm); pass another --db or delete it"
        )
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
        if not as_json:  # the JSON has the same causes
            err_console.print(failure_table(causes))
        err_console.print(
            f"{summary.failed} conversations failed; run `cogwm quickstart --db {db}` again to "
            "retry them",
            markup=False,
        )
        raise typer.Exit(EXIT_UNITS_FAILED)
