"""The training run: LoRA with AdamW and a linear warmup/decay, checkpointed and resumable.

The run is a pure function of its configuration and data: the batch order of each epoch comes
from (seed, epoch), and a checkpoint holds the LoRA weights, the optimizer and scheduler states,
the random generators and the step, so a run killed at any moment and resumed ends with the same
weights as one that was never interrupted (on one process; with several, each process's dropout
draws are not restored exactly).

accelerate's ``Accelerator`` places the model, so the same command trains on a CPU, one GPU, or
several GPUs under ``accelerate launch`` (batches are dealt round-robin to the processes).
"""

from __future__ import annotations

import math
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogwm.errors import ConfigError, InputError
from cogwm.simulator.train.base import resolve_base
from cogwm.simulator.train.card import plot_loss, read_card, versions, write_card
from cogwm.simulator.train.checkpoint import (
    checkpoints_dir,
    latest_checkpoint,
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from cogwm.simulator.train.config import TrainConfig
from cogwm.simulator.train.data import (
    Encoded,
    encode_all,
    encoding_key,
    load_encoded,
    manifest_hash,
    plan_batches,
    read_train_samples,
    save_encoded,
    span_weights,
)
from cogwm.simulator.train.model import (
    collate,
    load_lora_model,
    load_trainable_state,
    target_loss_module,
    trainable_state,
)

#: Encoded samples kept in the output directory while a run is unfinished.
ENCODED_PREFIX = ".encoded-"


@dataclass(frozen=True)
class TrainResult:
    """Where the adapter went and what the run did."""

    out: Path
    base_dir: Path
    steps: int
    card: dict[str, Any]
    resumed_from: int | None


class StepPlan:
    """Which samples each global step trains on (per process), from (seed, epoch) alone."""

    def __init__(self, lengths: list[int], config: TrainConfig, world: int) -> None:
        self.lengths = lengths
        self.config = config
        self.world = world
        self._epochs: list[list[list[int]]] = []
        self._starts: list[int] = [0]  # first global step of each planned epoch
        if config.max_steps is not None:
            self.total = config.max_steps
        else:
            while len(self._epochs) < config.epochs:
                self._plan_next()
            self.total = self._starts[config.epochs]

    def _plan_next(self) -> None:
        epoch = len(self._epochs)
        batches = plan_batches(self.lengths, self.config.batch_tokens, self.config.seed, epoch)
        self._epochs.append(batches)
        self._starts.append(self._starts[-1] + math.ceil(len(batches) / self.world))

    def batch(self, step: int, rank: int) -> tuple[int, list[int]]:
        """The epoch and sample indices of ``step`` for process ``rank``."""
        while self._starts[-1] <= step:
            self._plan_next()
        epoch = next(e for e in range(len(self._epochs)) if self._starts[e + 1] > step)
        batches = self._epochs[epoch]
        index = (step - self._starts[epoch]) * self.world + rank
        return epoch, batches[index % len(batches)]


def linear_schedule(total: int, warmup_ratio: float) -> Callable[[int], float]:
    """LR multiplier: linear warmup over ``warmup_ratio`` of the steps, then linear decay to 0."""
    warmup = max(1, round(total * warmup_ratio)) if warmup_ratio > 0 else 0

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return factor


def prepare_out(out: Path, resume: bool) -> None:
    """Refuse to overwrite a finished or started run unless resuming."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file")
    if resume or not out.exists():
        return
    if any(out.iterdir()):
        raise ConfigError(f"--out {out} is not empty: add --resume to continue that run")


def load_data(
    config: TrainConfig, tokenizer: Any, tokenizer_dir: Path, write_cache: bool = True
) -> tuple[list[Encoded], int, int]:
    """Encoded training samples, how many samples were read, how many were too long.

    Tokenizing a large samples file takes minutes, so the result is kept in the output
    directory until the adapter is saved: a resumed run starts training at once.
    """
    samples_file = config.samples / "train.jsonl"
    weights = span_weights(config.objective, config.state_weight)
    if not samples_file.is_file():
        raise InputError(f"{samples_file}: file not found")
    key = encoding_key(samples_file, tokenizer_dir, weights, config.max_length)
    cache = config.out / f"{ENCODED_PREFIX}{key}.npz"
    if cache.is_file():
        return load_encoded(cache)
    samples = list(read_train_samples(samples_file))
    encoded, too_long = encode_all(samples, tokenizer, weights, config.max_length)
    if not encoded:
        raise InputError(
            f"{config.samples}: no sample has a target token to learn within "
            f"--max-length {config.max_length} ({len(samples)} read, {too_long} too long)"
        )
    if write_cache:
        config.out.mkdir(parents=True, exist_ok=True)
        save_encoded(cache, encoded, len(samples), too_long)
    return encoded, len(samples), too_long


def train(config: TrainConfig, *, resume: bool = False, show_progress: bool = True) -> TrainResult:
    """Train (or resume) the LoRA run ``config`` describes and save the adapter in ``config.out``.

    Raises:
        ConfigError: ``--out`` holds another run, or the checkpoint is from other data or settings.
        InputError: Unusable samples.
    """
    samples_file = config.samples / "train.jsonl"
    if not samples_file.is_file():  # before torch loads and a GGUF base is converted (~40 s)
        raise InputError(f"{samples_file}: file not found")
    import torch
    from accelerate import Accelerator
    from transformers import AutoTokenizer

    prepare_out(config.out, resume)
    if config.threads:
        # More threads than free cores makes CPU training many times slower, not faster.
        torch.set_num_threads(config.threads)
    finished = read_card(config.out) if resume else None
    # Precision is how a step is computed, not what is trained: a run may resume under another
    # precision (e.g. moved from a CPU to a GPU), so it is not part of the run hash.
    accelerator = Accelerator(cpu=config.cpu, mixed_precision="bf16" if config.bf16 else "no")
    with accelerator.main_process_first():
        base_dir = resolve_base(config.base)
    if finished is not None:
        return TrainResult(config.out, base_dir, finished["steps"], finished, None)
    tokenizer: Any = AutoTokenizer.from_pretrained(str(base_dir))
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    encoded, n_read, too_long = load_data(
        config, tokenizer, base_dir, write_cache=accelerator.is_main_process
    )
    manifest = manifest_hash(config.samples)
    run_hash = config.run_hash(manifest)

    random.seed(config.seed)
    torch.manual_seed(config.seed)
    peft_model = load_lora_model(base_dir, config)
    params = [p for p in peft_model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    plan = StepPlan([len(e.ids) for e in encoded], config, accelerator.num_processes)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, linear_schedule(plan.total, config.warmup_ratio)
    )
    module, optimizer = accelerator.prepare(target_loss_module(peft_model), optimizer)

    state = _resume_state(config, run_hash, peft_model, optimizer, scheduler) if resume else None
    history: list[dict[str, float]] = state["history"] if state else []
    prior_wall = float(state["wall_s"]) if state else 0.0
    start = int(state["step"]) if state else 0
    started = time.monotonic()
    last_checkpoint = started

    def checkpoint(step: int) -> None:
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            tensors = {
                "lora": trainable_state(peft_model),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "rng": rng_state(),
            }
            meta = {
                "step": step,
                "run_hash": run_hash,
                "history": history,
                "wall_s": prior_wall + time.monotonic() - started,
            }
            save_checkpoint(config.out, step, tensors, meta)

    with _progress(show_progress and accelerator.is_main_process, plan.total, start) as bar:
        for step in range(start, plan.total):
            epoch, indices = plan.batch(step, accelerator.process_index)
            t0 = time.monotonic()
            loss, tokens = _train_step(
                module, optimizer, scheduler, accelerator, params, config,
                collate([encoded[i] for i in indices], pad_id, accelerator.device),
            )  # fmt: skip
            elapsed = time.monotonic() - t0
            history.append(
                {"step": step + 1, "epoch": epoch, "loss": loss, "tokens": tokens, "s": elapsed}
            )
            bar(step + 1, loss, tokens / max(elapsed, 1e-9))
            now = time.monotonic()
            by_steps = config.checkpoint_steps and (step + 1) % config.checkpoint_steps == 0
            if (by_steps or now - last_checkpoint >= config.checkpoint_minutes * 60) and (
                step + 1 < plan.total
            ):
                checkpoint(step + 1)
                last_checkpoint = now
    accelerator.wait_for_everyone()
    card = _card(config, base_dir, manifest, run_hash, n_read, too_long, encoded, plan, history)
    card["wall_s"] = round(prior_wall + time.monotonic() - started, 1)
    card["resumed_from_step"] = start or None
    if accelerator.is_main_process:
        inner = accelerator.unwrap_model(module)
        card["validation"] = validation_loss(inner, config, tokenizer, pad_id, accelerator.device)
        _save_adapter(config.out, accelerator.unwrap_model(module).inner, card, history)
    return TrainResult(config.out, base_dir, plan.total, card, start or None)


def validation_loss(
    module: Any, config: TrainConfig, tokenizer: Any, pad_id: int, device: Any
) -> dict[str, Any] | None:
    """The weighted target loss on a seeded subset of ``val.jsonl`` (None without that file)."""
    import torch

    path = config.samples / "val.jsonl"
    if not config.val_samples or not path.is_file():
        return None
    samples = list(read_train_samples(path))
    chosen = random.Random(config.seed).sample(samples, min(config.val_samples, len(samples)))
    weights = span_weights(config.objective, config.state_weight)
    encoded, too_long = encode_all(chosen, tokenizer, weights, config.max_length)
    if not encoded:
        return None
    batches = plan_batches([len(e.ids) for e in encoded], config.batch_tokens, config.seed, 0)
    loss_sum = weight_sum = 0.0
    module.eval()
    with torch.no_grad():
        for indices in batches:
            batch_loss, batch_weight = module(
                **collate([encoded[i] for i in indices], pad_id, device)
            )
            loss_sum += float(batch_loss)
            weight_sum += float(batch_weight)
    return {
        "samples": len(encoded),
        "too_long": too_long,
        "target_tokens": sum(e.n_target for e in encoded),
        "loss": round(loss_sum / weight_sum, 4) if weight_sum else None,
    }


def _train_step(
    module: Any,
    optimizer: Any,
    scheduler: Any,
    accelerator: Any,
    params: list[Any],
    config: TrainConfig,
    batch: dict[str, Any],
) -> tuple[float, int]:
    module.train()
    loss_sum, weight_sum = module(**batch)
    loss = loss_sum / weight_sum.clamp_min(1e-8)
    accelerator.backward(loss)
    accelerator.clip_grad_norm_(params, config.max_grad_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return float(loss.detach()), int(batch["attention_mask"].sum())


def _resume_state(
    config: TrainConfig, run_hash: str, peft_model: Any, optimizer: Any, scheduler: Any
) -> dict[str, Any] | None:
    path = latest_checkpoint(config.out)
    if path is None:
        return None
    tensors, meta = load_checkpoint(path)
    if meta["run_hash"] != run_hash:
        raise ConfigError(
            f"{path} is a checkpoint of other data or settings (run {meta['run_hash']}, "
            f"now {run_hash}); use the same options or another --out"
        )
    load_trainable_state(peft_model, tensors["lora"])
    optimizer.load_state_dict(tensors["optimizer"])
    scheduler.load_state_dict(tensors["scheduler"])
    set_rng_state(tensors["rng"])
    return meta


def _card(
    config: TrainConfig,
    base_dir: Path,
    manifest: str,
    run_hash: str,
    n_read: int,
    too_long: int,
    encoded: list[Encoded],
    plan: StepPlan,
    history: list[dict[str, float]],
) -> dict[str, Any]:
    tokens = sum(h["tokens"] for h in history)
    seconds = sum(h["s"] for h in history)
    tail = history[-max(1, len(history) // 10) :]
    return {
        "data": {
            "samples_dir": str(config.samples),
            "manifest_sha256": manifest,
            "samples_read": n_read,
            "samples_too_long": too_long,
            "samples_used": len(encoded),
            "target_tokens": sum(e.n_target for e in encoded),
        },
        "base": {"spec": config.base, "model_dir": str(base_dir)},
        "hyperparameters": config.model_dump(
            mode="json", exclude={"samples", "base", "out", "cpu", "threads"}
        ),
        "run_hash": run_hash,
        "world_size": plan.world,
        "steps": plan.total,
        "tokens_seen": int(tokens),
        "tokens_per_s": round(tokens / seconds, 1) if seconds else None,
        "s_per_step": round(seconds / len(history), 3) if history else None,
        "final_loss": round(sum(h["loss"] for h in tail) / len(tail), 4) if tail else None,
        "versions": versions(),
        "loss_history": [[int(h["step"]), round(h["loss"], 5)] for h in history],
    }


def _save_adapter(out: Path, peft_model: Any, card: dict[str, Any], history: list[Any]) -> None:
    peft_model.save_pretrained(str(out))
    plot_loss(out, history, f"{card['base']['spec']} · {card['hyperparameters']['objective']}")
    write_card(out, card)
    shutil.rmtree(checkpoints_dir(out), ignore_errors=True)
    for cache in out.glob(f"{ENCODED_PREFIX}*.npz"):
        cache.unlink()


class _Bar:
    """A rich progress bar with loss, tokens/s and ETA (a no-op when disabled)."""

    def __init__(self, enabled: bool, total: int, start: int) -> None:
        from rich.console import Console

        self.progress: Any = None
        self.task: Any = None
        self.total = total
        self.started = time.monotonic()
        self.start_step = start
        self.last_line = 0.0
        # Without a terminal (a log file) a line every minute replaces the live bar.
        self.console = Console(stderr=True) if enabled else None
        if self.console is not None and self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(
                TextColumn("train"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
            )
            self.task = self.progress.add_task("train", total=total, completed=start, info="")

    def __enter__(self) -> Callable[[int, float, float], None]:
        if self.progress is not None:
            self.progress.start()
        return self.update

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def update(self, step: int, loss: float, tokens_per_s: float) -> None:
        info = f"loss {loss:.3f} · {tokens_per_s:.0f} tok/s"
        if self.progress is not None:
            self.progress.update(self.task, completed=step, info=info)
        elif self.console is not None:
            now = time.monotonic()
            if now - self.last_line >= 60 or step == self.total:
                self.last_line = now
                done = step - self.start_step
                eta = (now - self.started) / done * (self.total - step) if done else 0.0
                self.console.print(
                    f"train {step}/{self.total} {info} · ETA {eta / 60:.1f} min", soft_wrap=True
                )


def _progress(enabled: bool, total: int, start: int) -> _Bar:
    return _Bar(enabled, total, start)
