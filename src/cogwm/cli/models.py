"""``cogwm models list|check`` and ``cogwm chat``: see and try the models."""

from __future__ import annotations

import asyncio
import itertools
import sys
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from cogwm.cli.common import console, err_console, print_json
from cogwm.cli.options import BaseUrlOption, JsonOption
from cogwm.errors import CogwmError, InputError

app = typer.Typer(
    help="The language models: what is installed, and a round-trip check.", no_args_is_help=True
)

ModelArgument = Annotated[
    str,
    typer.Argument(
        help="Model address: llamacpp:smollm2, llamacpp:<file.gguf>, openai:<model>, "
        "hf:<path>[+<adapter>], fake:<name>.",
        show_default=False,
    ),
]
NoCacheOption = Annotated[
    bool, typer.Option("--no-cache", help="Neither read nor write the reply cache.")
]


def _load(spec: str, base_url: str | None, **options: Any) -> Any:
    from cogwm import models

    if base_url is not None:
        if not spec.strip().lower().startswith("openai:"):
            raise InputError(f"--base-url applies to openai: models, not {spec!r}")
        options["base_url"] = base_url
    return models.load(spec, **options)


@app.command("list")
def list_models(as_json: JsonOption = False) -> None:
    """Show the backends, whether their libraries are installed, and the known model aliases."""
    from cogwm.models import list_backends, registered_fakes
    from cogwm.models.llamacpp import (
        ADAPTER_ALIASES,
        ALIASES,
        MERGED_ALIASES,
        adapter_alias_folder,
        alias_path,
    )

    backends = list_backends()
    aliases = [(name, alias.description, alias_path(alias)) for name, alias in ALIASES.items()]
    for name, adapter in ADAPTER_ALIASES.items():
        # A shipped adapter is usable when its base package is installed.
        base = alias_path(ALIASES[adapter.base])
        lora = adapter_alias_folder(adapter) / "adapter.gguf"
        aliases.append((name, adapter.description, lora if base and lora.is_file() else None))
    for name, merged in MERGED_ALIASES.items():
        # Usable where its adapter is; the file itself is built on first use.
        shipped = next(path for alias, _, path in aliases if alias == merged.adapter)
        aliases.append((name, merged.description, shipped))
    if as_json:
        print_json(
            {
                "backends": [
                    {
                        "backend": b.kind.value,
                        "installed": b.installed,
                        "requires": b.requires,
                        "install": b.install_hint,
                        "example": b.example,
                    }
                    for b in backends
                ],
                "aliases": [
                    {
                        "model": f"llamacpp:{name}",
                        "installed": path is not None,
                        "file": str(path) if path else None,
                        "description": description,
                    }
                    for name, description, path in aliases
                ],
                "fakes": [f"fake:{name}" for name in registered_fakes()],
            }
        )
        return
    table = Table(title="Backends")
    for column in ("backend", "installed", "requires", "install", "example"):
        table.add_column(column)
    for b in backends:
        table.add_row(
            b.kind.value, _yes(b.installed), b.requires, escape(b.install_hint), escape(b.example)
        )
    console.print(table)
    known = Table(title="Known models")
    for column in ("model", "installed", "description"):
        known.add_column(column)
    for name, description, path in aliases:
        known.add_row(f"llamacpp:{name}", _yes(path is not None), description)
    for name in registered_fakes():
        known.add_row(f"fake:{name}", _yes(True), "test double, no model")
    console.print(known)


