"""``cogwm score``: the turn tier of predictions against gold, and the trajectory and task tiers
of conversations. Input formats: ``cogwm.simulator.records``."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from cogwm import tasks
from cogwm.cli.common import console, err_console, print_json
from cogwm.cli.fidelity_table import ALL_ROW, print_paper_tables, split_by_dataset
from cogwm.cli.options import JsonOption, ResamplesOption, SeedOption
from cogwm.errors import InputError
from cogwm.metrics.aggregate import ReportedMean
from cogwm.metrics.summary import (
    DELTA_NAMES,
    ConversationScores,
    GroupSummary,
    TrajectorySummary,
    summarize_trajectories,
)
from cogwm.metrics.trajectory import (
    METRIC_NAMES,
    EmptyPolicy,
    MissingEmotionError,
    composite_series,
    dimension_deltas,
    nz_share,
)
from cogwm.metrics.turn import FidelityReport, FidelitySample, MetricSummary
from cogwm.schema import TaskSpec
from cogwm.simulator.records import (
    FidelityRecord,
    TrajectoryRecord,
    pair_fidelity,
    read_fidelity_file,
    read_trajectory_file,
)
from cogwm.stats.means import DEFAULT_RESAMPLES

if TYPE_CHECKING:
    from cogwm.metrics.embeddings import Embedder

app = typer.Typer(
    help="Score predictions (turn tier) and conversations (trajectory and task tiers).",
    no_args_is_help=True,
)

JudgeOption = Annotated[
    str | None,
    typer.Option(
        "--judge",
        help="Model address of the LLM judge (e.g. openai:gpt-4o-mini, llamacpp:smollm2).",
        show_default=False,
    ),
]
FidelityTaskOption = Annotated[
    str | None,
    typer.Option(
        "--task", help="Task whose dimension meanings the judge prompts use (or a .toml)."
    ),
]
EmbeddingCacheOption = Annotated[
    Path | None,
    typer.Option("--embedding-cache", help="SQLite file caching sentence embeddings."),
]
PredictedOnlyOption = Annotated[
    bool,
    typer.Option(
        "--predicted-only",
        help="Score only the gold records that have a prediction (a `simulate --limit` "
        "run); how many were left out is printed.",
    ),
]


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def _ci(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


# --- fidelity -----------------------------------------------------------------------------------


@app.command("fidelity")
def fidelity(
    predictions: Annotated[Path, typer.Argument(help="Predictions (JSON Lines).")],
    gold: Annotated[Path, typer.Argument(help="Gold records or exported dialogues (JSON Lines).")],
    as_json: JsonOption = False,
    judge: JudgeOption = None,
    task: FidelityTaskOption = None,
    embedding_cache: EmbeddingCacheOption = None,
    resamples: ResamplesOption = DEFAULT_RESAMPLES,
    seed: SeedOption = 0,
    predicted_only: PredictedOnlyOption = False,
) -> None:
    """Turn-tier fidelity of predicted states and utterances against gold (optionally judged)."""
    from cogwm.metrics.embeddings import CachedEmbedder, MiniLMEmbedder, default_embedder

    spec = tasks.get(task) if task is not None else None
    with tasks.files_catalog([task] if task else []).active():  # the labels a task file adds
        gold_records = read_fidelity_file(gold)
        predicted = read_fidelity_file(predictions)
    gold_records = _of_mode(gold_records, next(iter(predicted.values())).mode)
    if predicted_only:
        kept = {k: r for k, r in gold_records.items() if k in predicted}
        err_console.print(f"scoring {len(kept):,} of {len(gold_records):,} gold records")
        gold_records = kept
    samples = pair_fidelity(gold_records, predicted)
    embedder = (
        CachedEmbedder(MiniLMEmbedder(), cache_path=embedding_cache)
        if embedding_cache is not None
        else default_embedder()
    )
    datasets = {key: record.dataset for key, record in gold_records.items()}
    rows = _fidelity_rows(samples, datasets, embedder, resamples=resamples, seed=seed)
    report = rows[ALL_ROW]
    judged = _judge_turns(judge, samples, spec, datasets, (resamples, seed)) if judge else None
    if as_json:
        out: dict[str, Any] = report.model_dump(mode="json")
        out["by_dataset"] = {k: r.model_dump(mode="json") for k, r in rows.items() if k != ALL_ROW}
        if judged is not None:
            out["judge"] = {
                "model": judge,
                "metrics": judged[ALL_ROW],
                "by_dataset": {k: v for k, v in judged.items() if k != ALL_ROW},
            }
        print_json(out)
        return
    _print_fidelity(report)
    print_paper_tables(rows, _run_label(predicted))
    if judged is not None:
        _print_judge(str(judge), judged)


def _fidelity_rows(
    samples: list[FidelitySample],
    datasets: dict[str, str | None],
    embedder: Embedder,
    *,
    resamples: int,
    seed: int,
) -> dict[str, FidelityReport]:
    """The fidelity report of all samples (row ``ALL_ROW``) and of each dataset's."""
    from cogwm.metrics.turn import score_turns, summarize_turns

    with err_console.status(f"scoring {len(samples):,} samples"):
        scores = score_turns(samples, embedder=embedder)
        rows = {
            ALL_ROW: summarize_turns(
                samples, scores, embedding_model=embedder.model_id, n_resamples=resamples, seed=seed
            )
        }
        for name, (part, part_scores) in split_by_dataset(samples, scores, datasets).items():
            rows[name] = summarize_turns(
                part, part_scores, embedding_model=embedder.model_id, n_resamples=resamples,
                seed=seed,
            )  # fmt: skip
    return rows


