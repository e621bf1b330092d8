"""``cogwm samples``: training samples of the world model from labelled dialogues."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cogwm.cli.common import DataDirOption, console, err_console, print_json, resolve_data_dir
from cogwm.cli.options import JsonOption, LimitOption, SeedOption
from cogwm.errors import InputError
from cogwm.progress import ProgressBar
from cogwm.simulator.samples import DEFAULT_HISTORY_TURNS, SPLITS

app = typer.Typer(
    help="Training samples of the world model: one per user turn, split by dialogue.",
    no_args_is_help=True,
)


SamplesOutOption = Annotated[
    Path, typer.Option("--out", help="Output directory (train/val/test.jsonl, manifest.json).")
]
AnnotationsOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--annotations",
        help="LLM-annotation export (cogwm.labels/1 JSONL); repeat for several.",
        show_default=False,
    ),
]
HumanOption = Annotated[
    list[str] | None,
    typer.Option(
        "--human",
        help="Corpus whose human labels to use (esconv, dailydialog, annomi, "
        "persuasionforgood, inspired, failed_esconv); repeat for several.",
        show_default=False,
    ),
]
HistoryTurnsOption = Annotated[
    int, typer.Option("--history-turns", min=1, help="Turns of history each sample shows.")
]
ForceOverwriteOption = Annotated[
    bool, typer.Option("--force", help="Overwrite the samples files of a non-empty --out.")
]
UnderstandOption = Annotated[
    bool,
    typer.Option(
        "--understand",
        help="Also a state-understanding sample per labelled user turn (the real turn is "
        "shown, the target is the state): how `cogwm validate` reads states.",
    ),
]


@app.command("build")
def build(
    out: SamplesOutOption,
    annotations: AnnotationsOption = None,
    human: HumanOption = None,
    data_dir: DataDirOption = None,
    seed: SeedOption = 0,
    history_turns: HistoryTurnsOption = DEFAULT_HISTORY_TURNS,
    limit: LimitOption = None,
    force: ForceOverwriteOption = False,
    understand: UnderstandOption = False,
    as_json: JsonOption = False,
) -> None:
    """Build samples from human labels and/or LLM annotations, split by dialogue.

    --seed seeds the dialogue-level split; --limit reads at most N labelled dialogues per
    source.
    """
    from cogwm.simulator.build import Source, build_samples, check_out_dir, human_corpus

    sources = [Source("human", human_corpus(c)) for c in human or []]
    for path in annotations or []:
        if not path.is_file():
            raise InputError(f"--annotations {path}: file not found")
        sources.append(Source("annotations", str(path)))
    if not sources:
        raise InputError("no sources: give --human CORPUS and/or --annotations FILE.jsonl")
    check_out_dir(out, force=force)
    root = resolve_data_dir(data_dir) if human else data_dir
    bar = ProgressBar("samples", None, console=err_console)

    def show(what: str, done: int, total: int | None) -> None:
        bar.stage(what, total)
        bar.update(completed=done)

    with bar:
        manifest = build_samples(
            out,
            sources,
            data_dir=root,
            seed=seed,
            history_turns=history_turns,
            limit=limit,
            force=force,
            understand=understand,
            progress=show,
        )
    if as_json:
        print_json({"out": str(out), **manifest})
        return
    _summary(manifest, out)


def _summary(manifest: dict[str, object], out: Path) -> None:
    corpora = manifest["corpora"]
    assert isinstance(corpora, dict)
    table = Table(
        "corpus",
        "task",
        "split rule",
        *SPLITS,
        "twins dropped",
        "unclean dropped (val, test)",
        title="samples",
    )
    for name, info in corpora.items():
        samples = info["samples"]
        dropped = sum(info["dropped_as_twins"].values())
        unclean = info["dropped_as_unclean"]
        table.add_row(
            name,
            info["task"],
            info["split_rule"],
            *(f"{samples[s]:,}" for s in SPLITS),
            f"{dropped:,}",
            f"{unclean['val']:,}, {unclean['test']:,}",
        )
    console.print(table)
    console.print(f"clean rule: {manifest['clean_rule']}", markup=False, highlight=False)
    lengths = manifest["token_lengths"]
    assert isinstance(lengths, dict)
    total = lengths.get("total")
    if total:
        console.print(
            f"total tokens ({lengths['tokenizer']}, {lengths['measured']:,} samples): "
            f"p50 {total['p50']:.0f}, p90 {total['p90']:.0f}, p99 {total['p99']:.0f}, "
            f"max {total['max']:.0f}"
        )
    console.print(f"wrote {out}/{{train,val,test}}.jsonl and manifest.json")
