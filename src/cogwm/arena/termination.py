"""Finite states of an arena conversation: why it ended, its status, a turn's phase."""

from __future__ import annotations

from enum import StrEnum


class Termination(StrEnum):
    """Why a conversation ended (stored per conversation)."""

    MAX_ROUNDS = "max_rounds"  # the hard round limit (cold start included) was reached
    NATURAL_END = "natural_end"  # the intent detector judged that the conversation had ended
    USER_LEFT = "user_left"  # the simulated user chose to leave
    ERROR = "error"  # a model call failed for good; excluded from metrics, re-run by --resume


class ConversationStatus(StrEnum):
    """Where a conversation stands in the store."""

    RUNNING = "running"  # started, not finished (an interrupted run leaves these)
    FINISHED = "finished"  # ended with a non-error termination; metrics stored
    FAILED = "failed"  # ended with Termination.ERROR


class Phase(StrEnum):
    """Whether a turn was copied from the opening of a real dialogue or simulated."""

    COLD_START = "cold_start"
    SIMULATED = "simulated"


class Condition(StrEnum):
    """How the agent under test answers: directly, or reasoning first (only the reply is shown)."""

    NO_COT = "no_cot"
    COT = "cot"
