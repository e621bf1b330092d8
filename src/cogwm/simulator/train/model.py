"""The LoRA model and its loss: logits only where a target token is predicted.

The vocabulary projection is the largest matrix of a small model and most positions of a sample
are prompt, so the loss runs the decoder over the whole batch and the output head only on the
hidden states that predict a weighted token. The wrapper is one ``nn.Module`` whose ``forward``
does all of it, so accelerate's distributed wrapper sees every parameter used.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cogwm.errors import ConfigError
from cogwm.simulator.train.config import TrainConfig
from cogwm.simulator.train.data import Encoded

if TYPE_CHECKING:
    import torch


#: torch dtype names of ``--dtype``.
_TORCH_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def check_precision(config: TrainConfig) -> None:
    """Refuse, before any model is loaded, a precision this machine cannot train in.

    Raises:
        ConfigError: ``--quantize`` without a CUDA GPU (or with ``--cpu``) or without
            bitsandbytes; ``--dtype fp16`` without a CUDA GPU; fp32 with ``--quantize``.
    """
    import torch

    cuda = torch.cuda.is_available() and not config.cpu
    if config.quantize is not None:
        if not cuda:
            raise ConfigError(
                f"--quantize {config.quantize} needs a CUDA GPU (bitsandbytes' 4-bit kernels); "
                "none is in use here: leave --quantize out to train the full-precision base"
            )
        if importlib.util.find_spec("bitsandbytes") is None:
            raise ConfigError(
                f"--quantize {config.quantize} needs bitsandbytes: pip install 'cogwm[train,gpu]'"
            )
        if config.dtype == "fp32":
            raise ConfigError("--quantize 4bit computes in bf16 or fp16, not --dtype fp32")
    if config.dtype == "fp16" and not cuda:
        raise ConfigError("--dtype fp16 needs a CUDA GPU; use bf16 or fp32 on the CPU")


def load_lora_model(base_dir: Path, config: TrainConfig, device: Any = None) -> Any:
    """The base model with a fresh LoRA on every linear layer but the output head.

    The base is loaded in fp32 unless ``--dtype`` says otherwise; with ``--quantize 4bit`` it
    is quantized to NF4 with double quantization on ``device`` (QLoRA), computing in bf16
    (fp16 with ``--dtype fp16``). The LoRA weights are fp32 in every case.
    """
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model: Any = AutoModelForCausalLM.from_pretrained(
        str(base_dir), **_precision_kwargs(config, device)
    )
    # Non-reentrant checkpointing needs no input gradients and replays the dropout draws.
    checkpointing = {"use_reentrant": False}
    if config.quantize is not None:
        from peft import prepare_model_for_kbit_training

        # Norms and the head in fp32, and checkpointing enabled the way k-bit training needs.
        model = prepare_model_for_kbit_training(  # type: ignore[no-untyped-call]
            model,
            use_gradient_checkpointing=config.gradient_checkpointing,
            gradient_checkpointing_kwargs=checkpointing,
        )
    elif config.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=checkpointing)
    lora = LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        # "all-linear" leaves out the output head (tied to the embeddings in small models);
        # embeddings are not linear layers.
        target_modules="all-linear",
        bias="none",
        task_type="CAUSAL_LM",
    )
    # autocast_adapter_dtype (peft's default) keeps the LoRA in fp32 over a bf16/fp16 base.
    return get_peft_model(model, lora, autocast_adapter_dtype=True)


def _precision_kwargs(config: TrainConfig, device: Any) -> dict[str, Any]:
    """``from_pretrained`` arguments for ``--dtype`` and ``--quantize``."""
    import torch

    if config.quantize is None:
        dtype = config.dtype or "fp32"
        return {"dtype": getattr(torch, _TORCH_DTYPES[dtype])}
    from transformers import BitsAndBytesConfig

    compute = torch.float16 if config.dtype == "fp16" else torch.bfloat16
    quantization = BitsAndBytesConfig(  # type: ignore[no-untyped-call]
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=compute,
        # Packed weights stored in the compute dtype, so FSDP can shard them like the rest.
        bnb_4bit_quant_storage=compute,
    )
    # Each process holds its whole quantized copy on its own GPU (DDP).
    return {"quantization_config": quantization, "dtype": compute, "device_map": {"": device}}


def target_loss_module(peft_model: Any) -> Any:
    """An ``nn.Module`` whose forward gives (weighted loss sum, weight sum) of a batch."""
    import torch
    import torch.nn.functional as F

    class TargetLoss(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            rows: torch.Tensor,
            cols: torch.Tensor,
            labels: torch.Tensor,
            weights: torch.Tensor,
        ) -> tuple[torch.Tensor, torch.Tensor]:
            causal = self.inner.get_base_model()
            hidden = causal.get_decoder()(
                input_ids=input_ids, attention_mask=attention_mask, use_cache=False
            ).last_hidden_state
            logits = causal.get_output_embeddings()(hidden[rows, cols]).float()
            losses = F.cross_entropy(logits, labels, reduction="none")
            return (losses * weights).sum(), weights.sum()

    return TargetLoss(peft_model)


def collate(batch: Sequence[Encoded], pad_id: int, device: Any) -> dict[str, torch.Tensor]:
    """Right-padded ids and mask, and the (row, position) → next-token targets with weights."""
    import torch

    width = max(len(e.ids) for e in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    rows: list[int] = []
    cols: list[int] = []
    labels: list[int] = []
    weights: list[float] = []
    for row, encoded in enumerate(batch):
        n = len(encoded.ids)
        ids[row, :n] = torch.tensor(encoded.ids)
        mask[row, :n] = 1
        for pos in range(1, n):
            if encoded.weights[pos] > 0:
                rows.append(row)
                cols.append(pos - 1)  # the hidden state before a token predicts it
                labels.append(encoded.ids[pos])
                weights.append(encoded.weights[pos])
    tensors = {
        "input_ids": ids,
        "attention_mask": mask,
        "rows": torch.tensor(rows, dtype=torch.long),
        "cols": torch.tensor(cols, dtype=torch.long),
        "labels": torch.tensor(labels, dtype=torch.long),
        "weights": torch.tensor(weights, dtype=torch.float32),
    }
    return {k: v.to(device) for k, v in tensors.items()}


def trainable_state(peft_model: Any) -> dict[str, torch.Tensor]:
    """Copies of the trainable (LoRA) parameters by name."""
    return {
        name: param.detach().cpu().clone()
        for name, param in peft_model.named_parameters()
        if param.requires_grad
    }


def load_trainable_state(peft_model: Any, state: dict[str, torch.Tensor]) -> None:
    """Put :func:`trainable_state`'s tensors back (names must match exactly)."""
    import torch

    params = {n: p for n, p in peft_model.named_parameters() if p.requires_grad}
    if set(params) != set(state):
        raise ValueError("checkpoint and model have different trainable parameters")
    with torch.no_grad():
        for name, param in params.items():
            param.copy_(state[name].to(param.device))
