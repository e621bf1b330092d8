"""``cogwm annotate``: partial states from LLM annotators and from the corpora's human labels."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cogwm.cli.common import (
    EXIT_BUDGET_REACHED,
    DataDirOption,
    MaxTokensOption,
    PreflightOption,
    err_console,
    preflight_models,
    require_resumable,
    resolve_data_dir,
)
from cogwm.cli.options import (
    ConcurrencyOption,
    JsonOption,
    LimitOption,
    ProgressOption,
    ResumeOption,
    SeedOption,
)

if TYPE_CHECKING:
    from cogwm.annotate.quality import Figure
    from cogwm.annotate.runner import RunTotals
    from cogwm.annotate.store import AnnotationStore
    from cogwm.models import Model
    from cogwm.models.budget import Budget
    from cogwm.schema import Dialogue, TaskSpec

app = typer.Typer(
    help="Annotate dialogues with the user's beliefs, desires, intentions and emotion "
    "(Summarize-and-Allocate with any model), and measure the annotator against people.",
    no_args_is_help=True,
)

DbOption = Annotated[Path, typer.Option("--db", help="SQLite annotation store.")]
DEFAULT_MODEL = "llamacpp:smollm2"


CorpusArgument = Annotated[
    str,
    typer.Argument(
        help="Corpus name (see `cogwm data list`), or a .jsonl file of your own dialogues "
        "(one Dialogue per line, as arena scenario files)."
    ),
]
TaskNameOption = Annotated[
    str | None,
    typer.Option(
        "--task",
        help="Task name or task .toml file (default: the corpus's task, or the task the "
        "dialogues of a file name).",
    ),
]
AnnotatorOption = Annotated[str, typer.Option("--model", help="Model address.")]
SplitOption = Annotated[str | None, typer.Option("--split", help="Only this split.")]
LabelledOnlyOption = Annotated[
    bool,
    typer.Option(
        "--labelled-only",
        help="Only dialogues with turn-level human labels (PersuasionForGood's 300).",
    ),
]
ProfilesOption = Annotated[bool, typer.Option(help="Annotate user profiles too.")]
ExtensionsOption = Annotated[
    bool,
    typer.Option(
        "--extensions",
        help="Offer the lexicon's extension labels too (happiness, surprise, disgust, "
        "neutral; the labels DailyDialog's human mapping uses).",
    ),
]


@app.command("run")
def run_command(
    corpus: CorpusArgument,
    db: DbOption,
    task_name: TaskNameOption = None,
    model: AnnotatorOption = DEFAULT_MODEL,
    limit: LimitOption = None,
    split: SplitOption = None,
    resume: ResumeOption = False,
    concurrency: ConcurrencyOption = 1,
    seed: SeedOption = 0,
    labelled_only: LabelledOnlyOption = False,
    profiles: ProfilesOption = True,
    extensions: ExtensionsOption = False,
    data_dir: DataDirOption = None,
    progress: ProgressOption = True,
    network_preflight: PreflightOption = True,
    max_tokens_total: MaxTokensOption = None,
) -> None:
    """Annotate a seeded sample of CORPUS with Summarize-and-Allocate; Ctrl-C or kill safe.

    Without --progress, one log line per dialogue.
    """
    from cogwm import tasks
    from cogwm.annotate.runner import check_resumable, select
    from cogwm.annotate.store import AnnotationStore
    from cogwm.models import load
    from cogwm.models.budget import Budget

    require_resumable(db, resume=resume)
    if extensions:
        from cogwm.corpora.labels.extensions import register

        register()
    dialogues, task = _dialogues_and_task(corpus, task_name, data_dir)
    chosen = select(dialogues, seed=seed, limit=limit, split=split, labelled_only=labelled_only)
    budget = Budget(max_tokens_total=max_tokens_total)
    preflight_models([("--model", model)], network=network_preflight, base_url_option=False)
    # A task file's emotion labels are known to this annotation only.
    own_tasks = tasks.files_catalog([task_name] if task_name else [])
    with AnnotationStore(db) as store, own_tasks.active():
        check_resumable(store, model, resume=resume)
        store.record_tasks(own_tasks.recorded([task.name]))
        loaded = load(model)
        totals = asyncio.run(
            _run(chosen, loaded, task, store, seed, concurrency, profiles, progress, budget)
        )
        _print_totals(totals, store)
    if totals.budget_reached:
        err_console.print(
            f"budget reached ({totals.budget_reached}): stopped; annotated dialogues are kept, "
            f"--resume --db {db} continues (with a new allowance)",
            markup=False,
        )
        raise typer.Exit(EXIT_BUDGET_REACHED)


def _dialogues_and_task(
    corpus: str, task_name: str | None, data_dir: Path | None
) -> tuple[list[Dialogue], TaskSpec]:
    """The dialogues of CORPUS (a corpus name or a .jsonl file) and the task to annotate."""
    from cogwm import corpora, tasks

    if corpus.strip().lower().endswith(".jsonl"):
        dialogues = _own_dialogues(Path(corpus))
        return dialogues, _own_task(task_name, dialogues)
    spec = corpora.get(corpus)
    found = tasks.get(task_name) if task_name else tasks.for_corpus(spec.name)
    if found is None:
        raise typer.BadParameter(f"corpus {spec.name} has no task spec", param_hint="CORPUS")
    return corpora.load(spec.name, resolve_data_dir(data_dir)), found


def _own_dialogues(path: Path) -> list[Dialogue]:
    """The dialogues of a user's JSONL file (the arena's scenario-file format)."""
    from cogwm.corpora.dialogue_file import read_dialogues
    from cogwm.errors import InputError

    dialogues = read_dialogues(path)
    if not dialogues:
        raise InputError(f"{path}: no dialogues")
    return dialogues


def _own_task(task_name: str | None, dialogues: list[Dialogue]) -> TaskSpec:
    """``--task``, else the one task the dialogues name."""
    from cogwm import tasks
    from cogwm.errors import InputError

    if task_name:
        return tasks.get(task_name)
    named = {d.task.strip().upper() for d in dialogues if d.task}
    if len(named) != 1:
        found = ", ".join(sorted(named)) or "none"
        raise InputError(f"give --task: the dialogues name {len(named)} tasks ({found})")
    return tasks.get(named.pop())


async def _run(
    chosen: list[Dialogue],
    model: Model,
    task: TaskSpec,
    store: AnnotationStore,
    seed: int,
    concurrency: int,
    profiles: bool,
    progress: bool,
    budget: Budget,
) -> RunTotals:
    from cogwm.annotate.runner import annotate_all, log_line
    from cogwm.annotate.saa import DialogueAnnotation
    from cogwm.annotate.store import Usage
    from cogwm.arena.progress import RunProgress

    done = store.done_ids()
    todo = sum(1 for d in chosen if d.id not in done)
    try:
        if progress:
            with RunProgress(todo, enabled=True) as bar:

                def advance(_d: Dialogue, a: DialogueAnnotation, _u: Usage) -> None:
                    bar.on_conversation(failed=any(t.allocation is None for t in a.turns))

                return await annotate_all(
                    chosen,
                    model,
                    task,
                    store,
                    seed=seed,
                    concurrency=concurrency,
                    profiles=profiles,
                    on_done=advance,
                    on_call=bar.on_call,
                    budget=budget if budget.capped else None,
                )
        listener = log_line(len(chosen) - todo, len(chosen), time.perf_counter())
        return await annotate_all(
            chosen,
            model,
            task,
            store,
            seed=seed,
            concurrency=concurrency,
            profiles=profiles,
            on_done=listener,
            budget=budget if budget.capped else None,
        )
    finally:
        await model.aclose()


def _print_totals(totals: RunTotals, store: AnnotationStore) -> None:
    valid = totals.user_turns - totals.failed_turns
    rate = f"{valid / totals.user_turns:.1%}" if totals.user_turns else "n/a"
    per = f"{totals.elapsed_s / totals.done:.1f}s/dialogue" if totals.done else ""
    err_console.print(
        f"{totals.done} annotated, {totals.skipped} already done · {totals.user_turns} user turns, "
        f"{valid} valid ({rate}) · {totals.calls} calls · "
        f"{totals.prompt_tokens + totals.completion_tokens:,} tokens · ${totals.cost_usd:.4f} · "
        f"{totals.elapsed_s:.0f}s {per}"
    )
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(totals.failures.items())) or "none"
    err_console.print(f"failures by reason: {reasons}")
    whole = store.totals()
    err_console.print(
        f"store: {whole.dialogues} dialogues, {whole.user_turns} user turns, "
        f"{whole.failed_turns} failed, {whole.summary_failed} failed summaries"
    )


@app.command("export")
def export_command(
    db: DbOption,
    out: Annotated[Path, typer.Option("--out", help="JSON-lines file (cogwm.labels/1).")],
) -> None:
    """Write the annotated dialogues of --db as partial states, one dialogue per line."""
    from cogwm.annotate.export import export_items
    from cogwm.annotate.io import write_labelled
    from cogwm.annotate.store import AnnotationStore
    from cogwm.tasks import TaskCatalog

    with AnnotationStore(db, read_only=True) as store:
        # Annotations of a task read from a file carry its labels: the export needs no file.
        with TaskCatalog.from_recorded(store.recorded_tasks()).active():
            count = write_labelled(out, export_items(store))
        totals = store.totals()
    err_console.print(
        f"{count} dialogues written to {out} · {totals.user_turns} user turns, "
        f"{totals.failed_turns} failed (unknown in the export)"
    )


@app.command("quality-export")
def quality_export_command(
    db: DbOption,
    out: Annotated[Path, typer.Option("--out", help="CSV judgment sheet to write.")],
) -> None:
    """Write the sheet a person fills in to judge the annotations (columns in the docs)."""
    from cogwm.annotate.quality import judgment_sheet, write_sheet
    from cogwm.annotate.store import AnnotationStore

    with AnnotationStore(db, read_only=True) as store:
        count = write_sheet(out, judgment_sheet(store.dialogues()))
    err_console.print(f"{count} rows written to {out}")


@app.command("quality")
def quality_command(
    db: DbOption,
    human: Annotated[
        Path | None,
        typer.Option("--human", help="A filled judgment sheet (see quality-export)."),
    ] = None,
    data_dir: DataDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Agreement of the annotations in --db with people: the corpora's human labels (with a
    data directory) and a filled judgment sheet (--human)."""
    from cogwm.annotate.quality import against_human_labels, against_sheet, read_sheet
    from cogwm.annotate.store import AnnotationStore
    from cogwm.cli.common import print_json, resolve_data_dir

    with AnnotationStore(db, read_only=True) as store:
        stored = list(store.dialogues())
        totals = store.totals()
        by_dialogue = store.failures_by_dialogue()
    figures = []
    skipped: dict[str, str] = {}
    if human is not None:
        figures += against_sheet(read_sheet(human), str(human))
    if data_dir is not None or human is None:
        found, skipped = against_human_labels(stored, resolve_data_dir(data_dir))
        figures += found
    valid = totals.user_turns - totals.failed_turns
    summary = {
        "dialogues": totals.dialogues,
        "user_turns": totals.user_turns,
        "valid_turns": valid,
        "valid_rate": valid / totals.user_turns if totals.user_turns else None,
        "failed_summaries": totals.summary_failed,
        "failures": totals.failures,
        "failures_by_dialogue": by_dialogue,
        "seconds_per_dialogue": totals.elapsed_s / totals.dialogues if totals.dialogues else None,
        "figures": [f.as_dict() for f in figures],
        "not_scored": skipped,
    }
    if as_json:
        print_json(summary)
        return
    _print_quality(summary, figures)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _print_quality(summary: Mapping[str, object], figures: list[Figure]) -> None:
    from rich.table import Table

    # The shared console: off a terminal it is wide enough for any table and wraps nothing.
    from cogwm.cli.common import console

    rate = summary["valid_rate"]
    console.print(
        f"{summary['dialogues']} dialogues · {summary['user_turns']} user turns · valid "
        f"{_fmt(rate if isinstance(rate, float) else None)} · failed summaries "
        f"{summary['failed_summaries']} · failures {summary['failures']}"
    )
    table = Table()
    for column in ("corpus", "figure", "value", "95% CI", "n", "valid", "majority", "random"):
        table.add_column(column)
    for f in figures:
        ci = f"[{f.ci[0]:.3f}, {f.ci[1]:.3f}]" if f.ci else "n/a"
        table.add_row(
            f.corpus,
            f.name,
            _fmt(f.value),
            ci,
            str(f.n),
            _fmt(f.valid_rate),
            _fmt(f.baselines.get("majority")),
            _fmt(f.baselines.get("random")),
        )
    console.print(table)
    for f in figures:
        if f.note:
            console.print(f"{f.corpus} {f.name}: {f.note}")
    skipped = summary["not_scored"]
    if isinstance(skipped, dict):
        for corpus, why in skipped.items():
            console.print(f"{corpus}: not scored against human labels: {why}")
