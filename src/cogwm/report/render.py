"""Showing an ``ArenaReport``: rich tables on a terminal, one JSON object, or long-format CSV."""

from __future__ import annotations

import csv
import io
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from cogwm.metrics.aggregate import CorrelationMatrix
from cogwm.report.complementarity import Complementarity
from cogwm.report.tables import (
    TABLE6_COLUMNS,
    TASK_COLUMNS,
    ArenaReport,
    ArmRow,
    Cells,
    ranked_arms,
)
from cogwm.stats.estimate import Estimate
from cogwm.stats.means import DifferenceEstimate, MeanEstimate
from cogwm.validate.status import MIN_SEPARATION_SCENARIOS, NOT_VALIDATED, separation

_SIGNED = {"cts", "auc", "delta", "e_delta", "b_delta", "d_delta", "i_delta"}


def _number(value: float | None, signed: bool, digits: int = 3) -> str:
    """Paper style: ``+.233`` (no leading zero below 1), ``12.5`` for percentages."""
    if value is None:
        return "–"
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    if digits and abs(value) < 1:
        text = text.replace("0.", ".", 1)
    return text


def cell(estimate: MeanEstimate | None, *, signed: bool = True, digits: int = 3) -> str:
    """``mean`` over its CI ``[low, high]`` (one digit fewer), or ``–`` when undefined."""
    if estimate is None:
        return "–"
    text = _number(estimate.mean, signed, digits)
    if estimate.ci_low is not None and estimate.ci_high is not None:
        ci_digits = max(0, digits - 1)
        low = _number(estimate.ci_low, signed, ci_digits)
        high = _number(estimate.ci_high, signed, ci_digits)
        text += f"\n[{low}, {high}]"
    return text


def warnings(report: ArenaReport) -> list[str]:
    """Plain statements the reader must see before the numbers."""
    notes: list[str] = []
    if report.same_model_agents:
        notes.append(
            "One model plays both sides: agent(s) "
            + ", ".join(report.same_model_agents)
            + " run on the simulator's own model, which inflates their results."
        )
    if report.base_model_agents:
        notes.append(
            "The simulator is a fine-tuned copy of the agents' model: agent(s) "
            + ", ".join(report.base_model_agents)
            + " run on the model its adapter was trained over; a shared base can favour them, "
            "so confirm a ranking with agents on another model."
        )
    if report.errors:
        notes.append(
            f"{report.errors} conversation(s) ended in an infrastructure error and are excluded "
            "(resume the run to retry them)."
        )
    if report.agent_failures:
        notes.append(
            f"{report.agent_failures} conversation(s) ended when the agent broke its output "
            "format; they are scored and count against the agent."
        )
    if report.unfinished and report.played:
        notes.append(
            f"{report.unfinished} played dialogue(s) were left open (the person stopped "
            "playing); they are not scored."
        )
    elif report.unfinished:
        notes.append(f"{report.unfinished} conversation(s) are unfinished (resume the run).")
    return notes


def windows_line(report: ArenaReport) -> str | None:
    """What history the simulator and each agent were shown, in words (None: not recorded)."""
    return None if report.windows is None else report.windows.describe()


def status_line(report: ArenaReport) -> str:
    """The simulated user and its validity card's checks, in one line (what a ranking rests on)."""
    if report.simulator is None:
        return "Simulated user: not recorded. " + NOT_VALIDATED
    return report.simulator.line()


def difference_verdict(
    report: ArenaReport, difference: DifferenceEstimate
) -> tuple[bool | None, str | None]:
    """Whether ``difference`` separates its two agents, or why that is not said (see
    :func:`cogwm.validate.status.separation`)."""
    est = difference.difference
    return separation(
        est.ci_low, est.ci_high, difference.n_shared, report.simulator, tasks=report.tasks
    )


def separation_caption(report: ArenaReport) -> str:
    """What the paired differences may claim: why no verdict is given, and the rule."""
    if report.simulator is None:
        note: str | None = (
            "Differences are shown without a verdict: the simulated user's validity is unknown."
        )
    else:
        note = report.simulator.separation_note()
    rule = (
        f"A verdict needs at least {MIN_SEPARATION_SCENARIOS} paired scenarios and a simulated "
        "user that passed its arena-sensitivity check."
    )
    return rule if note is None else f"{note} {rule}"


