"""``cogwm validate``: a simulator's validity card, or several cards side by side."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer
from rich.table import Column, Table

from cogwm.cli.common import (
    DataDirOption,
    PreflightOption,
    console,
    err_console,
    preflight_models,
    print_json,
    resolve_data_dir,
)
from cogwm.cli.options import JsonOption, ResamplesOption, SeedOption
from cogwm.errors import InputError
from cogwm.stats.means import DEFAULT_RESAMPLES
from cogwm.validate.card import Card
from cogwm.validate.compare import (
    TRIVIAL_COLUMNS,
    CardDifference,
    gate_text,
    short_rule,
)
from cogwm.validate.items import HELDOUT_RULES, Heldout

if TYPE_CHECKING:
    from cogwm.arena.factories import PythonSimulator
    from cogwm.models.model import Model


CardsArgument = Annotated[
    list[Path] | None,
    typer.Argument(help="Card files to compare (with --compare).", show_default=False),
]
ModelOption = Annotated[
    str | None,
    typer.Option("--model", help="Simulator address, e.g. llamacpp:smollm2.", show_default=False),
]
SimulatorOption = Annotated[
    str | None,
    typer.Option(
        "--simulator",
        help="A simulator that is not a model, its states read in prediction mode: "
        "python:package.module:factory (e.g. python:cogwm.simulator.rule:SentimentMeter), "
        "transition:FILE (from `cogwm train transition`) or two-part:FILE[@MODEL] (that "
        "transition model's states, the world model's utterances; default "
        "llamacpp:smollm2-wm).",
        show_default=False,
    ),
]
# Not the shared --limit: a card samples its items (seeded) rather than taking the first N.
ItemLimitOption = Annotated[
    int | None,
    typer.Option(
        "--limit",
        min=1,
        help="Items sampled per item set (seeded); for the checks, histories per task "
        "(counterfactual) and dialogues per group (known_groups); default all items, 120 "
        "histories per task for counterfactual and every known_groups dialogue.",
    ),
]
PartsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--parts",
        help="Parts to measure: dailydialog, annomi, persuasionforgood (p4g), esconv, judges, "
        "and the responsiveness checks counterfactual and known_groups (repeat or "
        "comma-separate); default all.",
    ),
]
AblationOption = Annotated[
    str,
    typer.Option(
        "--ablation",
        help="Input switch: none, no_big_five, no_styles, no_task_features, no_profile, "
        "no_previous_state, no_anything.",
    ),
]
HeldoutOption = Annotated[
    str,
    typer.Option(
        "--heldout",
        help="Corpora without an official split: 'test' (the samples' seeded test split) "
        "or 'all' (only for simulators trained on none of them).",
    ),
]
ModeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mode",
        help="understand (the real turn given, the state asked) and/or predict (state and "
        "utterance asked; adds ROUGE-L, BLEU, LenR, Distinct-1); repeat or comma-separate. "
        "Default: understand.",
        show_default=False,
    ),
]
PipelineOption = Annotated[
    str,
    typer.Option(
        "--pipeline",
        help="joint (one structured call: the world model), dual (baseline: one call "
        "writes the utterance, a second reads the state from it; prediction mode only) or "
        "duet (dual with DuetSim's verifier: a reply that does not fit the previous state "
        "is written again once).",
    ),
]
SplitSeedOption = Annotated[
    int | None,
    typer.Option(
        "--split-seed",
        help="The seed the samples were split with (default: the samples manifest's, else 0).",
        show_default=False,
    ),
]
SamplesManifestOption = Annotated[
    Path | None,
    typer.Option(
        "--samples-manifest",
        help="The manifest of the samples the simulator was trained on: --heldout test then "
        "follows its split (seed, and which known-groups hold-outs it kept out of train). "
        "Default: DIR/manifest.json of --train-samples, else the shipped manifest of a "
        "shipped world model (llamacpp:smollm2-wm), else the current split rule.",
        show_default=False,
    ),
]
LabelOption = Annotated[
    str | None, typer.Option("--label", help="Column name in comparisons.", show_default=False)
]
TrainSamplesOption = Annotated[
    Path | None,
    typer.Option(
        "--train-samples",
        help="The samples directory the simulator was trained on (its train.jsonl): with "
        "--mode predict, adds the share of predicted utterances that repeat a word 8-gram "
        "of a training utterance, beside the real utterances' share.",
        show_default=False,
    ),
]
CardOutOption = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Write the card (JSON) here; a copy goes to the cards folder "
        "($COGWM_CARDS_DIR), where arena reports find it by the model's identity.",
        show_default=False,
    ),
]
CompareOption = Annotated[
    bool, typer.Option("--compare", help="Compare card files instead of measuring.")
]
GateOption = Annotated[
    bool,
    typer.Option(
        "--gate",
        help="Run the release gate on card files (the simulator's card, then any cards "
        "adding its checks, e.g. arena sensitivity's): a table of the criteria; exit 0 "
        "when all pass, 1 when any fails or is undefined.",
    ),
]
PairedOption = Annotated[
    bool,
    typer.Option(
        "--paired",
        help="With --compare: each card minus the first on the items both share, with a "
        "paired bootstrap CI (the gate of a trained simulator against its base).",
    ),
]
FormatOption = Annotated[
    str, typer.Option("--format", help="Comparison output: text, json or csv.")
]


def validate(
    cards: CardsArgument = None,
    model: ModelOption = None,
    simulator: SimulatorOption = None,
    data_dir: DataDirOption = None,
    limit: ItemLimitOption = None,
    seed: SeedOption = 0,
    parts: PartsOption = None,
    ablation: AblationOption = "none",
    heldout: HeldoutOption = "test",
    mode: ModeOption = None,
    pipeline: PipelineOption = "joint",
    split_seed: SplitSeedOption = None,
    samples_manifest: SamplesManifestOption = None,
    label: LabelOption = None,
    train_samples: TrainSamplesOption = None,
    resamples: ResamplesOption = DEFAULT_RESAMPLES,
    out: CardOutOption = None,
    as_json: JsonOption = False,
    compare_cards: CompareOption = False,
    gate: GateOption = False,
    paired: PairedOption = False,
    output_format: FormatOption = "text",
    network_preflight: PreflightOption = True,
) -> None:
    """Measure a simulator against held-out human labels (the validity card), or compare cards.

    Each figure comes with a bootstrap 95 % CI (dialogues resampled), its n, and the majority and
    random baselines; each state figure also with trivial rules (carry the shown state forward,
    VADER, TF-IDF, their combination), the gate against the best of them (chosen on the
    validation split), and again on its change and no-previous items. `cogwm validate --compare
    a.json b.json` prints rows = figures, columns = simulators; `cogwm validate --gate card.json
    [sensitivity.json]` runs the release gate a simulator must pass to become the default.
    --seed seeds the item sample, the decoding and the bootstrap; the held-out split follows
    the samples manifest or --split-seed.
    """
    if gate or compare_cards:
        cards_read = _CardsRead(gate, as_json, output_format, paired, resamples, seed)
        _read_cards(cards or [], cards_read)
        return
    address, python = _target(cards, model, simulator)
    if heldout not in HELDOUT_RULES:
        raise InputError(f"--heldout must be test or all, got {heldout!r}")
    manifest = _manifest_of(address, samples_manifest, train_samples)
    options = _Options(
        limit,
        seed,
        ablation,
        _heldout(heldout, split_seed, manifest),
        _split(mode) if mode else ["predict" if python else "understand"],
        pipeline,
        label,
        resamples,
        network_preflight,
        train_samples,
        python=python,
    )
    _measure(address, data_dir, parts, options, out, as_json)


class _CardsRead(NamedTuple):
    """How ``validate`` reads card files: gate or compare, and how it prints them."""

    gate: bool
    as_json: bool
    output_format: str
    paired: bool
    resamples: int
    seed: int


def _read_cards(paths: list[Path], how: _CardsRead) -> None:
    """Run the release gate on card files, or compare them."""
    if how.gate:
        from cogwm.cli.gate import run_gate

        run_gate(paths, as_json=how.as_json)
        return
    # --json means --format json here too (every command with a table takes --json)
    fmt = "json" if how.as_json else how.output_format
    _compare(paths, fmt, paired=how.paired, resamples=how.resamples, seed=how.seed)


def _target(cards: list[Path] | None, model: str | None, simulator: str | None) -> tuple[str, bool]:
    """The simulator to measure: its address, and whether it is a Python simulator.

    Raises:
        InputError: Card files given without --compare/--gate, or not exactly one of
            --model and --simulator.
    """
    if cards:
        raise InputError("card files are only read with --compare or --gate")
    if (model is None) == (simulator is None):
        raise InputError(
            "pass --model ADDRESS or --simulator ADDRESS to measure a simulator, or --compare CARDS"
        )
    return model or simulator or "", simulator is not None


def _manifest_of(address: str, manifest: Path | None, train_samples: Path | None) -> Path | None:
    """The samples manifest the simulator was trained on: the one given, else the one in the
    --train-samples folder, else the shipped one of a shipped world model; None if unknown."""
    from cogwm.models.llamacpp import adapter_alias_folder, shipped_adapter_of

    if manifest is not None:
        if not manifest.is_file():
            raise InputError(f"--samples-manifest {manifest}: no such file")
        return manifest
    if train_samples is not None and (train_samples / BUILT_MANIFEST).is_file():
        return train_samples / BUILT_MANIFEST
    provider, _, name = address.partition(":")
    alias = shipped_adapter_of(name) if provider == "llamacpp" else None
    if alias is not None:
        shipped = adapter_alias_folder(alias) / SHIPPED_MANIFEST
        return shipped if shipped.is_file() else None
    return None


#: The manifest ``cogwm samples build`` writes beside the samples.
BUILT_MANIFEST = "manifest.json"
#: The samples manifest shipped beside a world model's adapter.
SHIPPED_MANIFEST = "samples_manifest.json"


def _heldout(rule: str, split_seed: int | None, manifest: Path | None) -> Heldout:
    """The held-out rule: the simulator's training split from its manifest where known, else
    the current split rule seeded with --split-seed (default 0).

    Raises:
        InputError: --split-seed differs from the manifest's seed, or the manifest is bad.
    """
    from cogwm.validate.items import heldout_from_manifest

    if manifest is None:
        return Heldout(rule, 0 if split_seed is None else split_seed)
    found = heldout_from_manifest(manifest, rule)
    if split_seed is not None and split_seed != found.seed:
        raise InputError(
            f"--split-seed {split_seed} differs from the seed {found.seed} of the samples "
            f"manifest {manifest}; leave --split-seed out"
        )
    return found


class _Options(NamedTuple):
    """What ``validate`` measures a simulator with: the card's settings."""

    limit: int | None
    seed: int
    ablation: str
    heldout: Heldout
    modes: list[str]
    pipeline: str
    label: str | None
    resamples: int
    network_preflight: bool
    train_samples: Path | None
    python: bool = False


