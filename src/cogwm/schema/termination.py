"""Finite states of an arena conversation: why it ended, its status, a turn's phase."""

from __future__ import annotations

from enum import StrEnum


class Termination(StrEnum):
    """Why a conversation ended (stored per conversation)."""

    MAX_ROUNDS = "max_rounds"  # the hard round limit (cold start included) was reached
    NATURAL_END = "natural_end"  # the intent detector judged that the conversation had ended
    USER_LEFT = "user_left"  # the simulated user chose to leave
    # The agent broke its output format (CoT reply not valid after the repair attempt): counted
    # against the agent, scored on the trajectory up to that point, never re-run.
    AGENT_FAILURE = "agent_failure"
    ERROR = "error"  # infrastructure failed; excluded from metrics, re-run by --resume


class FailureOrigin(StrEnum):
    """Whose failure ended a conversation (the store's ``failure_kind``)."""

    AGENT = "agent"  # the agent under test: counts against it, the conversation is scored
    INFRASTRUCTURE = "infrastructure"  # models, store or code: excluded, re-run by --resume


class ConversationStatus(StrEnum):
    """Where a conversation stands in the store."""

    RUNNING = "running"  # started, not finished (an interrupted run leaves these)
    FINISHED = "finished"  # ended with a non-error termination (agent failures too); scored
    FAILED = "failed"  # ended with Termination.ERROR


class Phase(StrEnum):
    """Whether a turn was copied from the opening of a real dialogue or simulated."""

    COLD_START = "cold_start"
    SIMULATED = "simulated"


class Condition(StrEnum):
    """How the agent under test answers: directly, or reasoning first (only the reply is shown)."""

    NO_COT = "no_cot"
    COT = "cot"
