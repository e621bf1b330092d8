"""The command line's shared options, each declared once with one help text.

Every option that more than one command takes is an ``Annotated`` type alias here (typer's
way of reusing a declaration); a command names it in its signature and sets its own default::

    def run(seed: SeedOption = 0, as_json: JsonOption = False) -> None: ...

so that ``--seed`` means and reads the same in every ``--help``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cogwm.limits import MAX_CONCURRENCY, MAX_RESAMPLES

#: The environment variable that gives the data directory when ``--data-dir`` is left out.
DATA_DIR_ENV = "COGWM_DATA_DIR"

DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help=f"Directory holding the corpora (one folder per corpus); default ${DATA_DIR_ENV}.",
        show_default=False,
    ),
]

MaxTokensOption = Annotated[
    int | None,
    typer.Option(
        "--max-tokens-total",
        help="Stop when this invocation's calls have used this many tokens (exit 3; "
        "--resume continues).",
        show_default=False,
    ),
]

PreflightOption = Annotated[
    bool,
    typer.Option(
        "--preflight/--no-preflight",
        help="Before any model call, ask each openai: endpoint for its model list once "
        "(an endpoint that does not answer is an error, exit 2).",
    ),
]

BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="OpenAI-compatible endpoint(s), comma-separated (openai: models); "
        "default $COGWM_BASE_URL.",
        show_default=False,
    ),
]

JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON object instead of tables and messages.")
]

SeedOption = Annotated[
    int,
    typer.Option(
        "--seed", help="Seed of every random choice (sample, order, split): same seed, same result."
    ),
]

ConcurrencyOption = Annotated[
    int,
    typer.Option(
        "--concurrency",
        min=1,
        max=MAX_CONCURRENCY,
        help="How many model calls (annotate: dialogues) run at once.",
    ),
]

LimitOption = Annotated[
    int | None,
    typer.Option(
        "--limit", min=1, help="Only the first N units (a quick partial run).", show_default=False
    ),
]

ResumeOption = Annotated[
    bool,
    typer.Option(
        "--resume", help="Continue an earlier run at the same output: skip what it finished."
    ),
]

ProgressOption = Annotated[
    bool, typer.Option("--progress/--no-progress", help="Show the live progress display.")
]

ResamplesOption = Annotated[
    int,
    typer.Option(
        "--resamples",
        min=1,
        max=MAX_RESAMPLES,
        help="Bootstrap resamples per confidence interval.",
    ),
]
