"""Training at scale on a tiny random Llama (CPU): gradient accumulation, resume with it, the
precision options and their errors, and the accelerate configurations the README documents."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from helpers_train import FIXTURE_SAMPLES, make_tiny_base

pytestmark = pytest.mark.skipif(
    any(
        importlib.util.find_spec(m) is None
        for m in ("torch", "transformers", "peft", "accelerate", "tokenizers")
    ),
    reason="training needs the 'train' extra (torch, transformers, peft, accelerate)",
)

REPO = Path(__file__).resolve().parents[1]
ACCELERATE_CONFIGS = REPO / "examples" / "accelerate"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return make_tiny_base(tmp_path_factory.mktemp("scale"))


@pytest.fixture(scope="module")
def four(tmp_path_factory) -> Path:
    """A samples directory of the fixture's first four training samples."""
    out = tmp_path_factory.mktemp("four")
    lines = (FIXTURE_SAMPLES / "train.jsonl").read_text(encoding="utf-8").splitlines()[:4]
    (out / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "manifest.json").write_bytes((FIXTURE_SAMPLES / "manifest.json").read_bytes())
    return out


def _longest(samples: Path, base: Path) -> int:
    """Tokens of the longest sample of ``samples`` as the run encodes it."""
    from transformers import AutoTokenizer

    from cogwm.simulator.train.data import encode_all, read_train_samples, span_weights

    tokenizer = AutoTokenizer.from_pretrained(str(base))
    samples_list = list(read_train_samples(samples / "train.jsonl"))
    encoded, _ = encode_all(samples_list, tokenizer, span_weights("joint", 1.0), 2048)
    assert len(encoded) == 4
    return max(len(e.ids) for e in encoded)


def _config(samples: Path, base: Path, out: Path, **changes: object):  # type: ignore[no-untyped-def]
    from cogwm.simulator.train.config import TrainConfig

    settings: dict[str, object] = {
        "samples": samples, "base": str(base), "out": out, "lr": 2e-3, "lora_dropout": 0.0,
        "threads": 1, "seed": 5, "val_samples": 0, "warmup_ratio": 0.0,
    }  # fmt: skip
    return TrainConfig(**{**settings, **changes})


def _adapter(out: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(out / "adapter_model.safetensors"))


def _close(first: dict, second: dict, tolerance: float) -> None:
    import torch

    assert first.keys() == second.keys()
    for name in first:
        assert torch.allclose(first[name], second[name], rtol=1e-4, atol=tolerance), name


def test_two_micro_batches_of_two_train_as_one_batch_of_four(base, four, tmp_path):
    # Catches: a step that steps the optimizer per micro-batch, a loss that averages the
    # micro-batches' own means (the short ones weigh as much as the long), micro-batches dealt
    # to the wrong step. Four samples make one epoch; with --batch-tokens for four samples it is
    # one batch, with half that it is two, so both runs train on the same samples each step.
    from cogwm.simulator.train.loop import train

    longest = _longest(four, base)
    runs = {}
    for name, tokens, accum in (("one", 4 * longest, 1), ("accum", 2 * longest, 2)):
        config = _config(
            four, base, tmp_path / name, epochs=4, batch_tokens=tokens, grad_accum=accum
        )
        result = train(config, show_progress=False)
        assert result.steps == 4, name  # one optimizer step per epoch in both
        runs[name] = result
    one, accum = runs["one"].card, runs["accum"].card
    assert accum["hyperparameters"]["grad_accum"] == 2
    assert accum["effective_batch_tokens"] == one["effective_batch_tokens"] == 4 * longest
    assert accum["data"]["seen"]["samples"] == one["data"]["seen"]["samples"] == 16
    losses_one = [loss for _, loss in one["loss_history"]]
    losses_accum = [loss for _, loss in accum["loss_history"]]
    assert losses_one == pytest.approx(losses_accum, rel=1e-4)
    assert losses_one[-1] < losses_one[0]  # it learns, so the comparison means something
    _close(_adapter(tmp_path / "one"), _adapter(tmp_path / "accum"), 1e-6)


class _Killed(Exception):
    """Stands for a kill right after a checkpoint was written."""


