"""Measure a simulator: read each part's items, ask the model, score, and assemble the card."""

from __future__ import annotations

import asyncio
import platform
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from rich.console import Console

from cogwm import corpora
from cogwm.arena.provenance import git_revision, package_versions
from cogwm.corpora.labels import extensions
from cogwm.errors import InputError
from cogwm.models.model import Model
from cogwm.progress import ProgressBar
from cogwm.schema.lexicon import valence_table
from cogwm.simulator.format import Mode, format_version
from cogwm.simulator.samples import DEFAULT_HISTORY_TURNS
from cogwm.stats.means import DEFAULT_RESAMPLES
from cogwm.validate import counterfactual, groups
from cogwm.validate.baselines import Fitted, fit_rules, state_figures
from cogwm.validate.card import Card, Check, Figure, PartInfo
from cogwm.validate.figures import (
    Scope,
    Settings,
    memorisation_figure,
    utterance_figures,
)
from cogwm.validate.inputs import ABLATIONS, Reading, check_ablation
from cogwm.validate.items import Heldout, Item, Population
from cogwm.validate.judges import (
    LAST_TURNS,
    OPENING_TURNS,
    JudgedDialogue,
    judge_all,
    judge_figures,
    judge_sets,
)
from cogwm.validate.memorisation import NgramIndex, train_file, training_index
from cogwm.validate.parts import (
    JUDGES,
    NOT_YET,
    PARTS,
    ItemSets,
    PartSpec,
    choose,
    sample_items,
    union,
)
from cogwm.validate.reader import check_pipeline, read_items

if TYPE_CHECKING:
    from typing import TypeAlias

    from cogwm.arena.factories import PythonSimulator

    #: What a card measures: a model, or a Python simulator that sets the state (prediction mode).
    Simulator: TypeAlias = Model | PythonSimulator

#: What the simulator is shown for each item (the training samples' input).
INPUT = (
    "as the training samples: the task's context, the profile, the first and the latest "
    f"human-known state before the turn, the last {DEFAULT_HISTORY_TURNS} turns (and the real "
    "turn when understanding)"
)
#: Said on trivial rules whose train dialogues are among the items (``--heldout all``).
TRAIN_OVERLAP = (
    "held out: all, so these items include the train dialogues the trivial rules were fitted "
    "on (their values are optimistic)"
)
#: Said on trivial rules and subsets when the simulator was shown no state: they still read the
#: state the full prompt shows, so cards with and without the switch stay comparable.
HIDDEN_STATES = (
    "the simulator was shown no state (ablation no_anything); carry-forward and the change "
    "items read the state the full input shows"
)
#: The modes of the paper, in the order they run.
MODES: tuple[Mode, ...] = ("understand", "predict")
#: Responsiveness checks run as parts: how each plans its calls before the first one.
CHECKS: dict[str, Callable[[Path, Heldout, int | None, int], _CheckPlan]] = {
    counterfactual.COUNTERFACTUAL: counterfactual.plan,
    groups.KNOWN_GROUPS: groups.plan,
}
#: Each check's cap when ``--limit`` is not given: 120 histories per task for the counterfactual
#: check (4 calls each; the pass rule needs at least 60), every dialogue for the known groups.
CHECK_DEFAULT_LIMITS: dict[str, int | None] = {
    counterfactual.COUNTERFACTUAL: 120,
    groups.KNOWN_GROUPS: None,
}
#: The parts measured when none are named.
DEFAULT_PARTS: tuple[str, ...] = (*PARTS, JUDGES, *CHECKS)


def check_parts(names: Sequence[str]) -> list[str]:
    """The part names, deduplicated in order.

    Raises:
        InputError: A name that is neither a part nor a known unmeasured one.
    """
    known = [*PARTS, JUDGES, *CHECKS, *NOT_YET]
    names = [_part_of_corpus(n) if n not in known else n for n in names]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(
            f"unknown card part(s) {', '.join(unknown)}; choose from {', '.join(known)}"
        )
    return list(dict.fromkeys(names))


def _part_of_corpus(name: str) -> str:
    """The part that measures corpus ``name`` (any of its names, e.g. ``p4g`` for
    ``persuasionforgood``); ``name`` itself when there is none."""
    try:
        corpus = corpora.get(name).name
    except InputError:
        return name
    return next((part.name for part in PARTS.values() if part.corpus == corpus), name)


