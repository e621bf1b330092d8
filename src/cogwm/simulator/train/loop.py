"""The training run: LoRA with AdamW and a linear warmup/decay, checkpointed and resumable.

The run is a pure function of its configuration and data: the batch order comes from the seed,
``--corpus-mix``, ``--neutral-keep`` and ``--change-share`` (:mod:`cogwm.simulator.train.mix`),
what each sample shows from the seed and its id (``--state-dropout``, ``--state-corruption``:
:mod:`cogwm.simulator.train.states`), and a checkpoint
holds the LoRA weights, the optimizer and scheduler states, the random generators and the step
(the batches are planned again from the seed on resume), so a run killed at any moment and
resumed ends with the same weights as one that was never interrupted (on one process; with
several, each process's dropout draws are not restored exactly).

accelerate's ``Accelerator`` places the model, so the same command trains on a CPU, one GPU, or
several GPUs under ``accelerate launch`` (batches are dealt round-robin to the processes, and
with ``--grad-accum N`` each process takes N of them per optimizer step). Under an FSDP launch
the checkpoints and the adapter are written from the gathered LoRA and optimizer state
(:mod:`cogwm.simulator.train.sharded`); DeepSpeed and Megatron-LM launches are refused.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogwm.errors import ConfigError, InputError
from cogwm.progress import ProgressBar
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
    LazyEncoder,
    encode_all,
    encoding_key,
    load_encoded,
    manifest_hash,
    plan_batches,
    read_train_samples,
    save_encoded,
    span_weights,
)
from cogwm.simulator.train.mix import (
    Batch,
    BatchStream,
    SampleIndex,
    draw_order,
    index_samples,
    mix_counts,
    select_pool,
)
from cogwm.simulator.train.model import (
    check_precision,
    collate,
    load_lora_model,
    target_loss_module,
)
from cogwm.simulator.train.sharded import (
    adapter_writer,
    gathered_lora,
    is_fsdp,
    load_lora,
    load_optimizer,
    lora_state,
    optimizer_state,
    use_lora_wrap_policy,
)
from cogwm.simulator.train.states import StateOptions, TrainingView, donor_groups, state_view

#: Encoded samples kept in the output directory while a run is unfinished
#: (``.encoded-<key>-<NNNNNN>.npz``, one file per checkpoint with the samples encoded since).
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
    """Which samples each optimizer step trains on (per process and micro-batch): the run's
    batches (:class:`~cogwm.simulator.train.mix.BatchStream`) dealt round-robin to the
    processes, ``grad_accum`` of them to each process per step.

    Step ``s`` takes the run's batches ``s·W·A`` to ``(s+1)·W·A - 1`` (W processes, A
    micro-batches): micro-batch ``m`` of process ``r`` is batch ``s·W·A + m·W + r``. So a step
    trains on the same batches whatever the split between processes and accumulation.

    With ``--max-steps`` the batches are planned as the steps need them; with ``--epochs`` the
    step count (which the learning-rate schedule needs) comes from planning every epoch first;
    the slots of the last step past the end wrap round to the first batches.
    """

    def __init__(self, stream: BatchStream, config: TrainConfig, world: int) -> None:
        self.stream = stream
        self.world = world
        self.accum = config.grad_accum
        self.wrap: int | None = None  # batches of all epochs; later steps' slots wrap round
        if config.max_steps is not None:
            self.total = config.max_steps
        else:
            self.wrap = stream.plan_epochs(config.epochs)
            self.total = math.ceil(self.wrap / (world * self.accum))

    def batch(self, step: int, rank: int, micro: int = 0) -> Batch:
        """Micro-batch ``micro`` of ``step`` for process ``rank``."""
        index = (step * self.accum + micro) * self.world + rank
        return self.stream.get(index % self.wrap if self.wrap else index)

    def micro_batches(self, step: int, rank: int) -> list[Batch]:
        """Every micro-batch of ``step`` for process ``rank``, in order."""
        return [self.batch(step, rank, micro) for micro in range(self.accum)]

    def dealt(self) -> Iterator[int]:
        """The pool position of every sample the run trains on, in order (all processes)."""
        for step in range(self.total):
            for micro in range(self.accum):
                for rank in range(self.world):
                    yield from self.batch(step, rank, micro).positions


#: accelerate's sharded modes cogwm train does not gather its LoRA and optimizer state from
#: (FSDP it does: :mod:`cogwm.simulator.train.sharded`).
REFUSED_MODES = ("DEEPSPEED", "MEGATRON_LM")


def refuse_sharding(distributed_type: str, quantize: str | None = None) -> None:
    """Refuse a launch whose sharding cogwm train cannot gather (its checkpoints and adapter
    would hold one process's shard), and QLoRA under FSDP (each process places its whole
    quantized base on its own GPU).

    Raises:
        ConfigError: A DeepSpeed or Megatron-LM launch; ``--quantize`` under FSDP.
    """
    if distributed_type.upper() in REFUSED_MODES:
        raise ConfigError(
            f"cogwm train does not support accelerate's {distributed_type} (it would save one "
            "process's shard of the LoRA): launch with examples/accelerate/fsdp.yaml (sharded) "
            "or examples/accelerate/ddp.yaml (data parallel)"
        )
    if quantize is not None and distributed_type.upper() == "FSDP":
        raise ConfigError(
            f"--quantize {quantize} is not sharded by cogwm train: launch with "
            "examples/accelerate/ddp.yaml (a 4-bit 14B base fits on a 24 GB GPU)"
        )


def refuse_lone_process(launched: str | None, processes: int) -> None:
    """Refuse a process that a multi-process launch started but accelerate runs alone: without
    a GPU and without ``--cpu`` accelerate starts no process group, and every process would
    train the whole run by itself into the same output directory.

    Raises:
        ConfigError: ``WORLD_SIZE`` (set by the launcher) above accelerate's process count.
    """
    if launched and launched.isdigit() and int(launched) > processes:
        raise ConfigError(
            f"launched as {launched} processes, but accelerate runs this one alone (no GPU in "
            "use): add --cpu to train on CPU processes, or launch one process"
        )


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


@dataclass
class TrainData:
    """The samples file's index, the pool drawn from, and the encoder that tokenizes on demand."""

    index: SampleIndex
    pool: dict[str, list[int]]
    encoder: LazyEncoder
    cache_key: str

    def encodings(self, batch: Batch) -> list[Encoded]:
        """The encoded samples of a planned batch (all trainable, so none is None)."""
        found = [self.encoder(p) for p in batch.positions]
        return [e for e in found if e is not None]


