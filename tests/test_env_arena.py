"""The arena as an RL environment: reset/step, rewards equal to the arena's metrics, termination,
batches."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.env import ArenaEnv, AsyncArenaEnv, reset_all, rollout, step_all
from cogwm.errors import InputError
from cogwm.models import unregister_fake
from cogwm.store import RunStore
from helpers_arena import FAKE_NAME, Script, config, register

FAKE = f"fake:{FAKE_NAME}"


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Script]:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    yield register(Script())
    unregister_fake(FAKE_NAME)


def _env(**kwargs: object) -> ArenaEnv:
    options = {"max_attempts": 1}
    from cogwm.arena.config import SimulatorConfig

    return ArenaEnv("ESC", SimulatorConfig(model=FAKE, options=options), **kwargs)  # type: ignore[arg-type]


def test_reward_is_the_arenas_delta_for_the_same_conversation(
    script: Script, tmp_path: Path
) -> None:
    # Run the arena, then replay each stored conversation's agent turns through the environment
    # with the run's seed: the same user turns come back and the return is the stored Δ.
    raw = config(tasks=["ESC"], agents=[{"name": "cold", "model": FAKE}])
    arena_config = parse_config(raw)
    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        asyncio.run(run_arena(arena_config, store, show_progress=False))
        stored = [(c, store.turns(c.id)) for c in store.conversations()]
        metrics = store.metrics()
    assert len(stored) == 2
    for conversation, turns in stored:
        env = ArenaEnv.from_config(arena_config, "ESC")
        try:
            env.reset(seed=arena_config.seed, options={"scenario": conversation.scenario})
            simulated = [t for t in turns if t.phase == "simulated"]
            rewards: list[float] = []
            for agent, user in zip(simulated[::2], simulated[1::2], strict=True):
                step = env.step(agent.text)
                assert step.observation == user.text
                rewards.append(step.reward)
            assert step.terminated or step.truncated
            assert step.info["termination"] == conversation.termination
        finally:
            env.close()
        delta = metrics[conversation.id]["delta"]
        assert delta is not None and sum(rewards) == pytest.approx(delta, abs=1e-12)
        assert any(r != 0 for r in rewards)  # the check means something


def test_truncation_at_the_round_limit(script: Script) -> None:
    env = _env(max_rounds=5, intent_from_round=9)
    try:
        observation, info = env.reset(seed=3)
        assert isinstance(observation, str) and info["round"] == 2
        assert "state" in info and info["messages"][0]["role"] == "system"
        assert info["messages"][-1] == {"role": "user", "content": observation}
        results = [env.step("How are you feeling?") for _ in range(3)]
        assert [(r.terminated, r.truncated) for r in results] == [
            (False, False),
            (False, False),
            (False, True),
        ]
        assert results[-1].info["termination"] == "max_rounds"
        # Each reward is the composite's change; info carries s_t.
        assert results[1].reward == pytest.approx(
            results[1].info["composite"] - results[0].info["composite"]
        )
        with pytest.raises(InputError, match="reset"):
            env.step("more")
    finally:
        env.close()


def test_user_leaving_and_the_detector_terminate(script: Script) -> None:
    script.leave_at = 2
    env = _env(max_rounds=10, intent_from_round=9)
    try:
        env.reset(seed=1)
        first, second = env.step("hi"), env.step("hello")
        assert not first.terminated and second.terminated and not second.truncated
        assert second.info["termination"] == "user_left"
        script.leave_at = None
        script.detector_ends = True
        env.env.intent_from_round = 3
        env.reset(seed=1)
        step = env.step("hi")
        assert step.terminated and step.info["termination"] == "natural_end"
    finally:
        env.close()


def test_empty_reply_is_refused(script: Script) -> None:
    env = _env()
    try:
        env.reset(seed=1)
        with pytest.raises(InputError, match="empty"):
            env.step("  ")
    finally:
        env.close()


def test_state_hidden_unless_asked_and_bonus(script: Script) -> None:
    env = _env(max_rounds=3, reveal_state=True, good_outcome_bonus=10.0)
    try:
        observation, _ = env.reset(seed=2)
        assert isinstance(observation, dict) and "emotion" in observation["state"]
        step = env.step("hi")
        assert step.truncated
        good = step.info["good_outcome"]
        assert isinstance(good, bool)
        assert step.reward == pytest.approx(step.info["reward_state"] + (10.0 if good else 0.0))
    finally:
        env.close()


def test_batched_steps_and_rollout(script: Script) -> None:
    from cogwm.arena.config import SimulatorConfig

    async def main() -> None:
        sim = SimulatorConfig(model=FAKE)
        envs = [AsyncArenaEnv("ESC", sim, max_rounds=4, intent_from_round=9) for _ in range(3)]
        firsts = await reset_all(envs, seeds=[1, 2, 1])
        assert firsts[0][0] == firsts[2][0]  # the same seed, the same episode
        steps = await step_all(envs, ["a", "b", "a"])
        assert steps[0] == steps[2] and len(steps) == 3

        async def policy(messages: list[dict[str, str]], seed: int) -> str:
            return f"tell me more ({len(messages)})"

        episode = await rollout(envs[1], policy, seed=5)
        assert episode.termination == "max_rounds" and len(episode.rewards) == 2
        for env in envs:
            await env.aclose()

    asyncio.run(main())


def test_state_reward_scores_completions_as_the_next_turn(script: Script) -> None:
    from cogwm.arena.config import SimulatorConfig
    from cogwm.env import StateReward

    def make() -> AsyncArenaEnv:
        return AsyncArenaEnv("ESC", SimulatorConfig(model=FAKE), max_rounds=6, intent_from_round=9)

    reward = StateReward(make)
    completions = ["I am sorry.", [{"role": "assistant", "content": "Tell me more."}], " "]
    got = reward(
        ["p"] * 3,
        completions,
        scenario=["builtin:esc-01"] * 3,
        seed=[4] * 3,
        agent_turns=[["hello"]] * 3,
    )
    # The same as stepping an environment by hand after the row's earlier turn.
    env = _env(max_rounds=6, intent_from_round=9)
    try:
        expected = []
        for reply in ("I am sorry.", "Tell me more."):
            env.reset(seed=4, options={"scenario": "builtin:esc-01"})
            env.step("hello")
            expected.append(env.step(reply).reward)
    finally:
        env.close()
    assert got == [*expected, -1.0]


def test_policies_example_prints_a_mean_return_per_policy() -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "examples" / "env_policies.py"
    done = subprocess.run(
        [sys.executable, str(script), "--model", "fake:echo", "--simulator", "fake:schema",
         "--episodes", "3", "--max-rounds", "4"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["empathetic", "dismissive"]
    assert all("mean return" in line and "over 3 episodes" in line for line in lines)