def versions() -> dict[str, str]:
    """Versions of Python, the recorded packages, scikit-learn and vaderSentiment (the trivial
    rules), the prompt format and the git revision of the source (where it is a checkout)."""
    from cogwm.metrics.sentiment import vader_version

    found = {"python": platform.python_version(), "format": format_version()}
    found.update(package_versions())
    found["scikit-learn"] = metadata.version("scikit-learn")  # a dependency of cogwm
    found["vaderSentiment"] = vader_version()
    revision = git_revision()
    if revision is not None:
        found["git"] = revision
    return found


class _CallTally:
    """Counts a card's failed calls on the shared progress bar (see ``cogwm.progress``)."""

    def __init__(self, total: int, enabled: bool, console: Console | None):
        self.bar = ProgressBar("validate", total, enabled=enabled, console=console)
        self.failed = 0

    def part(self, name: str) -> None:
        self.bar.update(description=f"validate {name}")

    def judged(self, failed: bool) -> None:
        self.failed += failed
        self.bar.update(advance=1, info=f"{self.failed} failed")

    def done(self, reading: Reading) -> None:
        self.judged(reading.state is None)


def build_card(
    model: Simulator,
    *,
    address: str,
    data_dir: Path,
    parts: Sequence[str] = DEFAULT_PARTS,
    limit: int | None = None,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    ablation: str = "none",
    heldout: Heldout = Heldout(),
    modes: Sequence[str] = ("understand",),
    pipeline: str = "joint",
    label: str | None = None,
    train_samples: Path | None = None,
    progress: bool = True,
    console: Console | None = None,
) -> Card:
    """The validity card of the simulator ``model``.

    Every part's items are read before the first call, so bad data fails fast. Every state
    figure also gets its part's trivial rules (model-free: fitted on the corpus's train split,
    the best chosen on its validation split) and the gate against the best, and is repeated on
    its change and no-previous items.

    Args:
        model: The simulator: a model, or a Python simulator (its states in prediction mode).
        address: Its address (recorded on the card).
        data_dir: The folder of the corpora.
        parts: Parts to measure (names of :data:`PARTS`; names of :data:`NOT_YET` are recorded
            as left out with the reason).
        limit: Items sampled per item set with ``seed`` (None: the full sets); for the checks,
            histories per task (counterfactual) and dialogues per group (known groups), with
            :data:`CHECK_DEFAULT_LIMITS` for None.
        seed: Seed of the sampling, of the model's decoding and of the bootstrap.
        resamples: Bootstrap resamples per interval.
        ablation: Input switch (:data:`~cogwm.validate.inputs.ABLATIONS`).
        heldout: Which dialogues of corpora without an official split are items.
        modes: ``understand`` (the real turn is given, the state is asked) and/or ``predict``
            (state and utterance are asked; adds the utterance tier).
        pipeline: ``joint`` (the world model's one call), ``dual`` (generator + verifier) or
            ``duet`` (``dual`` with DuetSim's regenerate-once check); prediction mode only.
        label: Column name in comparisons (default: the address, with the ablation).
        train_samples: A samples directory whose ``train.jsonl`` the simulator was trained on;
            given, prediction mode adds the memorisation figure to each part.
        progress: Draw a progress bar on stderr.
        console: Where the bar is drawn.

    Raises:
        InputError: Unknown parts or ablation, a bad limit, corpus files that cannot be read,
            or a part whose every call failed, or a ``train_samples`` without a readable
            training file.
    """
    names, checked_modes = _check_settings(model, parts, limit, modes, ablation, pipeline)
    request = _Request(address, names, limit, seed, resamples, ablation, heldout, pipeline)
    plan = _plan(request, data_dir, checked_modes, train_samples)
    tally = _CallTally(plan.n_calls, progress, console)
    with tally.bar:
        readings = _read_plan(model, plan, request, tally)
    return _assemble(model, request, plan, readings, label)


class _Request(NamedTuple):
    """The settings a card is measured with (see :func:`build_card`)."""

    address: str
    names: list[str]
    limit: int | None
    seed: int
    resamples: int
    ablation: str
    heldout: Heldout
    pipeline: str


