"""Spend only what was allowed: the caps of a run (``--max-cost-usd``, ``--max-tokens-total``)
and the estimate that ``arena run --dry-run`` prints before anything is spent.

A ``Budget`` is charged with every model call the runner records (cache hits are free) and, once
a cap is reached, calls back whoever stops the run; finished conversations stay stored and
``--resume`` continues. The caps count what one invocation spends.

The estimate is an upper bound: every conversation runs to ``max_rounds``, every reply uses its
whole ``max_tokens`` (a user turn enters the history as its utterance, at most
``UTTERANCE_CHARS``), each call shows its history window (``cogwm.arena.windows``), prompts are
counted at about four characters a token, and nothing comes from the cache. Only the repair
call of a structured reply that failed validation is not foreseen (one more call each; the fake
and well-behaved models need none). Costs come from the models' ``cost_per_1k_prompt`` and
``cost_per_1k_completion`` options (USD per 1,000 tokens).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from cogwm.arena.config import AgentConfig, AgentKind, ArenaConfig, ModelConfig
from cogwm.arena.judging import JUDGED_TURNS
from cogwm.arena.prompts import (
    INTENT_DETECTOR,
    PROFILE_ANNOTATOR,
    SIMULATOR_OPENING,
    SIMULATOR_SYSTEM,
    judge_prompt,
)
from cogwm.arena.scenarios import COLD_START_ROUNDS, Scenario
from cogwm.arena.termination import Condition
from cogwm.arena.tokens import (
    HistoryTokens,
    agent_call_tokens,
    agent_turns_seen,
    simulator_fixed_tokens,
    text_tokens,
    turn_tokens,
    turns_seen,
)
from cogwm.arena.units import Unit

# The caps live with the model calls they count; the arena's runner takes them from here.
from cogwm.models.budget import Budget as Budget

if TYPE_CHECKING:
    from cogwm.arena.windows import Windows


# ------------------------------------------------------------------------------ the spending


class RoleSpending(NamedTuple):
    """At most how many calls and tokens one role (an agent, the simulator...) makes."""

    role: str
    model: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None: no prices in this model's options


class Spending(NamedTuple):
    """The planned units of a run and an upper bound of its calls, tokens and cost."""

    units: int
    preparations: int
    roles: list[RoleSpending]

    @property
    def calls(self) -> int:
        """Model calls in all."""
        return sum(r.calls for r in self.roles)

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens in all."""
        return sum(r.prompt_tokens + r.completion_tokens for r in self.roles)

    @property
    def cost_usd(self) -> float | None:
        """The cost of the priced roles; None when no model has prices."""
        priced = [r.cost_usd for r in self.roles if r.cost_usd is not None]
        return sum(priced) if priced else None


class _Tally:
    """Calls and tokens of one role, summed over the units."""

    def __init__(self, role: str, spec: ModelConfig):
        self.role, self.spec = role, spec
        self.calls = self.prompt = self.completion = 0

    def add(
        self, prompt_tokens: int, completion_tokens: int, times: int = 1, calls: int = 1
    ) -> None:
        """Count ``calls`` calls that together take these tokens, ``times`` over."""
        self.calls += calls * times
        self.prompt += prompt_tokens * times
        self.completion += completion_tokens * times

    def result(self) -> RoleSpending:
        options = self.spec.options
        prices = (options.get("cost_per_1k_prompt"), options.get("cost_per_1k_completion"))
        cost = None
        if any(p is not None for p in prices):
            cost = self.prompt * float(prices[0] or 0) + self.completion * float(prices[1] or 0)
            cost /= 1000
        return RoleSpending(
            self.role, self.spec.model, self.calls, self.prompt, self.completion, cost
        )


