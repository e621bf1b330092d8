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
from cogwm.arena.judging import JUDGED_TURNS, judge_prompt
from cogwm.arena.participants import (
    CHARS_PER_TOKEN,
    COT_OVERHEAD_TOKENS,
    UTTERANCE_CHARS,
    AgentParticipant,
)
from cogwm.arena.prompts import (
    INTENT_DETECTOR,
    PROFILE_ANNOTATOR,
    SIMULATOR_OPENING,
    SIMULATOR_SYSTEM,
    SIMULATOR_TURN,
    Prompt,
)
from cogwm.arena.scenarios import COLD_START_ROUNDS, OpeningTurn, Scenario
from cogwm.arena.termination import Condition
from cogwm.arena.units import Unit
from cogwm.errors import InputError
from cogwm.models.types import CallRecord

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from cogwm.arena.windows import Windows

    IntArray = npt.NDArray[np.int64]


class Budget:
    """Caps on what one invocation of a run may spend; ``None`` means no cap.

    Raises:
        InputError: A cap that is not positive.
    """

    def __init__(self, *, max_cost_usd: float | None = None, max_tokens_total: int | None = None):
        if max_cost_usd is not None and not max_cost_usd > 0:
            raise InputError(f"--max-cost-usd must be positive, got {max_cost_usd:g}")
        if max_tokens_total is not None and max_tokens_total < 1:
            raise InputError(f"--max-tokens-total must be positive, got {max_tokens_total}")
        self.max_cost_usd = max_cost_usd
        self.max_tokens_total = max_tokens_total
        self.tokens = 0
        self.cost_usd = 0.0
        #: Why the run was stopped (which cap, what was spent); None while within the caps.
        self.reached: str | None = None
        self._stops: list[Callable[[], None]] = []

    @property
    def capped(self) -> bool:
        """Whether any cap is set."""
        return self.max_cost_usd is not None or self.max_tokens_total is not None

    def charge(self, record: CallRecord) -> None:
        """Count one model call; the first call that reaches a cap stops the run."""
        if record.cached:  # a reply from the cache costs nothing
            return
        self.tokens += record.prompt_tokens + record.completion_tokens
        self.cost_usd += record.cost_usd
        if self.reached is None:
            self.reached = self._over()
            if self.reached is not None:
                for stop in self._stops:
                    stop()

    def on_reached(self, stop: Callable[[], None]) -> None:
        """Call ``stop`` when a cap is reached (at once if one already is)."""
        self._stops.append(stop)
        if self.reached is not None:
            stop()

    def _over(self) -> str | None:
        if self.max_tokens_total is not None and self.tokens >= self.max_tokens_total:
            return f"{self.tokens:,} tokens spent, --max-tokens-total {self.max_tokens_total:,}"
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return f"${self.cost_usd:.4f} spent, --max-cost-usd {self.max_cost_usd:g}"
        return None


# ------------------------------------------------------------------------------ the estimate


class RoleEstimate(NamedTuple):
    """At most how many calls and tokens one role (an agent, the simulator...) makes."""

    role: str
    model: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None: no prices in this model's options


class Estimate(NamedTuple):
    """The planned units of a run and an upper bound of its calls, tokens and cost."""

    units: int
    preparations: int
    roles: list[RoleEstimate]

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

    def result(self) -> RoleEstimate:
        options = self.spec.options
        prices = (options.get("cost_per_1k_prompt"), options.get("cost_per_1k_completion"))
        cost = None
        if any(p is not None for p in prices):
            cost = self.prompt * float(prices[0] or 0) + self.completion * float(prices[1] or 0)
            cost /= 1000
        return RoleEstimate(
            self.role, self.spec.model, self.calls, self.prompt, self.completion, cost
        )


def _tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate(
    config: ArenaConfig, units: Sequence[Unit], windows: Windows | None = None
) -> Estimate:
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
    return Estimate(len(units), len(preparations), [t.result() for t in tallies.values()])


def _arm(unit: Unit) -> tuple[str, str, str, Condition]:
    """A unit without its trial."""
    return unit.task, unit.scenario.id, unit.agent.name, unit.condition


_Tallier = Callable[[str, ModelConfig], _Tally]


