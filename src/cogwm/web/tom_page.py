"""The self-contained HTML report of a DialToM store (``cogwm view --tom-db``).

Tables of Correctness Rates with Wilson intervals drawn against the random baseline (by model x
domain x task, by attribute, counterfactual, degradation), the gap and probe tables of
``cogwm tom stats``, and every stored answer with its item: context, profile, question, the
options in the order the model saw them, gold, the model's choice, the scoring path and the raw
output. Answers travel as compressed JSON, drawn on demand like the arena report's transcripts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup
from pydantic import BaseModel

from cogwm.tom.items import ToMItem
from cogwm.tom.stats import RateRow, StatsReport, store_stats
from cogwm.tom.store import AnswerRow, RunInfo, ToMStore, open_store
from cogwm.web.page import asset, environment, pack

#: Tables of rates: (title, StatsReport field, grouping columns).
RATE_TABLES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "Correctness by model × domain × task (paper Table 3)",
        "table3_rates",
        ("model", "domain", "task"),
    ),
    (
        "Correctness by attribute, retrospective (paper Table 5)",
        "table5_attributes",
        ("model", "domain", "attribute"),
    ),
    ("Counterfactual probe (paper Table 7)", "table7_counterfactual", ("model", "domain")),
    ("Context degradation", "degradation", ("model", "domain", "history_turns")),
)
#: Other tables, shown with their own columns.
OTHER_TABLES: tuple[tuple[str, str], ...] = (
    ("Retrospective–prospective gap (χ², Cramér's V)", "table3_gap"),
    ("Cross-domain and cross-task correlations (paper Table 4)", "table4_correlations"),
    ("Easy–Hard gap (Mann–Whitney U, rank-biserial r)", "table6_easy_hard"),
    ("Reasoning injection (McNemar)", "table8_injection"),
    ("Open-ended answers", "open_ended"),
    ("Circular evaluation (every rotation of the options correct)", "circular"),
    ("Position bias (answers by shown position)", "position_bias"),
    ("Correctness per seed", "seeds"),
    ("Errors", "errors"),
    ("Across models", "cross_model"),
    ("Agreement of people", "people_agreement"),
)


def interval_svg(row: RateRow, width: int = 160) -> Markup:
    """The rate with its interval on [0, 1], the random baseline as a red tick."""
    height = 14

    def x(v: float) -> float:
        return 4 + v * (width - 8)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" class="ci">',
        f'<line x1="4" x2="{width - 4}" y1="7" y2="7" stroke="#ddd"/>',
    ]
    if row.baseline is not None:
        b = x(row.baseline)
        parts.append(f'<line x1="{b:.1f}" x2="{b:.1f}" y1="1" y2="13" stroke="#D55E00"/>')
    majority = getattr(row, "majority", None)
    if majority is not None:
        m = x(majority)
        parts.append(
            f'<line x1="{m:.1f}" x2="{m:.1f}" y1="1" y2="13" stroke="#555" stroke-dasharray="2,1"/>'
        )
    if row.ci_low is not None and row.ci_high is not None:
        parts.append(
            f'<line x1="{x(row.ci_low):.1f}" x2="{x(row.ci_high):.1f}" y1="7" y2="7"'
            ' stroke="#0072B2" stroke-width="3"/>'
        )
    if row.rate is not None:
        parts.append(f'<circle cx="{x(row.rate):.1f}" cy="7" r="3.5" fill="#0072B2"/>')
    parts.append("</svg>")
    return Markup("".join(parts))


def pct(value: float | None) -> str:
    """A share as a percentage with one decimal, ``–`` when undefined."""
    return "–" if value is None else f"{100 * value:.1f}"


def plain(value: Any) -> str:
    """A table cell's text: numbers with three digits, None as ``–``."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return "–" if not math.isfinite(value) else f"{value:.3f}"
    return str(value)


def columns_of(rows: Sequence[BaseModel]) -> list[str]:
    """The field names of a table's rows (notes last)."""
    if not rows:
        return []
    names = list(type(rows[0]).model_fields)
    return [n for n in names if n != "note"] + (["note"] if "note" in names else [])


def item_record(item: ToMItem) -> dict[str, Any]:
    """What the page shows of an item."""
    return {
        "task": item.task.value,
        "variant": item.variant.value,
        "domain": item.domain.value,
        "attribute": None if item.attribute is None else item.attribute.value,
        "history_turns": item.history_turns,
        "context": [[line.speaker, line.role.value, line.text] for line in item.context],
        "shown": [[line.speaker, line.text] for line in item.shown_history()],
        "profile": item.profile,
        "question": item.question,
        "options": item.options,
        "gold": item.gold,
        "gold_index": item.gold_index if item.options else None,
        "source": item.provenance.source.value,
        "corpus": item.provenance.corpus,
        "dialogue": item.provenance.dialogue_id,
    }


def answer_record(answer: AnswerRow) -> dict[str, Any]:
    """One answer; ``shown`` pairs each letter with the index of the option it showed."""
    shown = [list(pair) for pair in zip(answer.letters, answer.permutation, strict=True)]
    return {
        "run": answer.run_id,
        "item": answer.item_id,
        "shown": shown,
        "gold_letter": answer.gold_letter,
        "choice": answer.choice,
        "chosen_index": answer.chosen_index,
        "correct": answer.correct,
        "parsed": answer.parsed,
        "path": answer.path,
        "raw": answer.raw,
        "probs": answer.probs,
    }


def run_record(run: RunInfo) -> dict[str, Any]:
    """A run's identity."""
    return {
        "model": run.model,
        "condition": run.condition,
        "teacher": run.teacher,
        "seed": run.seed,
        "prompt_version": run.prompt_version,
    }


def tom_html(store: ToMStore) -> str:
    """The whole DialToM report of ``store`` as one HTML document."""
    from cogwm import __version__

    report: StatsReport = store_stats(store)
    items = store.items()
    answers = store.answers()
    used = {a.item_id for a in answers}
    payload = {
        "runs": {r.run_id: run_record(r) for r in store.runs()},
        "items": {i: item_record(item) for i, item in items.items() if i in used},
        "answers": [answer_record(a) for a in answers],
    }
    template = environment().from_string(asset("tom.html.j2"))
    return str(
        template.render(
            version=__version__,
            title=store.path.name,
            report=report,
            rate_tables=[
                (title, getattr(report, field), keys) for title, field, keys in RATE_TABLES
            ],
            other_tables=[
                (title, rows, columns_of(rows))
                for title, field in OTHER_TABLES
                if (rows := getattr(report, field, []))
            ],
            interval=interval_svg,
            pct=pct,
            plain=plain,
            encoding="gzip+base64",
            blob=pack(payload),
            css=asset("report.css"),
            js=asset("report.js") + "\n" + asset("tom.js"),
        )
    )


def write_tom_report(db: Path, out: Path) -> int:
    """Write the DialToM report of ``db`` to ``out``; returns the bytes written."""
    with open_store(db, read_only=True) as store:
        html = tom_html(store)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = html.encode("utf-8")
    out.write_bytes(data)
    return len(data)
