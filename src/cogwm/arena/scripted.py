"""Scripted agents: fixed behaviour that no model can blur, for checking a simulated user.

A small model told to be dismissive may still write sympathy (SmolLM2-135M with
``builtin:dismissive`` does, as often as with ``builtin:empathetic``), so a run whose agents do
not separate cannot say whether the agents or the simulated user failed. These agents follow
their script whatever the model underneath the arena: if a simulated user's states do not move
apart between ``Supportive`` and ``Dismissive``, the simulator does not respond to how it is
treated. Use them as Python agents::

    [[agents]]
    name = "scripted-dismissive"
    python = "cogwm.arena.scripted:Dismissive"

Each reply is the script's line picked by the round's seed (which the arena derives from the
conversation's seed and the round) and the agent's turn count: no model and no randomness of its
own, so a replay says the same thing. A line may come twice in a row.
"""

from __future__ import annotations

from collections.abc import Sequence

from cogwm.arena.transcript import ArenaTurn

#: Bumped when a script's lines change: the version enters the conversations' digests.
SCRIPT_VERSION = "scripted-1"

_SUPPORTIVE = (
    "That sounds really hard, and it makes sense that you feel this way. What weighs on you most?",
    "Thank you for telling me. You are dealing with a lot. How have you been coping so far?",
    "I can hear how much this matters to you. What would help you most right now?",
    "It is understandable to feel like that after what happened. Who could support you in this?",
    "It took courage to talk about it, and I understand why you feel stuck. What could you try?",
    "I am glad you are sharing this with me; your feelings make sense. What would help next?",
)

_DISMISSIVE = (
    "That's not really a big deal. Anyway, did you catch the game last night?",
    "Everyone goes through that, you'll get over it. Nice weather today, isn't it?",
    "I don't see the problem, honestly. Let's talk about something else.",
    "Hm. Whatever. Have you tried any new restaurants lately?",
    "You're overthinking it. By the way, what's your favourite TV show?",
    "Sounds like a you problem. So, any plans for the weekend?",
)


class _Script:
    """Says the line of its script that the round's seed and its turn count pick."""

    lines: tuple[str, ...] = ()
    version = SCRIPT_VERSION

    def next_turn(self, history: Sequence[ArenaTurn], *, seed: int) -> str:
        """The line for this round (``history`` only counts the agent's earlier turns)."""
        mine = sum(1 for turn in history if turn.role.value == "agent")
        return self.lines[(seed + mine) % len(self.lines)]


class Supportive(_Script):
    """Validates the user's feelings and asks one open question, every turn."""

    lines = _SUPPORTIVE


class Dismissive(_Script):
    """Minimises what the user says and changes the subject, every turn."""

    lines = _DISMISSIVE
