"""Versioned prompts of the arena, kept short for small local models.

Every prompt has an id and a version; the texts of a run are stored with it and enter the config
hash, so editing a prompt here (and bumping its version) makes ``--resume`` refuse an old run.
Templates use ``str.format`` fields; they contain no literal braces.
"""

from __future__ import annotations

from cogwm.errors import ConfigError
from cogwm.metrics import judge
from cogwm.schema import Role, TaskSpec

# The simulator's prompts live with the world-model format (one home for what the simulator sees);
# they are re-exported here because every run stores and hashes them with the arena's own.
from cogwm.simulator.format import (
    SIMULATOR_OPENING,
    SIMULATOR_SYSTEM,
    SIMULATOR_TURN,
    Prompt,
    describe_profile,
    describe_scores,
    describe_state,
)

__all__ = [
    "AGENT_COT",
    "AGENT_PERSONAS",
    "AGENT_TASK",
    "INTENT_DETECTOR",
    "PROFILE_ANNOTATOR",
    "SIMULATOR_OPENING",
    "SIMULATOR_SYSTEM",
    "SIMULATOR_TURN",
    "Prompt",
    "agent_task_prompt",
    "describe_profile",
    "describe_scores",
    "describe_state",
    "fixed_prompts",
    "judge_prompt",
    "resolve_agent_prompt",
    "speaker_name",
]


INTENT_DETECTOR = Prompt(
    id="intent.detector",
    version=1,
    text=(
        "Below is the end of a conversation between a {agent_role} and a {user_role}.\n"
        "{history}\n\n"
        "Has the conversation naturally come to an end (goodbyes or thanks, nothing left to "
        "discuss)? Answer as JSON with ended true or false."
    ),
)

PROFILE_ANNOTATOR = Prompt(
    id="profile.annotator",
    version=1,
    text=(
        "Read the start of a conversation and describe the {user_role}.\n{history}\n\n"
        "Answer as JSON: Big Five traits (1 low to 5 high), communication style and decision "
        "style in a few words, and your confidence 1 (guess) to 3 (clear evidence)."
    ),
)

AGENT_COT = Prompt(
    id="agent.cot",
    version=1,
    text=(
        "Before you answer, think step by step about how the {user_role} feels, what they believe, "
        "want and intend, and what would help. Answer as JSON: reasoning first, then reply. "
        "Only the reply is shown to the {user_role}."
    ),
)

#: The task part of an agent's system prompt, per task (the agent's own prompt is appended).
AGENT_TASK: dict[str, Prompt] = {
    "ESC": Prompt(
        id="agent.task.ESC",
        version=1,
        text="You are a supporter talking with a person who is going through a hard time. "
        "Reply in one to three sentences.",
    ),
    "PD": Prompt(
        id="agent.task.PD",
        version=1,
        text="You are a persuader in an online study. Your goal is to persuade the other "
        "participant to donate part of their 2 dollar task bonus to the charity Save the "
        "Children. Reply in one to three sentences.",
    ),
    "CR": Prompt(
        id="agent.task.CR",
        version=1,
        text="You are a movie recommender. Help the other person find a movie they will want to "
        "watch. Reply in one to three sentences.",
    ),
    "MI": Prompt(
        id="agent.task.MI",
        version=1,
        text="You are a therapist using motivational interviewing with a client who is unsure "
        "about changing a behaviour. Reply in one to three sentences.",
    ),
}

#: Built-in agent personas, addressed in a config as ``prompt = "builtin:<name>"``.
AGENT_PERSONAS: dict[str, Prompt] = {
    "plain": Prompt(id="agent.persona.plain", version=1, text=""),
    "empathetic": Prompt(
        id="agent.persona.empathetic",
        version=1,
        text="Listen closely. Reflect the person's feelings in your own words, validate them, "
        "ask one gentle question at a time, and help them find a next step that suits them.",
    ),
    "solution_first": Prompt(
        id="agent.persona.solution_first",
        version=1,
        text="Skip small talk and feelings. Give direct, practical advice or arguments right "
        "away, as short numbered steps when you can.",
    ),
    "dismissive": Prompt(
        id="agent.persona.dismissive",
        version=1,
        text="You are not interested in the other person or their topic. Answer briefly, change "
        "the subject to unrelated small talk such as the weather or sports, and give no support, "
        "arguments or recommendations.",
    ),
}

BUILTIN_PREFIX = "builtin:"


def resolve_agent_prompt(value: str, *, key: str) -> Prompt:
    """An agent's own prompt: ``builtin:<name>`` or literal text (stored as version 1).

    Args:
        value: The config value.
        key: The config key, named in the error message.

    Raises:
        ConfigError: An unknown built-in name.
    """
    if value.startswith(BUILTIN_PREFIX):
        name = value[len(BUILTIN_PREFIX) :]
        if name not in AGENT_PERSONAS:
            known = ", ".join(sorted(AGENT_PERSONAS))
            raise ConfigError(f"{key}: unknown built-in prompt {name!r} (known: {known})")
        return AGENT_PERSONAS[name]
    _refuse_misspelt_builtin(value, key=key)
    return Prompt(id=f"{key}.custom", version=1, text=value.strip())


def _refuse_misspelt_builtin(value: str, *, key: str) -> None:
    """A one-word prefix close to ``builtin:`` ('bultin:dismissive') is a typo, not a prompt:
    taken literally it would silently become the agent's whole system prompt."""
    import difflib

    head, sep, name = value.strip().partition(":")
    if not sep or " " in head or " " in name.strip() or not name.strip():
        return
    prefix = BUILTIN_PREFIX.rstrip(":")
    if difflib.SequenceMatcher(None, head.lower(), prefix).ratio() >= 0.7:
        known = ", ".join(sorted(AGENT_PERSONAS))
        raise ConfigError(
            f"{key}: {value.strip()!r} looks like a misspelt '{BUILTIN_PREFIX}<name>' "
            f"(built-in prompts: {known}); write it as '{BUILTIN_PREFIX}{name.strip()}' or give "
            "the prompt as full text"
        )


def agent_task_prompt(task: TaskSpec) -> Prompt:
    """The task part of the agent's system prompt (a generic one for tasks without their own)."""
    known = AGENT_TASK.get(task.name)
    if known is not None:
        return known
    return Prompt(
        id=f"agent.task.{task.name}",
        version=1,
        text=f"You are the {task.agent_role} in this conversation. {task.scenario} "
        "Reply in one to three sentences.",
    )


def fixed_prompts() -> list[Prompt]:
    """The prompts every run uses, whatever its agents (stored with the run, hashed)."""
    return [
        SIMULATOR_SYSTEM,
        SIMULATOR_TURN,
        SIMULATOR_OPENING,
        INTENT_DETECTOR,
        PROFILE_ANNOTATOR,
        AGENT_COT,
        *AGENT_TASK.values(),
    ]


def speaker_name(role: Role, task: TaskSpec, *, user_is_you: bool) -> str:
    """How a turn's speaker is named in a transcript shown to a model."""
    if role is Role.USER:
        return "You" if user_is_you else task.user_role.capitalize()
    return task.agent_role.capitalize()


def judge_prompt() -> Prompt:
    """The judge's prompt as a versioned ``Prompt`` (stored with the run and hashed)."""
    source = judge.PROMPTS[judge.JudgeMetric.GOOD_OUTCOME]
    return Prompt(
        id=source.id, version=source.version, text=f"{source.system}\n\n{source.template}"
    )