def test_a_run_with_accumulation_resumes_at_its_optimizer_step(base, tmp_path, monkeypatch):
    # Catches: resuming at a micro-batch count instead of the optimizer step, a scheduler or
    # data position off by the accumulation factor, grad_accum left out of the run hash.
    import torch

    from cogwm.errors import ConfigError
    from cogwm.simulator.train import loop

    config = _config(FIXTURE_SAMPLES, base, tmp_path / "full", max_steps=7, batch_tokens=600)
    config = config.model_copy(update={"grad_accum": 3, "checkpoint_steps": 3})
    full = loop.train(config, show_progress=False)
    assert full.card["steps"] == 7 and len(full.card["loss_history"]) == 7

    real_save = loop.save_checkpoint

    def save_then_die(*args, **kwargs):  # type: ignore[no-untyped-def]
        real_save(*args, **kwargs)
        raise _Killed

    out = tmp_path / "resumed"
    interrupted = config.model_copy(update={"out": out})
    monkeypatch.setattr(loop, "save_checkpoint", save_then_die)
    with pytest.raises(_Killed):
        loop.train(interrupted, show_progress=False)
    monkeypatch.setattr(loop, "save_checkpoint", real_save)
    assert (out / "checkpoints" / "step-0000003").is_dir()
    with pytest.raises(ConfigError, match="other data or settings"):
        loop.train(interrupted.model_copy(update={"grad_accum": 2}), resume=True)
    resumed = loop.train(interrupted, resume=True, show_progress=False)
    assert resumed.resumed_from == 3
    assert resumed.card["loss_history"] == full.card["loss_history"]
    first, second = _adapter(tmp_path / "full"), _adapter(out)
    assert all(torch.equal(first[k], second[k]) for k in first)


def test_run_hash_of_default_settings_is_unchanged_by_the_new_options(tmp_path):
    # Catches: checkpoints written before --grad-accum/--quantize existed refusing to resume.
    from cogwm.simulator.train.config import TrainConfig

    plain = TrainConfig(samples=tmp_path, base="b", out=tmp_path / "o")
    fixed = plain.model_dump(
        mode="json",
        exclude={
            "samples", "out", "checkpoint_minutes", "checkpoint_steps", "cpu", "threads",
            "gradient_checkpointing", "bf16", "val_samples", "grad_accum", "quantize", "dtype",
            "state_dropout", "state_corruption", "change_weight", "change_share",
        },
    )  # fmt: skip
    import hashlib

    from cogwm.simulator.train.mix import DATA_ORDER

    before = hashlib.sha256(
        json.dumps({**fixed, "manifest": "m", "data_order": DATA_ORDER}, sort_keys=True).encode()
    ).hexdigest()[:16]
    assert plain.run_hash("m") == before
    assert plain.model_copy(update={"dtype": "bf16"}).run_hash("m") == before
    assert plain.model_copy(update={"grad_accum": 2}).run_hash("m") != before
    assert plain.model_copy(update={"quantize": "4bit"}).run_hash("m") != before


