"""``cogwm simulate``: run a simulator over a samples split and write its predictions, for
``cogwm score fidelity``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
from cogwm.validate.python_samples import UNDERSTAND_REFUSAL, run_python_predictions
from cogwm.validate.python_sim import load_simulator

if TYPE_CHECKING:
    from cogwm.arena.factories import PythonSimulator


SamplesSplitOption = Annotated[
    Path, typer.Option("--samples", help="Samples split (from `cogwm samples build`).")
]
PredictionsOutOption = Annotated[
    Path, typer.Option("--out", help="Predictions file to write (JSON Lines).")
]
SimulatorModelOption = Annotated[
    str | None,
    typer.Option("--model", help="Simulator model address (e.g. llamacpp:smollm2-wm)."),
]
PythonSimulatorOption = Annotated[
    str | None,
    typer.Option(
        "--simulator",
        help="A simulator that is not a model (prediction mode): python:package.module:"
        "factory (e.g. python:cogwm.simulator.rule:SentimentMeter) or transition:FILE.",
    ),
]
ModeOption = Annotated[
    str,
    typer.Option(
        "--mode", help="predict (state and reply) or understand (state from the real turn)."
    ),
]
AblationOption = Annotated[
    str,
    typer.Option("--ablation", help=f"Input switch: {', '.join(SAMPLE_ABLATIONS)}."),
]


def simulate(
    samples: SamplesSplitOption,
    out: PredictionsOutOption,
    model: SimulatorModelOption = None,
    simulator: PythonSimulatorOption = None,
    mode: ModeOption = "predict",
    ablation: AblationOption = "none",
    concurrency: ConcurrencyOption = DEFAULT_CONCURRENCY,
    limit: LimitOption = None,
    resume: ResumeOption = False,
    seed: SeedOption = 0,
) -> None:
    """Predict every sample of a split (greedy, seeded) and write one line per sample.

    --resume appends to --out, skipping the sample ids already there. --simulator runs a
    Python simulator (the state it sets, and its reply) instead of a model.
    """
    settings = _settings(model, simulator, mode, ablation)
    require_resumable(out, resume=resume)
    if out.exists() and not resume:
        raise InputError(f"{out} exists; pass --resume to continue it, or choose another --out")
    if not out.parent.is_dir():
        raise InputError(f"{out.parent}: no such directory")
    chosen = select_samples(samples, settings.mode, limit)
    todo = pending(chosen, done_ids(out, settings) if resume else set())
    if simulator is not None:
        result = _run_python(load_simulator(simulator), todo, settings, out, seed)
    else:
        from cogwm import models

        result = _run(models.load(settings.model), todo, settings, out, concurrency, seed)
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


def _settings(model: str | None, simulator: str | None, mode: str, ablation: str) -> RunSettings:
    """The run's settings from the options (one of --model and --simulator; a Python simulator
    in prediction mode only)."""
    if (model is None) == (simulator is None):
        raise InputError("pass --model ADDRESS or --simulator ADDRESS (one of them)")
    if mode not in ("predict", "understand"):
        raise InputError(f"--mode {mode!r}: choose predict or understand")
    if simulator is not None and mode != "predict":
        raise InputError(UNDERSTAND_REFUSAL)
    return RunSettings(model or simulator or "", _mode(mode), check_sample_ablation(ablation))


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


def _run_python(
    loaded: PythonSimulator, todo: list[Sample], settings: RunSettings, out: Path, seed: int
) -> RunResult:
    bar = ProgressBar("simulating", len(todo), console=err_console)
    with bar, out.open("a", encoding="utf-8") as handle:
        return run_python_predictions(
            loaded, todo, settings, handle, seed=seed, on_done=lambda: bar.update(advance=1)
        )
