"""Entry point: assembles the command groups and turns user errors into one-line messages."""

from __future__ import annotations

import sys

import typer
from pydantic import ValidationError

from cogwm.errors import CogwmError

app = typer.Typer(
    name="cogwm",
    help="Measure how dialogue agents change the beliefs, desires, intentions and emotions "
    "of the people they talk to.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _register() -> None:
    # Imported here so that `import cogwm.cli.main` stays cheap until a command runs.
    from cogwm.cli import data

    app.add_typer(data.app, name="data")


def main() -> None:
    """Run the CLI; a user error prints ``error: ...`` on one line and exits with 2."""
    _register()
    try:
        app(prog_name="cogwm")
    except CogwmError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        typer.echo(f"error: invalid {exc.title}: {where}: {first.get('msg')}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
