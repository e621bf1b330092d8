"""A peft LoRA adapter as a GGUF LoRA that llama.cpp applies over the (quantized) base model.

Architectures: Llama, Qwen2, Qwen3, Gemma, Gemma 2 and Gemma 3. Tensor names come from the
``gguf`` package's name map of the base's GGUF architecture (``blk.N.attn_q.weight`` ...).

llama.cpp stores the q and k projections of Llama models with their rows permuted (the order its
rotary embedding expects; llama.cpp's converter does this to every Llama q/k weight). A LoRA
delta ``B @ A`` must be permuted the same way, which means permuting the rows of ``B`` only (``A``
acts on the input side). Without it the adapter loads fine and changes the outputs wrongly.
Qwen and Gemma use the rotary layout transformers uses (NeoX), so their weights are stored as
they are. Gemma's norm weights are stored plus one by the converter; a LoRA never touches norms.

llama.cpp scales the delta by ``alpha / r`` (r read from the tensors), as peft does without rsLoRA;
rsLoRA, per-module ranks, and adapters on the embeddings or the output head are refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cogwm.errors import ConfigError, InputError

#: transformers model_type → (GGUF architecture name, whether q/k rows are permuted as for
#: Llama). ``gemma3`` is the multimodal checkpoint, whose text layers carry a
#: ``language_model.`` prefix that llama.cpp's converter drops.
ARCHITECTURES: dict[str, tuple[str, bool]] = {
    "llama": ("llama", True),
    "qwen2": ("qwen2", False),
    "qwen3": ("qwen3", False),
    "gemma": ("gemma", False),
    "gemma2": ("gemma2", False),
    "gemma3_text": ("gemma3", False),
    "gemma3": ("gemma3", False),
}
_NAME = re.compile(r"^base_model\.model\.(?P<module>.+)\.lora_(?P<ab>[AB])\.weight$")


@dataclass(frozen=True)
class ExportSummary:
    """What was written."""

    path: Path
    tensors: int
    rank: int
    alpha: float
    bytes: int


def permute_rows(weights: Any, n_head: int) -> Any:
    """llama.cpp's q/k row order: per head, the two rotary halves interleaved."""
    rows = weights.shape[0]
    return (
        weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def read_adapter_config(adapter: Path) -> dict[str, Any]:
    """The peft adapter config, checked for what llama.cpp can apply.

    Raises:
        InputError: Not a peft LoRA adapter directory.
        ConfigError: rsLoRA, per-module ranks or alphas, or embedding/head targets.
    """
    path = adapter / "adapter_config.json"
    if not path.is_file() or not (adapter / "adapter_model.safetensors").is_file():
        raise InputError(f"{adapter} is not a peft adapter (adapter_config.json and safetensors)")
    config: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if config.get("peft_type") != "LORA":
        raise ConfigError(
            f"{adapter}: only LoRA adapters can be exported, not {config.get('peft_type')}"
        )
    if config.get("use_rslora") or config.get("rank_pattern") or config.get("alpha_pattern"):
        raise ConfigError(f"{adapter}: rsLoRA and per-module ranks are not supported by llama.cpp")
    if config.get("use_dora"):
        raise ConfigError(f"{adapter}: DoRA adapters cannot be applied by llama.cpp")
    return config


def base_model_config(adapter_config: dict[str, Any], base_dir: Path | None) -> dict[str, Any]:
    """The base model's ``config.json`` (from ``base_dir`` or the adapter's recorded base)."""
    directory = base_dir or Path(adapter_config.get("base_model_name_or_path") or "")
    path = directory / "config.json"
    if not path.is_file():
        raise InputError(
            f"no base model config at {path}: pass --base with the model the adapter was trained on"
        )
    config: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return config


def export_gguf(
    adapter: Path,
    out: Path,
    *,
    base_dir: Path | None = None,
    dtype: Literal["f16", "f32"] = "f16",
) -> ExportSummary:
    """Write ``adapter`` (a peft LoRA directory) as the GGUF LoRA ``out``.

    Raises:
        InputError: Missing adapter or base config files.
        ConfigError: An architecture or adapter kind llama.cpp cannot apply as converted here.
    """
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    adapter_config = read_adapter_config(adapter)
    base = base_model_config(adapter_config, base_dir)
    model_type = base.get("model_type", "?")
    if model_type not in ARCHITECTURES:
        raise ConfigError(
            f"GGUF LoRA export supports {', '.join(ARCHITECTURES)} models, not {model_type}; "
            "serve this adapter with hf:BASE+ADAPTER"
        )
    arch, permuted = ARCHITECTURES[model_type]
    text = base.get("text_config") or base  # multimodal checkpoints nest the decoder's config
    n_head = int(text["num_attention_heads"])
    n_kv = int(text.get("num_key_value_heads") or n_head)
    name_map = gguf.get_tensor_name_map(_gguf_arch(gguf, arch), int(text["num_hidden_layers"]))
    pairs = _pairs(load_file(str(adapter / "adapter_model.safetensors")), adapter)
    numpy_dtype = np.float16 if dtype == "f16" else np.float32

    writer = gguf.GGUFWriter(str(out), arch=arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(adapter_config["lora_alpha"]))
    rank = 0
    for module, (lora_a, lora_b) in sorted(pairs.items()):
        hf_name = module.replace("model.language_model.", "model.", 1)
        name = name_map.get_name(hf_name + ".weight", try_suffixes=(".weight",))
        if name is None:
            raise ConfigError(f"{adapter}: no llama.cpp {arch} tensor for {module}")
        if permuted and module.endswith("q_proj"):
            lora_b = permute_rows(lora_b, n_head)
        elif permuted and module.endswith("k_proj"):
            lora_b = permute_rows(lora_b, n_kv)
        rank = int(lora_a.shape[0])
        writer.add_tensor(name + ".lora_a", np.ascontiguousarray(lora_a, dtype=numpy_dtype))
        writer.add_tensor(name + ".lora_b", np.ascontiguousarray(lora_b, dtype=numpy_dtype))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return ExportSummary(
        out, 2 * len(pairs), rank, float(adapter_config["lora_alpha"]), out.stat().st_size
    )


def _gguf_arch(gguf: Any, name: str) -> Any:
    """The ``gguf.MODEL_ARCH`` member whose GGUF name is ``name``."""
    return next(arch for arch, arch_name in gguf.MODEL_ARCH_NAMES.items() if arch_name == name)


def _pairs(tensors: dict[str, Any], adapter: Path) -> dict[str, tuple[Any, Any]]:
    """(lora_A, lora_B) per HF module name, e.g. ``model.layers.0.self_attn.q_proj``."""
    found: dict[str, dict[str, Any]] = {}
    for key, value in tensors.items():
        match = _NAME.match(key)
        if match is None:
            raise ConfigError(f"{adapter}: tensor {key} is not a LoRA A/B matrix of a linear layer")
        module = match["module"]
        if module.endswith(("embed_tokens", "lm_head")):
            raise ConfigError(f"{adapter}: adapters on {module} cannot be applied by llama.cpp")
        found.setdefault(module, {})[match["ab"]] = value
    missing = [m for m, ab in found.items() if set(ab) != {"A", "B"}]
    if missing:
        raise InputError(f"{adapter}: {missing[0]} lacks its lora_A or lora_B matrix")
    if not found:
        raise InputError(f"{adapter}: no LoRA tensors")
    return {m: (ab["A"], ab["B"]) for m, ab in found.items()}