def load_data(config: TrainConfig, tokenizer: Any, tokenizer_dir: Path) -> TrainData:
    """Index the training samples, choose the pool, and read back encodings a killed run kept.

    Nothing is tokenized here: samples are tokenized when first drawn (a short run of a large
    samples file tokenizes only what it trains on). Encodings are kept in the output directory
    until the adapter is saved, so a resumed run does not tokenize them again.
    """
    samples_file = config.samples / "train.jsonl"
    index = index_samples(samples_file)
    pool = select_pool(index, config.neutral_keep, config.seed)
    weights = span_weights(config.objective, config.state_weight, config.change_weight)
    options = state_options(config)
    encoder = LazyEncoder(samples_file, index.offsets, tokenizer, weights, config.max_length)
    if options.active:
        encoder.view = TrainingView(options, donor_groups(index.corpora), encoder.read)
    key = encoding_key(samples_file, tokenizer_dir, weights, config.max_length, options.key())
    for path in _cache_files(config.out, key):
        encoder.preload(load_encoded(path))
    return TrainData(index, pool, encoder, key)


def state_options(config: TrainConfig) -> StateOptions:
    """The run's state dropout and change weighting."""
    return StateOptions(
        dropout=config.state_dropout,
        corruption=config.state_corruption,
        change_weight=config.change_weight,
        seed=config.seed,
    )


def save_new_encodings(data: TrainData, out: Path) -> None:
    """Write the encodings made since the last call as the next cache file in ``out``."""
    entries = data.encoder.take_unsaved()
    if not entries:
        return
    out.mkdir(parents=True, exist_ok=True)
    number = len(_cache_files(out, data.cache_key)) + 1
    save_encoded(out / f"{ENCODED_PREFIX}{data.cache_key}-{number:06d}.npz", entries)


def _cache_files(out: Path, key: str) -> list[Path]:
    # Six digits exactly: a temporary of a killed write (…npz.tmp.npz) is not a cache file.
    return sorted(out.glob(f"{ENCODED_PREFIX}{key}-{'[0-9]' * 6}.npz"))


