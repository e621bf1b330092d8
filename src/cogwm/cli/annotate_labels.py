"""``cogwm annotate labels``: the partial states a corpus's own human labels give, with counts.

Registered on the ``cogwm annotate`` command group (:mod:`cogwm.cli.annotate`) by the CLI's
entry point.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cogwm.annotate import human
from cogwm.annotate.io import write_labelled
from cogwm.annotate.summary import LabelSummary, counting
from cogwm.cli.common import DataDirOption, console, err_console, print_json, resolve_data_dir
from cogwm.cli.options import JsonOption
from cogwm.errors import InputError
from cogwm.progress import ProgressBar
from cogwm.schema.partial import STATE_FIELDS, LabelledDialogue

LabelsCorpusArgument = Annotated[
    str,
    typer.Argument(
        help="Corpus: esconv, failed_esconv, persuasionforgood (p4g), annomi, inspired or "
        "dailydialog.",
        show_default=False,
    ),
]
LabelsOutOption = Annotated[
    Path,
    typer.Option(
        "--out",
        help="Output file (cogwm.labels/1 JSON Lines), replaced if it exists.",
        show_default=False,
    ),
]
OfficialSplitOption = Annotated[
    str | None, typer.Option("--split", help="Only this official split (corpora that have one).")
]


def labels(
    corpus: LabelsCorpusArgument,
    out: LabelsOutOption,
    data_dir: DataDirOption = None,
    split: OfficialSplitOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write the partial states a corpus's own human labels give, and count them per field."""
    if not out.parent.is_dir():
        raise InputError(f"{out}: directory {out.parent} does not exist")
    root = resolve_data_dir(data_dir)
    with err_console.status(f"reading {corpus}"):
        items = human.labelled_dialogues(corpus, root, split=split)
    summary = LabelSummary()
    written = _write_counting(out, items, summary, corpus)
    if as_json:
        exact = {row.id: row.exact for row in human.rows(corpus)}
        print_json(
            {
                "corpus": corpus,
                "split": split,
                "out": str(out),
                "written": written,
                **summary.model_dump(mode="json"),
                "rules_exact": {rule: exact.get(rule) for rule in sorted(summary.rules)},
            }
        )
        return
    _print_summary(corpus, split, summary)
    console.print(f"wrote {written:,} labelled dialogues to {out}")


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _write_counting(
    out: Path, items: Iterable[LabelledDialogue], summary: LabelSummary, corpus: str
) -> int:
    """Write ``items`` to ``out``, counting them into ``summary``, with a spinner; how many."""
    with ProgressBar(f"mapping {corpus}", None, console=err_console, transient=True) as bar:

        def advancing() -> Iterator[LabelledDialogue]:
            for item in counting(items, summary):
                bar.update(advance=1)
                yield item

        return write_labelled(out, advancing())


def _print_summary(corpus: str, split: str | None, summary: LabelSummary) -> None:
    title = f"{corpus}{f' ({split})' if split else ''}: {summary.dialogues:,} dialogues, "
    title += f"{summary.user_turns:,} user turns, {summary.labelled_turns:,} labelled "
    title += f"({_percent(summary.labelled_turns, summary.user_turns)})"
    table = Table("field", "value", "empty", "unknown", "value share", title=title)
    for name in STATE_FIELDS:
        counts = summary.fields[name]
        table.add_row(
            name,
            f"{counts.value:,}",
            f"{counts.empty:,}",
            f"{counts.unknown:,}",
            _percent(counts.value, summary.user_turns),
        )
    console.print(table)
    if summary.constraints:
        constraints = Table("constraint", "user turns", "share", title="constraints")
        for key, count in sorted(summary.constraints.items()):
            constraints.add_row(key, f"{count:,}", _percent(count, summary.user_turns))
        constraints.add_row(
            "any",
            f"{summary.constrained_turns:,}",
            _percent(summary.constrained_turns, summary.user_turns),
        )
        console.print(constraints)
    if summary.emotions:
        emotions = Table("emotion", "user turns", title="emotion labels")
        for label, count in sorted(summary.emotions.items(), key=lambda kv: -kv[1]):
            emotions.add_row(label, f"{count:,}")
        console.print(emotions)
    rules = Table("rule", "uses", "exact", title="mapping-table rows used")
    table_rows = {row.id: row for row in human.rows(corpus)}
    for rule, count in sorted(summary.rules.items()):
        row = table_rows.get(rule)
        rules.add_row(rule, f"{count:,}", "-" if row is None else ("yes" if row.exact else "no"))
    console.print(rules)