def _of_mode(records: dict[str, FidelityRecord], mode: str | None) -> dict[str, FidelityRecord]:
    """A samples split holds both modes; predictions of one mode are scored on its samples."""
    if mode is None:
        return records
    return {k: r for k, r in records.items() if r.mode is None or r.mode == mode}


def _run_label(predicted: dict[str, FidelityRecord]) -> str:
    """The settings ``cogwm simulate`` wrote on the predictions (the paper's row name)."""
    first = next(iter(predicted.values()))
    if first.model is None:
        return "predictions"
    return f"{first.model}, {first.mode} mode, ablation {first.ablation}"


def _judge_turns(
    address: str,
    samples: list[FidelitySample],
    task: TaskSpec | None,
    datasets: dict[str, str | None],
    settings: tuple[int, int],
) -> dict[str, dict[str, Any]]:
    """The judge's summaries of all samples (row ``ALL_ROW``) and of each dataset's (the paper's
    per-dataset layout), each verdict asked once; ``settings`` is (resamples, seed)."""
    from cogwm import models
    from cogwm.metrics.judge import judge_turns, summarize_judge

    model = models.load(address)
    with err_console.status(f"judging {len(samples):,} samples with {address}"):
        verdicts = asyncio.run(judge_turns(model, samples, task=task))
    groups = {s.id: s.group for s in samples if s.group is not None}
    resamples, seed = settings
    parts: dict[str, list[Any]] = {ALL_ROW: list(verdicts)}
    for verdict in verdicts:
        name = datasets.get(verdict.sample_id)
        if name is not None:
            parts.setdefault(name, []).append(verdict)
    return {
        name: {
            metric: summary.model_dump(mode="json")
            for metric, summary in summarize_judge(
                part, groups=groups or None, n_resamples=resamples, seed=seed
            ).items()
        }
        for name, part in parts.items()
    }


def _print_fidelity(report: FidelityReport) -> None:
    table = Table(
        "metric", "mean", "95% CI", "n", "misses",
        title=f"turn fidelity over {report.n_samples:,} samples",
        caption=f"embeddings: {report.embedding_model}",
    )  # fmt: skip
    for m in report.metrics.values():
        table.add_row(m.name, _fmt(m.mean), _ci(m.ci_low, m.ci_high), f"{m.n:,}", _misses(m))
    console.print(table)


def _misses(m: MetricSummary) -> str:
    if m.misses is None:
        return ""
    return f"{m.misses:,} ({m.miss_rate:.1%})" if m.miss_rate is not None else f"{m.misses:,}"