def train(config: TrainConfig, *, resume: bool = False, show_progress: bool = True) -> TrainResult:
    """Train (or resume) the LoRA run ``config`` describes and save the adapter in ``config.out``.

    Raises:
        ConfigError: ``--out`` holds another run, or the checkpoint is from other data or settings.
        InputError: Unusable samples.
    """
    samples_file = config.samples / "train.jsonl"
    if not samples_file.is_file():  # before torch loads and a GGUF base is converted (~40 s)
        raise InputError(f"{samples_file}: file not found")
    check_precision(config)  # before a base is converted or loaded
    import torch
    from accelerate import Accelerator

    prepare_out(config.out, resume)
    if config.threads:
        # More threads than free cores makes CPU training many times slower, not faster.
        torch.set_num_threads(config.threads)
    finished = read_card(config.out) if resume else None
    # Precision is how a step is computed, not what is trained: a run may resume under another
    # precision (e.g. moved from a CPU to a GPU), so it is not part of the run hash.
    accelerator = Accelerator(cpu=config.cpu, mixed_precision="bf16" if config.bf16 else "no")
    refuse_sharding(str(accelerator.distributed_type.value), config.quantize)
    refuse_lone_process(os.environ.get("WORLD_SIZE"), accelerator.num_processes)
    with accelerator.main_process_first():
        base_dir = resolve_base(config.base)
    if finished is not None:
        return TrainResult(config.out, base_dir, finished["steps"], finished, None)
    run = _prepare_run(config, accelerator, base_dir, resume)
    _run_steps(run, config, show_progress)
    return _finish(run, config, base_dir)


@dataclass
class _Run:
    """Everything one training run holds between its steps."""

    accelerator: Any
    tokenizer: Any
    pad_id: int
    data: TrainData
    manifest: str
    run_hash: str
    peft_model: Any
    names: list[str]
    params: list[Any]
    optimizer: Any
    scheduler: Any
    module: Any
    plan: StepPlan
    history: list[dict[str, float]]
    prior_wall: float
    start: int
    started: float


def _prepare_run(config: TrainConfig, accelerator: Any, base_dir: Path, resume: bool) -> _Run:
    """Data, model, optimizer, schedule and step plan of the run; its resumed state if any."""
    import torch
    from transformers import AutoTokenizer

    tokenizer: Any = AutoTokenizer.from_pretrained(str(base_dir))
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    data = load_data(config, tokenizer, base_dir)
    manifest = manifest_hash(config.samples)
    run_hash = config.run_hash(manifest)

    random.seed(config.seed)
    torch.manual_seed(config.seed)
    peft_model = load_lora_model(base_dir, config, accelerator.device)
    names = [n for n, p in peft_model.named_parameters() if p.requires_grad]
    params = [p for p in peft_model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    plan = StepPlan(_batch_stream(config, data), config, accelerator.num_processes)
    if accelerator.is_main_process:
        save_new_encodings(data, config.out)  # with --epochs, every sample was just tokenized
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, linear_schedule(plan.total, config.warmup_ratio)
    )
    use_lora_wrap_policy(accelerator, peft_model)
    module, optimizer = accelerator.prepare(target_loss_module(peft_model), optimizer)
    if is_fsdp(accelerator):
        # FSDP clips by the norm over every shard only when handed all the model's parameters.
        params = list(module.parameters())
    run = _Run(
        accelerator, tokenizer, pad_id, data, manifest, run_hash, peft_model, names, params,
        optimizer, scheduler, module, plan,
        history=[], prior_wall=0.0, start=0, started=time.monotonic(),
    )  # fmt: skip
    state = _resume_state(config, run) if resume else None
    if state is not None:
        run.history = state["history"]
        run.prior_wall = float(state["wall_s"])
        run.start = int(state["step"])
    return run


def _batch_stream(config: TrainConfig, data: TrainData) -> BatchStream:
    """The run's batches: samples drawn by the corpus mix (and change share), seeded."""
    pool_size = sum(len(positions) for positions in data.pool.values())
    order = draw_order(
        data.pool,
        config.corpus_mix,
        config.seed,
        change_share=config.change_share,
        changed=data.index.changed,
    )
    return BatchStream(order, pool_size, data.encoder, config.batch_tokens, config.seed)


