"""``cogwm data``: corpus statistics, sliding windows and the unified export."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cogwm import corpora
from cogwm.cli.common import (
    DATA_DIR_ENV,
    DataDirOption,
    console,
    err_console,
    print_json,
    resolve_data_dir,
)
from cogwm.cli.options import JsonOption
from cogwm.errors import InputError
from cogwm.schema import Dialogue, Record

app = typer.Typer(
    help="Read the corpora: statistics, sliding windows, unified export.",
    no_args_is_help=True,
)

CorpusArgument = Annotated[
    str,
    typer.Argument(
        help="Corpus: esconv, persuasionforgood (p4g), dailydialog, annomi or inspired.",
        show_default=False,
    ),
]
OutOption = Annotated[
    Path,
    typer.Option(
        "--out", help="Output file (JSON Lines), replaced if it exists.", show_default=False
    ),
]


def _load(corpus: str, data_dir: Path | None) -> list[Dialogue]:
    spec = corpora.get(corpus)
    root = resolve_data_dir(data_dir)
    with err_console.status(f"reading {spec.name} from {root / spec.folder}"):
        return corpora.load(spec.name, root)


def _require_out_dir(out: Path) -> None:
    """Fail before reading a corpus, not after, when ``out`` cannot be written."""
    if not out.parent.is_dir():
        raise InputError(f"{out}: directory {out.parent} does not exist")


def _write_jsonl(out: Path, records: Iterable[Record]) -> int:
    """Write one JSON record per line through a temporary file; the count written."""
    _require_out_dir(out)
    partial = out.with_name(out.name + ".partial")
    count = 0
    try:
        with partial.open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(record.model_dump_json())
                handle.write("\n")
                count += 1
        os.replace(partial, out)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise InputError(f"{out}: cannot write ({exc.strerror})") from None
    return count


@app.command("list")
def list_corpora(data_dir: DataDirOption = None, as_json: JsonOption = False) -> None:
    """List the corpora cogwm reads and whether their folders are present."""
    # An explicit folder that does not exist is an error, not a table of "no".
    root = resolve_data_dir(data_dir) if data_dir is not None else _optional_root()

    def present(spec: corpora.Corpus) -> bool | None:  # None: no data directory known
        return None if root is None else (root / spec.folder).is_dir()

    if as_json:
        rows = [
            {
                "corpus": spec.name,
                "aliases": list(spec.aliases),
                "folder": spec.folder,
                "release_dialogues": spec.release.dialogues,
                "present": present(spec),
            }
            for spec in corpora.CORPORA
        ]
        print_json({"data_dir": None if root is None else str(root), "corpora": rows})
        return
    table = Table("corpus", "aliases", "folder", "release dialogues", "present", title="corpora")
    for spec in corpora.CORPORA:
        table.add_row(
            spec.name,
            ", ".join(spec.aliases),
            spec.folder,
            f"{spec.release.dialogues:,}",
            {None: "?", True: "yes", False: "no"}[present(spec)],
        )
    console.print(table)


def _optional_root() -> Path | None:
    """``$COGWM_DATA_DIR`` if set (an error if it is not a folder); None if it is not set."""
    if not os.environ.get(DATA_DIR_ENV):
        return None
    return resolve_data_dir(None)


@app.command("stats")
def stats(
    corpus: CorpusArgument,
    as_json: JsonOption = False,
    data_dir: DataDirOption = None,
) -> None:
    """Counts (dialogues, utterances, turns, user turns) and label distributions."""
    spec = corpora.get(corpus)
    result = corpora.corpus_stats(spec, _load(corpus, data_dir))
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    _print_stats(result)
    if not result.release.matches:
        err_console.print(
            f"[yellow]note:[/] the published release has {result.release.dialogues:,} dialogues "
            f"and {result.release.utterances:,} utterances; this copy differs"
        )


def _print_stats(result: corpora.CorpusStats) -> None:
    counts = Table("measure", "value", title=f"{result.corpus}")
    rows: list[tuple[str, object]] = [
        ("dialogues", result.dialogues),
        ("annotated dialogues", result.annotated),
        ("utterances", result.utterances),
        ("user utterances", result.user_utterances),
        ("turns", result.turns),
        ("user turns", result.user_turns),
        ("rounds", result.rounds),
        ("mean turns per dialogue", result.mean_turns_per_dialogue),
        ("mean user turns per dialogue", result.mean_user_turns_per_dialogue),
        ("dialogues with a corpus profile", result.with_profile),
    ]
    for name, value in rows:
        if value is not None:
            counts.add_row(name, _format(value))
    for split, count in result.splits.items():
        counts.add_row(f"split {split}", _format(count))
    console.print(counts)
    for label, distribution in result.labels.items():
        total = sum(distribution.values())
        table = Table("value", "count", "share", title=label)
        for value, count in distribution.items():
            table.add_row(value, f"{count:,}", f"{count / total:.1%}" if total else "-")
        console.print(table)


def _format(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


@app.command("windows")
def windows(
    corpus: Annotated[
        list[str],
        typer.Argument(help="One or more corpora (see `cogwm data list`).", show_default=False),
    ],
    out: OutOption,
    max_words: Annotated[
        int,
        typer.Option(
            "--max-words",
            min=0,
            help="Window ceiling (windows of 150 to this many words); 0: the earlier greedy "
            "rule (close at the first boundary at or past 150 words, merge the tail).",
        ),
    ] = corpora.LONG_WINDOW_WORDS,
    data_dir: DataDirOption = None,
) -> None:
    """Write the sliding windows of every dialogue (one JSON per line) and report their count."""
    names = list(dict.fromkeys(corpora.get(name).name for name in corpus))
    if 0 < max_words < corpora.WINDOW_MIN_WORDS:
        raise InputError(f"--max-words must be 0 or at least {corpora.WINDOW_MIN_WORDS}")
    _require_out_dir(out)
    loaded = {name: _load(name, data_dir) for name in names}
    ceiling = max_words or None
    per_corpus = {
        name: list(corpora.iter_windows(dialogues, max_words=ceiling))
        for name, dialogues in loaded.items()
    }
    everything = [w for ws in per_corpus.values() for w in ws]
    _write_jsonl(out, everything)
    lines = [(name, len(loaded[name]), ws) for name, ws in per_corpus.items()]
    if len(lines) > 1:
        lines.append(("total", sum(len(d) for d in loaded.values()), everything))
    for name, n_dialogues, ws in lines:
        console.print(f"{name}: {_window_report(n_dialogues, ws)}", soft_wrap=True)
    console.print(f"-> {out}", soft_wrap=True)


def _window_report(n_dialogues: int, windows: list[corpora.Window]) -> str:
    summary = corpora.summarize(windows)
    share = "-" if summary.share_over_long is None else f"{summary.share_over_long:.1%}"
    return (
        f"{summary.windows:,} windows from {n_dialogues:,} dialogues; "
        f"{summary.over_long:,} ({share}) over {corpora.LONG_WINDOW_WORDS} words; "
        f"{summary.long_utterance:,} long utterances alone, {summary.closed_short:,} closed "
        f"short, {summary.tail:,} short tails"
    )


@app.command("export")
def export(
    corpus: CorpusArgument,
    out: OutOption,
    data_dir: DataDirOption = None,
) -> None:
    """Write the corpus as unified dialogues (one cogwm Dialogue JSON per line)."""
    _require_out_dir(out)
    dialogues = _load(corpus, data_dir)
    written = _write_jsonl(out, dialogues)
    console.print(f"{written:,} dialogues -> {out}", soft_wrap=True)
