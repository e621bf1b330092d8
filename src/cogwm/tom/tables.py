"""The DialToM tables as terminal tables (rich), CSV files and JSON.

Table names follow the paper: ``table3_rates`` / ``table3_gap`` (CR per model x domain x task and
the retrospective-prospective gap), ``table4_correlations``, ``table5_attributes``,
``table6_easy_hard``, ``table7_counterfactual``, ``table8_injection``, plus ``degradation``,
``open_ended`` and ``all_cells`` (every model x condition x domain x task x attribute x variant).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from cogwm.tom.stats import CrossModelRow, RateRow, StatsReport, not_above_majority

TITLES: dict[str, str] = {
    "table3_rates": "Table 3 — Correctness Rate per model × domain × task (base items)",
    "table3_gap": "Table 3 — Retrospective–prospective gap (Pearson χ² or Fisher, Cramér's V)",
    "table4_correlations": "Table 4 — Cross-domain and cross-task correlations",
    "table5_attributes": "Table 5 — Retrospective CR per attribute",
    "table6_easy_hard": "Table 6 — Easy vs Hard (Mann–Whitney U, rank-biserial r)",
    "table7_counterfactual": "Table 7 — Counterfactual probe (None of the above correct)",
    "table8_injection": "Table 8 — Reasoning injection (McNemar)",
    "degradation": "Context degradation — CR by restored history turns",
    "open_ended": "Open-ended inferences — BLEU, ROUGE-L, embedding, judge (1–3)",
    "people_agreement": "People — agreement on the chosen option (Gwet's AC1)",
    "circular": "Circular evaluation — plain CR vs CR with every rotation right",
    "position_bias": "Position bias — most chosen letter over every asked order",
    "seeds": "Seeds — CR of every seed of the models run with several",
    "errors": "Errors — the kind of distractor chosen by wrong answers",
    "cross_model": "Models side by side — CR % per domain × task (base items)",
}


def report_json(report: StatsReport) -> dict[str, Any]:
    """The whole report as one JSON-ready dict."""
    return report.model_dump()


def write_csv(report: StatsReport, directory: Path) -> list[Path]:
    """One CSV per table in ``directory`` (created); returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, value in report:
        if not isinstance(value, list):
            continue
        path = directory / f"{name}.csv"
        fields = _fields(value, name, report)
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            for row in value:
                writer.writerow(_flat(row.model_dump()))
        written.append(path)
    return written


