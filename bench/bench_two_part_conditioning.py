"""Does the two-part user's world model follow the state it is given?

For each built-in scenario of a task, after its cold start and one agent line, the two-part
simulator is run twice per seed with the transition model's state replaced by an unpleasant one
and by a pleasant one (same history, same seed; only the fixed state differs). Printed: the mean
VADER compound of the utterances under each state, their paired difference (pleasant -
unpleasant) with its 95 % cluster-bootstrap CI over scenarios, and n. The baseline is the
transition model alone, whose utterance is one fixed line (a difference of exactly 0).

Usage: python bench/bench_two_part_conditioning.py TRANSITION.json [--model llamacpp:smollm2-wm]
       [--task ESC] [--seeds 3] [--scenarios N] [--resamples 2000]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from cogwm import tasks
from cogwm.arena.opening import cold_start_turns
from cogwm.arena.scenarios import builtin_scenarios
from cogwm.metrics.sentiment import vader_compound
from cogwm.schema import Emotion, Profile, Role
from cogwm.schema.termination import Phase
from cogwm.schema.transcript import ArenaTurn, TurnOutput, UserSetup
from cogwm.simulator.transition.two_part import TwoPartSimulator
from cogwm.stats.bootstrap import Settings, paired_difference

AGENT_LINE = "I hear you. How are you feeling about it right now?"
#: The fixed states compared (emotion label and intensity); built after the transition model is
#: loaded, which registers the labels of its training data with the lexicon.
STATES = {"unpleasant": ("sadness", 3), "pleasant": ("happiness", 3)}


def main(argv: Sequence[str] | None = None) -> None:
    """Run the comparison and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transition")
    parser.add_argument("--model", default="llamacpp:smollm2-wm")
    parser.add_argument("--task", default="ESC")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--scenarios", type=int, default=None, help="The first N (default all).")
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args(argv)
    simulator = TwoPartSimulator(args.transition, args.model)
    task = tasks.get(args.task)
    original = simulator.transition.respond
    emotions = {name: Emotion(label=label, intensity=n) for name, (label, n) in STATES.items()}
    scores: dict[str, list[float]] = {name: [] for name in STATES}
    groups: list[str] = []
    for scenario in builtin_scenarios(task.name)[: args.scenarios]:
        setup = UserSetup(context=scenario.context, profile=scenario.profile or Profile.neutral())
        opening = cold_start_turns(scenario)
        state = simulator.read_state(task, setup, opening)
        turns = [*opening[:-1], opening[-1].model_copy(update={"state": state})]
        round_ = turns[-1].round + 1
        turns.append(
            ArenaTurn(index=len(turns), round=round_, role=Role.AGENT, phase=Phase.SIMULATED,
                      text=AGENT_LINE)
        )  # fmt: skip
        for seed in range(args.seeds):
            for name, emotion in emotions.items():

                def forced(*a: object, emotion: Emotion = emotion, **k: object) -> TurnOutput:
                    out = original(*a, **k)  # type: ignore[arg-type]
                    assert out.state is not None
                    return out.model_copy(
                        update={"state": out.state.model_copy(update={"emotion": emotion})}
                    )

                simulator.transition.respond = forced  # type: ignore[method-assign]
                said = simulator.respond(task, setup, turns, seed=seed).text
                scores[name].append(vader_compound(said))
            groups.append(scenario.id)
    _report(scores, groups, args.resamples)


def _report(scores: dict[str, list[float]], groups: list[str], resamples: int) -> None:
    pleasant, unpleasant = np.array(scores["pleasant"]), np.array(scores["unpleasant"])
    result = paired_difference(
        lambda i: float(pleasant[i].mean()),
        lambda i: float(unpleasant[i].mean()),
        groups,
        Settings(resamples=resamples, seed=0),
    )
    print(f"utterances: {len(groups)} per state from {len(set(groups))} scenarios")
    print(f"mean VADER, unpleasant state: {unpleasant.mean():+.3f}")
    print(f"mean VADER, pleasant state:   {pleasant.mean():+.3f}")
    low, high = result.ci_low, result.ci_high
    interval = "-" if low is None or high is None else f"[{low:+.3f}, {high:+.3f}]"
    print(f"pleasant - unpleasant: {result.difference:+.3f} {interval} (baseline, fixed line: 0)")


if __name__ == "__main__":
    main()
