"""``cogwm train transition``: fit the transition model on a samples directory (CPU, minutes)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cogwm.cli.common import DataDirOption, err_console, print_json, resolve_data_dir
from cogwm.cli.options import JsonOption, SeedOption
from cogwm.errors import InputError

SamplesOption = Annotated[
    Path,
    typer.Option(
        "--samples",
        help="Samples directory from `cogwm samples build` (its train split is fitted).",
        show_default=False,
    ),
]
ModelOutOption = Annotated[
    Path, typer.Option("--out", help="The model file to write (JSON).", show_default=False)
]
FeaturesOption = Annotated[
    str,
    typer.Option(
        "--features",
        help="numeric (previous state + VADER), per-task (+ each task's own VADER columns) "
        "or text (numeric + TF-IDF of the agent's and the user's turns).",
    ),
]
LabelHeadCOption = Annotated[
    float, typer.Option("--c", help="Inverse regularisation of the emotion-label head.")
]
RidgeAlphaOption = Annotated[
    float, typer.Option("--alpha", help="Ridge penalty of the valence and B/D/I heads.")
]
MaxFeaturesOption = Annotated[
    int, typer.Option("--max-features", min=1, help="TF-IDF columns per text.")
]
PleasantWeightOption = Annotated[
    float,
    typer.Option(
        "--pleasant-weight",
        help="Share (0 to 1) of the predicted valence taken from the label head's "
        "probability of pleasant labels instead of the valence head.",
    ),
]


def train_transition(
    samples: SamplesOption,
    out: ModelOutOption,
    data_dir: DataDirOption = None,
    features: FeaturesOption = "per-task",
    c: LabelHeadCOption = 1.0,
    alpha: RidgeAlphaOption = 1.0,
    max_features: MaxFeaturesOption = 5000,
    seed: SeedOption = 0,
    pleasant_weight: PleasantWeightOption = 0.0,
    as_json: JsonOption = False,
) -> None:
    """Fit the transition model (next emotion and B/D/I from the agent's turn, the user's turn
    and the previous state) on the human labels of a samples directory's train split."""
    from cogwm.simulator.transition.fit import Settings, fit_model, training_rows
    from cogwm.simulator.transition.model import save_model

    settings = Settings(features, c, alpha, max_features, seed, pleasant_weight).check()
    if not samples.is_dir():
        raise InputError(f"--samples {samples}: no such directory")
    if out.is_dir() or not out.parent.is_dir():
        raise InputError(f"--out {out}: not a file in an existing directory")

    def say(text: str) -> None:
        if not as_json:
            err_console.print(text, highlight=False)

    rows, summary = training_rows(samples, resolve_data_dir(data_dir), progress=say)
    model = fit_model(rows, settings, summary, progress=say)
    save_model(model, out)
    if as_json:
        print_json(model.training)
        return
    say(f"wrote {out}: {summary['rows']:,} rows, labels {', '.join(model.labels)}")
