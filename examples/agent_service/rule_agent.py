"""A rule-based support agent: reflects the user's feeling and asks one open question.

Used two ways in ``arena.toml``: behind the HTTP service in ``app.py`` (an endpoint agent) and
as a Python agent (``python = "rule_agent:RuleAgent"``, with this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

VERSION = "rules-1"

#: (words that show a feeling, what the agent reflects back), first match wins.
_FEELINGS = (
    (("sad", "down", "lonely", "cry", "miss", "lost"), "That sounds really painful"),
    (("stress", "anxious", "worried", "overwhelm", "nervous", "panic"), "That sounds stressful"),
    (("angry", "unfair", "annoyed", "frustrat", "mad"), "I can hear how frustrating that is"),
    (("tired", "exhaust", "sleep", "burn"), "You sound worn out"),
    (("happy", "glad", "better", "thank", "great"), "I'm glad to hear that"),
)
_QUESTIONS = (
    "What feels hardest about it right now?",
    "What would help you most at this point?",
    "How have you been coping with it so far?",
    "Is there someone you can lean on while this goes on?",
)


def rule_reply(user_text: str, turn: int) -> str:
    """The agent's reply to the user's last words, at the agent's ``turn``-th reply."""
    words = user_text.lower()
    reflection = next(
        (said for cues, said in _FEELINGS if any(cue in words for cue in cues)),
        "Thank you for telling me",
    )
    if "?" in user_text:
        reflection = "That's a fair question, and I want to get it right for you"
    return f"{reflection}. {_QUESTIONS[turn % len(_QUESTIONS)]}"


class RuleAgent:
    """The rule-based agent as a Python agent (the arena's participant protocol)."""

    version = VERSION

    def __init__(self, brief: Any = None) -> None:
        self.brief = brief  # the task's system prompt and budget; the rules need neither

    def next_turn(self, history: Sequence[Any], *, seed: int) -> str:
        """Reply to the last user turn (``history`` holds arena turns, oldest first)."""
        users = [t.text for t in history if t.role.value == "user"]
        mine = sum(1 for t in history if t.role.value == "agent")
        return rule_reply(users[-1] if users else "", mine)