def _prepare(config: ArenaConfig, scenario: Scenario, tally: _Tallier) -> None:
    """The scenario's preparation: the opening's state, and the profile when annotated."""
    opening = sum(_tokens(t.text) for t in scenario.opening)
    fixed = _tokens(SIMULATOR_SYSTEM.text + SIMULATOR_OPENING.text + scenario.context)
    if config.simulator.python is None:  # a Python simulator's turns are no model calls
        tally("simulator", config.simulator).add(fixed + opening, config.simulator.max_tokens)
    annotator = config.annotator_model
    if config.annotate_profiles and scenario.profile is None and annotator is not None:
        tally("profile_annotator", annotator).add(
            _tokens(PROFILE_ANNOTATOR.text) + opening, annotator.max_tokens
        )


def user_turn_tokens(config: ArenaConfig) -> int:
    """At most how many tokens a simulated user turn adds to the history: its utterance, held
    to ``UTTERANCE_CHARS`` by the output schema (the state stays out of the history)."""
    return min(config.simulator.max_tokens, _tokens("x" * UTTERANCE_CHARS))


def turn_tokens(
    config: ArenaConfig, agent: AgentConfig, opening: Sequence[OpeningTurn]
) -> list[int]:
    """Tokens of every turn of the longest conversation: the opening, then replies that use
    their whole budget (an agent's reply, never its reasoning, enters the history)."""
    rounds = config.max_rounds - COLD_START_ROUNDS
    replies = [agent.max_tokens, user_turn_tokens(config)]
    return [_tokens(t.text) for t in opening] + replies * rounds


class HistoryTokens:
    """Tokens of every turn of the longest conversation (``turn_tokens``) with their running
    totals, so that the tokens of any stretch of history cost one subtraction: a conversation
    of n rounds makes about n calls, and summing each call's history afresh made the plan
    quadratic in ``max_rounds``. The calls of one conversation are asked at once (arrays)."""

    def __init__(self, turns: Sequence[int]) -> None:
        import numpy as np

        self.turns = list(turns)
        self._totals = np.concatenate(([0], np.cumsum(np.asarray(self.turns, dtype=np.int64))))

    def shown(self, seen: IntArray, limit: int | None) -> IntArray:
        """Tokens of the history each call shows: the last ``limit`` of its first ``seen``
        turns (``None``: all of them)."""
        import numpy as np

        seen = np.minimum(seen, len(self.turns))
        start = np.zeros_like(seen) if limit is None else np.maximum(0, seen - limit)
        shown: IntArray = self._totals[seen] - self._totals[start]
        return shown


def turns_seen(seen: range) -> IntArray:
    """``seen`` as an array of turn counts."""
    import numpy as np

    return np.arange(seen.start, seen.stop, seen.step, dtype=np.int64)


def agent_call_tokens(
    config: ArenaConfig, agent: AgentConfig, task: str, own_prompt: str, condition: Condition
) -> tuple[int, int]:
    """``(system prompt, reply budget)`` tokens of one call of a model or endpoint agent."""
    own = Prompt(id="own", version=1, text=own_prompt)
    system = _tokens(AgentParticipant.system_text(config.catalog.get(task), own, condition))
    reply = agent.max_tokens
    if condition is Condition.COT:
        reply += agent.reasoning_max_tokens + COT_OVERHEAD_TOKENS
    return system, reply


def agent_turns_seen(config: ArenaConfig, opening: int) -> range:
    """How many turns the agent's calls of the longest conversation have seen, call by call."""
    return range(opening, opening + 2 * (config.max_rounds - COLD_START_ROUNDS), 2)


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


def simulator_fixed_tokens(scenario: Scenario) -> int:
    """Tokens of a simulated user turn's prompt besides the history."""
    return _tokens(SIMULATOR_SYSTEM.text + SIMULATOR_TURN.text + scenario.context)


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
        fixed = _tokens(INTENT_DETECTOR.text) * len(asked)
        tally("intent_detector", detector).add(
            fixed + shown, detector.max_tokens * len(asked), times, len(asked)
        )
    if judge is not None and config.good_outcome:
        turns = history.turns
        judged = sum(turns[:opening]) + sum(turns[opening:][-JUDGED_TURNS:])
        tally("judge", judge).add(_tokens(judge_prompt().text) + judged, judge.max_tokens, times)
