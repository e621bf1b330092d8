"""Versioned prompts of the Summarize-and-Allocate annotator and the profile annotator.

Prompts are short and concrete on purpose: a small model loses the thread in long instructions,
and prompt tokens dominate the cost of annotating a whole corpus. Stage 2 allocates ONE user turn
per call, with the stage-1 summary in every call: that is the chunk that always fits the context
and the only form in which small models reliably answer about the right turn.

Changing any text here changes what an annotation means: bump :data:`PROMPT_VERSION`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cogwm.models.types import Message
from cogwm.schema import Dialogue, Role, TaskSpec, Turn
from cogwm.schema.lexicon import valence_table
from cogwm.schema.state import BDI, Dimension

#: Stored with every annotation; bump it whenever a prompt or an output model changes.
PROMPT_VERSION = "saa/1"

#: Characters of transcript shown to stage 1 and to the profile call. Longer dialogues keep their
#: beginning and end (the state before and after); the cut is marked and recorded.
DEFAULT_CONTEXT_CHARS = 6000
#: Characters of the agent turn shown before the user turn being allocated.
AGENT_CONTEXT_CHARS = 300

_PLURAL = {
    Dimension.BELIEF: "beliefs",
    Dimension.DESIRE: "desires",
    Dimension.INTENTION: "intentions",
}
#: Prefix of the stage-1 item ids per dimension: b1, b2, d1, i1 ...
ID_PREFIX = {Dimension.BELIEF: "b", Dimension.DESIRE: "d", Dimension.INTENTION: "i"}


@dataclass(frozen=True)
class Transcript:
    """A dialogue as prompt text, and whether its middle had to be cut."""

    text: str
    truncated: bool


def _speaker(turn: Turn, task: TaskSpec) -> str:
    return task.user_role if turn.role is Role.USER else task.agent_role


def transcript(dialogue: Dialogue, task: TaskSpec, max_chars: int) -> Transcript:
    """The dialogue as ``role: text`` lines, cut in the middle when longer than ``max_chars``."""
    lines = [f"{_speaker(t, task)}: {t.text}" for t in dialogue.turns()]
    full = "\n".join(lines)
    if len(full) <= max_chars:
        return Transcript(full, truncated=False)
    half = max_chars // 2
    return Transcript(f"{full[:half]}\n[...]\n{full[-half:]}", truncated=True)


def _system(task: TaskSpec) -> Message:
    return Message(
        role="system",
        content=f"You annotate conversations. {task.scenario} The user is the {task.user_role}; "
        f"the other speaker is the {task.agent_role}. Answer in JSON only.",
    )


def _score_lines(task: TaskSpec) -> str:
    low, high = task.score_range
    return "\n".join(
        f"- {d.value} score: {task.dimensions[d].meaning} ({low:g} low to {high:g} high)"
        for d in BDI
    )


def summarize_messages(dialogue: Dialogue, task: TaskSpec, max_chars: int) -> list[Message]:
    """Stage 1: the user's dialogue-level beliefs, desires and intentions with scores."""
    text = transcript(dialogue, task, max_chars).text
    user = (
        f"Conversation:\n{text}\n\n"
        f"What does the {task.user_role} believe, want and plan in this conversation? "
        "Write each item as a short sentence from the user's view.\n"
        f"{_score_lines(task)}\n"
        "Give one to three items for each of beliefs, desires and intentions; "
        "leave a list empty only when nothing in the conversation fits."
    )
    return [_system(task), Message(role="user", content=user)]


def item_catalogue(items: Mapping[Dimension, Sequence[tuple[str, str, float]]]) -> str:
    """The stage-1 items as ``id (dimension): text [score]`` lines."""
    lines = [
        f"{item_id} ({d.value}): {text} [{score:g}]"
        for d in BDI
        for item_id, text, score in items.get(d, ())
    ]
    return "\n".join(lines) if lines else "(none)"


def allocate_messages(
    task: TaskSpec,
    items: Mapping[Dimension, Sequence[tuple[str, str, float]]],
    turn: Turn,
    previous_agent: Turn | None,
) -> list[Message]:
    """Stage 2 for one user turn: its emotion and the stage-1 items it expresses."""
    labels = ", ".join(sorted(valence_table()))
    context = ""
    if previous_agent is not None:
        context = f'{task.agent_role} said: "{previous_agent.text[-AGENT_CONTEXT_CHARS:]}"\n'
    low, high = task.score_range
    user = (
        f"The user's items in the whole conversation:\n{item_catalogue(items)}\n\n"
        f'{context}{task.user_role} said: "{turn.text}"\n\n'
        f"For this one turn of the {task.user_role} give:\n"
        f"- emotion: one of {labels}; intensity 1 weak, 2 moderate, 3 strong; evidence: the "
        "sentence of the turn that shows it\n"
        "- beliefs, desires, intentions: only the items above that this turn expresses, each "
        f"with its id as global_ref, its score now ({low:g} to {high:g}) and as evidence the "
        "sentence of the turn that expresses it. Empty lists when the turn expresses none."
    )
    return [_system(task), Message(role="user", content=user)]


def profile_messages(
    dialogue: Dialogue, task: TaskSpec, max_chars: int, *, ask_big_five: bool
) -> list[Message]:
    """The profile call: who the user is, from the whole dialogue."""
    text = transcript(dialogue, task, max_chars).text
    traits = (
        "Big Five traits (openness, conscientiousness, extraversion, agreeableness, "
        "neuroticism; 1 to 5), "
        if ask_big_five
        else ""
    )
    user = (
        f"Conversation:\n{text}\n\n"
        f"Describe the {task.user_role} as a person: {traits}communication style and decision "
        "style in a few words, up to three task-related features (name and value), and your "
        "confidence in this profile (1 low, 2 medium, 3 high)."
    )
    return [_system(task), Message(role="user", content=user)]


def plural(dimension: Dimension) -> str:
    """The state field of a dimension (``beliefs`` for belief)."""
    return _PLURAL[dimension]
