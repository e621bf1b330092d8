"""Two scripted policies in the arena environment: the built-in empathetic and dismissive
prompts on one model, a few episodes each on the same scenarios and seeds, and the mean return
per policy with a bootstrap 95% CI.

    python examples/env_policies.py --episodes 10            # embedded SmolLM2 on both sides
    python examples/env_policies.py --model fake:echo --simulator fake:schema   # no model

The return of an episode is the change in the simulated user's composite state score over the
conversation (the arena's delta); see cogwm.env.
"""

from __future__ import annotations

import argparse
import asyncio

from cogwm.arena.config import SimulatorConfig
from cogwm.arena.prompts import AGENT_PERSONAS
from cogwm.env import AsyncArenaEnv, rollout
from cogwm.models import load
from cogwm.models.types import Message, Sampling
from cogwm.stats.means import mean_estimate

POLICIES = ("empathetic", "dismissive")


async def returns(args: argparse.Namespace, persona: str) -> list[float]:
    """The returns of ``args.episodes`` episodes of one policy."""
    model = load(args.model)
    env = AsyncArenaEnv(
        args.task,
        SimulatorConfig(model=args.simulator),
        max_rounds=args.max_rounds,
        intent_from_round=args.max_rounds + 1,
        agent_prompt=AGENT_PERSONAS[persona].text,
    )

    async def policy(messages: list[dict[str, str]], seed: int) -> str:
        chat = [Message(role=m["role"], content=m["content"]) for m in messages]
        sampling = Sampling(temperature=0.7, max_tokens=args.max_tokens, seed=seed)
        reply = (await model.generate(chat, sampling, tag="policy")).text.strip()
        return reply or "I see."  # a silent policy still has to say something

    try:
        # The same seeds for both policies: each meets the same scenarios and user draws.
        episodes = [await rollout(env, policy, seed=i) for i in range(args.episodes)]
    finally:
        await env.aclose()
        await model.aclose()
    return [e.ret for e in episodes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="llamacpp:smollm2", help="The policies' model.")
    parser.add_argument("--simulator", default="llamacpp:smollm2", help="The user simulator.")
    parser.add_argument("--task", default="ESC")
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--max-rounds", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=80)
    parser.add_argument("--policy", choices=POLICIES, action="append", help="Default: both.")
    args = parser.parse_args()
    for persona in args.policy or POLICIES:
        values = asyncio.run(returns(args, persona))
        est = mean_estimate(values)
        ci = "" if est.ci_low is None else f" [{est.ci_low:+.3f}, {est.ci_high:+.3f}]"
        print(f"{persona:<11} mean return {est.mean:+.3f}{ci} over {est.n} episodes")


if __name__ == "__main__":
    main()
