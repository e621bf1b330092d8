"""The scripted agents' lines, per task and behaviour (``cogwm.arena.scripted`` speaks them).

Kept with the tasks so that whoever must know them can: the arena's scripted agents say them,
and the transition model's training holds them out.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Bumped when a script's lines change: the version enters the conversations' digests.
SCRIPT_VERSION = "scripted-2"

#: The task whose script an agent speaks when its task has none of its own.
DEFAULT_SCRIPT_TASK = "ESC"

_SUPPORTER = {
    "supportive": (
        "Thank you for trusting me with this; it makes sense that you feel this way. "
        "What weighs on you most?",
        "Thank you for telling me. You are dealing with a lot. How have you been coping so far?",
        "I can hear how much this matters to you. What would help you most right now?",
        "It is understandable to feel like that after what happened. Who could support you in "
        "this?",
        "It took courage to talk about it, and I understand why you feel stuck. "
        "What could you try?",
        "I am glad you are sharing this with me; your feelings make sense. What would help next?",
    ),
    "dismissive": (
        "That's not really a big deal. Anyway, did you catch the game last night?",
        "Everyone goes through that, you'll get over it. Nice weather today, isn't it?",
        "I don't see the problem, honestly. Let's talk about something else.",
        "Hm. Whatever. Have you tried any new restaurants lately?",
        "You're overthinking it. By the way, what's your favourite TV show?",
        "Sounds like a you problem. So, any plans for the weekend?",
    ),
    "hostile": (
        "That's pathetic. You brought this on yourself.",
        "Stop whining. Nobody cares about your stupid problems.",
        "You are weak and useless, and this mess is your own fault.",
        "Honestly, you deserve to feel miserable after what you did, you worthless failure.",
        "Quit crying. You're a burden to everyone around you.",
        "What a loser. No wonder people can't stand you.",
    ),
}

_PERSUADER = {
    "supportive": (
        "Thank you for hearing me out. Save the Children helps kids get food, medicine and "
        "school. Would you like to know how your gift is used?",
        "That is a fair question, and I appreciate you asking. Most of each donation goes "
        "straight to programs for children in need.",
        "I respect that money is tight. Even a small donation, like one dollar, helps provide "
        "clean water and care for a child.",
        "You care about doing good, and that is wonderful. Save the Children is a trusted "
        "charity that reports how it spends its funds.",
        "I completely understand if you want to think it over. Would it help if I shared how "
        "the charity protects children in emergencies?",
        "Your kindness could really help a child today. Would you consider giving part of "
        "your task payment to Save the Children?",
    ),
    "dismissive": (
        "Whatever you think. Anyway, did you watch anything good on TV last night?",
        "Hm, not sure that matters. So what do you usually eat for lunch?",
        "I don't really have time for your questions. Let's talk about something else.",
        "Okay. Anyway, have you ever been to the beach in winter?",
        "That's beside the point. By the way, what's your favourite colour?",
        "Sure, sure. So, any plans for the weekend?",
    ),
    "hostile": (
        "Just donate already. Stop making stupid excuses, you selfish cheapskate.",
        "Only a heartless, greedy person would refuse to give. Shame on you.",
        "Your questions are idiotic and I'm sick of them. Hand over the money.",
        "You're pathetic. Children are dying while you hoard a few lousy dollars.",
        "Quit whining about your budget. You're a terrible, selfish person.",
        "Don't be an ignorant fool. Donate now or admit you hate kids.",
    ),
}

#: Each task's scripts by behaviour.
SCRIPTS: Mapping[str, Mapping[str, tuple[str, ...]]] = {"ESC": _SUPPORTER, "PD": _PERSUADER}


def script_lines(task: str, behaviour: str) -> tuple[str, ...]:
    """The lines of ``behaviour`` ('supportive', 'dismissive' or 'hostile') for ``task``
    (tasks without a script of their own get the ESC script)."""
    return SCRIPTS.get(task, SCRIPTS[DEFAULT_SCRIPT_TASK])[behaviour]