class _Plan(NamedTuple):
    """Every call a card makes, read from the corpora before the first one."""

    runs: list[_Run]
    judged: dict[str, tuple[str, list[JudgedDialogue]]]
    checks: list[_CheckPlan]
    ngrams: NgramIndex | None

    @property
    def n_calls(self) -> int:
        """How many calls the card makes (the progress bar's total)."""
        calls = sum(len(union(run.sets)) for run in self.runs)
        calls += sum(len(d) for _, d in self.judged.values())
        return calls + sum(len(p.calls) for p in self.checks)


class _Readings(NamedTuple):
    """The simulator's answers to a plan's calls."""

    parts: list[dict[str, Reading]]
    verdicts: dict[str, list[bool | None]]
    checks: list[dict[str, Reading]]


def _check_settings(
    model: Simulator,
    parts: Sequence[str],
    limit: int | None,
    modes: Sequence[str],
    ablation: str,
    pipeline: str,
) -> tuple[list[str], list[Mode]]:
    """The checked part names and modes.

    Raises:
        InputError: Unknown parts, ablation, pipeline or modes, a limit under 1, or what a
            Python simulator cannot do.
    """
    names = check_parts(parts)
    check_ablation(ablation)
    check_pipeline(pipeline)
    # The human labels use DailyDialog's extension labels (happiness, neutral, ...); registering
    # them up front gives every part and every card the same answer space, whichever parts run.
    extensions.register()
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}")
    checked = check_modes(modes)
    if not isinstance(model, Model):
        _check_python(names, checked)
    return names, checked


def _plan(
    request: _Request, data_dir: Path, modes: Sequence[Mode], train_samples: Path | None
) -> _Plan:
    """Read every part's items, fit its trivial rules and plan the checks' calls."""
    # Read before the first call (a bad file fails fast) and once for every part.
    index = _training_index(train_samples, modes)
    limit, seed, heldout = request.limit, request.seed, request.heldout
    runs: list[_Run] = []
    for spec in (PARTS[n] for n in request.names if n in PARTS):
        populations = spec.populations(data_dir, heldout)
        sets = choose(populations, limit, seed)
        trivial = _fit_trivial(spec, data_dir, heldout, modes)
        runs.extend(_Run(spec, mode, populations, sets, trivial) for mode in modes)
    judged = _judged_sets(data_dir, heldout, limit, seed) if JUDGES in request.names else {}
    checks = [
        CHECKS[n](data_dir, heldout, CHECK_DEFAULT_LIMITS[n] if limit is None else limit, seed)
        for n in request.names
        if n in CHECKS
    ]
    return _Plan(runs, judged, checks, index)


def _read_plan(model: Simulator, plan: _Plan, request: _Request, tally: _CallTally) -> _Readings:
    """Ask the simulator every call of the plan: the parts, the judges (a model only), the
    checks."""
    seed, ablation, pipeline = request.seed, request.ablation, request.pipeline
    parts = asyncio.run(
        _read_all(model, plan.runs, tally, seed=seed, ablation=ablation, pipeline=pipeline)
    )
    verdicts = (
        asyncio.run(_judge_sets(model, plan.judged, tally, seed=seed))
        if isinstance(model, Model)
        else {}
    )
    checks = asyncio.run(
        _read_checks(model, plan.checks, tally, seed=seed, ablation=ablation, pipeline=pipeline)
    )
    return _Readings(parts, verdicts, checks)


def _assemble(
    model: Simulator, request: _Request, plan: _Plan, readings: _Readings, label: str | None
) -> Card:
    """The card from the plan and its readings."""
    figures, infos, checks = _results(request, plan, readings)
    address, ablation, pipeline = request.address, request.ablation, request.pipeline
    return Card(
        label=label or _label(address, ablation, pipeline),
        model=address,
        model_identity=model.identity,
        ablation=ablation,
        pipeline=pipeline,
        heldout=request.heldout.describe(),
        seed=request.seed,
        limit=request.limit,
        resamples=request.resamples,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        versions={**versions(), **{k: v for p in plan.checks for k, v in p.versions.items()}},
        answer_labels=sorted(valence_table()),
        input=f"{INPUT}; {ABLATIONS[ablation]}",
        parts=infos,
        figures=figures,
        left_out={n: NOT_YET[n] for n in request.names if n in NOT_YET},
        checks=checks,
    )