def _print_judge(address: str, rows: dict[str, dict[str, Any]]) -> None:
    """The judge's scores in the paper's per-dataset layout: rows all and each dataset,
    columns the judged metrics (mean 1-5, 95% CI, n and failed verdicts)."""
    metrics = list(rows[ALL_ROW])
    prompts = ", ".join(f"{s['prompt_id']} v{s['prompt_version']}" for s in rows[ALL_ROW].values())
    table = Table("rows", *metrics, title=f"judge {address} (1-5)", caption=f"prompts: {prompts}")
    for name, summary in rows.items():
        cells = []
        for metric in metrics:
            s = summary.get(metric)
            cells.append(
                "-"
                if s is None
                else f"{_fmt(s['mean'], '.2f')}\n{_ci(s['ci_low'], s['ci_high'])}\n"
                f"n={s['n']:,}, failed {s['n_failed']:,}"
            )
        table.add_row(name, *cells, end_section=True)
    console.print(table)


# --- trajectories -------------------------------------------------------------------------------


@app.command("trajectories")
def trajectories(
    file: Annotated[Path, typer.Argument(help="Conversations (JSON Lines).")],
    task: Annotated[
        str,
        typer.Option("--task", help="Task whose weights apply (ESC, PD, CR, MI or a task .toml)."),
    ],
    as_json: JsonOption = False,
    empty: Annotated[
        EmptyPolicy, typer.Option("--empty", help="Empty B/D/I: count as 0, or carry forward.")
    ] = EmptyPolicy.ZERO,
    judge: JudgeOption = None,
    resamples: ResamplesOption = DEFAULT_RESAMPLES,
    seed: SeedOption = 0,
) -> None:
    """Trajectory metrics (AUC, Δ, PSR, Mono, per-dimension Δ, nz%) and task scores (CTS, GO)."""
    spec = tasks.get(task)
    spec.require_weights()
    with tasks.files_catalog([task]).active():  # the labels a task file adds
        records = read_trajectory_file(file)
        items = [_conversation(file, number, record, spec, empty) for number, record in records]
    if judge:
        items = _judge_outcomes(judge, records, items, spec)
    summary = summarize_trajectories(
        items, task=spec.name, empty=empty.value, n_resamples=resamples, seed=seed
    )
    if as_json:
        print_json(summary.model_dump(mode="json"))
        return
    _print_trajectories(summary)


def _conversation(
    path: Path, number: int, record: TrajectoryRecord, task: TaskSpec, empty: EmptyPolicy
) -> ConversationScores:
    if record.states is None:
        scores = list(record.scores or [])
        deltas, nz = None, None
    else:
        _check_score_range(path, number, record, task)
        try:
            scores = composite_series(record.states, task, empty)
        except MissingEmotionError as exc:
            raise InputError(f"{path}, line {number} ({record.id}): {exc}") from None
        deltas = dimension_deltas(record.states, empty)
        nz = nz_share(record.states)
    bad = next((i for i, s in enumerate(scores) if not math.isfinite(s)), None)
    if bad is not None:
        raise InputError(f"{path}, line {number} ({record.id}): score {bad} is not finite")
    return ConversationScores(
        id=record.id,
        scores=scores,
        deltas=deltas,
        nz=nz,
        agent=record.agent,
        scenario=record.scenario,
        good_outcome=record.good_outcome,
    )


def _check_score_range(path: Path, number: int, record: TrajectoryRecord, task: TaskSpec) -> None:
    """A B/D/I score outside the task's range is a data error: it would silently dominate the
    composite score (one score of 1e6 makes a CTS in the tens of thousands)."""
    low, high = task.score_range
    assert record.states is not None
    for turn, state in enumerate(record.states):
        for field in ("beliefs", "desires", "intentions"):
            for item in getattr(state, field):
                if item.score is not None and not low <= item.score <= high:
                    raise InputError(
                        f"{path}, line {number} ({record.id}): state {turn}: {field} score "
                        f"{item.score:g} is outside {task.name}'s range {low:g}..{high:g}"
                    )


