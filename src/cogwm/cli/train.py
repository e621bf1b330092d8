"""``cogwm train``: LoRA-train the world model on samples; ``cogwm train export-gguf``.

On several GPUs the same command runs under accelerate::

    accelerate launch --config_file examples/accelerate/ddp.yaml -m cogwm train \
        --samples S --base B --out A

(``--num_processes 1 --cpu`` runs it on the CPU the same way; ``examples/accelerate/`` has the
single-GPU, DDP and FSDP configurations).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cogwm.cli.common import console, err_console, print_json, require_resumable
from cogwm.cli.options import JsonOption, ResumeOption, SeedOption
from cogwm.cli.train_transition import train_transition
from cogwm.errors import ConfigError

if TYPE_CHECKING:
    from cogwm.simulator.train.config import TrainConfig
    from cogwm.simulator.train.loop import TrainResult

app = typer.Typer(
    help="Train the world model (LoRA) on a samples directory, and export the adapter for "
    "llama.cpp.",
)


SamplesOption = Annotated[
    Path | None,
    typer.Option(
        help="Samples directory from `cogwm samples build` (train.jsonl).", show_default=False
    ),
]
BaseOption = Annotated[
    str | None,
    typer.Option(
        help="Base model: a GGUF alias (smollm2, gemma3-270m), a .gguf file (dequantized "
        "once and cached) or a transformers model directory.",
        show_default=False,
    ),
]
AdapterOutOption = Annotated[
    Path | None, typer.Option(help="Adapter output directory.", show_default=False)
]
ObjectiveOption = Annotated[
    str, typer.Option(help="joint (state + utterance) or utt-only (utterance spans only).")
]
EpochsOption = Annotated[int, typer.Option(min=1, help="Passes over the training samples.")]
MaxStepsOption = Annotated[
    int | None, typer.Option(min=1, help="Stop after this many steps (overrides --epochs).")
]
StateWeightOption = Annotated[
    float, typer.Option(min=0.0, help="Loss weight of state tokens (utterance = 1).")
]
LrOption = Annotated[float, typer.Option(help="Peak learning rate (AdamW).")]
BatchTokensOption = Annotated[
    int, typer.Option(min=16, help="Padded tokens per batch (length-bucketed batches).")
]
GradAccumOption = Annotated[
    int,
    typer.Option(
        min=1,
        help="Micro-batches per optimizer step: the effective batch is --batch-tokens x "
        "this x processes.",
    ),
]
MaxLengthOption = Annotated[
    int, typer.Option(min=16, help="Samples longer than this (tokens) are left out.")
]
CorpusMixOption = Annotated[
    str,
    typer.Option(
        help="proportional (each corpus as often as its share of the samples) or uniform "
        "(each draw picks a corpus with equal probability, then its next sample in a seeded "
        "order without replacement)."
    ),
]
NeutralKeepOption = Annotated[
    float,
    typer.Option(
        help="Keep this seeded fraction (0 < F <= 1) of the samples whose target emotion is "
        "neutral (DailyDialog's 'no emotion') or explicitly empty."
    ),
]
StateDropoutOption = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Seeded share of the samples whose prompt withholds the start and previous "
        "states ('not shown'), so the model must read the turns.",
    ),
]
StateCorruptionOption = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Seeded share of the samples whose prompt shows another sample's states (same "
        "task) instead of their own.",
    ),
]
ChangeWeightOption = Annotated[
    float,
    typer.Option(
        help="Multiplies the loss weight of the state tokens of the fields whose gold "
        "differs from the previous state shown.",
    ),
]
ChangeShareOption = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Share of the draws taken from the samples whose gold state differs from the "
        "previous state shown (default: as the pool has them).",
        show_default=False,
    ),
]
WarmupRatioOption = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="Share of the steps spent warming up.")
]
LoraROption = Annotated[int, typer.Option(min=1, help="LoRA rank.")]
LoraAlphaOption = Annotated[int, typer.Option(min=1, help="LoRA scaling alpha.")]
LoraDropoutOption = Annotated[
    float, typer.Option(min=0.0, max=0.99, help="Dropout on the LoRA layers.")
]
CheckpointMinutesOption = Annotated[
    float, typer.Option(help="Checkpoint at least this often (minutes).")
]
CheckpointStepsOption = Annotated[
    int | None, typer.Option(min=1, help="Also checkpoint every this many steps.")
]
ThreadsOption = Annotated[
    int | None, typer.Option(min=1, help="CPU threads for torch (default: all cores).")
]
CpuOption = Annotated[bool, typer.Option("--cpu", help="Train on the CPU even with a GPU.")]
ValSamplesOption = Annotated[
    int, typer.Option(min=0, help="val.jsonl samples scored at the end (0: none).")
]
GradientCheckpointingOption = Annotated[
    bool,
    typer.Option(
        "--gradient-checkpointing", help="Recompute activations: far less memory, slower."
    ),
]
Bf16Option = Annotated[
    bool,
    typer.Option(
        "--bf16", help="bf16 mixed precision: faster on GPUs and CPUs with bf16 instructions."
    ),
]
DtypeOption = Annotated[
    str | None,
    typer.Option(
        help="Precision of the frozen base: fp32 (default), bf16 or fp16 (CUDA); the LoRA "
        "stays fp32.",
        show_default=False,
    ),
]
QuantizeOption = Annotated[
    str | None,
    typer.Option(
        help="4bit: QLoRA, the base in NF4 with double quantization, computing in bf16 "
        "(CUDA and bitsandbytes: the 'gpu' extra).",
        show_default=False,
    ),
]
GgufOption = Annotated[
    bool, typer.Option("--gguf", help="Also write ADAPTER/adapter.gguf for llama.cpp.")
]
QuietOption = Annotated[bool, typer.Option("--quiet", help="No progress bar.")]


@app.callback(invoke_without_command=True)
def train(
    ctx: typer.Context,
    samples: SamplesOption = None,
    base: BaseOption = None,
    out: AdapterOutOption = None,
    objective: ObjectiveOption = "joint",
    epochs: EpochsOption = 1,
    max_steps: MaxStepsOption = None,
    resume: ResumeOption = False,
    state_weight: StateWeightOption = 1.0,
    lr: LrOption = 2e-4,
    batch_tokens: BatchTokensOption = 4096,
    grad_accum: GradAccumOption = 1,
    max_length: MaxLengthOption = 2048,
    corpus_mix: CorpusMixOption = "proportional",
    neutral_keep: NeutralKeepOption = 1.0,
    state_dropout: StateDropoutOption = 0.0,
    state_corruption: StateCorruptionOption = 0.0,
    change_weight: ChangeWeightOption = 1.0,
    change_share: ChangeShareOption = None,
    warmup_ratio: WarmupRatioOption = 0.03,
    lora_r: LoraROption = 16,
    lora_alpha: LoraAlphaOption = 32,
    lora_dropout: LoraDropoutOption = 0.05,
    seed: SeedOption = 0,
    checkpoint_minutes: CheckpointMinutesOption = 10.0,
    checkpoint_steps: CheckpointStepsOption = None,
    threads: ThreadsOption = None,
    cpu: CpuOption = False,
    val_samples: ValSamplesOption = 128,
    gradient_checkpointing: GradientCheckpointingOption = False,
    bf16: Bf16Option = False,
    dtype: DtypeOption = None,
    quantize: QuantizeOption = None,
    gguf: GgufOption = False,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Train a LoRA adapter of the world model (loss on target tokens only; resumable)."""
    # Taken first, so that it holds the options only: they are named as TrainConfig's fields.
    options = dict(locals())
    if ctx.invoked_subcommand is not None:
        return
    if samples is None or base is None or out is None:
        raise ConfigError("cogwm train needs --samples, --base and --out (see --help)")
    if objective not in ("joint", "utt-only"):
        raise ConfigError(f"--objective must be joint or utt-only, not {objective!r}")
    require_resumable(out, resume=resume)
    from cogwm.simulator.train.loop import train as run

    result = run(_train_config(options), resume=resume, show_progress=not quiet and not as_json)
    if gguf:
        _export(result.out, result.out / "adapter.gguf", result.base_dir, "f16", quiet=as_json)
    if as_json:
        print_json({k: v for k, v in result.card.items() if k != "loss_history"})
        return
    _print_card(result)