def _checkpoint(run: _Run, config: TrainConfig, step: int) -> None:
    """Save the LoRA weights, optimizer, schedule and random state after ``step`` steps."""
    run.accelerator.wait_for_everyone()
    # Every process takes part in gathering a sharded model's state; the main one writes it.
    lora = lora_state(run.accelerator, run.module, run.peft_model, run.names)
    optimizer = optimizer_state(run.accelerator, run.module, run.optimizer)
    if run.accelerator.is_main_process:
        save_new_encodings(run.data, config.out)
        tensors = {
            "lora": lora,
            "optimizer": optimizer,
            "scheduler": run.scheduler.state_dict(),
            "rng": rng_state(),
        }
        meta = {
            "step": step,
            "run_hash": run.run_hash,
            "history": run.history,
            "wall_s": run.prior_wall + time.monotonic() - run.started,
        }
        save_checkpoint(config.out, step, tensors, meta)


def _run_steps(run: _Run, config: TrainConfig, show_progress: bool) -> None:
    """Every step from the resumed one to the end, with checkpoints by time and by steps."""
    accelerator, plan = run.accelerator, run.plan
    last_checkpoint = run.started
    shown = show_progress and accelerator.is_main_process
    with ProgressBar("train", plan.total, enabled=shown, completed=run.start) as bar:
        for step in range(run.start, plan.total):
            batches = plan.micro_batches(step, accelerator.process_index)
            t0 = time.monotonic()
            loss, tokens = _train_step(
                run.module, run.optimizer, run.scheduler, accelerator, run.params, config,
                [collate(run.data.encodings(b), run.pad_id, accelerator.device) for b in batches],
            )  # fmt: skip
            elapsed = time.monotonic() - t0
            epoch = batches[-1].epoch
            record = {"step": step + 1, "epoch": epoch, "loss": loss, "tokens": tokens}
            run.history.append({**record, "s": elapsed})
            info = f"loss {loss:.3f} · {tokens / max(elapsed, 1e-9):.0f} tok/s"
            bar.update(completed=step + 1, info=info)
            now = time.monotonic()
            by_steps = config.checkpoint_steps and (step + 1) % config.checkpoint_steps == 0
            if (by_steps or now - last_checkpoint >= config.checkpoint_minutes * 60) and (
                step + 1 < plan.total
            ):
                _checkpoint(run, config, step + 1)
                last_checkpoint = now


