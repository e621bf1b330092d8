"""The arena as an environment for training agents: Gymnasium-style ``reset``/``step`` over a
conversation with the cognitive user simulator, rewarded by the change in the user's state.

See ``cogwm.env.arena`` for the interface; ``AsyncArenaEnv`` is the core, ``ArenaEnv`` its
synchronous wrapper, ``reset_all``/``step_all`` step many conversations at once, and
``StateReward`` is a reward function for TRL/GRPO-style loops.
"""

from cogwm.env.arena import (
    ArenaEnv,
    AsyncArenaEnv,
    Episode,
    Step,
    reset_all,
    rollout,
    step_all,
)
from cogwm.env.reward import StateReward

__all__ = [
    "ArenaEnv",
    "AsyncArenaEnv",
    "Episode",
    "StateReward",
    "Step",
    "reset_all",
    "rollout",
    "step_all",
]