def _results(
    request: _Request, plan: _Plan, readings: _Readings
) -> tuple[list[Figure], list[PartInfo], list[Check]]:
    """The card's figures, part records and checks, scored from the readings."""
    settings = Settings(resamples=request.resamples, seed=request.seed)
    infos: list[PartInfo] = []
    figures: list[Figure] = []
    for run, found in zip(plan.runs, readings.parts, strict=True):
        figures.extend(_score(run, found, settings, plan.ngrams, request.heldout, request.ablation))
        infos.extend(_part_info(run, name, items, found) for name, items in run.sets.items())
    judge_scope = Scope(JUDGES, "judge", settings)
    for name, (split, dialogues) in plan.judged.items():
        verdicts = readings.verdicts[name]
        figures.extend(judge_figures(judge_scope, name, dialogues, verdicts))
        infos.append(_judge_info(name, split, dialogues, verdicts))
    checks: list[Check] = []
    for check_plan, found in zip(plan.checks, readings.checks, strict=True):
        scored, check_infos = check_plan.score(found, settings)
        checks.extend(scored)
        infos.extend(check_infos)
    return figures, infos, checks


def _check_python(names: Sequence[str], modes: Sequence[Mode]) -> None:
    """Refuse what a Python simulator cannot do: understand a given turn, or judge.

    Raises:
        InputError: Understanding mode or the judges part.
    """
    if "understand" in modes:
        raise InputError("a Python simulator is carded in prediction mode only (--mode predict)")
    if JUDGES in names:
        raise InputError("the judges part asks a model; leave it out for a Python simulator")


class _CheckPlan(Protocol):
    """A responsiveness check's calls and scoring (see :data:`CHECKS`)."""

    @property
    def calls(self) -> list[Item]: ...

    @property
    def versions(self) -> dict[str, str]: ...

    def score(
        self, readings: Mapping[str, Reading], settings: Settings
    ) -> tuple[list[Check], list[PartInfo]]: ...


async def _read_checks(
    model: Simulator,
    plans: Sequence[_CheckPlan],
    bar: _CallTally,
    *,
    seed: int,
    ablation: str,
    pipeline: str,
) -> list[dict[str, Reading]]:
    """Each check's readings by call id, in prediction mode (the checks ask what comes next)."""
    out = []
    for check_plan in plans:
        readings = await read_items(
            model,
            check_plan.calls,
            "predict",
            seed=seed,
            ablation=ablation,
            pipeline=pipeline,
            on_done=bar.done,
        )
        out.append({item.id: r for item, r in zip(check_plan.calls, readings, strict=True)})
    return out


class _Run(NamedTuple):
    """One part read in one mode."""

    spec: PartSpec
    mode: Mode
    populations: dict[str, Population]
    sets: ItemSets
    trivial: Fitted | None = None


def _fit_trivial(
    spec: PartSpec, data_dir: Path, heldout: Heldout, modes: Sequence[Mode] = ("understand",)
) -> Fitted | None:
    """The part's trivial rules, fitted on its train split and ranked on its validation split
    in each mode (model-free; keyed by metric and mode, since what the rules may read differs:
    the real turn when understanding, the prompt's turns when predicting)."""
    if spec.fit_sets is None or not spec.rules:
        return None
    sets = spec.fit_sets(data_dir, heldout)
    return fit_rules(spec.rules, sets["train"], sets["val"], modes)


def check_modes(modes: Sequence[str]) -> list[Mode]:
    """The modes, deduplicated in order.

    Raises:
        InputError: None, or one that is neither ``understand`` nor ``predict``.
    """
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise InputError(f"modes must be understand and/or predict, got {', '.join(modes)}")
    return [m for m in MODES if m in modes]


def _training_index(train_samples: Path | None, modes: Sequence[Mode]) -> NgramIndex | None:
    """The training utterances' n-grams where prediction mode has utterances to check."""
    if train_samples is None:
        return None
    if "predict" not in modes:
        train_file(train_samples)  # still refuse a wrong directory
        return None
    return training_index(train_samples)


