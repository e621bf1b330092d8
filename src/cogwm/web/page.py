"""The self-contained HTML report of an arena run.

One file: the tables are rendered on the server from the report layer, the charts are inline
SVG, and the conversations are inlined as gzip-compressed, base64-encoded JSON that the page's
own script decodes (``DecompressionStream``) and draws on demand (50 per page, one transcript at
a time), so the file stays small and opens fast for thousands of conversations. Nothing is
fetched from anywhere: a Content-Security-Policy forbids it.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from cogwm.arena.run_data import RunData
from cogwm.report import build_report, load_run, status_line, warnings
from cogwm.report.render import cell, difference_verdict, separation_caption
from cogwm.report.tables import TABLE6_COLUMNS, TASK_COLUMNS, ArenaReport, ArmRow, ranked_arms
from cogwm.stats.means import DifferenceEstimate, MeanEstimate
from cogwm.store import RunStore
from cogwm.web import figures, payload
from cogwm.web.glossary import header_cell, help_json
from cogwm.web.svg import heatmap

#: Columns shown with a sign (deltas and scores that can be negative).
SIGNED = frozenset({"cts", "auc", "delta", "e_delta", "b_delta", "d_delta", "i_delta"})
#: Bidirectional embedding, override and isolate controls (U+202A-U+202E, U+2066-U+2069): shown
#: as they are, they reorder the text around them, so "evil" could display as "live".
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


@cache
def asset(name: str) -> str:
    """A file shipped in ``cogwm/web/assets`` (stylesheet, script, template)."""
    return (resources.files("cogwm.web") / "assets" / name).read_text(encoding="utf-8")


def without_bidi_controls(value: Any) -> Any:
    """``value`` as a page may show it: text without bidirectional controls (markup stays
    markup; other values pass unchanged)."""
    if isinstance(value, Markup):
        return Markup(BIDI_CONTROLS.sub("", value))
    if isinstance(value, str):
        return BIDI_CONTROLS.sub("", value)
    return value


def environment() -> Any:
    """The Jinja environment of the web pages (autoescaping on; every value shown loses its
    bidirectional controls, as text drawn by the pages' script does)."""
    import jinja2

    return jinja2.Environment(
        autoescape=True, undefined=jinja2.StrictUndefined, finalize=without_bidi_controls
    )


def pack(obj: Any) -> str:
    """JSON, gzip-compressed and base64-encoded (what the page's script decodes)."""
    raw = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return base64.b64encode(gzip.compress(raw.encode("utf-8"), mtime=0)).decode("ascii")


def unpack(blob: str) -> Any:
    """The inverse of :func:`pack`."""
    return json.loads(gzip.decompress(base64.b64decode(blob)).decode("utf-8"))


def est(estimate: MeanEstimate | None, metric: str, signed: bool = True, digits: int = 3) -> Markup:
    """A table cell: the mean over its CI, with the exact mean as ``data-mean`` for tools."""
    text = cell(estimate, signed=signed, digits=digits)
    mean, _, ci = text.partition("\n")
    attrs = f' data-metric="{escape(metric)}"'
    if estimate is not None:
        attrs += f' data-mean="{estimate.mean!r}"'
    small = Markup("<small>{}</small>").format(ci) if ci else ""
    return Markup("<td{}>{}{}</td>").format(Markup(attrs), mean, small)


def num(value: float | None) -> str:
    """A plain number with three digits, ``–`` when undefined."""
    return "–" if value is None else f"{value:.3f}"


def separated(report: ArenaReport, difference: DifferenceEstimate) -> str:
    """Whether a difference's CI excludes zero, said only when it can be trusted (``–``
    otherwise; the reason is in the table's note)."""
    verdict, _ = difference_verdict(report, difference)
    return "–" if verdict is None else "yes" if verdict else "no"


def any_verdict(report: ArenaReport) -> bool:
    """Whether any paired difference may carry a verdict (else the column is left out)."""
    return any(difference_verdict(report, d)[0] is not None for d in report.differences)


def failure_count(row: ArmRow) -> int:
    """Failed conversations of an arm, both kinds (see :func:`failure_text`)."""
    return row.errors + row.agent_failures


def failure_text(row: ArmRow) -> str:
    """Failures of an arm by kind: infrastructure (excluded, re-run by --resume) and agent
    (the agent broke its output format; scored)."""
    parts = []
    if row.errors:
        parts.append(f"infrastructure {row.errors}")
    if row.agent_failures:
        parts.append(f"agent {row.agent_failures}")
    return " · ".join(parts)


def report_html(
    store: RunStore,
    *,
    empty: str = "zero",
    n_resamples: int = 2000,
    seed: int = 0,
) -> str:
    """The whole report of the run in ``store`` as one HTML document."""
    data = load_run(store, empty=empty)
    with data.catalog.active():  # the run's own tasks, by name, for every figure
        return _report_html(store, data, n_resamples=n_resamples, seed=seed)


def _report_html(store: RunStore, data: RunData, *, n_resamples: int, seed: int) -> str:
    from cogwm import __version__

    report: ArenaReport = build_report(
        data, n_resamples=n_resamples, seed=seed, with_complementarity=False
    )
    meta = payload.run_meta(data)
    played = payload.is_play_config(meta["config"])
    conversations = payload.conversation_records(store, data)
    correlations = report.correlations
    cache: figures.SeriesCache = {}
    template = environment().from_string(asset("report.html.j2"))
    return str(
        template.render(
            version=__version__,
            report=report,
            meta=meta,
            played=played,
            notes=warnings(report),
            status=status_line(report),
            trusted=report.simulator is not None and report.simulator.trusted,
            separation_caption=separation_caption(report),
            any_verdict=any_verdict(report),
            n_resamples=n_resamples,
            columns=TABLE6_COLUMNS,
            task_columns=TASK_COLUMNS,
            signed=SIGNED,
            arms=ranked_arms(report.arms),
            go_tasks=sorted({t for row in report.arms for t in row.go_by_task}),
            pass_k=max((r.go_pass_k.k for r in report.arms if r.go_pass_k), default=0),
            failure_text=failure_text,
            failure_count=failure_count,
            th=header_cell,
            help_json=help_json(),
            est=est,
            num=num,
            separated=separated,
            trajectories=figures.trajectory_svgs(data, cache),
            cross_task=figures.cross_task_figure(data, n_resamples=n_resamples, seed=seed),
            cross_task_panels=figures.cross_task_panels(data, n_resamples=n_resamples, seed=seed),
            grid=figures.paper_grid(data, cache=cache),
            grid_nonzero=figures.paper_grid(data, nonzero_only=True, cache=cache),
            heatmap=None
            if correlations is None
            else heatmap(
                correlations.names,
                correlations.r,
                title=f"Pearson r (n = {correlations.n})",
            ),
            encoding="gzip+base64",
            blob=pack({"conversations": conversations}),
            css=asset("report.css"),
            js=asset("report.js"),
        )
    )


def write_report(db: Path, out: Path, **options: Any) -> int:
    """Write the report of the run store ``db`` to ``out``; returns the bytes written."""
    with RunStore(db, read_only=True) as store:
        html = report_html(store, **options)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = html.encode("utf-8")
    out.write_bytes(data)
    return len(data)
