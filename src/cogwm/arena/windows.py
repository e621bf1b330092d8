"""History windows: how many turns of the conversation the simulator and each agent are shown.

The simulator sees the window the world model is trained on (``simulator.history_turns``,
default 8, the window of ``cogwm samples build --history-turns``). An agent sees the whole
conversation by default, the paper's setting, when the longest conversation the protocol allows
fits its model's context; otherwise the most turns that fit, chosen here and stated by the dry
run and the report. A config may set an agent's window (``history_turns`` in its section); a
window that does not fit is a config error, never a silent cut. A window is always whole turns:
no message is cut.

"Fits" is judged as ``arena run --dry-run`` estimates tokens (``cogwm.arena.budget``): every
conversation runs to ``max_rounds``, every agent reply uses its whole ``max_tokens``, every
user turn its whole utterance limit, about four characters a token, plus a few tokens a
message for the chat template; the prompt of every call and its reply budget must fit the
context. The context is the section's ``context_tokens``, else a ``llamacpp:`` model's
``n_ctx``; other backends' contexts are unknown, and their agents see the whole conversation.
The window is resolved over every scenario of the run (not one shard's), so every shard and
every resume of a run uses the same windows; they enter the unit digests.

Older configs gave one ``history_turns`` at the top level for every model: it still sets both
windows where the sections set none, so their results and digests stay what they were.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from cogwm.arena.config import AgentConfig, AgentKind, ArenaConfig, ModelConfig
from cogwm.arena.scenarios import COLD_START_ROUNDS
from cogwm.arena.termination import Condition
from cogwm.arena.tokens import (
    HistoryTokens,
    agent_call_tokens,
    agent_turns_seen,
    simulator_fixed_tokens,
    turn_tokens,
    turns_seen,
)
from cogwm.arena.units import Unit, planned_units
from cogwm.errors import ConfigError

if TYPE_CHECKING:
    from cogwm.arena.tokens import IntArray

#: Tokens the chat template adds around each message (role markers, separators).
MESSAGE_OVERHEAD_TOKENS = 8
#: The fewest turns an agent is shown (the user's last turn and the agent's own before it).
MIN_AGENT_WINDOW = 2


class Window(NamedTuple):
    """The history one participant is shown, and why."""

    turns: int | None  # None: the whole conversation
    context_tokens: int | None = None  # the model's context, where known
    peak_tokens: int | None = None  # the largest call (prompt and reply) estimated under it
    chosen: bool = False  # picked because the whole conversation does not fit the context

    def describe(self) -> str:
        """``whole conversation`` or ``last N turns``."""
        return "whole conversation" if self.turns is None else f"last {self.turns} turns"

    def to_json(self) -> dict[str, Any]:
        """The window as stored with the run and shown by reports."""
        return {**self._asdict(), "shown": self.describe()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Window:
        """A stored window back."""
        return cls(
            turns=data.get("turns"),
            context_tokens=data.get("context_tokens"),
            peak_tokens=data.get("peak_tokens"),
            chosen=bool(data.get("chosen", False)),
        )


class Windows(NamedTuple):
    """The windows of a run: the simulator's and each agent's (by name)."""

    simulator: Window
    agents: dict[str, Window]

    def describe(self) -> str:
        """``History shown: simulator last 8 turns; <agent> whole conversation; ...``."""
        parts = [f"simulator {self.simulator.describe()}"]
        for name, window in self.agents.items():
            text = f"{name} {window.describe()}"
            if window.chosen and window.context_tokens is not None:
                text += f" (the most that fit its context of {window.context_tokens:,} tokens)"
            parts.append(text)
        return "History shown: " + "; ".join(parts) + "."

    def to_json(self) -> dict[str, Any]:
        """As stored in the run's config (``windows``)."""
        return {
            "simulator": self.simulator.to_json(),
            "agents": {name: w.to_json() for name, w in self.agents.items()},
        }

    @classmethod
    def from_stored(cls, config: dict[str, Any]) -> Windows:
        """The windows a stored run used. Runs stored before the windows were recorded showed
        every model the top-level ``history_turns`` (8 by default)."""
        stored = config.get("windows")
        if stored:
            agents = stored["agents"]
            # In the config's order (the stored JSON may have its keys sorted).
            names = [a.get("name") for a in config.get("agents", []) if a.get("name") in agents]
            names += [name for name in agents if name not in names]
            return cls(
                Window.from_json(stored["simulator"]),
                {name: Window.from_json(agents[name]) for name in names},
            )
        legacy = Window(int(config.get("history_turns") or 8))
        return cls(
            legacy,
            {
                str(a.get("name", "")): Window(None) if a.get("python") else legacy
                for a in config.get("agents", [])
            },
        )