def _judge_outcomes(
    address: str,
    records: list[tuple[int, TrajectoryRecord]],
    items: list[ConversationScores],
    task: TaskSpec,
) -> list[ConversationScores]:
    from dataclasses import replace

    from cogwm import models
    from cogwm.metrics.judge import judge_good_outcome

    task.require_good_outcome()
    dialogues = [
        (r.id, [(line.role, line.text) for line in r.transcript])
        for _, r in records
        if r.transcript
    ]
    if len(dialogues) < len(records):
        err_console.print(
            f"[yellow]note:[/] {len(records) - len(dialogues):,} conversations have no transcript;"
            " their stored GoodOutcome (if any) is kept"
        )
    model = models.load(address)
    with err_console.status(f"judging GoodOutcome of {len(dialogues):,} conversations"):
        verdicts = {
            v.dialogue_id: v for v in asyncio.run(judge_good_outcome(model, dialogues, task))
        }
    out = []
    for item in items:
        verdict = verdicts.get(item.id)
        if verdict is None:
            out.append(item)
        else:
            out.append(
                replace(
                    item,
                    good_outcome=verdict.good_outcome,
                    good_outcome_failed=verdict.good_outcome is None,
                )
            )
    return out


_LABELS = {"auc": "AUC", "delta": "Δ", "psr": "PSR", "mono": "Mono", "cts": "CTS", "nz": "nz%"}


def _estimate_row(name: str, e: ReportedMean) -> list[str]:
    return [_LABELS.get(name, name), _fmt(e.mean), _ci(e.ci_low, e.ci_high), f"{e.n:,}"]


def _print_group(title: str, group: GroupSummary) -> None:
    table = Table("metric", "mean", "95% CI", "n", title=title)
    for name in ("cts", *METRIC_NAMES[:-1], *DELTA_NAMES, "nz"):
        table.add_row(*_estimate_row(name, group.metrics[name]))
    if group.good_outcome is not None:
        table.add_row(*_estimate_row("GO", group.good_outcome))
    console.print(table)
    notes = [f"{group.conversations:,} conversations"]
    if group.mean_length is not None:
        notes.append(f"mean length {group.mean_length:.1f}")
    if group.undefined:
        notes.append(f"{group.undefined:,} with fewer than 2 scores (undefined)")
    if group.good_outcome_failed:
        notes.append(f"{group.good_outcome_failed:,} GoodOutcome verdicts unparsable")
    console.print("; ".join(notes))


def _print_agents(summary: TrajectorySummary) -> None:
    dynamics = Table(
        "agent", "CTS", "AUC", "Δ", "PSR", "Mono", "GO", "type",
        title="agents (CIs paired over shared scenarios; --json has them)",
    )  # fmt: skip
    deltas = Table("agent", *DELTA_NAMES, "nz%", title="agents: per-dimension Δ")
    for agent, group in summary.agents.items():
        m = group.metrics
        go = group.good_outcome.mean if group.good_outcome is not None else None
        dynamics.add_row(
            agent,
            *(_fmt(m[name].mean) for name in ("cts", *METRIC_NAMES[:-1])),
            _fmt(go),
            group.typology.value if group.typology is not None else "-",
        )
        deltas.add_row(agent, *(_fmt(m[name].mean) for name in (*DELTA_NAMES, "nz")))
    console.print(dynamics)
    console.print(deltas)


def _print_trajectories(summary: TrajectorySummary) -> None:
    _print_group(f"{summary.task} trajectories (empty = {summary.empty})", summary.overall)
    if summary.agents:
        _print_agents(summary)
    if summary.discriminability is not None:
        console.print(
            f"discriminability (mean across-agent std of Δ): {summary.discriminability:.3f}"
        )
    corr = Table("", *(_LABELS[n] for n in summary.correlations), title="Pearson r")
    for a, row in summary.correlations.items():
        corr.add_row(_LABELS[a], *(_fmt(v, ".2f") for v in row.values()))
    console.print(corr)
    console.print(f"correlations over {summary.correlation_n:,} trajectories with N >= 2")