def estimate(
    config: ArenaConfig, units: Sequence[Unit], windows: Windows | None = None
) -> Spending:
    """An upper bound of the calls, tokens and cost of running ``units`` under ``config``
    (``windows``: the history windows; default: resolved from the config's whole plan)."""
    from cogwm.arena.windows import resolve_windows

    windows = windows or resolve_windows(config)
    tallies: dict[str, _Tally] = {}

    def tally(role: str, spec: ModelConfig) -> _Tally:
        return tallies.setdefault(role, _Tally(role, spec))

    prompts = config.agent_prompts()
    preparations = {(u.task, u.scenario.id): u.scenario for u in units}
    for scenario in preparations.values():
        _prepare(config, scenario, tally)
    # The trials of one arm and scenario differ only in their seeds: one plan, counted for each.
    trials = Counter(_arm(unit) for unit in units)
    for unit in {_arm(unit): unit for unit in units}.values():
        times = trials[_arm(unit)]
        history = HistoryTokens(turn_tokens(config, unit.agent, unit.scenario.opening))
        if unit.agent.kind is not AgentKind.PYTHON:  # a Python agent's calls are its own
            window = windows.agents[unit.agent.name].turns
            agent_prompt = prompts[unit.agent.name].text
            _agent_calls(config, unit, agent_prompt, history, window, tally, times)
        _user_side_calls(config, unit, history, windows.simulator.turns, tally, times)
    return Spending(len(units), len(preparations), [t.result() for t in tallies.values()])


def _arm(unit: Unit) -> tuple[str, str, str, Condition]:
    """A unit without its trial."""
    return unit.task, unit.scenario.id, unit.agent.name, unit.condition


_Tallier = Callable[[str, ModelConfig], _Tally]


def _prepare(config: ArenaConfig, scenario: Scenario, tally: _Tallier) -> None:
    """The scenario's preparation: the opening's state, and the profile when annotated."""
    opening = sum(text_tokens(t.text) for t in scenario.opening)
    fixed = text_tokens(SIMULATOR_SYSTEM.text + SIMULATOR_OPENING.text + scenario.context)
    if config.simulator.python is None:  # a Python simulator's turns are no model calls
        tally("simulator", config.simulator).add(fixed + opening, config.simulator.max_tokens)
    annotator = config.annotator_model
    if config.annotate_profiles and scenario.profile is None and annotator is not None:
        tally("profile_annotator", annotator).add(
            text_tokens(PROFILE_ANNOTATOR.text) + opening, annotator.max_tokens
        )


def _agent_calls(
    config: ArenaConfig,
    unit: Unit,
    own_prompt: str,
    history: HistoryTokens,
    window: int | None,
    tally: _Tallier,
    times: int,
) -> None:
    agent: AgentConfig = unit.agent
    system, reply = agent_call_tokens(config, agent, unit.task, own_prompt, unit.condition)
    seen = turns_seen(agent_turns_seen(config, len(unit.scenario.opening)))
    prompts = system * len(seen) + int(history.shown(seen, window).sum())
    tally(f"agents.{agent.name}", agent.backend()).add(prompts, reply * len(seen), times, len(seen))


def _user_side_calls(
    config: ArenaConfig,
    unit: Unit,
    history: HistoryTokens,
    window: int | None,
    tally: _Tallier,
    times: int,
) -> None:
    """The simulator's turns, the intent detector's checks and the judge's verdict."""
    opening = len(unit.scenario.opening)
    simulator, detector, judge = config.simulator, config.intent_model, config.judge_model
    k = turns_seen(range(1, config.max_rounds - COLD_START_ROUNDS + 1))  # simulated rounds
    if simulator.python is None:
        shown = int(history.shown(opening + 2 * k - 1, window).sum())
        fixed = simulator_fixed_tokens(unit.scenario) * len(k)
        tally("simulator", simulator).add(
            fixed + shown, simulator.max_tokens * len(k), times, len(k)
        )
    # As the orchestrator: from intent_from_round on, never at the last round.
    round_number = COLD_START_ROUNDS + k
    asked = k[(config.intent_from_round <= round_number) & (round_number < config.max_rounds)]
    if detector is not None and len(asked):
        shown = int(history.shown(opening + 2 * asked, window).sum())
        fixed = text_tokens(INTENT_DETECTOR.text) * len(asked)
        tally("intent_detector", detector).add(
            fixed + shown, detector.max_tokens * len(asked), times, len(asked)
        )
    if judge is not None and config.good_outcome:
        turns = history.turns
        judged = sum(turns[:opening]) + sum(turns[opening:][-JUDGED_TURNS:])
        tally("judge", judge).add(
            text_tokens(judge_prompt().text) + judged, judge.max_tokens, times
        )
