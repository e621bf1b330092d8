"""One conversation from its participants, played to its end by ``Conversation``.

``Orchestrator`` is the shortest way to play a conversation between any agent, user simulator
and intent detector (objects of the ``Participant`` protocol); the round loop, termination and
the intent window live in ``cogwm.arena.conversation``.
"""

from __future__ import annotations

from cogwm.arena.cast import Cast
from cogwm.arena.conversation import Conversation, Limits, Outcome, TurnSink
from cogwm.arena.opening import Opening, cold_start_turns
from cogwm.arena.protocol import Participant, UserSimulator

__all__ = ["Limits", "Opening", "Orchestrator", "Outcome", "TurnSink", "cold_start_turns"]


class Orchestrator:
    """Runs one conversation between an agent and the simulated user.

    It knows its participants only through the ``Participant`` protocol: any agent (a model and
    prompt, an HTTP service, a Python object), any user simulator that binds to a user, any
    intent detector.
    """

    def __init__(
        self,
        agent: Participant,
        simulator: UserSimulator,
        detector: Participant,
        limits: Limits,
    ):
        self.agent = agent
        self.simulator = simulator
        self.detector = detector
        self.limits = limits

    async def run(
        self, opening: Opening, sink: TurnSink, *, seed: int, user_seed: int | None = None
    ) -> Outcome:
        """Play the conversation (see ``Conversation.run``).

        Args:
            opening: Scenario, user setup and initial state.
            sink: Receives every turn as soon as it exists.
            seed: The agent's seed; each agent call's seed is derived from it and its position.
            user_seed: The seed of the user's side (simulator, intent detector); default:
                ``seed``.
        """
        cast = Cast(
            scenario=opening.scenario,
            simulator=self.simulator,
            agent=self.agent,
            detector=self.detector,
        )
        conversation = Conversation(cast, self.limits, seed=seed, user_seed=user_seed, sink=sink)
        return await conversation.run(opening)
