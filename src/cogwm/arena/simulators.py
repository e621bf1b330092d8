"""The arena's simulated user of either kind: a model (``SimulatorParticipant``) or a Python
object, such as the rule simulator ``cogwm.simulator.rule:SentimentMeter``.

A Python simulator is configured like a Python agent::

    [simulator]
    python = "cogwm.simulator.rule:SentimentMeter"
    options = {k = 1.0}     # keyword arguments of the factory

The factory is called once per process and options with the options as keyword arguments; the
object it returns implements ``PythonSimulator``. Its ``identity`` enters the config hash and
the digests, so a changed rule is a changed config.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cogwm.arena.config import SimulatorConfig
from cogwm.arena.factories import PythonSimulator, python_simulator
from cogwm.arena.participants import SimulatorParticipant, StateReading
from cogwm.arena.transcript import ArenaTurn, TurnOutput, UserSetup
from cogwm.models.model import Model
from cogwm.schema import CognitiveState, TaskSpec


def python_identity(config: SimulatorConfig) -> str | None:
    """A Python simulator's ``identity`` (None for a model simulator)."""
    if config.python is None:
        return None
    return python_simulator(config.python, dict(config.options)).identity


class PythonUser:
    """A Python simulator in the arena: the opening's reading, and a participant per user."""

    def __init__(self, inner: PythonSimulator, task: TaskSpec, setup: UserSetup | None = None):
        self.inner = inner
        self.task = task
        self.setup = setup

    async def read_state(
        self, setup: UserSetup, turns: Sequence[ArenaTurn], *, seed: int
    ) -> StateReading:
        """The state after the cold-start turns (no model call: no call id)."""
        state = self.inner.read_state(self.task, setup, turns)
        if not isinstance(state, CognitiveState):
            raise TypeError(f"read_state returned {type(state).__name__}, not a CognitiveState")
        return StateReading(state, None)

    def for_user(self, setup: UserSetup) -> PythonUser:
        """This simulator bound to one user (a ``Participant``)."""
        return PythonUser(self.inner, self.task, setup)

    async def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> TurnOutput:
        """The bound user's next turn; it must carry a state."""
        if self.setup is None:
            raise ValueError("PythonUser.next_turn needs a user: use for_user(setup)")
        answer = self.inner.respond(self.task, self.setup, history, seed=seed)
        if not isinstance(answer, TurnOutput) or answer.state is None:
            raise TypeError("a python simulator's respond must return a TurnOutput with a state")
        return answer


def build_simulator(
    config: SimulatorConfig,
    task: TaskSpec,
    *,
    model: Callable[[], Model],
    history_turns: int | None,
) -> SimulatorParticipant | PythonUser:
    """The simulated user of ``config`` for ``task`` (``model`` gives a model simulator's
    model; a Python simulator is handed the whole conversation)."""
    if config.python is not None:
        return PythonUser(python_simulator(config.python, dict(config.options)), task)
    return SimulatorParticipant(model(), config, task, history_turns=history_turns)