def render(report: ArenaReport, console: Console) -> None:
    """Print every table of the report."""
    console.print(
        f"[bold]{report.run_name}[/bold] · config {report.config_hash[:12]} · "
        f"{report.finished} finished · {report.errors} error · {report.unfinished} unfinished · "
        f"{report.calls:,} calls · {report.tokens:,} tokens · ${report.cost_usd:.4f} · "
        f"empty B/D/I = {report.empty}"
    )
    console.print(status_line(report), markup=False, highlight=False, style="bold")
    shown = windows_line(report)
    if shown is not None:
        console.print(shown, markup=False, highlight=False)
    if report.scenarios is not None:
        console.print(report.scenarios, markup=False, highlight=False)
    for note in warnings(report):
        console.print(f"[yellow]Note:[/yellow] {note}")
    for table in _table6(report):
        console.print(table)
    console.print(_task_table(report))
    console.print(_discriminability(report))
    console.print(_differences(report))
    if report.complementarity:
        console.print(_complementarity(report.complementarity))
    if report.power:
        console.print(_power(report))
    if report.typology is not None:
        console.print(
            "Typology: " + ", ".join(f"{arm} {kind}" for arm, kind in report.typology.items())
        )
    else:
        console.print("Typology: needs at least 3 agent x condition arms.")
    if report.correlations is not None:
        console.print(_correlations(report.correlations))


def _table(title: str) -> Table:
    """A compact table: light borders, numbers fold instead of being cut with an ellipsis."""
    return Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True)


def _arm_table(title: str) -> Table:
    table = _table(title)
    table.add_column("Agent/Cond", overflow="fold", min_width=10)
    return table


def _ranked(report: ArenaReport) -> list[ArmRow]:
    return ranked_arms(report.arms)


def _table6(report: ArenaReport) -> list[Table]:
    """Table 6 in two parts that fit a terminal: trajectory metrics; dimensions and outcome."""
    first = _arm_table("Agents, trajectory (paper Table 6; 95% CI over scenarios, paired)")
    first.caption = (
        "Left/End: conversations the user left / the intent detector ended before max_rounds. "
        "Bad/Said: the simulated user's turns no person could have said (empty, no words, or "
        "its output format leaked into the text) / all its turns"
    )
    for header in ("n", "N̄", "Left/End", "Bad/Said"):
        first.add_column(header, justify="right", overflow="fold")
    trajectory = TABLE6_COLUMNS[:5]
    for header, _, _ in trajectory:
        first.add_column(header, justify="right", overflow="fold")
    tasks = sorted({t for row in report.arms for t in row.go_by_task})
    second = _arm_table("Agents, dimensions and outcome (Table 6, continued)")
    for header, _, _ in TABLE6_COLUMNS[5:]:
        second.add_column(header, justify="right", overflow="fold")
    second.add_column("GO%", justify="right", overflow="fold")
    k = max((row.go_pass_k.k for row in report.arms if row.go_pass_k), default=0)
    if k:
        second.add_column(f"GO pass^{k}%", justify="right", overflow="fold")
    for task in tasks:
        second.add_column(f"GO-{task}", justify="right", overflow="fold")
    for row in _ranked(report):
        length = "–" if row.mean_length is None else f"{row.mean_length:.1f}"
        n = f"{row.n}"
        if row.agent_failures:
            n += f"\n{row.agent_failures} agent fail"
        if row.errors:
            n += f"\n+{row.errors} infra err"
        first.add_row(
            row.arm,
            n,
            length,
            f"{row.left_early}/{row.ended_early}",
            f"{row.malformed_turns}/{row.user_turns}",
            *(cell(row.cells.get(name), signed=name in _SIGNED) for _, name, _ in trajectory),
        )
        dims = [
            cell(row.cells.get(name), signed=name in _SIGNED, digits=0 if scale > 1 else 3)
            for _, name, scale in TABLE6_COLUMNS[5:]
        ]
        gos = [cell(row.go_by_task.get(t), signed=False, digits=0) for t in tasks]
        passes = [_pass_k(row)] if k else []
        second.add_row(row.arm, *dims, cell(row.go, signed=False, digits=0), *passes, *gos)
    return [first, second]


def _pass_k(row: ArmRow) -> str:
    found = row.go_pass_k
    return "–" if found is None else f"{100 * found.value:.0f}\n({found.scenarios} sc.)"


