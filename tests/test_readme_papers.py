"""The README's map of both papers: every command it names is a cogwm command with those options,
and every table of the DialToM paper that `tom stats` prints is mapped."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

README = Path(__file__).resolve().parents[1] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## Reproducing the papers", 1)[1].split("\n## ", 1)[0]


def _commands(section: str) -> list[str]:
    """Every code span of the section that is a cogwm command line."""
    spans = re.findall(r"`([^`]+)`", section)
    return [span.replace("\\|", "|") for span in spans if span.startswith("cogwm ")]


def _resolve(words: list[str]) -> tuple[Any, list[str]]:
    """The (sub)command the leading words name, and the words after it."""
    from cogwm.cli.main import _register, app

    _register()  # the command groups are added when the CLI first runs
    command: Any = typer.main.get_command(app)
    rest = words[1:]  # past "cogwm"
    while hasattr(command, "commands") and rest and rest[0] in command.commands:
        command, rest = command.commands[rest[0]], rest[1:]
    return command, rest


def _options(command: Any) -> set[str]:
    return {name for param in command.params for name in getattr(param, "opts", [])} | {
        name for param in command.params for name in getattr(param, "secondary_opts", [])
    }


def test_every_command_of_the_paper_map_exists_with_its_options():
    # Catches: a renamed or removed subcommand or option left in the map (say `tom stats
    # --table`), a command of one group written under another (`cogwm stats` for `tom stats`).
    commands = _commands(_section())
    assert len(commands) >= 25
    for line in commands:
        command, rest = _resolve(line.split())
        group = hasattr(command, "commands") and not command.invoke_without_command
        assert not group, f"{line}: no such command"
        unknown = set(re.findall(r"--[a-z][a-z0-9-]*", " ".join(rest))) - _options(command)
        assert not unknown, f"{line}: {sorted(unknown)}"


def test_every_dialtom_table_of_tom_stats_is_mapped():
    # Catches: a table `tom stats` prints for the paper that the map leaves out, and a
    # DialToM table of the paper (1-9, 14, 15, 19, 22) with no row.
    from cogwm.tom.tables import TITLES

    section = _section()
    for name in TITLES:
        if name.startswith(("table", "degradation", "open_ended")):
            assert f"`{name}`" in section, name
    rows = [line for line in section.splitlines() if line.startswith("| DialToM")]
    cells = [row.split("|")[1] for row in rows]
    mapped = {int(n) for cell in cells for n in re.findall(r"(?:Tables?|and) (\d+)", cell)}
    assert {1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 15, 19, 22} <= mapped


def test_training_rows_say_not_run_here():
    # Catches: a paper-scale training row that claims a GPU run this project never made.
    rows = [line for line in _section().splitlines() if line.startswith("| CogWM")]
    gpu_rows = [row for row in rows if "QLoRA" in row or "CogWM-8B" in row]
    assert len(gpu_rows) == 2 and all("Not run here (no GPU)" in row for row in gpu_rows)
