"""The transition model as the arena's simulated user (a Python simulator), state first.

Run it as the arena's simulator::

    [simulator]
    python = "cogwm.simulator.transition.simulator:TransitionSimulator"
    options = {path = "transition.json"}

or card it with ``cogwm validate --simulator transition:transition.json``. The state comes from
the model; the user says :data:`UTTERANCE` every turn and never leaves (the utterance is not
this model's part). No randomness: the seed is ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cogwm.errors import ConfigError, InputError
from cogwm.schema import CognitiveState, Role, TaskSpec
from cogwm.simulator.transition.features import TurnView, view_of_history
from cogwm.simulator.transition.model import file_digest, load_model

if TYPE_CHECKING:
    from cogwm.schema.transcript import ArenaTurn, TurnOutput, UserSetup

#: What the transition model's user says every turn.
UTTERANCE = "I see."


def turns_view(task: TaskSpec, turns: Sequence[ArenaTurn]) -> TurnView:
    """The view of an arena conversation: its turns and the latest user state in them."""
    from cogwm.schema.transcript import latest_state

    history = [("agent" if t.role is Role.AGENT else "user", t.text) for t in turns]
    return view_of_history(task.name, history, latest_state(turns))


class TransitionSimulator:
    """A simulated user whose state a fitted transition model sets.

    Args:
        path: The model file ``cogwm train transition`` wrote.

    Raises:
        ConfigError: The file cannot be read as a transition model.
    """

    def __init__(self, path: str):
        try:
            self.model = load_model(Path(path))
            digest = file_digest(Path(path))
        except (InputError, OSError) as exc:
            raise ConfigError(f"transition simulator: {exc}") from None
        self.identity = f"transition:{Path(path).name}@{digest}"

    def read_state(
        self, task: TaskSpec, setup: UserSetup, turns: Sequence[ArenaTurn]
    ) -> CognitiveState:
        """The opening state: the model's prediction with no state shown."""
        self._check_task(task)
        return self.model.predict(turns_view(task, turns))

    def respond(
        self, task: TaskSpec, setup: UserSetup, turns: Sequence[ArenaTurn], *, seed: int
    ) -> TurnOutput:
        """The next state after the agent's last turn, and :data:`UTTERANCE`."""
        from cogwm.schema.transcript import TurnOutput

        self._check_task(task)
        if not any(t.role is Role.AGENT for t in turns):
            raise ValueError("the transition simulator answers an agent turn; the history has none")
        return TurnOutput(text=UTTERANCE, state=self.model.predict(turns_view(task, turns)))

    def _check_task(self, task: TaskSpec) -> None:
        if task.name not in self.model.tasks:
            trained = ", ".join(self.model.tasks)
            raise ConfigError(f"transition simulator: trained on tasks {trained}, not {task.name}")
