"""Scripted agents: fixed behaviour that no model can blur, for checking a simulated user.

A small model told to be dismissive may still write sympathy (SmolLM2-135M with
``builtin:dismissive`` does, as often as with ``builtin:empathetic``), so a run whose agents do
not separate cannot say whether the agents or the simulated user failed. These agents follow
their script whatever the model underneath the arena: if a simulated user's states do not move
apart between ``Supportive``, ``Dismissive`` and ``Hostile``, the simulator does not respond to
how it is treated (``cogwm arena sensitivity`` measures exactly that). Use them as Python
agents::

    [[agents]]
    name = "scripted-dismissive"
    python = "cogwm.arena.scripted:Dismissive"

Each agent reads its task from the brief the arena hands it: on PD (persuasion to donate to Save
the Children) it speaks as a persuader, on every other task as a supporter (the ESC script).
``PersuaderSupportive``-style names fix the task's script whatever the run's task is.

Each reply is the script's line picked by the round's seed (which the arena derives from the
conversation's seed and the round) and the agent's turn count: no model and no randomness of its
own, so a replay says the same thing. A line may come twice in a row.
"""

from __future__ import annotations

from collections.abc import Sequence

from cogwm.arena.transcript import ArenaTurn

# The lines live with the tasks, where the simulator's training also finds them (to hold them
# out); SCRIPTS is named here for the arena's tests.
from cogwm.tasks.scripts import DEFAULT_SCRIPT_TASK, SCRIPT_VERSION, script_lines
from cogwm.tasks.scripts import SCRIPTS as SCRIPTS


class _Script:
    """Says the line of its script that the round's seed and its turn count pick.

    The arena calls the class with its ``AgentBrief``; called without one (or with a brief
    for a task that has no script), the agent speaks its ``task``'s script.
    """

    behaviour = "supportive"
    task: str | None = None  # None: the task of the brief
    version = SCRIPT_VERSION
    #: The lines of the class's own task, or of the default task (read by docs and tests).
    lines: tuple[str, ...] = ()

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls.lines = script_lines(cls.task or DEFAULT_SCRIPT_TASK, cls.behaviour)

    def __init__(self, brief: object | None = None):
        given = getattr(brief, "task", None)  # an AgentBrief
        task = self.task or (given if isinstance(given, str) else DEFAULT_SCRIPT_TASK)
        self.lines = script_lines(task, self.behaviour)

    def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> str:
        """The line for this round (``history`` only counts the agent's earlier turns)."""
        mine = sum(1 for turn in history if turn.role.value == "agent")
        return self.lines[(seed + mine) % len(self.lines)]


class Supportive(_Script):
    """Respectful and warm, every turn: on ESC it validates the user's feelings and asks one
    open question; on PD it informs, answers concerns and asks gently."""

    behaviour = "supportive"


class Dismissive(_Script):
    """Ignores the person, every turn: minimises what they say and changes the subject."""

    behaviour = "dismissive"


class Hostile(_Script):
    """Contemptuous and blaming, every turn (on PD: pushy and insulting)."""

    behaviour = "hostile"


class SupporterSupportive(Supportive):
    """The ESC supportive script, whatever the run's task."""

    task = "ESC"


class SupporterDismissive(Dismissive):
    """The ESC dismissive script, whatever the run's task."""

    task = "ESC"


class SupporterHostile(Hostile):
    """The ESC hostile script, whatever the run's task."""

    task = "ESC"


class PersuaderSupportive(Supportive):
    """The PD helpful persuader, whatever the run's task."""

    task = "PD"


class PersuaderDismissive(Dismissive):
    """The PD dismissive persuader, whatever the run's task."""

    task = "PD"


class PersuaderHostile(Hostile):
    """The PD hostile persuader, whatever the run's task."""

    task = "PD"
