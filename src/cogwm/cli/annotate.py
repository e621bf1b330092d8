"""``cogwm annotate``: partial states from LLM annotators and from the corpora's human labels."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cogwm.cli.common import DataDirOption, err_console, resolve_data_dir

if TYPE_CHECKING:
    from cogwm.annotate.runner import RunTotals
    from cogwm.annotate.store import AnnotationStore
    from cogwm.models import Model
    from cogwm.schema import Dialogue, TaskSpec

app = typer.Typer(
    help="Annotate dialogues with the user's beliefs, desires, intentions and emotion "
    "(Summarize-and-Allocate with any model), and measure the annotator against people.",
    no_args_is_help=True,
)

DbOption = Annotated[Path, typer.Option("--db", help="SQLite annotation store.")]
DEFAULT_MODEL = "llamacpp:smollm2"


@app.command("run")
def run_command(
    corpus: Annotated[str, typer.Argument(help="Corpus name (see `cogwm data list`).")],
    db: DbOption,
    model: Annotated[str, typer.Option("--model", help="Model address.")] = DEFAULT_MODEL,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Annotate the first N of the sample.")
    ] = None,
    split: Annotated[str | None, typer.Option("--split", help="Only this split.")] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue: skip the dialogues already in --db.")
    ] = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Dialogues annotated at once.")
    ] = 1,
    seed: Annotated[int, typer.Option("--seed", help="Sample order and sampling seed.")] = 0,
    labelled_only: Annotated[
        bool,
        typer.Option(
            "--labelled-only",
            help="Only dialogues with turn-level human labels (PersuasionForGood's 300).",
        ),
    ] = False,
    profiles: Annotated[bool, typer.Option(help="Annotate user profiles too.")] = True,
    data_dir: DataDirOption = None,
    progress: Annotated[
        bool, typer.Option(help="Progress bar (off: one log line per dialogue).")
    ] = True,
) -> None:
    """Annotate a seeded sample of CORPUS with Summarize-and-Allocate; Ctrl-C or kill safe."""
    from cogwm import corpora, tasks
    from cogwm.annotate.runner import check_resumable, select
    from cogwm.annotate.store import AnnotationStore
    from cogwm.models import load

    spec = corpora.get(corpus)
    task = tasks.for_corpus(spec.name)
    if task is None:
        raise typer.BadParameter(f"corpus {spec.name} has no task spec", param_hint="CORPUS")
    dialogues = corpora.load(spec.name, resolve_data_dir(data_dir))
    chosen = select(dialogues, seed=seed, limit=limit, split=split, labelled_only=labelled_only)
    with AnnotationStore(db) as store:
        check_resumable(store, model, resume=resume)
        loaded = load(model)
        totals = asyncio.run(
            _run(chosen, loaded, task, store, seed, concurrency, profiles, progress)
        )
        _print_totals(totals, store)


async def _run(
    chosen: list[Dialogue],
    model: Model,
    task: TaskSpec,
    store: AnnotationStore,
    seed: int,
    concurrency: int,
    profiles: bool,
    progress: bool,
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

    with AnnotationStore(db, create=False) as store:
        count = write_labelled(out, export_items(store))
        totals = store.totals()
    err_console.print(
        f"{count} dialogues written to {out} · {totals.user_turns} user turns, "
        f"{totals.failed_turns} failed (unknown in the export)"
    )
