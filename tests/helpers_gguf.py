"""Tiny random Llama, Qwen2, Qwen3, Gemma 2 and Gemma 3 models built offline, and their base
GGUF (f32) written the way llama.cpp's converter lays each architecture out, so that a LoRA
exported for them can be checked against transformers with llama.cpp."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The architectures the tests build: transformers model_type → GGUF architecture.
TINY_ARCHS = {
    "llama": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma2": "gemma2",
    "gemma3_text": "gemma3",
}
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, LAYERS, FFN = 64, 4, 2, 16, 2, 128


def tiny_config(model_type: str, tokenizer: Any) -> Any:
    """A two-layer config of ``model_type`` for the tiny tokenizer (tied embeddings)."""
    from transformers import AutoConfig

    common: dict[str, Any] = {
        "vocab_size": len(tokenizer),
        "hidden_size": HIDDEN,
        "intermediate_size": FFN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "max_position_embeddings": 512,
        "tie_word_embeddings": True,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    if model_type != "llama":
        common["head_dim"] = HEAD_DIM
    if model_type.startswith("gemma"):
        # llama.cpp scales queries by 1/sqrt(head_dim) for models of unknown size.
        common.update(query_pre_attn_scalar=HEAD_DIM, sliding_window=256)
    return AutoConfig.for_model(model_type, **common)


def make_arch_base(root: Path, model_type: str, *, seed: int = 0) -> Path:
    """The tiny tokenizer and a random ``model_type`` model under ``root/<model_type>``.

    Weights are drawn with a larger spread than the initialiser's so that the logits, and what
    a LoRA changes in them, are well above float noise.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from helpers_train import make_tiny_base

    llama_dir = make_tiny_base(root / "tokenizer-source")
    tokenizer = AutoTokenizer.from_pretrained(str(llama_dir))
    out = root / model_type
    tokenizer.save_pretrained(out)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(tiny_config(model_type, tokenizer))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.normal_(0.0, 0.1).add_(0.0 if model_type.startswith("gemma") else 1.0)
            else:
                param.normal_(0.0, 0.15)
    model.save_pretrained(out)
    return out


def _permute(weights: Any, n_head: int) -> Any:
    rows = weights.shape[0]
    return (
        weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def write_base_gguf(base_dir: Path, out: Path) -> Path:
    """``base_dir`` (a tiny model of :data:`TINY_ARCHS`) as an f32 GGUF llama.cpp loads."""
    import gguf
    from safetensors.numpy import load_file

    config = json.loads((base_dir / "config.json").read_text(encoding="utf-8"))
    model_type = config["model_type"]
    arch_name = TINY_ARCHS[model_type]
    arch = next(a for a, n in gguf.MODEL_ARCH_NAMES.items() if n == arch_name)
    writer = gguf.GGUFWriter(str(out), arch=arch_name)
    _write_hparams(writer, config, arch_name)
    _write_vocab(writer, base_dir)
    name_map = gguf.get_tensor_name_map(arch, config["num_hidden_layers"])
    for name, data in sorted(load_file(str(base_dir / "model.safetensors")).items()):
        if name == "lm_head.weight":
            continue  # tied: llama.cpp uses the token embeddings
        if model_type == "llama" and name.endswith("q_proj.weight"):
            data = _permute(data, config["num_attention_heads"])
        elif model_type == "llama" and name.endswith("k_proj.weight"):
            data = _permute(data, config["num_key_value_heads"])
        if model_type.startswith("gemma") and name.endswith("norm.weight"):
            data = data + 1  # Gemma's RMSNorm multiplies by 1 + w; llama.cpp by w
        new_name = name_map.get_name(name, try_suffixes=(".weight", ".bias"))
        assert new_name is not None, name
        writer.add_tensor(new_name, data.astype("float32"))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def _write_hparams(writer: Any, config: dict[str, Any], arch_name: str) -> None:
    import gguf

    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    rope = config.get("rope_parameters") or {}
    if arch_name == "gemma3":
        writer.add_rope_freq_base(rope["full_attention"]["rope_theta"])
        writer.add_rope_freq_base_swa(rope["sliding_attention"]["rope_theta"])
    else:
        writer.add_rope_freq_base(rope.get("rope_theta", config.get("rope_theta", 10000.0)))
    if arch_name in ("gemma2", "gemma3"):
        writer.add_sliding_window(config["sliding_window"])
    if arch_name == "gemma2":
        writer.add_attn_logit_softcapping(config["attn_logit_softcapping"])
        writer.add_final_logit_softcapping(config["final_logit_softcapping"])


def _write_vocab(writer: Any, base_dir: Path) -> None:
    import gguf

    tokenizer_json = json.loads((base_dir / "tokenizer.json").read_text(encoding="utf-8"))
    vocab: dict[str, int] = tokenizer_json["model"]["vocab"]
    specials = {t["content"]: t["id"] for t in tokenizer_json["added_tokens"]}
    tokens = sorted({**vocab, **specials}.items(), key=lambda item: item[1])
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([token for token, _ in tokens])
    writer.add_token_types(
        [
            gguf.TokenType.CONTROL if token in specials else gguf.TokenType.NORMAL
            for token, _ in tokens
        ]
    )
    merges = tokenizer_json["model"]["merges"]
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    writer.add_eos_token_id(specials["<|im_end|>"])
    writer.add_pad_token_id(specials["<|im_end|>"])
