"""Carding a simulator that is not a model: a Python simulator (the arena's protocol) that sets
the user's state, read on the card's items in prediction mode.

``cogwm validate --simulator ADDRESS`` takes ``python:package.module:factory`` (e.g.
``python:cogwm.simulator.rule:SentimentMeter``), ``transition:FILE`` (a fitted transition
model) or ``two-part:FILE[@MODEL]`` (that transition model's states, a world model's
utterances; the world model ``llamacpp:smollm2-wm`` unless named). Each item's input becomes an
arena conversation: its shown turns, with the previous state shown on the user's last turn
before the agent's (where none is shown, the simulator's own opening reading of those turns
stands in, as in the arena, and where the shown state has no emotion, the opening reading's
emotion); the simulator's ``respond`` then gives the state the card scores, exactly as it would
in the arena. An item with no agent turn shown yet (the user speaks first) is answered by the
simulator's opening reading.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cogwm import tasks
from cogwm.errors import CogwmError, InputError
from cogwm.schema import Profile, Role, TaskSpec
from cogwm.simulator.format import Mode, WorldModelInput
from cogwm.validate.inputs import Reading, world_model_input
from cogwm.validate.items import Item

if TYPE_CHECKING:
    from cogwm.arena.factories import PythonSimulator
    from cogwm.schema.transcript import ArenaTurn

#: The transition model's Python simulator (``transition:FILE`` addresses).
TRANSITION_FACTORY = "cogwm.simulator.transition.simulator:TransitionSimulator"
#: The two-part simulator (``two-part:FILE[@MODEL]`` addresses).
TWO_PART_FACTORY = "cogwm.simulator.transition.two_part:TwoPartSimulator"
#: What stands for the user's turn when a shown history has none before the agent's.
EMPTY_USER_TURN = "..."


def load_simulator(address: str) -> PythonSimulator:
    """The Python simulator of ``address`` (``python:module:factory``, ``transition:FILE`` or
    ``two-part:FILE[@MODEL]``).

    Raises:
        InputError: Another kind of address.
        ConfigError: The factory cannot be imported or built, or the file cannot be read.
    """
    from cogwm.arena.factories import python_simulator

    kind, _, rest = address.partition(":")
    if kind == "python" and ":" in rest:
        return python_simulator(rest, {})
    if kind == "transition" and rest:
        return python_simulator(TRANSITION_FACTORY, {"path": rest})
    if kind == "two-part" and rest:
        return python_simulator(TWO_PART_FACTORY, two_part_options(rest))
    raise InputError(
        f"--simulator {address!r}: expected python:package.module:factory, transition:FILE "
        "or two-part:FILE[@MODEL]"
    )


def two_part_options(rest: str) -> dict[str, str]:
    """The two-part simulator's options from ``FILE[@MODEL]`` (a model address has a kind
    before a colon, so an ``@`` inside a file name is left alone)."""
    path, at, model = rest.rpartition("@")
    if at and path and ":" in model:
        return {"path": path, "model": model}
    return {"path": rest}


def is_python_simulator(simulator: object) -> bool:
    """Whether ``simulator`` is a Python simulator rather than a model."""
    return callable(getattr(simulator, "respond", None))


def arena_turns(
    simulator: PythonSimulator, task: TaskSpec, inp: WorldModelInput
) -> list[ArenaTurn]:
    """The item's input as an arena conversation ending with the agent's turn, the previous
    state (or the simulator's opening reading) on the user's turn before it.

    Raises:
        ValueError: The shown history does not end with an agent turn.
    """
    from cogwm.schema.termination import Phase
    from cogwm.schema.transcript import ArenaTurn, UserSetup

    if not inp.history or inp.history[-1][0] != "agent":
        raise ValueError("the item's history does not end with an agent turn")
    shown = list(inp.history[:-1])
    if not any(role == "user" for role, _ in shown):
        shown.insert(0, ("user", EMPTY_USER_TURN))
    turns: list[ArenaTurn] = []
    round_ = 0
    for index, (role, text) in enumerate([*shown, inp.history[-1]]):
        round_ += role == "agent"
        phase = Phase.SIMULATED if index == len(shown) else Phase.COLD_START
        turns.append(ArenaTurn(index=index, round=round_, role=Role(role), phase=phase, text=text))
    setup = UserSetup(context=inp.context, profile=inp.profile or Profile.neutral())
    state = inp.previous_state
    if state is None or state.emotion is None:
        # The arena always shows a Python simulator a state with an emotion (its own opening
        # reading at first); where the corpus labels none, the opening reading supplies it.
        opening = simulator.read_state(task, setup, turns[:-1])
        state = opening if state is None else state.model_copy(update={"emotion": opening.emotion})
    last_user = max(i for i, t in enumerate(turns) if t.role is Role.USER)
    turns[last_user] = turns[last_user].model_copy(update={"state": state})
    return turns


def read_one(simulator: PythonSimulator, item: Item, ablation: str, seed: int) -> Reading:
    """The simulator's next state for one item (a failed reading when it refuses the input)."""
    return read_input(simulator, world_model_input(item, "predict", ablation), seed)


def read_input(simulator: PythonSimulator, inp: WorldModelInput, seed: int) -> Reading:
    """The simulator's next state for one prediction-mode input (a failed reading when it
    refuses the input)."""
    from cogwm.schema.transcript import UserSetup

    task = tasks.get(inp.task)
    setup = UserSetup(context=inp.context, profile=inp.profile or Profile.neutral())
    try:
        if not any(role == "agent" for role, _ in inp.history):
            # No agent turn to answer yet: the user's state is the simulator's opening reading
            # of what they said so far (it says nothing new, so no utterance is scored).
            return Reading(simulator.read_state(task, setup, opening_turns(inp)), None, None)
        output = simulator.respond(task, setup, arena_turns(simulator, task, inp), seed=seed)
    except (ValueError, CogwmError) as exc:
        return Reading(None, None, f"simulator failed: {exc}")
    return Reading(output.state, output.text, None if output.state else "no state")


def opening_turns(inp: WorldModelInput) -> list[ArenaTurn]:
    """The user's shown turns (no agent turn among them) as cold-start arena turns."""
    from cogwm.schema.termination import Phase
    from cogwm.schema.transcript import ArenaTurn

    return [
        ArenaTurn(index=i, round=0, role=Role.USER, phase=Phase.COLD_START, text=text)
        for i, (_, text) in enumerate(inp.history)
    ]


def read_python_items(
    simulator: PythonSimulator,
    items: Sequence[Item],
    mode: Mode,
    *,
    seed: int,
    ablation: str = "none",
    on_done: Callable[[Reading], None] | None = None,
) -> list[Reading]:
    """Every item's reading, in item order (prediction mode only).

    Raises:
        InputError: Understanding mode (a Python simulator predicts the next state; it is not
            shown the real turn), or every item failed (the first error is named).
    """
    if mode != "predict":
        raise InputError("a Python simulator is carded in prediction mode only (--mode predict)")
    readings = []
    for item in items:
        reading = read_one(simulator, item, ablation, seed)
        if on_done is not None:
            on_done(reading)
        readings.append(reading)
    failed = [r.error for r in readings if r.state is None]
    if items and len(failed) == len(items):
        raise InputError(f"every simulator reading failed; the first: {failed[0]}")
    return readings