def _power(report: ArenaReport) -> Table:
    detect = "" if report.detect is None else f" and for a difference of {report.detect:g}"
    table = _table(
        "Scenarios needed for 80% power (paired CTS, two-sided 5%): for the observed "
        f"difference{detect}"
    )
    for header in ("a − b", "shared", "diff", "SD"):
        table.add_column(header, justify="right" if header != "a − b" else "left")
    table.add_column("needed (observed)", justify="right")
    if report.detect is not None:
        table.add_column(f"needed (D={report.detect:g})", justify="right")
    for row in report.power:
        cells = [
            f"{row.agent_a} − {row.agent_b}",
            str(row.n_shared),
            _number(row.difference, True),
            "–" if row.sd is None else _number(row.sd, False),
            "–" if row.needed_observed is None else f"{row.needed_observed:,}",
        ]
        if report.detect is not None:
            cells.append("–" if row.needed_detect is None else f"{row.needed_detect:,}")
        table.add_row(*cells)
    return table


def _task_table(report: ArenaReport) -> Table:
    table = _table("Per task (paper Table 20; 95% CI over scenarios, paired)")
    table.add_column("Task")
    table.add_column("Agent/Cond", overflow="fold", min_width=10)
    table.add_column("n", justify="right", overflow="fold")
    for header, _, _ in TASK_COLUMNS:
        table.add_column(header, justify="right", overflow="fold")
    for row in report.per_task:
        table.add_row(
            row.task,
            row.arm,
            str(row.n),
            *(cell(row.cells.get(name)) for _, name, _ in TASK_COLUMNS),
        )
    return table


def _discriminability(report: ArenaReport) -> Table:
    table = _table("Per-task discriminability (mean over E/B/D/I of the across-arm SD of Δ)")
    for header in ("Task", "value", "E", "B", "D", "I", "arms"):
        table.add_column(header, justify="right" if header != "Task" else "left")
    for task, d in report.discriminability.items():
        dims = [
            _number(d.per_dimension.get(k), False)
            for k in ("emotion", "belief", "desire", "intention")
        ]
        table.add_row(task, _number(d.value, False), *dims, str(d.n_agents))
    return table


def _differences(report: ArenaReport) -> Table:
    table = _table("Paired CTS differences (a − b over shared scenarios; 95% CI)")
    verdicts = [difference_verdict(report, d) for d in report.differences]
    # Without any verdict the column is left out: a column of dashes under "separated" reads
    # as a claim about the agents.
    any_verdict = any(separated is not None for separated, _ in verdicts)
    headers = ["a", "b", "a − b", "scenarios"] + (["separated"] if any_verdict else [])
    for header in headers:
        table.add_column(header, overflow="fold")
    for d, (separated, _) in zip(report.differences, verdicts, strict=True):
        row = [d.agent_a, d.agent_b, cell(d.difference).replace("\n", " "), str(d.n_shared)]
        if any_verdict:
            row.append("–" if separated is None else "yes" if separated else "no")
        table.add_row(*row)
    table.caption = separation_caption(report)
    return table


def _complementarity(figures: list[Complementarity]) -> Table:
    table = _table(
        "CTS and GoodOutcome: Kendall's τ-b of arms' mean CTS vs GO rate; GO vs improvement "
        "(Δ > 0) per conversation (95% CI over scenarios)"
    )
    headers = ("Task", "τ (arms, scenarios)", "GO+ Δ>0", "GO+ Δ≤0", "GO− Δ>0", "GO− Δ≤0")
    for header in (*headers, "discordant %", "left out"):
        table.add_column(header, justify="left" if header == "Task" else "right")
    for figure in figures:
        tau, counts = figure.tau, figure.table
        share = counts.discordant
        bounds = ("value", "ci_low", "ci_high")
        percent = share.model_copy(
            update={k: None if (v := getattr(share, k)) is None else 100 * v for k in bounds}
        )
        table.add_row(
            figure.scope,
            f"{_interval(tau, signed=True, digits=2)} ({tau.n}, {tau.n_clusters})",
            str(counts.both),
            str(counts.first_only),
            str(counts.second_only),
            str(counts.neither),
            _interval(percent, signed=False, digits=0),
            f"{figure.no_verdict} unjudged, {figure.no_delta} no Δ",
        )
    table.caption = (
        "Discordant: a good outcome without improvement, or improvement without one. τ needs "
        "3 arms with a CTS and a judged conversation, and rankings that are not constant."
    )
    return table


def _interval(estimate: Estimate, *, signed: bool, digits: int) -> str:
    """``value [low, high]`` on one line, ``–`` where undefined."""
    if estimate.value is None:
        return "–"
    text = _number(estimate.value, signed, digits)
    if estimate.ci_low is not None and estimate.ci_high is not None:
        low, high = (_number(v, signed, digits) for v in (estimate.ci_low, estimate.ci_high))
        text += f" [{low}, {high}]"
    return text


