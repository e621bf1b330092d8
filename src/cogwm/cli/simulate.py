"""``cogwm simulate``: run a simulator over a samples split and write its predictions, for
``cogwm score fidelity``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from cogwm.cli.common import EXIT_UNITS_FAILED, err_console, require_resumable
from cogwm.cli.options import ConcurrencyOption, LimitOption, ResumeOption, SeedOption
from cogwm.errors import InputError
from cogwm.models.model import Model
from cogwm.progress import ProgressBar
from cogwm.simulator.format import Mode
from cogwm.simulator.samples import Sample
from cogwm.simulator.simulate import (
    DEFAULT_CONCURRENCY,
    SAMPLE_ABLATIONS,
    RunResult,
    RunSettings,
    check_sample_ablation,
    done_ids,
    pending,
    run_predictions,
    select_samples,
)


def simulate(
    samples: Annotated[
        Path, typer.Option("--samples", help="Samples split (from `cogwm samples build`).")
    ],
    model: Annotated[
        str, typer.Option("--model", help="Simulator model address (e.g. llamacpp:smollm2-wm).")
    ],
    out: Annotated[Path, typer.Option("--out", help="Predictions file to write (JSON Lines).")],
    mode: Annotated[
        str,
        typer.Option(
            "--mode", help="predict (state and reply) or understand (state from the real turn)."
        ),
    ] = "predict",
    ablation: Annotated[
        str,
        typer.Option("--ablation", help=f"Input switch: {', '.join(SAMPLE_ABLATIONS)}."),
    ] = "none",
    concurrency: ConcurrencyOption = DEFAULT_CONCURRENCY,
    limit: LimitOption = None,
    resume: ResumeOption = False,
    seed: SeedOption = 0,
) -> None:
    """Predict every sample of a split (greedy, seeded) and write one line per sample.

    --resume appends to --out, skipping the sample ids already there.
    """
    from cogwm import models

    if mode not in ("predict", "understand"):
        raise InputError(f"--mode {mode!r}: choose predict or understand")
    settings = RunSettings(model, _mode(mode), check_sample_ablation(ablation))
    require_resumable(out, resume=resume)
    if out.exists() and not resume:
        raise InputError(f"{out} exists; pass --resume to continue it, or choose another --out")
    if not out.parent.is_dir():
        raise InputError(f"{out.parent}: no such directory")
    chosen = select_samples(samples, settings.mode, limit)
    todo = pending(chosen, done_ids(out, settings) if resume else set())
    loaded = models.load(model)
    result = _run(loaded, todo, settings, out, concurrency, seed)
    skipped = len(chosen) - len(todo)
    err_console.print(
        f"wrote {result.written:,} predictions to {out} ({result.invalid:,} invalid outputs, "
        f"{skipped:,} already there, {len(result.call_errors):,} failed calls)"
    )
    if result.call_errors:
        if len(result.call_errors) == len(todo):
            raise InputError(f"every simulator call failed; the first: {result.call_errors[0]}")
        err_console.print(f"first failed call: {result.call_errors[0]}; --resume asks them again")
        raise typer.Exit(EXIT_UNITS_FAILED)


def _mode(name: str) -> Mode:
    return "understand" if name == "understand" else "predict"


def _run(
    loaded: Model,
    todo: list[Sample],
    settings: RunSettings,
    out: Path,
    concurrency: int,
    seed: int,
) -> RunResult:
    bar = ProgressBar("simulating", len(todo), console=err_console)
    with bar, out.open("a", encoding="utf-8") as handle:
        return asyncio.run(
            run_predictions(
                loaded,
                todo,
                settings,
                handle,
                concurrency=concurrency,
                seed=seed,
                on_done=lambda: bar.update(advance=1),
            )
        )