def _flat(data: dict[str, Any]) -> dict[str, Any]:
    """A row for CSV: a dict field (the cross-model rates) becomes one column per key."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update({f"{key}:{k}": _csv_value(v) for k, v in value.items()})
        else:
            flat[key] = _csv_value(value)
    return flat


def _fields(rows: Sequence[BaseModel], name: str, report: StatsReport) -> list[str]:
    if rows:
        return list(_flat(rows[0].model_dump()))
    annotation = type(report).model_fields[name].annotation
    row_type = getattr(annotation, "__args__", (None,))[0]
    return list(row_type.model_fields) if row_type is not None else []


def _csv_value(value: Any) -> Any:
    return "" if value is None else value


def _fmt(value: Any, *, pct: bool = False, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if pct:
            return f"{100 * value:.1f}"
        if value != 0 and abs(value) < 10**-digits:
            return f"{value:.2e}"
        return f"{value:.{digits}f}"
    return str(value)


def _ci(row: RateRow) -> str:
    if row.ci_low is None or row.ci_high is None:
        return "—"
    return f"[{100 * row.ci_low:.1f}, {100 * row.ci_high:.1f}]"


def _rate(row: RateRow) -> str:
    """The CR in %; over several seeds "mean ± SD (k seeds)"."""
    if row.seeds > 1 and row.seed_sd is not None:
        return f"{_fmt(row.rate, pct=True)} ± {100 * row.seed_sd:.1f} ({row.seeds} seeds)"
    return _fmt(row.rate, pct=True)


def rates_table(rows: Sequence[RateRow], title: str, keys: Sequence[str]) -> Table:
    """A rich table of Correctness Rates (in %) with interval, baseline and unparsed count."""
    table = Table(title=title, title_justify="left")
    for key in keys:
        table.add_column(key)
    for column in ("n", "CR %", "95% CI", "random %", "majority %", "unparsed"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(
            *[_fmt(getattr(row, k)) for k in keys],
            str(row.n),
            _rate(row),
            _ci(row),
            _fmt(row.baseline, pct=True),
            _fmt(row.majority, pct=True) + (" !" if not_above_majority(row) else ""),
            str(row.unparsed),
        )
    if any(not_above_majority(r) for r in rows):
        table.caption = "! the rate is not above the majority-answer baseline"
    return table


def _generic_table(
    rows: Sequence[BaseModel], title: str, pct_fields: set[str]
) -> tuple[Table, list[str]]:
    """A table of any row model; its ``note`` column becomes numbered footnotes."""
    table = Table(title=title, title_justify="left")
    fields = [f for f in type(rows[0]).model_fields if f != "note"]
    for name in fields:
        table.add_column(name + (" %" if name in pct_fields else ""))
    notes: list[str] = []
    for row in rows:
        data = row.model_dump()
        cells = [_fmt(data[f], pct=f in pct_fields) for f in fields]
        if data.get("note"):
            if data["note"] not in notes:
                notes.append(data["note"])
            cells[-1] = f"{cells[-1]} [{notes.index(data['note']) + 1}]"
        table.add_row(*cells)
    return table, notes


_PCT = {
    "table3_gap": {"retrospective", "prospective"},
    "table6_easy_hard": {"hard", "easy", "delta"},
    "table8_injection": {"baseline", "injected", "delta"},
    "people_agreement": {"rate"},
    "circular": {"plain", "circular", "delta"},
    "position_bias": {"top_share", "gold_share"},
    "errors": {"share"},
}

_RATE_KEYS = {
    "table3_rates": ("model", "domain", "task"),
    "table5_attributes": ("model", "domain", "attribute"),
    "table7_counterfactual": ("model", "domain"),
    "degradation": ("model", "domain", "history_turns"),
    "seeds": ("model", "condition", "domain", "task", "seed"),
}


def generic_table(rows: Sequence[BaseModel], title: str, name: str) -> Table:
    """A table of any row model of the report named ``name`` (notes dropped)."""
    return _generic_table(rows, title, _PCT.get(name, set()))[0]


def cross_model_table(rows: Sequence[CrossModelRow], title: str) -> Table:
    """The cross-model table: a column per model, baselines beside them."""
    table = Table(title=title, title_justify="left")
    models = list(rows[0].rates) if rows else []
    for column in ("domain", "task", "items", "random %", "majority %", *models):
        table.add_column(column, justify="left" if column in {"domain", "task"} else "right")
    for row in rows:
        table.add_row(
            row.domain,
            row.task,
            str(row.n_items),
            _fmt(row.random, pct=True),
            _fmt(row.majority, pct=True),
            *[_fmt(row.rates[m], pct=True) for m in models],
        )
    return table


def render_report(report: StatsReport, console: Console) -> None:
    """Print every non-empty table of the report."""
    console.print(
        f"{report.answers} stored answers, {report.unparsed} unparsed (counted as wrong)."
    )
    for name, title in TITLES.items():
        rows = getattr(report, name)
        if not rows:
            continue
        if name in _RATE_KEYS:
            console.print(rates_table(rows, title, _RATE_KEYS[name]))
        elif name == "cross_model":
            console.print(cross_model_table(rows, title))
        else:
            table, notes = _generic_table(rows, title, _PCT.get(name, set()))
            console.print(table)
            for k, note in enumerate(notes, start=1):
                console.print(f"  [{k}] {note}", markup=False, highlight=False)