def _measure(
    address: str,
    data_dir: Path | None,
    parts: list[str] | None,
    options: _Options,
    out: Path | None,
    as_json: bool,
) -> None:
    """Measure the simulator at ``address``, write its card to ``out``, print it."""
    from cogwm.validate import build_card, card_json

    names = _check_inputs(parts, options, out)
    directory = resolve_data_dir(data_dir)
    card = build_card(
        _load_simulator(address, options),
        address=address,
        data_dir=directory,
        parts=names,
        limit=options.limit,
        seed=options.seed,
        resamples=options.resamples,
        ablation=options.ablation,
        heldout=options.heldout,
        modes=options.modes,
        pipeline=options.pipeline,
        label=options.label,
        train_samples=options.train_samples,
        console=err_console,
    )
    if out is not None:
        _write(card, out)
    if as_json:
        print_json(card_json(card))
        return
    _print_card(card)


def _check_inputs(parts: list[str] | None, options: _Options, out: Path | None) -> list[str]:
    """The parts to measure, once every setting is checked (before any model loads).

    Raises:
        InputError: An unknown part, ablation, mode or pipeline, an --out that is a
            directory, or --train-samples without a readable training file.
    """
    from cogwm.validate.inputs import check_ablation
    from cogwm.validate.memorisation import train_file
    from cogwm.validate.reader import check_pipeline
    from cogwm.validate.run import check_modes, check_parts

    names = check_parts(_split(parts) if parts else _default_parts(options.python))
    check_ablation(options.ablation)
    check_modes(options.modes)
    check_pipeline(options.pipeline)
    if out is not None and out.exists() and out.is_dir():
        raise InputError(f"--out {out} is a directory")
    if options.train_samples is not None:
        train_file(options.train_samples)
        if "predict" not in options.modes:
            err_console.print("--train-samples: no --mode predict, so no memorisation figure")
    return names


