"""Shared pieces of the command line: consoles, the data directory, JSON output, preflight."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

# Re-exported: commands import these from here as well as from cogwm.cli.options.
from cogwm.cli.options import DATA_DIR_ENV as DATA_DIR_ENV
from cogwm.cli.options import DataDirOption as DataDirOption
from cogwm.cli.options import MaxTokensOption as MaxTokensOption
from cogwm.cli.options import PreflightOption as PreflightOption
from cogwm.errors import InputError

#: Line width when the output is not a terminal (a pipe, a file, a log): wide enough that no
#: table cell is cut with an ellipsis; tables take only the width they need.
LOG_WIDTH = 1000


def _console(*, stderr: bool) -> Console:
    """A console for stdout or stderr; off a terminal it neither cuts tables nor wraps lines.

    Off a terminal ``$COLUMNS`` is ignored (CI systems and shells export it, and a log must
    keep whole figures). Messages on stderr are never broken into lines, on a terminal either:
    a hint or a path cut in two cannot be copied.
    """
    terminal = Console(stderr=stderr, soft_wrap=stderr)
    if terminal.is_terminal:
        return terminal
    return Console(stderr=stderr, width=LOG_WIDTH, soft_wrap=True)


console = _console(stderr=False)
err_console = _console(stderr=True)

#: Exit status of a command that ran to its end but some of its units (conversations, items,
#: model calls) failed: what succeeded is kept, the failures are listed, ``--resume`` retries.
#: Exit 2 is a user error (one ``error:`` line); 130 an interrupt.
EXIT_UNITS_FAILED = 1
#: Exit status of a run stopped by ``--max-cost-usd`` or ``--max-tokens-total``: what finished is
#: kept and ``--resume`` continues.
EXIT_BUDGET_REACHED = 3


def resolve_data_dir(data_dir: Path | None) -> Path:
    """The data directory from ``--data-dir`` or ``$COGWM_DATA_DIR``; an error if neither."""
    from cogwm.corpora.readers import require_data_dir

    if data_dir is not None:
        return require_data_dir(data_dir, "--data-dir")
    env = os.environ.get(DATA_DIR_ENV)
    if not env:
        raise InputError(f"no data directory: pass --data-dir or set {DATA_DIR_ENV}")
    return require_data_dir(Path(env), f"${DATA_DIR_ENV}")


def require_resumable(path: Path, *, resume: bool) -> None:
    """With ``--resume``, refuse a store (or file) that is not there, before anything is made.

    Without this a mistyped path silently started a new run from nothing.

    Raises:
        InputError: ``resume`` is set and ``path`` does not exist.
    """
    if resume and not path.exists():
        raise InputError(
            f"--resume: {path} does not exist, so there is nothing to resume; check the path, "
            "or leave --resume out to start a new run there"
        )


def print_json(obj: Any) -> None:
    """Print one JSON object on stdout (no rich markup, so it stays machine-readable)."""
    typer.echo(json.dumps(obj, indent=2, sort_keys=False, default=str))


def preflight_models(
    uses: list[tuple[str, str | None]],
    *,
    network: bool,
    base_url: str | None = None,
    base_url_option: bool = True,
) -> None:
    """Check the models a command will call before it calls them (``cogwm.models.preflight``).

    Args:
        uses: ``(option, address)`` pairs such as ``("--model", "openai:qwen")``; an address of
            None (an option not given) is skipped.
        network: Also ask each ``openai:`` endpoint once (off with ``--no-preflight``).
        base_url: The command's ``--base-url`` (for ``openai:`` models), if any.
        base_url_option: Whether the command has a ``--base-url`` (else only
            ``$COGWM_BASE_URL`` gives one, and the error says so).

    Raises:
        ConfigError: One line naming the option and the address.
    """
    from cogwm.models.preflight import ModelUse, check_address, check_endpoints

    options = {"base_url": base_url} if base_url else {}
    checked = [ModelUse(role, address, options) for role, address in uses if address]
    for use in checked:
        check_address(use, base_url_hint="--base-url" if base_url_option else None)
    if network:
        check_endpoints(checked)
