"""Entry point: assembles the command groups and turns user errors into one-line messages."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from cogwm.errors import CogwmError

try:  # typer >= 0.29 vendors click; its usage errors live there
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer on real click
    from click import exceptions as click_errors  # type: ignore[no-redef]

app = typer.Typer(
    name="cogwm",
    help="Measure how dialogue agents change the beliefs, desires, intentions and emotions "
    "of the people they talk to.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _print_version(asked: bool) -> None:
    if asked:
        from cogwm.version import version

        typer.echo(f"cogwm {version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,  # before any command is looked up, so `cogwm --version` is enough
            help="Print cogwm's version and exit.",
        ),
    ] = False,
) -> None:
    """Measure how dialogue agents change the beliefs, desires, intentions and emotions of the
    people they talk to."""


_registered = False


def _register() -> None:
    # Once per process: tests call main() many times, and each registration adds every group
    # again (the command tree, built on each call, grew with every run).
    global _registered
    if _registered:
        return
    _registered = True
    # Imported here so that `import cogwm.cli.main` stays cheap until a command runs.
    from cogwm.cli import annotate, arena, data, models, quickstart, score, tom, validate, view

    app.command("quickstart")(quickstart.quickstart)
    app.add_typer(annotate.app, name="annotate")
    from cogwm.cli import annotate_labels

    annotate.app.command("labels")(annotate_labels.labels)
    app.add_typer(arena.app, name="arena")
    app.add_typer(data.app, name="data")
    app.add_typer(models.app, name="models")
    app.command("chat")(models.chat)
    app.add_typer(score.app, name="score")
    from cogwm.cli import samples as samples_cli

    app.add_typer(samples_cli.app, name="samples")
    app.add_typer(tom.app, name="tom")
    from cogwm.cli import train as train_cli

    app.add_typer(train_cli.app, name="train")
    app.command("validate")(validate.validate)
    from cogwm.cli import simulate as simulate_cli

    app.command("simulate")(simulate_cli.simulate)
    app.command("view")(view.view)
    from cogwm.cli import serve as serve_cli

    app.command("serve")(serve_cli.serve)


#: How typer 0.29 shows a repeatable value ('<list[Path]>'): a Python type, not a value.
_LIST_TYPE = re.compile(r"^<list\[(\w+)\]>$")


def _quiet_flag_types() -> None:
    """Help shows values as a user types them: no '<bool>' beside flags (typer 0.29 prints it
    beside every flag, ``--help`` included, which reads as if the flag took a value), and
    '<path>...' for a repeatable value instead of the Python type '<list[Path]>'."""
    try:
        from typer.core import TyperArgument, TyperOption
    except ImportError:  # pragma: no cover - another typer layout
        return
    for cls in (TyperOption, TyperArgument):
        original = cls.display_type_rich
        if getattr(original, "_cogwm_quiet", False):  # patched by an earlier main()
            continue
        cls.display_type_rich = _shown_type(original)  # type: ignore[method-assign,assignment]


def _shown_type(original: Callable[[Any, Any], str | None]) -> Callable[[Any, Any], str | None]:
    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) and self.metavar is None:
            return None
        shown = original(self, ctx)
        repeated = _LIST_TYPE.match(shown or "")
        return f"<{repeated.group(1).lower()}>..." if repeated else shown

    display_type_rich._cogwm_quiet = True  # type: ignore[attr-defined]
    return display_type_rich


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    sys.exit(2)


def main() -> None:
    """Run the CLI; a user error prints ``error: ...`` on one line and exits with 2.

    Exit codes: 0 done; 1 the command ran but some of its units (conversations, items, model
    calls) failed, or a model could not be reached mid-run; 2 a user error (a model found
    unreachable by the preflight included); 3 a run stopped by its budget; 130 interrupted.
    """
    _register()
    _quiet_flag_types()
    from cogwm.cli.common import EXIT_UNITS_FAILED
    from cogwm.models.types import BackendError, ModelCallError

    try:
        result = app(prog_name="cogwm", standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(0)
    except click_errors.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "cogwm"
        _fail(f"{command}: {exc.format_message()} (see --help)")
    except CogwmError as exc:
        _fail(str(exc))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        _fail(f"invalid {exc.title}: {where}: {first.get('msg')}")
    except UnicodeDecodeError as exc:
        # Commands that read text name the file themselves; this is the net under them.
        _fail(f"input is not UTF-8 text ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        # Unwritable or missing paths, a directory given for a file: the user's to fix.
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{(exc.strerror or str(exc)).lower()}")
    except (BackendError, ModelCallError) as exc:
        # A model that cannot be reached at all: the command failed, the input may be fine.
        typer.echo(f"error: model call failed: {exc}", err=True)
        sys.exit(EXIT_UNITS_FAILED)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    if isinstance(result, int):
        sys.exit(result)


if __name__ == "__main__":
    main()