def _load_simulator(address: str, options: _Options) -> Model | PythonSimulator:
    """The simulator at ``address``: a Python simulator, or a model (preflighted first)."""
    from cogwm import models

    if options.python:
        from cogwm.validate.python_sim import load_simulator

        return load_simulator(address)
    preflight_models(
        [("--model", address)], network=options.network_preflight, base_url_option=False
    )
    return models.load(address)


def _write(card: Card, out: Path) -> None:
    """Write the card to ``out`` and register a copy where arena reports look for it."""
    from cogwm.validate import write_card
    from cogwm.validate.status import register_card

    write_card(card, out)
    # Arena reports find the card of their simulated user here, by its identity.
    registered = register_card(card)
    err_console.print(f"card written to {out} (registered for reports: {registered})")


def _default_parts(python: bool) -> list[str]:
    """Every part; without the judges (which ask a model) for a Python simulator."""
    from cogwm.validate import DEFAULT_PARTS
    from cogwm.validate.parts import JUDGES

    return [p for p in DEFAULT_PARTS if not (python and p == JUDGES)]


def _split(values: list[str]) -> list[str]:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _print_card(card: Card) -> None:
    limit = "full sets" if card.limit is None else f"limit {card.limit} per part"
    table = Table(
        Column("figure", overflow="fold", min_width=24),
        "value", "95% CI", "n", "failed", "majority", "random",
        *(label for _, label in TRIVIAL_COLUMNS), "best", "gate Δ [CI]",
        title=f"validity card: {card.label}",
        caption=f"{card.model_identity}; seed {card.seed}; {limit}; ablation {card.ablation}; "
        f"pipeline {card.pipeline}; held out: {card.heldout}",
    )  # fmt: skip
    for fig in card.figures:
        ci = _interval(fig.ci_low, fig.ci_high)
        arrow = {True: "↑", False: "↓", None: "→1"}[fig.higher_is_better]
        table.add_row(
            f"{fig.key} {arrow}", _num(fig.value), ci, f"{fig.n:,}", f"{fig.n_failed:,}",
            _num(fig.baselines.majority), _num(fig.baselines.random),
            *(_num(getattr(fig.baselines, name)) for name, _ in TRIVIAL_COLUMNS),
            short_rule(fig.baselines.best_trivial), gate_text(fig.gate),
        )  # fmt: skip
    if card.figures or not card.checks:  # a card of checks only has no figure rows
        console.print(table)
    for part in card.parts:
        console.print(
            f"[bold]{part.name}[/]: {part.corpus} {part.split}; {part.selection}; "
            f"{part.n_items:,} of {part.n_population:,} items from {part.n_dialogues:,} "
            f"dialogues; {part.n_failed:,} of {part.n_calls:,} calls failed",
            highlight=False,
        )
    for name, reason in card.left_out.items():
        console.print(f"[bold]{name}[/]: left out ({reason})", highlight=False)
    if card.checks:
        _print_checks(card)