def _score(
    run: _Run,
    readings: Mapping[str, Reading],
    settings: Settings,
    index: NgramIndex | None,
    heldout: Heldout = Heldout(),
    ablation: str = "none",
) -> list[Figure]:
    """The part's figures (state figures on all, change and no-previous items, with their
    trivial rules and gate), plus the utterance tier in prediction mode (on all its items) and,
    with a training index, the memorisation figure."""
    scope = Scope(run.spec.name, run.mode, settings)
    if run.spec.rules:
        overlap = heldout.rule == "all" and not run.spec.official_split
        notes = [
            TRAIN_OVERLAP if overlap else "",
            HIDDEN_STATES if ablation == "no_anything" else "",
        ]
        figures = state_figures(
            run.spec.rules, scope, run.sets, readings, run.trivial,
            fit_note="; ".join(n for n in notes if n),
        )  # fmt: skip
    else:
        figures = run.spec.score(scope, run.sets, readings)
    if run.mode == "predict":
        items = union(run.sets)
        gold = [i.utterance for i in items]
        predicted = [readings[i.id].utterance for i in items]
        groups = [i.dialogue_id for i in items]
        figures += utterance_figures(scope, gold, predicted, groups)
        if index is not None and items:
            figures.append(
                memorisation_figure(
                    scope, gold, predicted, groups, index, ids=[i.id for i in items]
                )
            )
    return figures


def _part_info(
    run: _Run, name: str, items: list[Item], readings: Mapping[str, Reading]
) -> PartInfo:
    spec, population = run.spec, run.populations[name]
    return PartInfo(
        name=f"{spec.name}.{name}",
        corpus=population.corpus,
        split=population.split,
        selection=population.selection,
        mode=run.mode,
        n_items=len(items),
        n_population=len(population.items),
        n_dialogues=len({item.dialogue_id for item in items}),
        n_calls=len(items),
        n_failed=sum(readings[item.id].state is None for item in items),
        n_unclean=population.n_unclean,
    )


def _label(address: str, ablation: str, pipeline: str) -> str:
    switches = [
        s
        for s in (ablation if ablation != "none" else "", pipeline if pipeline != "joint" else "")
        if s
    ]
    return f"{address} ({', '.join(switches)})" if switches else address


def _judged_sets(
    data_dir: Path, heldout: Heldout, limit: int | None, seed: int
) -> dict[str, tuple[str, list[JudgedDialogue]]]:
    return {
        name: (split, sample_items(dialogues, limit, seed + k))
        for k, (name, (split, dialogues)) in enumerate(judge_sets(data_dir, heldout).items())
    }


async def _judge_sets(
    model: Model,
    judged: Mapping[str, tuple[str, list[JudgedDialogue]]],
    bar: _CallTally,
    *,
    seed: int,
) -> dict[str, list[bool | None]]:
    out = {}
    for name, (_, dialogues) in judged.items():
        bar.part(f"{JUDGES} {name}")
        out[name] = await judge_all(model, dialogues, seed=seed, on_done=bar.judged)
    return out


def _judge_info(
    name: str, split: str, dialogues: list[JudgedDialogue], verdicts: list[bool | None]
) -> PartInfo:
    return PartInfo(
        name=f"{JUDGES}.{name}",
        corpus=", ".join(sorted({d.id.split(":", 1)[0] for d in dialogues})),
        split=split,
        selection=f"whole conversations (the first {OPENING_TURNS} and the last {LAST_TURNS} "
        "turns, as the arena's judge reads them)",
        mode="judge",
        n_items=len(dialogues),
        n_population=len(dialogues),
        n_dialogues=len(dialogues),
        n_calls=len(dialogues),
        n_failed=sum(v is None for v in verdicts),
    )


async def _read_all(
    model: Simulator,
    runs: Sequence[_Run],
    bar: _CallTally,
    *,
    seed: int,
    ablation: str,
    pipeline: str,
) -> list[dict[str, Reading]]:
    """Every run's readings by item id; runs go concurrently, so a local model that answers one
    call at a time takes them in turn and an interrupted card has calls of every part."""

    async def one(run: _Run) -> dict[str, Reading]:
        items = union(run.sets)
        readings = await read_items(
            model,
            items,
            run.mode,
            seed=seed,
            ablation=ablation,
            pipeline=pipeline,
            on_done=bar.done,
        )
        return {item.id: r for item, r in zip(items, readings, strict=True)}

    return list(await asyncio.gather(*(one(run) for run in runs)))
