"""Measure a simulator: read each part's items, ask the model, score, and assemble the card."""

from __future__ import annotations

import asyncio
import platform
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from cogwm.annotate.human import extensions
from cogwm.arena.provenance import git_revision, package_versions
from cogwm.errors import InputError
from cogwm.metrics.aggregate import DEFAULT_RESAMPLES
from cogwm.models.model import Model
from cogwm.schema.lexicon import valence_table
from cogwm.simulator.format import format_version
from cogwm.simulator.samples import DEFAULT_HISTORY_TURNS
from cogwm.simulator.validate.card import Card, Figure, PartInfo
from cogwm.simulator.validate.figures import Scope, Settings
from cogwm.simulator.validate.items import Heldout, Item, Population
from cogwm.simulator.validate.parts import NOT_YET, PARTS, ItemSets, PartSpec, choose, union
from cogwm.simulator.validate.reader import ABLATIONS, Reading, check_ablation, read_items

#: What the simulator is shown for each item (the training samples' input).
INPUT = (
    "as the training samples: the task's context, the profile, the first and the latest "
    f"human-known state before the turn, the last {DEFAULT_HISTORY_TURNS} turns (and the real "
    "turn when understanding)"
)
#: The parts measured when none are named.
DEFAULT_PARTS: tuple[str, ...] = tuple(PARTS)


def check_parts(names: Sequence[str]) -> list[str]:
    """The part names, deduplicated in order.

    Raises:
        InputError: A name that is neither a part nor a known unmeasured one.
    """
    known = [*PARTS, *NOT_YET]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(
            f"unknown card part(s) {', '.join(unknown)}; choose from {', '.join(known)}"
        )
    return list(dict.fromkeys(names))


def versions() -> dict[str, str]:
    """Versions of Python, the recorded packages, scikit-learn, the prompt format and the git
    revision of the source (where it is a checkout)."""
    found = {"python": platform.python_version(), "format": format_version()}
    found.update(package_versions())
    found["scikit-learn"] = metadata.version("scikit-learn")  # a dependency of cogwm
    revision = git_revision()
    if revision is not None:
        found["git"] = revision
    return found


class _Bar:
    """A rich progress bar over all calls of a card (or nothing when disabled)."""

    def __init__(self, total: int, enabled: bool, console: Console | None):
        self.progress = (
            Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[failed]} failed"),
                console=console or Console(stderr=True),
            )
            if enabled
            else None
        )
        self.task = (
            self.progress.add_task("validate", total=total, failed=0) if self.progress else None
        )
        self.failed = 0

    def part(self, name: str) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, description=f"validate {name}")

    def done(self, reading: Reading) -> None:
        self.failed += reading.state is None
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, advance=1, failed=self.failed)


def build_card(
    model: Model,
    *,
    address: str,
    data_dir: Path,
    parts: Sequence[str] = DEFAULT_PARTS,
    limit: int | None = None,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    ablation: str = "none",
    heldout: Heldout = Heldout(),
    label: str | None = None,
    progress: bool = True,
    console: Console | None = None,
) -> Card:
    """The validity card of the simulator ``model``.

    Every part's items are read before the first call, so bad data fails fast.

    Args:
        model: The simulator.
        address: Its address (recorded on the card).
        data_dir: The folder of the corpora.
        parts: Parts to measure (names of :data:`PARTS`; names of :data:`NOT_YET` are recorded
            as left out with the reason).
        limit: Items sampled per part with ``seed`` (None: the full sets).
        seed: Seed of the sampling, of the model's decoding and of the bootstrap.
        resamples: Bootstrap resamples per interval.
        ablation: Input switch (:data:`~cogwm.simulator.validate.reader.ABLATIONS`).
        heldout: Which dialogues of corpora without an official split are items.
        label: Column name in comparisons (default: the address, with the ablation).
        progress: Draw a progress bar on stderr.
        console: Where the bar is drawn.

    Raises:
        InputError: Unknown parts or ablation, a bad limit, corpus files that cannot be read,
            or a part whose every call failed.
    """
    names = check_parts(parts)
    check_ablation(ablation)
    # The human labels use DailyDialog's extension labels (happiness, neutral, ...); registering
    # them up front gives every part and every card the same answer space, whichever parts run.
    extensions.register()
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}")
    specs = [PARTS[n] for n in names if n in PARTS]
    chosen: list[tuple[PartSpec, dict[str, Population], ItemSets]] = []
    for spec in specs:
        populations = spec.populations(data_dir, heldout)
        chosen.append((spec, populations, choose(populations, limit, seed)))
    settings = Settings(resamples=resamples, seed=seed)
    bar = _Bar(sum(len(union(sets)) for *_, sets in chosen), progress, console)
    infos: list[PartInfo] = []
    figures: list[Figure] = []
    with bar.progress if bar.progress is not None else nullcontext():
        all_readings = asyncio.run(_read_all(model, chosen, bar, seed=seed, ablation=ablation))
    for (spec, populations, sets), readings in zip(chosen, all_readings, strict=True):
        by_id = {item.id: r for item, r in zip(union(sets), readings, strict=True)}
        figures.extend(spec.score(Scope(spec.name, spec.mode, settings), sets, by_id))
        infos.extend(
            _part_info(spec, name, populations[name], items, by_id) for name, items in sets.items()
        )
    return Card(
        label=label or (address if ablation == "none" else f"{address} ({ablation})"),
        model=address,
        model_identity=model.identity,
        ablation=ablation,
        heldout=f"{heldout.rule} (split seed {heldout.seed})",
        seed=seed,
        limit=limit,
        resamples=resamples,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        versions=versions(),
        answer_labels=sorted(valence_table()),
        input=f"{INPUT}; {ABLATIONS[ablation]}",
        parts=infos,
        figures=figures,
        left_out={n: NOT_YET[n] for n in names if n in NOT_YET},
    )


def _part_info(
    spec: PartSpec,
    name: str,
    population: Population,
    items: list[Item],
    readings: Mapping[str, Reading],
) -> PartInfo:
    return PartInfo(
        name=f"{spec.name}.{name}",
        corpus=population.corpus,
        split=population.split,
        selection=population.selection,
        mode=spec.mode,
        n_items=len(items),
        n_population=len(population.items),
        n_dialogues=len({item.dialogue_id for item in items}),
        n_calls=len(items),
        n_failed=sum(readings[item.id].state is None for item in items),
    )


async def _read_all(
    model: Model,
    chosen: Sequence[tuple[PartSpec, dict[str, Population], ItemSets]],
    bar: _Bar,
    *,
    seed: int,
    ablation: str,
) -> list[list[Reading]]:
    """Every part's readings, part after part, in one event loop."""
    out = []
    for spec, _, sets in chosen:
        bar.part(spec.name)
        out.append(
            await read_items(
                model, union(sets), spec.mode, seed=seed, ablation=ablation, on_done=bar.done
            )
        )
    return out