def _cli(args: list[str], capsys) -> tuple[int, str]:
    from cogwm.cli.main import main

    argv = sys.argv
    sys.argv = ["cogwm", *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = argv
    return code, capsys.readouterr().err


def test_quantize_and_fp16_without_cuda_fail_before_any_model_loads(
    base, tmp_path, capsys, monkeypatch
):
    # Catches: the check placed after the base is loaded (or converted from GGUF: minutes),
    # a traceback instead of one line, a bitsandbytes import error on a GPU machine without it.
    import torch
    import transformers

    def no_loading(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_loading)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", no_loading)
    common = ["train", "--samples", str(FIXTURE_SAMPLES), "--base", str(base), "--quiet"]
    cases = [
        (["--quantize", "4bit"], "needs a CUDA GPU"),
        (["--dtype", "fp16"], "needs a CUDA GPU"),
        (["--quantize", "8bit"], "--quantize must be 4bit"),
        (["--dtype", "int8"], "--dtype must be"),
    ]
    for number, (extra, message) in enumerate(cases):
        code, err = _cli([*common, "--out", str(tmp_path / str(number)), *extra], capsys)
        assert code == 2 and err.startswith("error:") and message in err, err
        assert len(err.strip().splitlines()) == 1
    if importlib.util.find_spec("bitsandbytes") is None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        code, err = _cli([*common, "--out", str(tmp_path / "gpu"), "--quantize", "4bit"], capsys)
        assert code == 2 and "needs bitsandbytes" in err and "gpu" in err, err
        code, err = _cli(
            [*common, "--out", str(tmp_path / "cpu"), "--quantize", "4bit", "--cpu"], capsys
        )
        assert code == 2 and "needs a CUDA GPU" in err, err


def test_a_bf16_base_trains_an_fp32_lora(base, four, tmp_path):
    # Catches: --dtype not reaching the loader (the weights would equal the fp32 run's) and
    # a LoRA created in bf16 (its updates would round away).
    import torch

    from cogwm.simulator.train.loop import train

    runs, losses = {}, {}
    for dtype in ("fp32", "bf16"):
        config = _config(four, base, tmp_path / dtype, max_steps=3, batch_tokens=600, dtype=dtype)
        card = train(config, show_progress=False).card
        runs[dtype] = _adapter(tmp_path / dtype)
        losses[dtype] = [loss for _, loss in card["loss_history"]]
    assert all(v.dtype == torch.float32 and torch.isfinite(v).all() for v in runs["bf16"].values())
    assert any(not torch.equal(runs["fp32"][k], runs["bf16"][k]) for k in runs["fp32"])
    # The same training at bf16's resolution of the base weights.
    assert losses["bf16"] == pytest.approx(losses["fp32"], rel=0.02)


def _readme_launch_commands() -> list[list[str]]:
    """Every ``accelerate launch`` command of the README (continuation lines joined)."""
    import shlex

    text = (REPO / "README.md").read_text(encoding="utf-8").replace("\\\n", " ")
    commands = [
        shlex.split(line.split("#", 1)[0])
        for line in text.splitlines()
        if line.startswith("accelerate launch ")
    ]
    return [c[2:] for c in commands]


def test_accelerate_configs_load_with_accelerates_config_classes():
    # Catches: a key accelerate does not know (it refuses the file), a distributed type
    # cogwm train refuses, a precision set in the file that --bf16 would silently override.
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.utils import DistributedType

    from cogwm.simulator.train.loop import refuse_sharding

    found = {path.name: path for path in ACCELERATE_CONFIGS.glob("*.yaml")}
    assert {"single_gpu.yaml", "ddp.yaml", "fsdp.yaml"} <= set(found)
    kinds = {}
    for name, path in found.items():
        config = ClusterConfig.from_yaml_file(str(path))
        kinds[name] = config.distributed_type
        assert config.mixed_precision == "no" and not config.use_cpu, name
        refuse_sharding(str(config.distributed_type.value))  # none is refused
    assert kinds["single_gpu.yaml"] == DistributedType.NO
    assert kinds["ddp.yaml"] == DistributedType.MULTI_GPU
    assert kinds["fsdp.yaml"] == DistributedType.FSDP


def test_readme_launch_commands_parse_for_accelerate_and_cogwm_train():
    # Catches: a documented option cogwm train does not have (or with a value it refuses), a
    # config file that is not there, a launch that is not `-m cogwm train`.
    import typer
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.commands.launch import launch_command_parser

    from cogwm.cli.train import app as train_app
    from cogwm.simulator.train.config import TrainConfig

    commands = _readme_launch_commands()
    assert len(commands) >= 3
    quantized = accumulated = 0
    for argv in commands:
        launch = launch_command_parser().parse_args(argv)
        assert launch.module and launch.training_script == "cogwm", argv
        ClusterConfig.from_yaml_file(str(REPO / launch.config_file))
        assert launch.training_script_args[0] == "train"
        command = typer.main.get_command(train_app)
        context = command.make_context("train", list(launch.training_script_args[1:]))
        params = {k: v for k, v in context.params.items() if k in TrainConfig.model_fields}
        config = TrainConfig(**params)
        assert config.max_length == 4096 and config.lora_r == 16 and config.lr == 5e-5
        quantized += config.quantize == "4bit"
        accumulated += config.grad_accum > 1
    assert quantized and accumulated


def test_python_dash_m_cogwm_is_the_cli():
    # Catches: `accelerate launch -m cogwm` finding no __main__ module.
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "cogwm", "train", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    assert "--grad-accum" in done.stdout and "--quantize" in done.stdout