def _train_config(options: dict[str, Any]) -> TrainConfig:
    """The training configuration from the command's options, after checking the choices."""
    from cogwm.simulator.train.config import BASE_DTYPES, QUANTIZE_MODES, TrainConfig
    from cogwm.simulator.train.mix import CORPUS_MIXES

    corpus_mix, dtype, quantize = options["corpus_mix"], options["dtype"], options["quantize"]
    neutral_keep = options["neutral_keep"]
    if corpus_mix not in CORPUS_MIXES:
        raise ConfigError(f"--corpus-mix must be {' or '.join(CORPUS_MIXES)}, not {corpus_mix!r}")
    if dtype is not None and dtype not in BASE_DTYPES:
        raise ConfigError(f"--dtype must be {', '.join(BASE_DTYPES)}, not {dtype!r}")
    if quantize is not None and quantize not in QUANTIZE_MODES:
        raise ConfigError(f"--quantize must be {' or '.join(QUANTIZE_MODES)}, not {quantize!r}")
    if not 0 < neutral_keep <= 1:  # NaN fails too
        raise ConfigError(f"--neutral-keep must be in (0, 1], not {neutral_keep:g}")
    change_weight, dropout = options["change_weight"], options["state_dropout"]
    if not change_weight > 0:  # NaN fails too
        raise ConfigError(f"--change-weight must be above 0, not {change_weight:g}")
    if dropout + options["state_corruption"] > 1:
        raise ConfigError("--state-dropout plus --state-corruption must not exceed 1")
    fields = {name: value for name, value in options.items() if name in TrainConfig.model_fields}
    return TrainConfig(**fields)


