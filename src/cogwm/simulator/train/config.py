"""The settings of a training run (what the command line sets)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cogwm.simulator.train.data import Objective
from cogwm.simulator.train.mix import DATA_ORDER, CorpusMix

#: How the base model's weights are held: fp32, or bf16/fp16 (half the memory; GPUs).
BaseDtype = Literal["fp32", "bf16", "fp16"]
BASE_DTYPES: tuple[BaseDtype, ...] = ("fp32", "bf16", "fp16")
#: Quantization of the frozen base: 4-bit NF4 with double quantization (QLoRA, bitsandbytes).
Quantize = Literal["4bit"]
QUANTIZE_MODES: tuple[Quantize, ...] = ("4bit",)
#: Settings added after runs were checkpointed with them absent: left out of the run hash while
#: at their default, so such a checkpoint still resumes.
_HASHED_ONLY_IF_SET = {
    "grad_accum": 1,
    "quantize": None,
    "state_dropout": 0.0,
    "state_corruption": 0.0,
    "change_weight": 1.0,
    "change_share": None,
}


class TrainConfig(BaseModel):
    """Everything that defines a LoRA run of the world model."""

    model_config = ConfigDict(extra="forbid")

    samples: Path = Field(description="Samples directory (train.jsonl, manifest.json).")
    base: str = Field(description="Base model: HF directory, .gguf file or GGUF alias.")
    out: Path = Field(description="Adapter output directory.")
    objective: Objective = "joint"
    epochs: int = Field(default=1, ge=1)
    max_steps: int | None = Field(default=None, ge=1, description="Overrides epochs.")
    state_weight: float = Field(default=1.0, ge=0, description="Loss weight of state tokens.")
    lr: float = Field(default=2e-4, gt=0)
    weight_decay: float = Field(default=0.0, ge=0)
    warmup_ratio: float = Field(default=0.03, ge=0, le=1)
    max_grad_norm: float = Field(default=1.0, gt=0)
    batch_tokens: int = Field(
        default=4096, ge=16, description="Padded tokens per batch (one micro-batch, per process)."
    )
    grad_accum: int = Field(
        default=1,
        ge=1,
        description="Micro-batches per optimizer step and process: the effective batch is "
        "batch_tokens x grad_accum x processes.",
    )
    max_length: int = Field(default=2048, ge=16, description="Longer samples are left out.")
    corpus_mix: CorpusMix = Field(
        default="proportional",
        description="How draws pick a corpus: proportional to its size, or uniform (each corpus "
        "equally often; see cogwm.simulator.train.mix).",
    )
    neutral_keep: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="Seeded fraction of the no-emotion samples (target emotion neutral or "
        "explicitly empty) kept in the pool.",
    )
    state_dropout: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Seeded share of the samples whose prompt withholds the start and previous "
        "states (see cogwm.simulator.train.states).",
    )
    state_corruption: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Seeded share of the samples whose prompt shows the states of another "
        "sample of the same task instead of their own.",
    )
    change_weight: float = Field(
        default=1.0,
        gt=0,
        description="Multiplies the loss weight of the state tokens of the fields whose gold "
        "differs from the previous state shown.",
    )
    change_share: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Share of the draws taken from the samples whose gold state differs from "
        "the previous state shown (default: as the pool has them).",
    )
    lora_r: int = Field(default=16, ge=1)
    lora_alpha: int = Field(default=32, ge=1)
    lora_dropout: float = Field(default=0.05, ge=0, lt=1)
    seed: int = 0
    checkpoint_minutes: float = Field(default=10.0, gt=0)
    checkpoint_steps: int | None = Field(default=None, ge=1)
    cpu: bool = Field(default=False, description="Train on the CPU even where a GPU exists.")
    val_samples: int = Field(
        default=128, ge=0, description="Validation samples scored at the end (0: none)."
    )
    gradient_checkpointing: bool = Field(
        default=False, description="Recompute activations in backward: far less memory, slower."
    )
    bf16: bool = Field(
        default=False,
        description="bf16 mixed precision (autocast; weights and LoRA stay fp32): faster on "
        "GPUs and on CPUs with bf16 instructions (AVX512-BF16, AMX).",
    )
    dtype: BaseDtype | None = Field(
        default=None,
        description="Precision the frozen base is loaded in (default fp32, bf16 with "
        "--quantize); the LoRA weights stay fp32.",
    )
    quantize: Quantize | None = Field(
        default=None,
        description="4bit: QLoRA, the frozen base quantized to NF4 with double quantization "
        "(bitsandbytes, CUDA only).",
    )
    threads: int | None = Field(
        default=None, ge=1, description="torch CPU threads (default: torch's, all cores)."
    )

    @model_validator(mode="after")
    def _shares_fit(self) -> TrainConfig:
        if self.state_dropout + self.state_corruption > 1:
            raise ValueError("--state-dropout plus --state-corruption must not exceed 1")
        return self

    def run_hash(self, manifest: str) -> str:
        """What a resumed run must share with the interrupted one: data and hyper-parameters.

        The micro-batches per step and the base's quantization are part of it (they change what
        a step trains on and what is trained); the precision of a step is not (a run may resume
        on other hardware).
        """
        fixed = self.model_dump(
            mode="json",
            exclude={
                "samples",
                "out",
                "checkpoint_minutes",
                "checkpoint_steps",
                "cpu",
                "threads",
                "gradient_checkpointing",
                "bf16",
                "dtype",
                "val_samples",
            },
        )
        for name, default in _HASHED_ONLY_IF_SET.items():
            if fixed[name] == default:
                del fixed[name]
        fixed["manifest"] = manifest
        # How draws become batches: a checkpoint of a run that ordered its data otherwise
        # cannot continue this one's order.
        fixed["data_order"] = DATA_ORDER
        return hashlib.sha256(json.dumps(fixed, sort_keys=True).encode()).hexdigest()[:16]
