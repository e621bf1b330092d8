"""The hf: backend on a tiny randomly initialised model, with and without a LoRA adapter."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from cogwm.errors import ConfigError
from cogwm.models import ChoicePath, Sampling, load

needs_train_extra = pytest.mark.skipif(
    any(
        importlib.util.find_spec(m) is None for m in ("torch", "transformers", "peft", "tokenizers")
    ),
    reason="the hf backend needs the 'train' extra (torch, transformers, peft)",
)

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> tuple[Path, Path]:
    """A 2-layer Llama with a byte-level BPE tokenizer, and a random LoRA adapter over it."""
    import torch
    from peft import LoraConfig, get_peft_model
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    root = tmp_path_factory.mktemp("hf")
    bpe = ByteLevelBPETokenizer()
    corpus = ["Answer with A, B or C. The answer is B.", "hello there, how are you today?"] * 20
    bpe.train_from_iterator(corpus, vocab_size=300, special_tokens=["</s>", "<pad>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="</s>", pad_token="<pad>")
    tokenizer.chat_template = CHAT_TEMPLATE
    base = root / "base"
    tokenizer.save_pretrained(base)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(base)
    lora = get_peft_model(
        model,
        LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    with torch.no_grad():  # make the adapter's effect large enough to see in the scores
        for name, param in lora.named_parameters():
            if "lora_" in name:
                param.mul_(20.0)
    adapter = root / "adapter"
    lora.save_pretrained(adapter)
    return base, adapter


@needs_train_extra
def test_hf_generates_and_scores_and_adapter_changes_outputs(tiny_model):
    base_dir, adapter_dir = tiny_model
    base = load(f"hf:{base_dir}")
    tuned = load(f"hf:{base_dir}+{adapter_dir}")
    assert base.identity != tuned.identity
    question = "Answer with A, B or C."

    async def run():
        reply = await base.generate(question, Sampling(max_tokens=6), logprobs=3)
        base_scores = await base.score_choices(question, ["A", "B", "C"])
        tuned_scores = await tuned.score_choices(question, ["A", "B", "C"])
        return reply, base_scores, tuned_scores

    reply, base_scores, tuned_scores = asyncio.run(run())
    assert reply.usage.completion_tokens == 6  # random weights rarely emit </s>; max_tokens holds
    assert reply.logprobs is not None and len(reply.logprobs) == 6
    # Distinct ids may decode alike, so a position lists at most 3 alternatives.
    assert all(1 <= len(t.top) <= 3 and t.logprob <= 0 for t in reply.logprobs)
    assert all(t.logprob <= max(t.top.values()) + 1e-6 for t in reply.logprobs)
    assert base_scores.path is ChoicePath.LOGITS
    assert sum(base_scores.probs.values()) == pytest.approx(1.0)
    assert tuned_scores.probs["A"] != pytest.approx(base_scores.probs["A"], abs=1e-4)


def test_hf_errors_are_one_line_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such model path"):
        load(f"hf:{tmp_path / 'missing'}")
    (tmp_path / "m").mkdir()
    with pytest.raises(ConfigError, match="not a peft adapter"):
        load(f"hf:{tmp_path / 'm'}+{tmp_path}")