@app.command("check")
def check(
    model: ModelArgument,
    base_url: BaseUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Round trip through MODEL: latency, tokens/s, structured output and log-probabilities.

    The cache is bypassed so the figures are measured. Exits 1 when the plain or the structured
    call fails.
    """
    from cogwm.models.check import check_model

    loaded = _load(model, base_url, cache=False)

    async def run() -> Any:
        try:
            return await check_model(loaded)
        finally:
            await loaded.aclose()

    with err_console.status(f"checking {model}"):
        report = asyncio.run(run())
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        _print_report(report)
    if not report.ok:
        raise typer.Exit(1)


def _print_report(report: Any) -> None:
    table = Table(title=f"{report.model}", show_header=False)
    table.add_column("what")
    table.add_column("result")
    caps = report.capabilities
    rows: list[tuple[str, str]] = [
        ("identity", report.identity),
        ("endpoints", ", ".join(report.endpoints)),
        *((k, v) for k, v in report.details.items()),
        ("setup", _seconds(report.setup_s)),
        ("reply", repr(report.reply) if report.reply is not None else "FAILED"),
        ("latency", _seconds(report.latency_s)),
        ("tokens/s", f"{report.tokens_per_s:.1f}" if report.tokens_per_s else "-"),
        ("structured modes", ", ".join(m.value for m in caps.modes) if caps else "-"),
        (
            "structured output",
            ("ok" + (" (after repair)" if report.structured_repaired else ""))
            if report.structured_ok
            else f"FAILED: {report.structured_error}",
        ),
        ("logprobs", _yes(report.logprobs_ok)),
        ("choice scoring", f"{report.choice_path.value if report.choice_path else '-'}"),
    ]
    for what, result in rows:
        table.add_row(what, escape(result))
    console.print(table)
    for error in report.errors:
        err_console.print(f"[red]{escape(error)}[/red]")


def chat(
    model: ModelArgument,
    base_url: BaseUrlOption = None,
    system: Annotated[
        str | None, typer.Option("--system", help="A system message.", show_default=False)
    ] = None,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=1, help="Longest reply, in tokens.")
    ] = 256,
    temperature: Annotated[
        float, typer.Option("--temperature", min=0.0, help="Sampling temperature (0: greedy).")
    ] = 0.0,
    no_cache: NoCacheOption = False,
) -> None:
    """Chat with MODEL: one line in, one reply out; reads stdin until EOF or /quit."""
    from cogwm.models import Message, ModelCallError, Sampling

    loaded = _load(model, base_url, **({"cache": False} if no_cache else {}))
    sampling = Sampling(max_tokens=max_tokens, temperature=temperature)
    history: list[Message] = [Message(role="system", content=system)] if system else []
    interactive = sys.stdin.isatty()

    # stdin is read here, not in a worker thread: Ctrl-C must interrupt the wait for a line (a
    # thread blocked in readline would keep asyncio.run from finishing until the next Enter).
    # One Runner keeps one event loop, so the model's clients live across the turns.
    with asyncio.Runner() as runner:
        try:
            for number in itertools.count(1):
                if interactive:
                    err_console.print("[bold]>[/bold] ", end="")
                line = _read_line(number)
                if not line or line.strip() in ("/quit", "/exit"):
                    return
                if not line.strip():
                    continue
                history.append(Message(role="user", content=line.rstrip("\n")))
                try:
                    done = runner.run(loaded.generate(history, sampling, tag="chat"))
                except ModelCallError as exc:
                    raise CogwmError(str(exc)) from None
                history.append(Message(role="assistant", content=done.text))
                typer.echo(done.text)
        finally:
            runner.run(loaded.aclose())


def _read_line(number: int) -> str:
    """Line ``number`` of stdin ('' at its end); one error line if it is not UTF-8.

    Bytes that are not UTF-8 are refused rather than replaced with U+FFFD: the model would
    answer a message other than the one written, and the user would not know. The bytes are
    decoded here, not by ``sys.stdin``: under the C locale Python lets bad bytes through as
    lone surrogates (which no model client can send), and under a UTF-8 one it decodes ahead
    in chunks, so its error would name the wrong line.

    Raises:
        InputError: The line is not UTF-8 (names the line and the first bad byte).
    """
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream put in place of stdin: already decoded
        return str(sys.stdin.readline())
    raw: bytes = buffer.readline()
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"stdin line {number} is not UTF-8 text (byte {raw[exc.start]:#04x} at byte "
            f"{exc.start + 1} of the line); chat reads UTF-8"
        ) from None
    return line[:-2] + "\n" if line.endswith("\r\n") else line


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"