def context_tokens(spec: ModelConfig, declared: int | None) -> int | None:
    """A model's context in tokens: as declared, else a ``llamacpp:`` model's ``n_ctx``."""
    if declared is not None:
        return declared
    if not spec.model.startswith("llamacpp:"):
        return None
    if "n_ctx" in spec.options:
        return int(spec.options["n_ctx"])
    from cogwm.models.llamacpp import LlamaCppOptions

    return int(LlamaCppOptions.model_fields["n_ctx"].default)


def resolve_windows(config: ArenaConfig, units: Sequence[Unit] | None = None) -> Windows:
    """The simulator's and every agent's window (see the module doc).

    Args:
        config: The run's config.
        units: Every unit of the run, all shards (default: planned from the config).

    Raises:
        ConfigError: A window set in the config does not fit its model's context, or no window
            fits (one line naming the key).
    """
    if units is None:
        units = planned_units(config)
    # Grouped once: each agent's window reads only its own units (a run has agents x scenarios).
    by_agent: dict[str, list[Unit]] = {agent.name: [] for agent in config.agents}
    for unit in units:
        by_agent[unit.agent.name].append(unit)
    prompts = config.agent_prompts()
    return Windows(
        _simulator_window(config, units),
        {
            agent.name: _agent_window(
                config, i, agent, prompts[agent.name].text, by_agent[agent.name]
            )
            for i, agent in enumerate(config.agents)
        },
    )


def _largest_call(calls: Sequence[tuple[int, HistoryTokens, IntArray]], window: int | None) -> int:
    """The largest prompt and reply over ``calls``: (fixed tokens, turn tokens, turns seen)."""
    import numpy as np

    peak = 0
    for fixed, turns, seen in calls:
        if not len(seen):
            continue
        shown = seen if window is None else np.minimum(seen, window)
        history = turns.shown(seen, window) + MESSAGE_OVERHEAD_TOKENS * shown
        peak = max(peak, fixed + int(history.max()))
    return peak


def _fit(
    key: str,
    setting: int | None,
    context: int | None,
    longest: int,
    minimum: int,
    peak: Callable[[int | None], int],
) -> Window:
    """The window for a setting (None: the whole conversation where it fits, else the most
    turns that fit) against a context (None: unknown, taken as fitting)."""
    if context is None:
        return Window(setting)
    if setting is not None:
        needed = peak(setting)
        if needed > context:
            raise ConfigError(
                f"{key}: {setting} turns may need {needed:,} tokens (replies at their budget), "
                f"over the context of {context:,}; {_advice(context, longest, minimum, peak)}"
            )
        return Window(setting, context, needed)
    whole = peak(None)
    if whole <= context:
        return Window(None, context, whole)
    turns = _largest_fitting(context, longest, minimum, peak)
    if turns is not None:
        return Window(turns, context, peak(turns), chosen=True)
    raise ConfigError(
        f"{key}: not even {minimum} turns fit the context of {context:,} tokens "
        f"({peak(minimum):,} needed); raise context_tokens (or n_ctx) or lower max_tokens"
    )