def _finish(run: _Run, config: TrainConfig, base_dir: Path) -> TrainResult:
    """The training card, the validation loss and the saved adapter."""
    accelerator = run.accelerator
    accelerator.wait_for_everyone()
    card = _card(config, base_dir, run.manifest, run.run_hash, run.data, run.plan, run.history)
    card["wall_s"] = round(run.prior_wall + time.monotonic() - run.started, 1)
    card["resumed_from_step"] = run.start or None
    fsdp = is_fsdp(accelerator)
    if fsdp or accelerator.is_main_process:
        # A sharded model computes only with every process taking part: each runs the same
        # batches through the wrapped model.
        model = run.module if fsdp else accelerator.unwrap_model(run.module)
        card["validation"] = validation_loss(
            model, config, run.tokenizer, run.pad_id, accelerator.device
        )
    lora = gathered_lora(accelerator, run.module, run.names)  # every process gathers
    if accelerator.is_main_process:
        writer = adapter_writer(accelerator, run.peft_model)
        _save_adapter(config.out, writer, lora, card, history=run.history)
    return TrainResult(config.out, base_dir, run.plan.total, card, run.start or None)


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
    micro_batches: list[dict[str, Any]],
) -> tuple[float, int]:
    """One optimizer step over this process's micro-batches; (weighted mean loss, tokens).

    Each micro-batch's loss sum is divided by the target weight of all of them, so the summed
    gradients are those of one batch holding every micro-batch (not a mean of per-batch means).
    Gradients are synchronised between processes on the last micro-batch only.
    """
    module.train()
    total_weight = sum(float(b["weights"].sum()) for b in micro_batches)
    loss_value = 0.0
    for number, batch in enumerate(micro_batches, start=1):
        sync = accelerator.no_sync(module) if number < len(micro_batches) else nullcontext()
        with sync:
            loss_sum, _ = module(**batch)
            loss = loss_sum / max(total_weight, 1e-8)
            accelerator.backward(loss)
        loss_value += float(loss.detach())
    accelerator.clip_grad_norm_(params, config.max_grad_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return loss_value, sum(int(b["attention_mask"].sum()) for b in micro_batches)


def _resume_state(config: TrainConfig, run: _Run) -> dict[str, Any] | None:
    """Load the latest checkpoint into the run's model, optimizer, schedule and generators;
    its meta (None without a checkpoint)."""
    path = latest_checkpoint(config.out)
    if path is None:
        return None
    tensors, meta = load_checkpoint(path)
    if meta["run_hash"] != run.run_hash:
        raise ConfigError(
            f"{path} is a checkpoint of other data or settings (run {meta['run_hash']}, "
            f"now {run.run_hash}); use the same options or another --out"
        )
    load_lora(run.accelerator, run.module, run.peft_model, tensors["lora"], run.names)
    load_optimizer(run.accelerator, run.module, run.optimizer, tensors["optimizer"], run.names)
    run.scheduler.load_state_dict(tensors["scheduler"])
    set_rng_state(tensors["rng"])
    return meta


def _card(
    config: TrainConfig,
    base_dir: Path,
    manifest: str,
    run_hash: str,
    data: TrainData,
    plan: StepPlan,
    history: list[dict[str, float]],
) -> dict[str, Any]:
    tokens = sum(h["tokens"] for h in history)
    seconds = sum(h["s"] for h in history)
    tail = history[-max(1, len(history) // 10) :]
    return {
        "data": _data_card(config, manifest, data, plan),
        "base": {"spec": config.base, "model_dir": str(base_dir)},
        "hyperparameters": config.model_dump(
            mode="json", exclude={"samples", "base", "out", "cpu", "threads"}
        ),
        "run_hash": run_hash,
        "world_size": plan.world,
        "effective_batch_tokens": config.batch_tokens * config.grad_accum * plan.world,
        "steps": plan.total,
        "tokens_seen": int(tokens),
        "tokens_per_s": round(tokens / seconds, 1) if seconds else None,
        "s_per_step": round(seconds / len(history), 3) if history else None,
        "final_loss": round(sum(h["loss"] for h in tail) / len(tail), 4) if tail else None,
        "versions": versions(),
        "loss_history": [[int(h["step"]), round(h["loss"], 5)] for h in history],
    }


def _data_card(
    config: TrainConfig, manifest: str, data: TrainData, plan: StepPlan
) -> dict[str, Any]:
    """What the run drew: the pool after --neutral-keep, and the mix it actually trained on."""
    index = data.index
    pool = mix_counts(index, (p for positions in data.pool.values() for p in positions))
    pool["no_emotion_left_out"] = sum(index.no_emotion) - pool["no_emotion"]
    dealt = list(plan.dealt())
    used = set(dealt)
    encodings = [data.encoder(p) for p in used]
    return {
        "samples_dir": str(config.samples),
        "manifest_sha256": manifest,
        "samples_read": len(index),
        "pool": pool,
        "seen": mix_counts(index, dealt),
        "samples_used": len(used),
        "target_tokens": sum(e.n_target for e in encodings if e is not None),
        "state_views": _state_view_counts(config, data, used),
        **data.encoder.counts(),
    }


def _state_view_counts(config: TrainConfig, data: TrainData, used: set[int]) -> dict[str, int]:
    """How many of the samples trained on showed, hid or corrupted their states."""
    counts = dict.fromkeys(("shown", "hidden", "corrupted"), 0)
    for position in used:
        sample_id = data.index.ids[position]
        counts[
            state_view(sample_id, config.seed, config.state_dropout, config.state_corruption)
        ] += 1
    return counts


def _save_adapter(
    out: Path, peft_model: Any, lora: Any, card: dict[str, Any], history: list[Any]
) -> None:
    """The adapter (the gathered LoRA tensors ``lora``), its loss plot and training card."""
    peft_model.save_pretrained(str(out), state_dict=lora)
    plot_loss(out, history, f"{card['base']['spec']} · {card['hyperparameters']['objective']}")
    write_card(out, card)
    shutil.rmtree(checkpoints_dir(out), ignore_errors=True)
    for cache in out.glob(f"{ENCODED_PREFIX}*.npz"):
        cache.unlink()
