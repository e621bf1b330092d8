"""A tiny random Llama (2 layers, hidden 64) with a ChatML tokenizer, built offline for tests."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURE_SAMPLES = Path(__file__).resolve().parent / "fixtures" / "samples"

# SmolLM2's chat template (ChatML), so tests exercise the same prompt/target layout.
CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def fixture_texts() -> list[str]:
    """Every message and target of the fixture samples (the tokenizer's training text)."""
    texts: list[str] = []
    for path in sorted(FIXTURE_SAMPLES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            texts.extend(m["content"] for m in row["messages"])
            texts.append(row["target"])
    return texts


def make_tiny_base(root: Path, *, llama: bool = True, seed: int = 0) -> Path:
    """Save a tiny random causal LM and its tokenizer under ``root/base``; return that path."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    specials = ["<|im_end|>", "<|im_start|>", "<pad>"]
    bpe.train_from_iterator(fixture_texts() * 2, vocab_size=400, special_tokens=specials)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|im_end|>", bos_token=None
    )
    tokenizer.chat_template = CHATML
    base = root / "base"
    tokenizer.save_pretrained(base)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(base)
    return base


def make_mixed_samples(root: Path, copies: int = 1) -> Path:
    """The fixture samples as two corpora (``alpha``: dialogues synth-0 to synth-5, 18 samples
    with the 3 neutral ones; ``beta``: synth-6 and synth-7, 6 samples), ``copies`` times over
    (ids suffixed ``~N``), with the fixture's manifest and val.jsonl; return the directory."""
    out = root / "mixed"
    out.mkdir()
    lines = []
    for copy in range(copies):
        for line in (FIXTURE_SAMPLES / "train.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            row["corpus"] = "beta" if row["dialogue_id"] in ("synth-6", "synth-7") else "alpha"
            if copies > 1:
                row["id"] = f"{row['id']}~{copy}"
            lines.append(json.dumps(row))
    (out / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name in ("manifest.json", "val.jsonl"):
        (out / name).write_bytes((FIXTURE_SAMPLES / name).read_bytes())
    return out
