"""Memory and time of LoRA training at paper scale (Qwen3-8B, Qwen3-14B), computed, not run.

Parameter counts come from the models built on torch's meta device from their published
``config.json`` dimensions (no weights). Memory per GPU, for one micro-batch of
``--batch-tokens`` tokens with gradient checkpointing:

- frozen base: bf16, 2 bytes a parameter; or 4-bit NF4 with double quantization, 0.5 bytes a
  block weight plus one 8-bit scale per 64 weights and one fp32 scale per 256 scales, with the
  embeddings and the output head in fp32 (peft's ``prepare_model_for_kbit_training`` casts
  every non-quantized weight to fp32);
- LoRA (r 16 on every linear layer of the blocks): fp32 weights, gradients and AdamW's two
  moments, 16 bytes a parameter;
- activations: each layer's input kept in bf16 (2·T·h bytes a layer) plus one layer's
  activations recomputed in the backward pass, about 34·T·h bytes with fused attention
  (Korthikanti et al. 2022);
- logits on the target positions only (14.9 % of the tokens: 42.8 of 288.2 per sample in the
  samples manifest): bf16 logits, fp32 copy and fp32 gradient, 10 bytes a vocabulary entry.

Time per epoch: the train split's tokens (samples × mean tokens from the samples manifest ×
an assumed 1.1 for padding) over an assumed throughput: 6 FLOPs per non-embedding parameter and
token (forward, recomputed forward, backward to the activations; the LoRA's own gradients are
negligible) at 35 % of an H100's (or H200's: the same compute) 989 dense bf16 TFLOP/s, and
0.6 of that for QLoRA (dequantizing every block weight for each matmul). Both are assumptions.

Usage: python bench/plan_paper_scale.py [--manifest samples/manifest.json] [--batch-tokens 4608]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

# The published config.json dimensions of the two bases.
QWEN3 = {
    "Qwen3-8B": {"hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
                 "num_attention_heads": 32, "num_key_value_heads": 8},
    "Qwen3-14B": {"hidden_size": 5120, "intermediate_size": 17408, "num_hidden_layers": 40,
                  "num_attention_heads": 40, "num_key_value_heads": 8},
}  # fmt: skip
COMMON = {"vocab_size": 151936, "head_dim": 128, "tie_word_embeddings": False}
LORA_R = 16
GIB = 2**30
PEAK_FLOPS, MFU, QLORA_SPEED, PADDING = 989e12, 0.35, 0.6, 1.1
NF4_BYTES = 0.5 + 1 / 64 + 4 / (64 * 256)


def parameter_counts(dims: dict[str, int]) -> dict[str, int]:
    """Block (linear), embedding, head and LoRA parameter counts of a Qwen3 model."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    with torch.device("meta"):
        model = Qwen3ForCausalLM(Qwen3Config(**dims, **COMMON))
    linear = lora = other = 0
    for module in model.model.layers.modules():
        if isinstance(module, torch.nn.Linear):
            linear += module.weight.numel()
            lora += LORA_R * (module.in_features + module.out_features)
    total = sum(p.numel() for p in model.parameters())
    embed = model.model.embed_tokens.weight.numel()
    head = model.lm_head.weight.numel()
    other = total - linear - embed - head  # norms
    return {"total": total, "linear": linear, "embed": embed, "head": head, "other": other,
            "lora": lora}  # fmt: skip


def memory_gib(dims: dict[str, int], counts: dict[str, int], tokens: int) -> dict[str, float]:
    """GiB per GPU of each part, for a bf16 and a 4-bit base."""
    hidden, layers = dims["hidden_size"], dims["num_hidden_layers"]
    targets = tokens * 42.8 / 288.2
    parts = {
        "base bf16": 2 * counts["total"],
        "base 4-bit": NF4_BYTES * counts["linear"]
        + 4 * (counts["embed"] + counts["head"] + counts["other"]),
        "LoRA + grads + AdamW": 16 * counts["lora"],
        "activations (checkpointed)": 2 * tokens * hidden * layers + 34 * tokens * hidden,
        "target logits": 10 * targets * COMMON["vocab_size"],
    }
    return {name: value / GIB for name, value in parts.items()}


def epoch_hours(counts: dict[str, int], samples: int, mean_tokens: float) -> dict[str, float]:
    """Hours per epoch on one H100/H200 at the assumed throughput, bf16 and 4-bit base."""
    non_embedding = counts["total"] - counts["embed"] - counts["head"]
    tokens_per_s = PEAK_FLOPS * MFU / (6 * non_embedding)
    tokens = samples * mean_tokens * PADDING
    return {
        "tokens/s bf16": tokens_per_s,
        "hours bf16": tokens / tokens_per_s / 3600,
        "hours 4-bit": tokens / (tokens_per_s * QLORA_SPEED) / 3600,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, help="samples manifest.json (train counts)")
    parser.add_argument("--batch-tokens", type=int, default=4608)
    args = parser.parse_args()
    samples, mean = 193_112, 288.2  # samples build --understand, five corpora
    if args.manifest:
        manifest: dict[str, Any] = json.loads(args.manifest.read_text(encoding="utf-8"))
        samples = manifest["counts"]["train"]
        mean = manifest["token_lengths"]["total"]["mean"]
    print(f"train split: {samples:,} samples x {mean:.1f} tokens x {PADDING} padding")
    for name, dims in QWEN3.items():
        counts = parameter_counts(dims)
        print(f"\n{name}: {counts['total'] / 1e9:.2f} B parameters "
              f"({counts['linear'] / 1e9:.2f} B in the blocks' linear layers), "
              f"LoRA r {LORA_R}: {counts['lora'] / 1e6:.1f} M")  # fmt: skip
        parts = memory_gib(dims, counts, args.batch_tokens)
        shared = sum(v for k, v in parts.items() if not k.startswith("base"))
        for part, gib in parts.items():
            print(f"  {part:28s} {gib:6.1f} GiB")
        for base in ("base bf16", "base 4-bit"):
            print(f"  total with {base:17s} {parts[base] + shared:6.1f} GiB")
        for key, value in epoch_hours(counts, samples, mean).items():
            print(f"  {key:28s} {value:8.1f}")


if __name__ == "__main__":
    main()
