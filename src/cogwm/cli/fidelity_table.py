"""The turn-fidelity tables of ``cogwm score fidelity`` in the CogWM paper's layout: one row for
all samples and one per dataset, the state and utterance columns of its main table, then the
supplementary columns (MAE of B/D/I, BLEU-1, Distinct-1). Columns no row covers (the utterance
columns in understanding mode) are left out. Each cell is the mean, its 95% CI (bootstrap over
dialogues) and n."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.table import Table

from cogwm.cli.common import console
from cogwm.metrics.turn import FidelityReport, FidelitySample, MetricSummary, TurnScores

#: Columns of the main table (state, then utterance).
MAIN_COLUMNS: tuple[str, ...] = (
    "E-Acc", "B-Sim", "D-Sim", "I-Sim", "E-MAE", "ROUGE-L", "BLEU-4", "LenR",
)  # fmt: skip
#: Columns of the supplementary table.
SUPPLEMENTARY_COLUMNS: tuple[str, ...] = ("B-MAE", "D-MAE", "I-MAE", "BLEU-1", "Distinct-1")
#: The row of every sample.
ALL_ROW = "all"


def split_by_dataset(
    samples: Sequence[FidelitySample],
    scores: Sequence[TurnScores],
    datasets: Mapping[str, str | None],
) -> dict[str, tuple[list[FidelitySample], list[TurnScores]]]:
    """Samples and their scores by dataset (ids without a dataset are left out), names sorted."""
    parts: dict[str, tuple[list[FidelitySample], list[TurnScores]]] = {}
    for sample, score in zip(samples, scores, strict=True):
        name = datasets.get(sample.id)
        if name is None:
            continue
        chosen, their_scores = parts.setdefault(name, ([], []))
        chosen.append(sample)
        their_scores.append(score)
    return dict(sorted(parts.items()))


def _cell(metric: MetricSummary) -> str:
    if metric.mean is None:
        return f"-\nn={metric.n:,}"
    ci = (
        f"[{metric.ci_low:.3f}, {metric.ci_high:.3f}]"
        if metric.ci_low is not None and metric.ci_high is not None
        else "(no CI)"
    )
    return f"{metric.mean:.3f}\n{ci}\nn={metric.n:,}"


def _covered(rows: Mapping[str, FidelityReport], columns: Sequence[str]) -> list[str]:
    return [c for c in columns if any(r.metrics[c].n for r in rows.values())]


def paper_table(rows: Mapping[str, FidelityReport], columns: Sequence[str], title: str) -> Table:
    """One table: a row per report, a column per covered metric."""
    shown = _covered(rows, columns)
    table = Table("rows", "samples", *shown, title=title, show_lines=True)
    for name, report in rows.items():
        table.add_row(name, f"{report.n_samples:,}", *(_cell(report.metrics[c]) for c in shown))
    return table


def print_paper_tables(rows: Mapping[str, FidelityReport], label: str) -> None:
    """The main and supplementary tables; ``label`` names the run (model, mode, ablation)."""
    console.print(paper_table(rows, MAIN_COLUMNS, f"fidelity: {label}"))
    console.print(paper_table(rows, SUPPLEMENTARY_COLUMNS, f"fidelity, supplementary: {label}"))
    every = (*MAIN_COLUMNS, *SUPPLEMENTARY_COLUMNS)
    covered = set(_covered(rows, every))
    left_out = [c for c in every if c not in covered]
    if left_out:
        console.print(f"no sample covers {', '.join(left_out)} (left out)")