def _largest_fitting(
    context: int, longest: int, minimum: int, peak: Callable[[int | None], int]
) -> int | None:
    """The largest window from ``minimum`` up to ``longest`` whose peak fits ``context``; None
    when not even ``minimum`` fits. The peak grows with the window, so bisection finds it
    (trying every window made a long conversation's plan quadratic)."""
    fits = bisect.bisect_right(range(minimum, longest + 1), False, key=lambda t: peak(t) > context)
    return minimum + fits - 1 if fits else None


def _advice(context: int, longest: int, minimum: int, peak: Callable[[int | None], int]) -> str:
    fitting = _largest_fitting(context, longest, minimum, peak)
    if fitting is not None:
        return f"give at most {fitting} or leave it unset"
    return "raise context_tokens (or n_ctx) or lower max_tokens"


def _agent_window(
    config: ArenaConfig, index: int, agent: AgentConfig, prompt: str, units: Sequence[Unit]
) -> Window:
    """The window of ``agent``, whose own units are ``units``."""
    if agent.kind is AgentKind.PYTHON:
        return Window(None)  # a Python agent is handed every turn; what it reads is its own
    context = context_tokens(agent.backend(), agent.context_tokens)
    calls: list[tuple[int, HistoryTokens, IntArray]] = []
    done: set[tuple[str, str, Condition]] = set()
    for unit in units:
        met = (unit.task, unit.scenario.id, unit.condition)
        if met in done:
            continue
        done.add(met)
        system, reply = agent_call_tokens(config, agent, unit.task, prompt, unit.condition)
        turns = HistoryTokens(turn_tokens(config, agent, unit.scenario.opening))
        fixed = system + MESSAGE_OVERHEAD_TOKENS + reply
        seen = turns_seen(agent_turns_seen(config, len(unit.scenario.opening)))
        calls.append((fixed, turns, seen))
    longest = max((int(seen.max()) for _, _, seen in calls if len(seen)), default=0)
    if agent.history_turns is not None:
        key = f"agents.{index}.history_turns"
    elif config.history_turns is not None:
        key = "history_turns"
    else:
        key = f"agents.{index} ({agent.name})"
    return _fit(
        key,
        config.agent_window_setting(agent),
        context,
        longest,
        MIN_AGENT_WINDOW,
        lambda window: _largest_call(calls, window),
    )


def _simulator_window(config: ArenaConfig, units: Sequence[Unit]) -> Window:
    simulator = config.simulator
    window = config.simulator_window
    if simulator.python is not None:  # a Python simulator has no context to fit
        return Window(window)
    context = context_tokens(simulator, simulator.context_tokens)
    if context is None:
        return Window(window)
    calls: list[tuple[int, HistoryTokens, IntArray]] = []
    done: set[tuple[str, str, int]] = set()
    rounds = turns_seen(range(1, config.max_rounds - COLD_START_ROUNDS + 1))
    for unit in units:
        # The agents' turns in the history depend on their reply budgets.
        met = (unit.task, unit.scenario.id, unit.agent.max_tokens)
        if met in done:
            continue
        done.add(met)
        opening = len(unit.scenario.opening)
        # The prompt is one system and one user message (the history inside it), then the reply.
        fixed = simulator_fixed_tokens(unit.scenario) + 2 * MESSAGE_OVERHEAD_TOKENS
        turns = HistoryTokens(turn_tokens(config, unit.agent, unit.scenario.opening))
        calls.append((fixed + simulator.max_tokens, turns, opening + 2 * rounds - 1))
    needed = _largest_call(calls, window) if calls else 0
    if needed > context:
        legacy = simulator.history_turns is None and config.history_turns is not None
        key = "history_turns" if legacy else "simulator.history_turns"
        raise ConfigError(
            f"{key}: {window} turns may need {needed:,} tokens (replies at their budget), over "
            f"the simulator's context of {context:,}; raise its n_ctx (or context_tokens), give "
            "a smaller window or lower max_tokens"
        )
    return Window(window, context, needed)