def _interval(low: float | None, high: float | None) -> str:
    """A 95 % interval as the tables print it; ``-`` when undefined."""
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _print_checks(card: Card) -> None:
    table = Table(
        Column("check", overflow="fold", min_width=24),
        "value", "95% CI", "n", "failed", "copy machine", "passed",
        title="responsiveness checks",
    )  # fmt: skip
    for check in card.checks:
        ci = _interval(check.ci_low, check.ci_high)
        passed = {True: "yes", False: "NO", None: "-"}[check.passed]
        table.add_row(
            check.key, _num(check.value), ci, f"{check.n:,}", f"{check.n_failed:,}",
            _num(check.copy_machine), passed,
        )  # fmt: skip
    console.print(table)
    for check in card.checks:
        others = ", ".join(f"{k} {_num(v)}" for k, v in check.baselines.items())
        console.print(
            f"[bold]{check.key}[/]: {check.rule}; {others}; {check.note}", highlight=False
        )


def _compare(
    paths: list[Path], output_format: str, *, paired: bool, resamples: int, seed: int
) -> None:
    from cogwm.validate import compare, read_card, text_rows, to_csv
    from cogwm.validate.compare import paired_differences

    if output_format not in ("text", "json", "csv"):
        raise InputError(f"--format must be text, json or csv, got {output_format!r}")
    if not paths:
        raise InputError("--compare needs at least one card file")
    cards = [read_card(p) for p in paths]
    comparison = compare(cards)
    differences = paired_differences(cards, resamples=resamples, seed=seed) if paired else []
    if output_format == "json":
        out = comparison.model_dump(mode="json")
        if paired:
            out["paired"] = [d.model_dump(mode="json") for d in differences]
        print_json(out)
        return
    if output_format == "csv":
        typer.echo(to_csv(comparison), nl=False)
        if paired:
            typer.echo("\nmetric,simulator,difference,ci_low,ci_high,n")
            for d in differences:
                cells = [d.key, d.column, d.difference, d.ci_low, d.ci_high, d.n]
                typer.echo(",".join("" if c is None else str(c) for c in cells))
        return
    table = Table(
        Column("figure", overflow="fold", min_width=24),
        "majority",
        "random",
        *(label for _, label in TRIVIAL_COLUMNS),
        "best",
        *(Column(c, overflow="fold") for c in comparison.columns),
        title="validity cards",
    )
    for row in text_rows(comparison):
        table.add_row(*row)
    console.print(table)
    if not all(row.same_items for row in comparison.rows):
        console.print("* the cards were measured on different items (n differs)")
    if paired:
        _print_paired(differences, comparison.columns[0])


def _print_paired(differences: list[CardDifference], first: str) -> None:
    table = Table(
        Column("figure", overflow="fold", min_width=24),
        "simulator",
        "difference",
        "95% CI (paired)",
        "shared n",
        title=f"minus {first}, on the items both answered",
    )
    for d in differences:
        ci = (
            "-" if d.ci_low is None or d.ci_high is None else f"[{d.ci_low:+.3f}, {d.ci_high:+.3f}]"
        )
        value = "-" if d.difference is None else f"{d.difference:+.3f}"
        table.add_row(d.key, d.column, value, ci, f"{d.n:,}")
    console.print(table)
