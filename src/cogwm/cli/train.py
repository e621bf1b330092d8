"""``cogwm train``: LoRA-train the world model on samples; ``cogwm train export-gguf``.

On several GPUs the same command runs under accelerate::

    accelerate launch --config_file examples/accelerate/ddp.yaml -m cogwm train \
        --samples S --base B --out A

(``--num_processes 1 --cpu`` runs it on the CPU the same way; ``examples/accelerate/`` has the
single-GPU, DDP and FSDP configurations).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cogwm.cli.common import console, err_console, print_json, require_resumable
from cogwm.cli.train_transition import train_transition
from cogwm.errors import ConfigError

app = typer.Typer(
    help="Train the world model (LoRA) on a samples directory, and export the adapter for "
    "llama.cpp.",
)


@app.callback(invoke_without_command=True)
def train(
    ctx: typer.Context,
    samples: Annotated[
        Path | None,
        typer.Option(
            help="Samples directory from `cogwm samples build` (train.jsonl).", show_default=False
        ),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            help="Base model: a GGUF alias (smollm2, gemma3-270m), a .gguf file (dequantized "
            "once and cached) or a transformers model directory.",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Adapter output directory.", show_default=False)
    ] = None,
    objective: Annotated[
        str, typer.Option(help="joint (state + utterance) or utt-only (utterance spans only).")
    ] = "joint",
    epochs: Annotated[int, typer.Option(min=1, help="Passes over the training samples.")] = 1,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="Stop after this many steps (overrides --epochs).")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run in --out from its last checkpoint.")
    ] = False,
    state_weight: Annotated[
        float, typer.Option(min=0.0, help="Loss weight of state tokens (utterance = 1).")
    ] = 1.0,
    lr: Annotated[float, typer.Option(help="Peak learning rate (AdamW).")] = 2e-4,
    batch_tokens: Annotated[
        int, typer.Option(min=16, help="Padded tokens per batch (length-bucketed batches).")
    ] = 4096,
    grad_accum: Annotated[
        int,
        typer.Option(
            min=1,
            help="Micro-batches per optimizer step: the effective batch is --batch-tokens x "
            "this x processes.",
        ),
    ] = 1,
    max_length: Annotated[
        int, typer.Option(min=16, help="Samples longer than this (tokens) are left out.")
    ] = 2048,
    corpus_mix: Annotated[
        str,
        typer.Option(
            help="proportional (each corpus as often as its share of the samples) or uniform "
            "(each draw picks a corpus with equal probability, then its next sample in a seeded "
            "order without replacement)."
        ),
    ] = "proportional",
    neutral_keep: Annotated[
        float,
        typer.Option(
            help="Keep this seeded fraction (0 < F <= 1) of the samples whose target emotion is "
            "neutral (DailyDialog's 'no emotion') or explicitly empty."
        ),
    ] = 1.0,
    state_dropout: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Seeded share of the samples whose prompt withholds the start and previous "
            "states ('not shown'), so the model must read the turns.",
        ),
    ] = 0.0,
    state_corruption: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Seeded share of the samples whose prompt shows another sample's states (same "
            "task) instead of their own.",
        ),
    ] = 0.0,
    change_weight: Annotated[
        float,
        typer.Option(
            help="Multiplies the loss weight of the state tokens of the fields whose gold "
            "differs from the previous state shown.",
        ),
    ] = 1.0,
    change_share: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Share of the draws taken from the samples whose gold state differs from the "
            "previous state shown (default: as the pool has them).",
            show_default=False,
        ),
    ] = None,
    warmup_ratio: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of the steps spent warming up.")
    ] = 0.03,
    lora_r: Annotated[int, typer.Option(min=1, help="LoRA rank.")] = 16,
    lora_alpha: Annotated[int, typer.Option(min=1, help="LoRA scaling alpha.")] = 32,
    lora_dropout: Annotated[
        float, typer.Option(min=0.0, max=0.99, help="Dropout on the LoRA layers.")
    ] = 0.05,
    seed: Annotated[int, typer.Option(help="Seed of initialisation, dropout and data order.")] = 0,
    checkpoint_minutes: Annotated[
        float, typer.Option(help="Checkpoint at least this often (minutes).")
    ] = 10.0,
    checkpoint_steps: Annotated[
        int | None, typer.Option(min=1, help="Also checkpoint every this many steps.")
    ] = None,
    threads: Annotated[
        int | None, typer.Option(min=1, help="CPU threads for torch (default: all cores).")
    ] = None,
    cpu: Annotated[bool, typer.Option("--cpu", help="Train on the CPU even with a GPU.")] = False,
    val_samples: Annotated[
        int, typer.Option(min=0, help="val.jsonl samples scored at the end (0: none).")
    ] = 128,
    gradient_checkpointing: Annotated[
        bool,
        typer.Option(
            "--gradient-checkpointing", help="Recompute activations: far less memory, slower."
        ),
    ] = False,
    bf16: Annotated[
        bool,
        typer.Option(
            "--bf16",
            help="bf16 mixed precision: faster on GPUs and CPUs with bf16 instructions.",
        ),
    ] = False,
    dtype: Annotated[
        str | None,
        typer.Option(
            help="Precision of the frozen base: fp32 (default), bf16 or fp16 (CUDA); the LoRA "
            "stays fp32.",
            show_default=False,
        ),
    ] = None,
    quantize: Annotated[
        str | None,
        typer.Option(
            help="4bit: QLoRA, the base in NF4 with double quantization, computing in bf16 "
            "(CUDA and bitsandbytes: the 'gpu' extra).",
            show_default=False,
        ),
    ] = None,
    gguf: Annotated[
        bool, typer.Option("--gguf", help="Also write ADAPTER/adapter.gguf for llama.cpp.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the training card as JSON.")
    ] = False,
) -> None:
    """Train a LoRA adapter of the world model (loss on target tokens only; resumable)."""
    if ctx.invoked_subcommand is not None:
        return
    if samples is None or base is None or out is None:
        raise ConfigError("cogwm train needs --samples, --base and --out (see --help)")
    if objective not in ("joint", "utt-only"):
        raise ConfigError(f"--objective must be joint or utt-only, not {objective!r}")
    require_resumable(out, resume=resume)
    from cogwm.simulator.train.config import BASE_DTYPES, QUANTIZE_MODES, TrainConfig
    from cogwm.simulator.train.loop import train as run
    from cogwm.simulator.train.mix import CORPUS_MIXES

    if corpus_mix not in CORPUS_MIXES:
        raise ConfigError(f"--corpus-mix must be {' or '.join(CORPUS_MIXES)}, not {corpus_mix!r}")
    if dtype is not None and dtype not in BASE_DTYPES:
        raise ConfigError(f"--dtype must be {', '.join(BASE_DTYPES)}, not {dtype!r}")
    if quantize is not None and quantize not in QUANTIZE_MODES:
        raise ConfigError(f"--quantize must be {' or '.join(QUANTIZE_MODES)}, not {quantize!r}")
    if not 0 < neutral_keep <= 1:  # NaN fails too
        raise ConfigError(f"--neutral-keep must be in (0, 1], not {neutral_keep:g}")
    if not change_weight > 0:  # NaN fails too
        raise ConfigError(f"--change-weight must be above 0, not {change_weight:g}")
    if state_dropout + state_corruption > 1:
        raise ConfigError("--state-dropout plus --state-corruption must not exceed 1")

    config = TrainConfig(
        samples=samples,
        base=base,
        out=out,
        objective=objective,
        epochs=epochs,
        max_steps=max_steps,
        state_weight=state_weight,
        lr=lr,
        batch_tokens=batch_tokens,
        grad_accum=grad_accum,
        max_length=max_length,
        corpus_mix=corpus_mix,
        neutral_keep=neutral_keep,
        state_dropout=state_dropout,
        state_corruption=state_corruption,
        change_weight=change_weight,
        change_share=change_share,
        warmup_ratio=warmup_ratio,
        lora_r=lora_r,
        lora_alpha=lora_alpha,
        lora_dropout=lora_dropout,
        seed=seed,
        checkpoint_minutes=checkpoint_minutes,
        checkpoint_steps=checkpoint_steps,
        threads=threads,
        cpu=cpu,
        gradient_checkpointing=gradient_checkpointing,
        bf16=bf16,
        dtype=dtype,
        quantize=quantize,
        val_samples=val_samples,
    )
    result = run(config, resume=resume, show_progress=not quiet and not as_json)
    if gguf:
        _export(result.out, result.out / "adapter.gguf", result.base_dir, "f16", quiet=as_json)
    if as_json:
        print_json({k: v for k, v in result.card.items() if k != "loss_history"})
        return
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
