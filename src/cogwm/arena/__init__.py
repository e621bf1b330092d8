"""The arena: agents under test talk to a cognitive user simulator; every turn's BDI/E state is
stored, and agents are ranked by how they move the user's state (docs/architecture.md, "Arena").

Layers: ``protocol`` (the ``Participant`` interface every participant implements),
``participants`` (simulator, agent, intent detector, profile annotator), ``agents`` (agents of
every kind: model, endpoint, Python), ``cast`` (the participants of one conversation, from a
config), ``conversation`` (one conversation stepped round by round: the turn loop and its
termination), ``orchestrator`` (a conversation from participants, played to its end),
``runner`` (units from a config, concurrency, resume, shards), ``config`` (TOML), ``scenarios``
(cold starts), ``prompts``.
"""

from cogwm.arena.cast import Cast
from cogwm.arena.config import AgentConfig, ArenaConfig, ModelConfig, config_hash, load_config
from cogwm.arena.conversation import Conversation, Limits, Outcome, RoundResult
from cogwm.arena.opening import Opening
from cogwm.arena.orchestrator import Orchestrator
from cogwm.arena.participants import (
    AgentParticipant,
    IntentDetector,
    ProfileAnnotator,
    SimulatorParticipant,
)
from cogwm.arena.protocol import AgentFailure, Participant
from cogwm.arena.runner import RunSummary, run_arena
from cogwm.arena.scenarios import Scenario, ScenarioSource, builtin_scenarios, select_scenarios
from cogwm.arena.termination import Condition, ConversationStatus, Phase, Termination
from cogwm.arena.transcript import ArenaTurn, TurnOutput, UserSetup
from cogwm.arena.units import Shard, Unit, plan_units

__all__ = [
    "AgentConfig",
    "AgentFailure",
    "AgentParticipant",
    "ArenaConfig",
    "ArenaTurn",
    "Cast",
    "Condition",
    "Conversation",
    "ConversationStatus",
    "IntentDetector",
    "Limits",
    "ModelConfig",
    "Opening",
    "Orchestrator",
    "Outcome",
    "Participant",
    "Phase",
    "ProfileAnnotator",
    "RoundResult",
    "RunSummary",
    "Scenario",
    "ScenarioSource",
    "Shard",
    "SimulatorParticipant",
    "Termination",
    "TurnOutput",
    "Unit",
    "UserSetup",
    "builtin_scenarios",
    "config_hash",
    "load_config",
    "plan_units",
    "run_arena",
    "select_scenarios",
]
