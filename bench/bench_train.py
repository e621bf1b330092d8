"""Benchmark of a LoRA training step on the embedded base (SmolLM2-135M-Instruct, dequantized).

One fixed batch (``--batch`` sequences of ``--length`` tokens, the last ``--target-share`` of each
a target, as in a world-model sample where the prompt dominates), r 16 / alpha 32 on every linear
layer, AdamW. Two ways of computing the loss are timed on the same batch:

- targets only: the output head runs only on the hidden states that predict a target token (what
  ``cogwm train`` does);
- full logits: the head runs on every position, as a plain causal-LM loss would.

Prints seconds per step and tokens per second (all tokens of the batch) for both, after one
warm-up step each, in wall time and in this process's CPU time (which a busy machine distorts
less). It loads torch and the base model only.

Usage: python bench/bench_train.py [--base smollm2] [--batch 4] [--length 256] [--steps 2]
       [--target-share 0.25] [--threads N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from cogwm.simulator.train.base import resolve_base
from cogwm.simulator.train.config import TrainConfig
from cogwm.simulator.train.data import Encoded
from cogwm.simulator.train.model import collate, load_lora_model, target_loss_module


def fixed_batch(vocab: int, batch: int, length: int, share: float) -> list[Encoded]:
    """Seeded random token ids; the last ``share`` of each sequence weighs 1."""
    import random

    rng = random.Random(0)
    n_target = max(1, round(length * share))
    return [
        Encoded(
            f"bench-{i}",
            [rng.randrange(vocab) for _ in range(length)],
            [0.0] * (length - n_target) + [1.0] * n_target,
        )
        for i in range(batch)
    ]


def time_steps(
    module: Any, params: list[Any], tensors: dict[str, Any], steps: int
) -> tuple[float, float]:
    """Mean wall and CPU seconds of a full step (forward, backward, AdamW) after a warm-up step.

    CPU seconds (this process, all threads) stay meaningful on a machine shared with other jobs.
    """
    import torch

    optimizer = torch.optim.AdamW(params, lr=1e-4)

    def step() -> None:
        loss_sum, weight_sum = module(**tensors)
        (loss_sum / weight_sum).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step()
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps


def full_logits_module(peft_model: Any) -> Any:
    """The same weighted loss with the output head on every position."""
    import torch
    import torch.nn.functional as F

    class FullLogits(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, **_: Any) -> Any:
            logits = self.inner(input_ids=input_ids, attention_mask=attention_mask).logits
            labels = input_ids[:, 1:].clone()
            weights = self._weights
            losses = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                labels.reshape(-1),
                reduction="none",
            )
            return (losses * weights.reshape(-1)).sum(), weights.sum()

    return FullLogits(peft_model)


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="smollm2")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--target-share", type=float, default=0.25)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    base_dir = resolve_base(args.base)
    config = TrainConfig(samples=Path("."), base=args.base, out=Path("."))
    torch.manual_seed(0)
    peft_model = load_lora_model(base_dir, config)
    params = [p for p in peft_model.parameters() if p.requires_grad]
    vocab = peft_model.get_base_model().config.vocab_size
    batch = fixed_batch(vocab, args.batch, args.length, args.target_share)
    tensors = collate(batch, pad_id=0, device="cpu")
    tokens = args.batch * args.length
    print(
        f"base {args.base}: batch {args.batch} x {args.length} tokens, "
        f"{tensors['labels'].numel()} target tokens, {sum(p.numel() for p in params):,} LoRA "
        f"parameters, {torch.get_num_threads()} threads, {args.steps} timed steps"
    )
    targets_only = time_steps(target_loss_module(peft_model), params, tensors, args.steps)
    full = full_logits_module(peft_model)
    weights = torch.zeros(args.batch, args.length - 1)
    weights[tensors["rows"], tensors["cols"]] = tensors["weights"]
    full._weights = weights
    full_logits = time_steps(full, params, tensors, args.steps)
    for name, (wall, cpu) in (("targets only", targets_only), ("full logits", full_logits)):
        print(
            f"{name:<14} {wall:8.2f} s/step {tokens / wall:10.1f} tokens/s   "
            f"({cpu:.2f} CPU-s/step, {tokens / cpu:.1f} tokens per CPU-s)"
        )
    print(
        "speed-up of computing logits only at targets: "
        f"{full_logits[0] / targets_only[0]:.2f}x wall, {full_logits[1] / targets_only[1]:.2f}x CPU"
    )


if __name__ == "__main__":
    main()
