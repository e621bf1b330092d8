"""``cogwm validate --gate CARD [CARD ...]``: the release gate on a simulator's cards."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Column, Table

from cogwm.cli.common import console, print_json
from cogwm.errors import InputError

#: Exit status of a simulator that fails the gate (0: it passes; 2: bad input).
EXIT_GATE_FAILED = 1


def run_gate(paths: list[Path], *, as_json: bool) -> None:
    """Print the gate's criteria for the cards at ``paths`` (the first is the simulator's card,
    the others add checks, e.g. an arena-sensitivity card) and exit 1 unless all pass.

    Raises:
        InputError: No card, an unreadable card, or cards of different simulators.
    """
    from cogwm.validate import read_card
    from cogwm.validate.release import merged_checks, release_gate

    if not paths:
        raise InputError("--gate needs the simulator's card file (and optionally more cards)")
    cards = [read_card(p) for p in paths]
    verdict = release_gate(cards[0], merged_checks(cards[0], cards[1:]))
    if as_json:
        print_json(
            {
                "label": verdict.label,
                "passed": verdict.passed,
                "criteria": [c.model_dump() for c in verdict.criteria],
            }
        )
    else:
        console.print(_table(verdict))
        word = "PASSES" if verdict.passed else "FAILS"
        console.print(f"{verdict.label}: {word} the release gate", markup=False)
    if not verdict.passed:
        raise typer.Exit(EXIT_GATE_FAILED)


def _table(verdict: object) -> Table:
    from cogwm.validate.release import Verdict

    assert isinstance(verdict, Verdict)
    table = Table(
        Column("criterion", overflow="fold", min_width=24),
        "value",
        "95% CI",
        "n",
        "passed",
        Column("rule", overflow="fold"),
        title=f"release gate: {verdict.label}",
    )
    for c in verdict.criteria:
        value = "undefined" if c.value is None else f"{c.value:.3f}"
        interval = (
            "-" if c.ci_low is None or c.ci_high is None else f"[{c.ci_low:.3f}, {c.ci_high:.3f}]"
        )
        passed = ("yes" if c.passed else "no") if c.gating else "(reported)"
        table.add_row(escape(c.name), value, interval, str(c.n), passed, escape(c.reason))
    return table