def _print_card(result: TrainResult) -> None:
    """The training card in a few lines: steps, loss, speed, data seen, validation, address."""
    card = result.card
    resumed = f", resumed at step {result.resumed_from}" if result.resumed_from else ""
    console.print(
        f"adapter: {result.out} ({card['steps']} steps{resumed}, final loss {card['final_loss']}, "
        f"{card['tokens_per_s']} tok/s, {card['wall_s']} s)",
        soft_wrap=True,
    )
    seen = card.get("data", {}).get("seen")  # absent from cards of earlier versions
    if seen and seen["samples"]:
        corpora = ", ".join(f"{name} {n}" for name, n in seen["by_corpus"].items())
        console.print(
            f"trained on {seen['samples']} samples ({corpora}), "
            f"{seen['no_emotion_share']:.1%} of them no-emotion",
            soft_wrap=True,
        )
    validation = card.get("validation")
    if validation:
        console.print(
            f"validation loss {validation['loss']} on {validation['samples']} val.jsonl samples",
            soft_wrap=True,
        )
    console.print(f"serve it: hf:{result.base_dir}+{result.out}", soft_wrap=True)


app.command("transition")(train_transition)


@app.command("export-gguf")
def export_gguf(
    adapter: Annotated[Path, typer.Argument(help="A trained (peft LoRA) adapter directory.")],
    out: Annotated[Path, typer.Option(help="The GGUF LoRA file to write.", show_default=False)],
    base: Annotated[
        str | None,
        typer.Option(
            help="The base it was trained on (default: the one recorded in the adapter).",
            show_default=False,
        ),
    ] = None,
    dtype: Annotated[str, typer.Option(help="f16 (half the size) or f32.")] = "f16",
) -> None:
    """Write ADAPTER as a GGUF LoRA for llama.cpp: llamacpp:<base>+<file.gguf>."""
    if dtype not in ("f16", "f32"):
        raise ConfigError(f"--dtype must be f16 or f32, not {dtype!r}")
    base_dir = None
    if base is not None:
        from cogwm.simulator.train.base import resolve_base

        base_dir = resolve_base(base)
    _export(adapter, out, base_dir, dtype, quiet=False)


def _export(adapter: Path, out: Path, base_dir: Path | None, dtype: str, *, quiet: bool) -> None:
    from cogwm.simulator.train.gguf_export import export_gguf as write

    summary = write(adapter, out, base_dir=base_dir, dtype=dtype)  # type: ignore[arg-type]
    if not quiet:
        err_console.print(
            f"wrote {summary.path} ({summary.tensors} tensors, r {summary.rank}, "
            f"alpha {summary.alpha:g}, {summary.bytes / 1e6:.1f} MB)",
            soft_wrap=True,
        )


@app.command("merge-gguf")
def merge_gguf(
    adapter: Annotated[Path, typer.Argument(help="A GGUF LoRA adapter (from export-gguf).")],
    out: Annotated[Path, typer.Option(help="The merged GGUF model to write.", show_default=False)],
    base: Annotated[
        str, typer.Option(help="The base GGUF the adapter applies over: an alias or a file.")
    ] = "smollm2",
    out_type: Annotated[
        str,
        typer.Option(
            "--type",
            help="Type of the merged tensors: q8_0, f16, f32, or base (the base tensor's own; a "
            "4-bit base loses most of the adapter).",
        ),
    ] = "q8_0",
) -> None:
    """Fold ADAPTER into the base's weights: one GGUF model, llamacpp:<file.gguf>, no adapter."""
    from cogwm.models.gguf_merge import merge_gguf as write
    from cogwm.models.llamacpp import resolve_gguf

    _, base_file = resolve_gguf(base)
    summary = write(base_file, adapter, out, out_type=out_type)  # type: ignore[arg-type]
    err_console.print(f"wrote {summary.line()}", soft_wrap=True)