def _correlations(matrix: CorrelationMatrix) -> Table:
    names = matrix.names
    table = _table(f"Correlations of trajectory metrics (Pearson, n = {matrix.n})")
    table.add_column("")
    for name in names:
        table.add_column(name, justify="right", overflow="fold")
    for i, name in enumerate(names):
        table.add_row(name, *(_number(v, True, 2) for v in matrix.r[i]))
    return table


# ------------------------------------------------------------------------------ JSON and CSV


def _estimate(estimate: MeanEstimate | None) -> dict[str, Any] | None:
    return None if estimate is None else estimate.model_dump()


def _cells(cells: Cells) -> dict[str, Any]:
    return {k: _estimate(v) for k, v in cells.items()}


def to_json(report: ArenaReport) -> dict[str, Any]:
    """The report as one JSON-ready object."""
    return {
        "run": report.run_name,
        "config_hash": report.config_hash,
        "empty": report.empty,
        "counts": {
            "finished": report.finished,
            "errors": report.errors,
            "agent_failures": report.agent_failures,
            "unfinished": report.unfinished,
        },
        "warnings": warnings(report),
        "same_model_agents": report.same_model_agents,
        "base_model_agents": report.base_model_agents,
        "agents": [
            {
                "arm": r.arm,
                "n": r.n,
                "errors": r.errors,
                "failures": {"agent": r.agent_failures, "infrastructure": r.errors},
                "mean_length": r.mean_length,
                "metrics": _cells(r.cells),
                "go_pct": _estimate(r.go),
                "go_pct_by_task": _cells(r.go_by_task),
                "go_unjudged": r.go_unjudged,
                "go_pass_k": None if r.go_pass_k is None else r.go_pass_k._asdict(),
                "left_early": r.left_early,
                "ended_early": r.ended_early,
                "endings": r.endings,
                "user_turns": r.user_turns,
                "malformed_user_turns": r.malformed_turns,
            }
            for r in ranked_arms(report.arms)
        ],
        "windows": None if report.windows is None else report.windows.to_json(),
        "scenarios": report.scenarios,
        "per_task": [
            {"task": r.task, "arm": r.arm, "n": r.n, "metrics": _cells(r.cells)}
            for r in report.per_task
        ],
        "discriminability": {t: d._asdict() for t, d in report.discriminability.items()},
        "typology": report.typology,
        "power": {
            "level": 0.8,
            "detect": report.detect,
            "contrasts": [p._asdict() for p in report.power],
        },
        "cts_differences": [_difference_json(report, d) for d in report.differences],
        "correlations": None if report.correlations is None else report.correlations._asdict(),
        "usage": {"calls": report.calls, "tokens": report.tokens, "cost_usd": report.cost_usd},
        "simulator_status": None if report.simulator is None else report.simulator.to_json(),
        "cts_go_complementarity": [figure.to_json() for figure in report.complementarity],
    }


def _difference_json(report: ArenaReport, difference: DifferenceEstimate) -> dict[str, Any]:
    separated, reason = difference_verdict(report, difference)
    return {
        "a": difference.agent_a,
        "b": difference.agent_b,
        "difference": _estimate(difference.difference),
        "shared_scenarios": difference.n_shared,
        "separated": separated,
        "separated_reason": reason,
    }


CSV_FIELDS = ("table", "task", "arm", "metric", "mean", "ci_low", "ci_high", "n")


def to_csv(report: ArenaReport) -> str:
    """Long-format CSV: one row per (table, task, arm, metric)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()

    def put(table: str, task: str, arm: str, metric: str, est: MeanEstimate | None) -> None:
        if est is not None:
            writer.writerow(
                {
                    "table": table,
                    "task": task,
                    "arm": arm,
                    "metric": metric,
                    "mean": est.mean,
                    "ci_low": est.ci_low,
                    "ci_high": est.ci_high,
                    "n": est.n,
                }
            )

    for row in report.arms:
        for metric, est in row.cells.items():
            put("agents", "all", row.arm, metric, est)
        put("agents", "all", row.arm, "go_pct", row.go)
        for task, est in row.go_by_task.items():
            put("agents", task, row.arm, "go_pct", est)
    for trow in report.per_task:
        for metric, est in trow.cells.items():
            put("per_task", trow.task, trow.arm, metric, est)
    return out.getvalue()
