"""``cogwm view``: write a run (or a DialToM store) as one self-contained HTML file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from cogwm.cli.common import err_console
from cogwm.cli.options import ResamplesOption, SeedOption


def view(
    db: Annotated[Path | None, typer.Option("--db", help="Arena run store (SQLite).")] = None,
    tom_db: Annotated[
        Path | None, typer.Option("--tom-db", help="DialToM evaluation store (SQLite).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="HTML file to write.")] = Path("report.html"),
    empty: Annotated[
        str, typer.Option(help="Empty B/D/I: 'zero' (paper) or 'carry' (last known value).")
    ] = "zero",
    resamples: ResamplesOption = 2000,
    seed: SeedOption = 0,
) -> None:
    """One HTML file that opens offline: leaderboard, tables, figures and every transcript."""
    from cogwm.errors import InputError

    if (db is None) == (tom_db is None):
        raise InputError("give exactly one of --db (arena run) and --tom-db (DialToM)")
    if empty not in ("zero", "carry"):
        raise InputError(f"--empty must be 'zero' or 'carry', got {empty!r}")
    start = time.perf_counter()
    if db is not None:
        from cogwm.web.page import write_report

        size = write_report(db, out, empty=empty, n_resamples=resamples, seed=seed)
    elif tom_db is not None:
        from cogwm.web.tom_page import write_tom_report

        size = write_tom_report(tom_db, out)
    err_console.print(f"wrote {out} ({size / 1e6:.2f} MB) in {time.perf_counter() - start:.1f}s")
