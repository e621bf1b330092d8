"""cogwm train under FSDP: the shipped accelerate configuration, the decoder layers it shards,
the optimizer state it gathers, and two CPU processes (gloo) training, checkpointing and
resuming a tiny random Llama sharded, against the same launch data parallel."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
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
CONFIGS = REPO / "examples" / "accelerate"
LAUNCHER = Path(__file__).resolve().parent / "helpers_fsdp.py"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return make_tiny_base(tmp_path_factory.mktemp("fsdp"))


def test_fsdp_yaml_has_what_lora_needs():
    # Catches: a key accelerate does not know, flat parameters that mix frozen and LoRA
    # weights (use_orig_params off), no per-layer wrapping (one unit: nothing sharded while a
    # layer computes), a precision set in the file that --bf16 would silently override, and
    # the launch refused by cogwm train.
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.utils import DistributedType

    from cogwm.simulator.train.loop import refuse_sharding

    config = ClusterConfig.from_yaml_file(str(CONFIGS / "fsdp.yaml"))
    assert config.distributed_type == DistributedType.FSDP
    assert config.mixed_precision == "no" and not config.use_cpu
    fsdp = config.fsdp_config
    assert fsdp["fsdp_use_orig_params"] is True
    assert fsdp["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
    assert "fsdp_transformer_layer_cls_to_wrap" not in fsdp  # the model's own layer classes
    assert fsdp["fsdp_sharding_strategy"] == "FULL_SHARD" and fsdp["fsdp_version"] == 1
    refuse_sharding(str(config.distributed_type.value))


def test_deepspeed_megatron_and_qlora_under_fsdp_are_refused_in_one_line():
    # Catches: a DeepSpeed or Megatron-LM launch saving one process's shard as the adapter,
    # a 4-bit base loaded whole on every GPU of an FSDP launch.
    from cogwm.errors import ConfigError
    from cogwm.simulator.train.loop import refuse_sharding

    for kind in ("DEEPSPEED", "MEGATRON_LM", "deepspeed"):
        with pytest.raises(ConfigError, match=r"fsdp\.yaml.*ddp\.yaml") as caught:
            refuse_sharding(kind)
        assert "\n" not in str(caught.value)
    for kind in ("FSDP", "MULTI_GPU", "NO"):
        refuse_sharding(kind)
    # QLoRA places each process's whole quantized base on its GPU: not under FSDP.
    with pytest.raises(ConfigError, match=r"--quantize 4bit.*ddp\.yaml"):
        refuse_sharding("FSDP", "4bit")
    refuse_sharding("MULTI_GPU", "4bit")


def test_a_launched_process_that_accelerate_runs_alone_is_refused(base, tmp_path, monkeypatch):
    # Catches: `accelerate launch --num_processes 2` on a machine without a GPU and without
    # --cpu, where accelerate starts no process group and both processes train the whole run
    # into one output directory (they overwrite each other's checkpoints and cache files).
    import transformers

    from cogwm.errors import ConfigError
    from cogwm.simulator.train.config import TrainConfig
    from cogwm.simulator.train.loop import refuse_lone_process, train

    def no_loading(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", no_loading)
    monkeypatch.setenv("WORLD_SIZE", "2")
    config = TrainConfig(samples=FIXTURE_SAMPLES, base=str(base), out=tmp_path / "out")
    with pytest.raises(ConfigError, match=r"launched as 2 processes.*--cpu") as caught:
        train(config, show_progress=False)
    assert "\n" not in str(caught.value)
    for launched, processes in ((None, 1), ("1", 1), ("2", 2), ("", 1)):
        refuse_lone_process(launched, processes)


def test_wrap_policy_shards_each_decoder_layer_and_each_lora_layer_apart(base):
    # Catches: no per-layer wrapping (the whole model gathered on every process at once), and
    # LoRA weights left in their decoder layer's unit, which FSDP cannot flatten when the base
    # is bf16 and the LoRA fp32 ("Must flatten tensors with uniform dtype").
    from types import SimpleNamespace

    import torch
    from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    from cogwm.simulator.train.config import TrainConfig
    from cogwm.simulator.train.model import load_lora_model, target_loss_module
    from cogwm.simulator.train.sharded import use_lora_wrap_policy

    config = TrainConfig(samples=base, base=str(base), out=base / "out", dtype="bf16")
    peft_model = load_lora_model(base, config)
    plugin = FullyShardedDataParallelPlugin(
        fsdp_version=1, auto_wrap_policy="transformer_based_wrap", use_orig_params=True
    )
    # The launch's accelerator state as accelerate makes it under fsdp.yaml on GPUs.
    launch = SimpleNamespace(
        distributed_type=DistributedType.FSDP, state=SimpleNamespace(fsdp_plugin=plugin)
    )
    use_lora_wrap_policy(launch, peft_model)
    module = target_loss_module(peft_model)
    plugin.set_auto_wrap_policy(module)  # what accelerate.prepare does next
    wrapped = {
        name
        for name, child in module.named_modules()
        if plugin.auto_wrap_policy(child, recurse=False, nonwrapped_numel=0)
    }
    layers = {n for n, m in module.named_modules() if isinstance(m, LlamaDecoderLayer)}
    lora = {n for n, p in module.named_parameters() if p.requires_grad}
    assert len(layers) == 2 and layers <= wrapped
    assert {n.rsplit(".", 1)[0] for n in lora} == wrapped - layers
    for name in wrapped - layers:  # each LoRA unit holds only fp32 weights
        unit = module.get_submodule(name)
        assert {p.dtype for p in unit.parameters()} == {torch.float32}, name


def test_optimizer_state_numbering_round_trips_a_real_adamw_state():
    # Catches: FSDP's by-name optimizer state numbered in another order than torch numbers the
    # same optimizer without sharding (a resumed run would put one parameter's moments on
    # another), and a group's settings lost on the way.
    import torch

    from cogwm.simulator.train.sharded import _named, _numbered

    params = [torch.nn.Parameter(torch.randn(n)) for n in (3, 5, 2)]
    optimizer = torch.optim.AdamW(params, lr=0.1)
    sum((p * p).sum() for p in params).backward()
    optimizer.step()
    state = optimizer.state_dict()
    names = ["inner.z", "inner.a", "inner.m"]  # not in sorted order
    by_name = _named(state, names)
    assert torch.equal(by_name["state"]["inner.a"]["exp_avg"], state["state"][1]["exp_avg"])
    back = _numbered(by_name)
    assert back["param_groups"] == state["param_groups"]
    for number, values in state["state"].items():
        assert all(torch.equal(values[k], back["state"][number][k]) for k in values)


def _launch(config: str, out: Path, base: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``accelerate launch`` of two CPU processes training 4 steps (checkpoint after 2)."""
    train = [
        "train", "--cpu", "--samples", str(FIXTURE_SAMPLES), "--base", str(base),
        "--out", str(out), "--max-steps", "4", "--batch-tokens", "600", "--lr", "2e-3",
        "--lora-dropout", "0", "--threads", "1", "--seed", "5", "--warmup-ratio", "0",
        "--val-samples", "4", "--checkpoint-steps", "2", "--quiet", "--json",
        "--dtype", "bf16",  # a bf16 base under an fp32 LoRA, as at paper scale
    ]  # fmt: skip
    launch = [
        sys.executable, "-m", "accelerate.commands.launch", "--config_file",
        str(CONFIGS / config), "--num_processes", "2", "--main_process_port", "0",
        str(LAUNCHER),
    ]  # fmt: skip
    parts = [str(REPO / "src"), str(LAUNCHER.parent), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in parts if p)}
    launch_flags = [f for f in flags if f != "--resume"]
    train_flags = [f for f in flags if f == "--resume"]
    return subprocess.run(
        [*launch, *launch_flags, *train, *train_flags],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def _adapter(out: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(out / "adapter_model.safetensors"))


def _card(out: Path) -> dict:
    return json.loads((out / "training_card.json").read_text(encoding="utf-8"))


def _losses(card: dict) -> list[float]:
    return [loss for _, loss in card["loss_history"]]


def _assert_same_adapter(first: Path, second: Path) -> None:
    import torch

    one, two = _adapter(first), _adapter(second)
    assert one and one.keys() == two.keys()
    for name in one:
        assert one[name].shape == two[name].shape, name
        assert torch.allclose(one[name], two[name], rtol=1e-5, atol=1e-7), name


@pytest.mark.slow
def test_two_cpu_processes_under_fsdp_train_checkpoint_and_resume_as_data_parallel(base, tmp_path):
    # Catches: an adapter or checkpoint written from one process's shard (empty or flat
    # tensors, or peft finding no LoRA under FSDP's wrapped names), moments restored onto the
    # wrong parameters or not at all on resume, a sharded checkpoint DDP cannot resume,
    # validation run on one process of a sharded model (it hangs or fails), clipping by one
    # shard's norm. Reference: the same launch data parallel, whose adapter the unsharded one.
    runs = {
        "ddp": ("ddp.yaml",),
        "fsdp": ("fsdp.yaml", "--fsdp"),
        "killed": ("fsdp.yaml", "--fsdp", "--die-after-checkpoint"),
    }
    for name, (config, *flags) in runs.items():
        done = _launch(config, tmp_path / name, base, *flags)
        if name == "killed":  # the launcher reports a failed process as its own failure
            assert done.returncode != 0 and "exitcode  : 3" in done.stderr, done.stderr[-3000:]
        else:
            assert done.returncode == 0, done.stderr[-3000:]
    ddp, fsdp = _card(tmp_path / "ddp"), _card(tmp_path / "fsdp")
    assert ddp["world_size"] == fsdp["world_size"] == 2
    assert _losses(fsdp) == pytest.approx(_losses(ddp), rel=1e-5)
    assert fsdp["validation"]["loss"] == pytest.approx(ddp["validation"]["loss"], rel=1e-4)
    assert fsdp["loss_history"][-1][1] < fsdp["loss_history"][0][1]  # it learns
    _assert_same_adapter(tmp_path / "ddp", tmp_path / "fsdp")

    killed = tmp_path / "killed"
    assert (killed / "checkpoints" / "step-0000002").is_dir()
    assert not (killed / "adapter_model.safetensors").exists()
    moved = tmp_path / "killed-then-ddp"
    subprocess.run(["cp", "-r", str(killed), str(moved)], check=True)
    for out, config, flags in ((killed, "fsdp.yaml", ("--fsdp",)), (moved, "ddp.yaml", ())):
        done = _launch(config, out, base, *flags, "--resume")
        assert done.returncode == 0, done.stderr[-3000:]
        assert _card(out)["resumed_from_step"] == 2
        assert _losses(_card(out)) == pytest.approx(_losses(fsdp), rel=1e-5)
        _assert_same_adapter(tmp_path / "fsdp", out)
