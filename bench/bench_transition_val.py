"""State simulators compared on the card's *validation* items (candidate selection, never test).

For each simulator address (``transition:FILE``, ``python:cogwm.simulator.rule:SentimentMeter``,
``two-part:FILE``, or a model such as ``llamacpp:smollm2+ADAPTER.gguf``), in prediction mode:

1. DailyDialog valence AUROC on the clean validation items (all, change, no previous), with
   its 95 % bootstrap CI over dialogues, n, and beside it carry-forward, VADER, TF-IDF and
   their combination (fitted on train, as the card fits them) and the gate against the best.
2. Counterfactual ordering per task (ESC, PD, MI) on validation histories (the clean
   validation dialogues of ESConv, PersuasionForGood and AnnoMI), in valence x intensity and in
   Comp_t, each with its 95 % CI and n.

3. With ``--sensitivity FOLDER``: arena sensitivity (scripted supportive, dismissive and hostile
   agents, common random numbers) on ESC and PD with corpus cold starts from the *validation*
   split, so that the check's own scenarios (ESC's built-in ones, PD's test cold starts) stay
   unseen; mean CTS per agent and supportive - dismissive with its 95 % CI over scenarios.

The known-groups check runs on the FailedESConv hold-out only (the gate's test set), so it is
not measured here.

Usage: python bench/bench_transition_val.py --data-dir DIR --samples-manifest M.json
       SIMULATOR [SIMULATOR ...] [--histories 120] [--resamples 2000] [--seed 0]
       [--skip-dailydialog] [--skip-counterfactual] [--sensitivity FOLDER --scenarios 20]
       [--dailydialog-items N] [--rounds 10]

A model is slow on a CPU: ``--histories`` and ``--dailydialog-items`` sample (seeded) fewer
validation histories and DailyDialog items; the trivial rules are then scored on the same items.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from cogwm.corpora.labels import extensions
from cogwm.validate import counterfactual as cf
from cogwm.validate.baselines import fit_rules, state_figures
from cogwm.validate.card import Check, Figure
from cogwm.validate.figures import Scope, Settings
from cogwm.validate.items import Heldout, Item, heldout_from_manifest
from cogwm.validate.parts import PARTS, sample_items, union
from cogwm.validate.python_sim import load_simulator
from cogwm.validate.reader import read_items

if TYPE_CHECKING:
    from cogwm.arena.factories import PythonSimulator
    from cogwm.models.model import Model

#: The valence figure's keys printed.
VALENCE_KEYS = ("valence_auroc",)


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def open_simulator(address: str) -> Model | PythonSimulator:
    """The simulator at ``address``: a Python or transition simulator, else a model."""
    kind = address.split(":", 1)[0]
    if kind in ("python", "transition", "two-part"):
        return load_simulator(address)
    from cogwm import models

    return models.load(address)


def dailydialog_val(
    addresses: list[str],
    data_dir: Path,
    heldout: Heldout,
    settings: Settings,
    limit: int | None = None,
) -> None:
    """Print the DailyDialog valence figures on validation items for each simulator (the
    trivial rules fitted once, on train, and chosen on every validation item, as the card does;
    with ``limit``, each item set is a seeded sample of that many and every figure is taken on
    it)."""
    spec = PARTS["dailydialog"]
    assert spec.fit_sets is not None
    sets = spec.fit_sets(data_dir, heldout)
    fitted = fit_rules(spec.rules, sets["train"], sets["val"], ["predict"])
    val = {name: sample_items(items, limit, settings.seed) for name, items in sets["val"].items()}
    items = union(val)
    scope = Scope("dailydialog", "predict", settings)
    for address in addresses:
        simulator = open_simulator(address)
        readings = asyncio.run(read_items(simulator, items, "predict", seed=settings.seed))
        by_id = dict(zip((i.id for i in items), readings, strict=True))
        for fig in state_figures(spec.rules, scope, val, by_id, fitted):
            if fig.metric in VALENCE_KEYS:
                _print_figure(address, fig)


def _print_figure(address: str, fig: Figure) -> None:
    b = fig.baselines
    gate = "-"
    if fig.gate is not None and fig.gate.difference is not None:
        gate = f"{fig.gate.difference:+.3f} {_interval(fig.gate.ci_low, fig.gate.ci_high)}"
    print(
        f"{address} | {fig.key} | {_num(fig.value)} "
        f"{_interval(fig.ci_low, fig.ci_high)} n={fig.n} failed={fig.n_failed} | carry "
        f"{_num(b.carry_forward)} vader {_num(b.lexicon)} tfidf {_num(b.text_classifier)} "
        f"comb {_num(b.combined)} "
        f"best={b.best_trivial} | gate {gate}",
        flush=True,
    )


def history_sets(
    data_dir: Path, heldout: Heldout, limit: int | None, seed: int
) -> list[cf.HistorySet]:
    """Each task's validation histories (clean validation dialogues ending in an agent turn)."""
    sets = []
    for offset, (task, corpus) in enumerate(cf.TASK_CORPORA.items()):
        spec = PARTS[corpus]
        assert spec.fit_sets is not None
        items: list[Item] = [
            i
            for i in union(spec.fit_sets(data_dir, heldout)["val"])
            if i.dialogue_id.startswith(f"{corpus}:") and cf._ends_with_agent_turn(i)
        ]
        unique = list({i.id: i for i in items}.values())
        sets.append(
            cf.HistorySet(
                task=task,
                corpus=corpus,
                split="val",
                histories=sample_items(unique, limit, seed + offset),
                n_population=len(unique),
            )
        )
    return sets


