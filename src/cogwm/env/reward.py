"""A reward function for TRL/GRPO-style training loops, from the simulated user's state.

GRPO samples several completions per prompt and asks a reward function for one number each:
``reward(prompts, completions, **columns) -> list[float]``, where ``columns`` are the dataset's
other columns, one value per completion. Here a dataset row is a point in an arena episode: its
``scenario``, ``seed`` and the agent's earlier replies (``agent_turns``); the prompt is the
chat up to there (``info["messages"]``). A completion's reward is the change in the user's
composite score when it is played as the next agent turn (plus the GoodOutcome bonus if the
episode ends there and the environment has one). The environment replays the row's earlier
turns from the seed, so every completion of a row meets the same user.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from cogwm.env.arena import AsyncArenaEnv


def _text(completion: Any) -> str:
    # TRL passes plain strings, or for chat datasets a list of messages ending in the reply.
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    raise TypeError(f"a completion must be a string or a list of messages, not {completion!r}")


class StateReward:
    """``reward(prompts, completions, *, scenario, seed, agent_turns) -> list[float]``.

    Args:
        make_env: Builds a fresh environment (one per completion, so they run concurrently).
        empty_reward: The reward of an empty completion (the environment refuses to play it).
    """

    __name__ = "cogwm_state_reward"  # TRL names reward columns after the function

    def __init__(self, make_env: Callable[[], AsyncArenaEnv], *, empty_reward: float = -1.0):
        self.make_env = make_env
        self.empty_reward = empty_reward

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        *,
        scenario: Sequence[str],
        seed: Sequence[int],
        agent_turns: Sequence[Sequence[str]],
        **_: Any,
    ) -> list[float]:
        """One reward per completion (run to the end before returning)."""
        jobs = [
            self.one(_text(c), s, int(n), list(turns))
            for c, s, n, turns in zip(completions, scenario, seed, agent_turns, strict=True)
        ]

        async def gather() -> list[float]:
            return list(await asyncio.gather(*jobs))

        return asyncio.run(gather())

    async def one(self, reply: str, scenario: str, seed: int, earlier: list[str]) -> float:
        """The reward of ``reply`` after the agent's ``earlier`` replies in one episode."""
        if not reply.strip():
            return self.empty_reward
        env = self.make_env()
        try:
            await env.reset(seed=seed, options={"scenario": scenario})
            for turn in earlier:
                step = await env.step(turn)
                if step.terminated or step.truncated:
                    raise ValueError("the row's earlier turns already end the episode")
            return (await env.step(reply)).reward
        finally:
            await env.aclose()
