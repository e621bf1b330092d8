"""Pydantic records shared by every part of cogwm. Imports nothing else from cogwm."""

from cogwm.schema.base import Record
from cogwm.schema.dialogue import Dialogue, Role, Turn, Utterance
from cogwm.schema.lexicon import DEFAULT_VALENCES, register_emotion, valence, valence_table
from cogwm.schema.profile import BigFive, Profile
from cogwm.schema.state import BDI, CognitiveState, Dimension, Emotion, StateItem
from cogwm.schema.task import (
    DimensionSpec,
    TaskCapabilityError,
    TaskSpec,
    TaskWeights,
)

__all__ = [
    "BDI",
    "DEFAULT_VALENCES",
    "BigFive",
    "CognitiveState",
    "Dialogue",
    "Dimension",
    "DimensionSpec",
    "Emotion",
    "Profile",
    "Record",
    "Role",
    "StateItem",
    "TaskCapabilityError",
    "TaskSpec",
    "TaskWeights",
    "Turn",
    "Utterance",
    "register_emotion",
    "valence",
    "valence_table",
]