def counterfactual_val(address: str, sets: list[cf.HistorySet], settings: Settings) -> list[Check]:
    """The counterfactual checks of one simulator on the validation histories."""
    bank = cf.load_bank()
    calls = cf.condition_items(sets, bank, settings.seed)
    simulator = open_simulator(address)
    readings = asyncio.run(read_items(simulator, calls, "predict", seed=settings.seed))
    by_id = {c.id: r for c, r in zip(calls, readings, strict=True)}
    checks = [c for s in sets for c in cf.counterfactual_checks(s, by_id, settings, bank)]
    for check in checks:
        print(
            f"{address} | counterfactual.{check.task}.{check.metric} | {_num(check.value)} "
            f"{_interval(check.ci_low, check.ci_high)} n={check.n} failed={check.n_failed}",
            flush=True,
        )
    return checks


#: The transition model's arena factory (a ``transition:FILE`` address in the card).
TRANSITION_FACTORY = "python:cogwm.simulator.transition.simulator:TransitionSimulator"


def sensitivity_val(
    address: str, folder: Path, data_dir: Path, scenarios: int, seed: int, rounds: int
) -> None:
    """Arena sensitivity of one simulator on validation cold starts of ESC and PD."""
    from cogwm.validate.sensitivity import AGENTS, CONTRASTS, Plan, interval_text, run_sensitivity

    options = None
    if address.startswith("transition:"):
        options = {"path": str(Path(address.removeprefix("transition:")).resolve())}
        address = TRANSITION_FACTORY
    plan = Plan(
        simulator=address,
        folder=folder,
        scenarios=scenarios,
        rounds=rounds,
        seed=seed,
        data_dir=data_dir,
        simulator_options=options,
        scenario_split="val",
    )
    for result in run_sensitivity(plan, show_progress=False):
        means = " ".join(f"{a} {_num(result.means[a])}" for a in AGENTS)
        contrasts = "; ".join(
            f"{a}-{b} {interval_text(result.differences[(a, b)])}" for a, b in CONTRASTS
        )
        print(
            f"{options['path'] if options else address} | sensitivity.{result.task} | {means} | "
            f"{contrasts} | failed={result.n_failed} passed={result.passed}",
            flush=True,
        )


def main() -> None:
    """Parse the arguments and print every figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("simulators", nargs="+")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--samples-manifest", type=Path, required=True)
    parser.add_argument("--histories", type=int, default=120)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-dailydialog", action="store_true")
    parser.add_argument("--skip-counterfactual", action="store_true")
    parser.add_argument("--sensitivity", type=Path, help="Folder of the sensitivity run stores.")
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10, help="Arena rounds (sensitivity).")
    parser.add_argument("--dailydialog-items", type=int, help="Items sampled per item set.")
    args = parser.parse_args()
    extensions.register()
    heldout = heldout_from_manifest(args.samples_manifest, "test")
    settings = Settings(resamples=args.resamples, seed=args.seed)
    if not args.skip_counterfactual:
        sets = history_sets(args.data_dir, heldout, args.histories, args.seed)
        print("histories per task:", {s.task: (len(s.histories), s.n_population) for s in sets})
        for address in args.simulators:
            counterfactual_val(address, sets, settings)
    if not args.skip_dailydialog:
        dailydialog_val(args.simulators, args.data_dir, heldout, settings, args.dailydialog_items)
    if args.sensitivity is not None:
        for address in args.simulators:
            sensitivity_val(
                address,
                args.sensitivity / _slug(address),
                args.data_dir,
                args.scenarios,
                args.seed,
                args.rounds,
            )


def _slug(address: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in address).strip("-")[-60:]


if __name__ == "__main__":
    main()
