"""cogwm train on a tiny random Llama: trains, resumes after kill -9 exactly, serves the adapter."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers_train import FIXTURE_SAMPLES, make_mixed_samples, make_tiny_base

pytestmark = pytest.mark.skipif(
    any(
        importlib.util.find_spec(m) is None
        for m in ("torch", "transformers", "peft", "accelerate", "tokenizers")
    ),
    reason="training needs the 'train' extra (torch, transformers, peft, accelerate)",
)

STEPS = 60


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return make_tiny_base(tmp_path_factory.mktemp("train"))


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _args(base: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "cogwm.cli.main", "train",
        "--samples", str(FIXTURE_SAMPLES), "--base", str(base), "--out", str(out),
        "--max-steps", str(STEPS), "--batch-tokens", "600", "--lr", "2e-3",
        "--threads", "1", "--checkpoint-steps", "5", "--quiet", "--seed", "11", *extra,
    ]  # fmt: skip


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=600)


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    """Run ``cogwm`` in this process (no interpreter start-up); exit code, stderr, stdout."""
    from cogwm.cli.main import main

    argv = sys.argv
    sys.argv = ["cogwm", *args[3:]]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = argv
    captured = capsys.readouterr()
    return code, captured.err, captured.out


def losses_start(card: dict) -> float:
    """Mean training loss of the first five steps."""
    return sum(loss for _, loss in card["loss_history"][:5]) / 5


def _weights(adapter: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(adapter / "adapter_model.safetensors"))


@pytest.fixture(scope="module")
def uninterrupted(base, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("full") / "adapter"
    done = _run(_args(base, out))
    assert done.returncode == 0, done.stderr
    return out


def test_training_writes_adapter_card_and_curve(uninterrupted):
    files = {p.name for p in uninterrupted.iterdir()}
    assert {
        "adapter_model.safetensors",
        "adapter_config.json",
        "training_card.json",
        "loss.png",
    } <= files
    assert "checkpoints" not in files  # removed once the adapter is saved
    assert not [f for f in files if f.startswith(".encoded-")]
    card = json.loads((uninterrupted / "training_card.json").read_text())
    assert card["schema"] == "cogwm.train_card/1"
    assert card["steps"] == STEPS and len(card["loss_history"]) == STEPS
    assert card["data"]["samples_used"] == 24 and card["data"]["manifest_sha256"]
    assert card["hyperparameters"]["lora_r"] == 16 and card["hyperparameters"]["lora_alpha"] == 32
    assert card["tokens_per_s"] > 0 and card["versions"]["torch"] != "-"
    assert card["validation"]["samples"] == 6 and 0 < card["validation"]["loss"] < losses_start(
        card
    )
    losses = [loss for _, loss in card["loss_history"]]
    assert sum(losses[-10:]) / 10 < sum(losses[:10]) / 10  # it learns
    config = json.loads((uninterrupted / "adapter_config.json").read_text())
    # Every linear layer of the blocks, never the (tied) output head or the embeddings.
    assert {name.rsplit(".", 1)[-1] for name in config["target_modules"]} == {
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
    }  # fmt: skip


def _kill_at_first_checkpoint(args: list[str], out: Path) -> int:
    """Start a run, kill -9 it once it has a checkpoint; the checkpoint's step."""
    proc = subprocess.Popen(args, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    latest = out / "checkpoints" / "LATEST"
    deadline = time.monotonic() + 300
    while not latest.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "training_card.json").exists()
    killed_at = int(latest.read_text().split("-")[1])
    assert 0 < killed_at < STEPS
    assert list(out.glob(".encoded-*.npz"))  # the resumed run skips the tokenizer
    return killed_at


def test_kill_9_then_resume_ends_with_the_same_weights(base, uninterrupted, tmp_path):
    out = tmp_path / "adapter"
    killed_at = _kill_at_first_checkpoint(_args(base, out), out)

    other = _run([*_args(base, out, "--resume"), "--lr", "1e-4"])
    assert other.returncode == 2 and "other data or settings" in other.stderr
    resumed = _run(_args(base, out, "--resume"))
    assert resumed.returncode == 0, resumed.stderr
    card = json.loads((out / "training_card.json").read_text())
    assert card["resumed_from_step"] >= killed_at
    full, again = _weights(uninterrupted), _weights(out)
    assert full.keys() == again.keys()
    import torch

    assert all(torch.equal(full[k], again[k]) for k in full)
    reference = json.loads((uninterrupted / "training_card.json").read_text())
    assert card["loss_history"] == reference["loss_history"]
    assert card["validation"] == reference["validation"]


def test_start_refuses_a_used_out_and_a_finished_run_is_not_retrained(base, tmp_path, capsys):
    out = tmp_path / "adapter"
    code, err, printed = _cli([*_args(base, out), "--max-steps", "7", "--json"], capsys)
    assert code == 0, err  # a checkpoint at step 5, the end at 7
    card = json.loads(printed)
    assert card["steps"] == 7 and "loss_history" not in card
    code, err, _ = _cli(_args(base, out), capsys)
    assert code == 2 and err.startswith("error:") and "--resume" in err
    assert len(err.strip().splitlines()) == 1
    before = (out / "adapter_model.safetensors").stat().st_mtime_ns
    code, err, _ = _cli([*_args(base, out), "--max-steps", "7", "--resume"], capsys)
    assert code == 0, err
    assert (out / "adapter_model.safetensors").stat().st_mtime_ns == before


def test_bad_options_are_one_line_errors(base, tmp_path, capsys):
    cases = [
        ([*_args(base, tmp_path / "a"), "--objective", "both"], "--objective"),
        (_args(base, tmp_path / "b")[:4], "needs --samples"),
        ([*_args(tmp_path / "nope", tmp_path / "c")], "not a model directory"),
        ([*_args(base, tmp_path / "d"), "--samples", str(tmp_path)], "not found"),
        ([*_args(base, tmp_path / "e"), "--corpus-mix", "sqrt"], "--corpus-mix"),
        ([*_args(base, tmp_path / "f"), "--neutral-keep", "0"], "--neutral-keep"),
        ([*_args(base, tmp_path / "g"), "--neutral-keep", "1.5"], "--neutral-keep"),
        ([*_args(base, tmp_path / "h"), "--neutral-keep", "nan"], "--neutral-keep"),
        ([*_args(base, tmp_path / "i"), "--neutral-keep", "half"], "--neutral-keep"),
    ]
    for args, message in cases:
        code, err, _ = _cli(args, capsys)
        assert code == 2, (args, err)
        assert err.startswith("error:") and message in err
        assert len(err.strip().splitlines()) == 1


def test_the_hf_backend_serves_the_trained_adapter(base, uninterrupted):
    from cogwm.models import Sampling, load

    plain = load(f"hf:{base}")
    tuned = load(f"hf:{base}+{uninterrupted}")
    prompt = "Task: esc\nagent: How are you feeling today?"

    async def both() -> tuple[str, str]:
        sampling = Sampling(max_tokens=24, temperature=0.0, repeat_penalty=1.0)
        a = await plain.generate(prompt, sampling)
        b = await tuned.generate(prompt, sampling)
        return a.text, b.text

    plain_text, tuned_text = asyncio.run(both())
    assert plain_text != tuned_text
    assert tuned_text.startswith('{"')  # 60 steps on the fixtures taught the JSON layout


def test_accelerate_launch_runs_the_same_command_on_one_cpu_process(base, tmp_path):
    accelerate = Path(sys.executable).with_name("accelerate")
    if not accelerate.exists():
        pytest.skip("accelerate's launcher is not installed")
    out = tmp_path / "adapter"
    args = [
        str(accelerate), "launch", "--num_processes", "1", "--num_machines", "1",
        "--mixed_precision", "no", "--dynamo_backend", "no", "--cpu",
        "-m", "cogwm.cli.main", *_args(base, out)[3:], "--max-steps", "4",
    ]  # fmt: skip
    done = _run(args)
    assert done.returncode == 0, done.stderr[-2000:]
    card = json.loads((out / "training_card.json").read_text())
    assert card["steps"] == 4 and card["world_size"] == 1


def test_export_gguf_command_writes_the_lora_for_llama_cpp(uninterrupted, tmp_path, capsys):
    out = tmp_path / "adapter.gguf"
    code, err, _ = _cli(
        ["", "", "", "train", "export-gguf", str(uninterrupted), "--out", str(out)], capsys
    )
    assert code == 0, err
    assert out.stat().st_size > 0 and "28 tensors, r 16, alpha 32" in err
    code, err, _ = _cli(
        ["", "", "", "train", "export-gguf", str(tmp_path), "--out", str(out)], capsys
    )
    assert code == 2 and "not a peft adapter" in err


def test_gradient_checkpointing_gives_the_same_weights(base, uninterrupted, tmp_path, capsys):
    import torch

    out = tmp_path / "adapter"
    code, err, _ = _cli([*_args(base, out), "--gradient-checkpointing"], capsys)
    assert code == 0, err
    full, again = _weights(uninterrupted), _weights(out)
    assert all(torch.equal(full[k], again[k]) for k in full)


def test_bf16_mixed_precision_reaches_the_training_step(base, tmp_path):
    # Catches: --bf16 not reaching the step (the weights would equal the fp32 run's) and
    # non-finite weights from the bf16 forward. Subprocesses: accelerate's state is per process.
    import torch

    runs = {}
    for name, extra in (("fp32", ()), ("bf16", ("--bf16",))):
        done = _run([*_args(base, tmp_path / name), "--max-steps", "10", *extra])
        assert done.returncode == 0, done.stderr
        runs[name] = _weights(tmp_path / name)
    fp32, bf16 = runs["fp32"], runs["bf16"]
    assert any(not torch.equal(fp32[k], bf16[k]) for k in fp32)
    assert all(torch.isfinite(v).all() for v in bf16.values())


MIX = ("--corpus-mix", "uniform", "--neutral-keep", "0.5")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    return make_mixed_samples(tmp_path_factory.mktemp("samples"))


def test_uniform_mix_and_neutral_keep_resume_exactly_after_kill_9(base, mixed, tmp_path):
    # Catches: a data order that is not a function of the seed and the checkpoint (the resumed
    # weights would differ), a resume that silently changes the mix, a card without the mix.
    full = tmp_path / "full"
    done = _run([*_args(base, full), "--samples", str(mixed), *MIX])
    assert done.returncode == 0, done.stderr
    card = json.loads((full / "training_card.json").read_text())
    pool, seen = card["data"]["pool"], card["data"]["seen"]
    assert card["hyperparameters"]["corpus_mix"] == "uniform"
    assert card["hyperparameters"]["neutral_keep"] == 0.5
    # Of the fixture's 3 neutral samples, seed 11 keeps synth-1:1 and synth-3:0.
    assert (pool["no_emotion"], pool["no_emotion_left_out"]) == (2, 1)
    assert pool["by_corpus"] == {"alpha": 17, "beta": 6} and pool["samples"] == 23
    # beta is a quarter of the pool but half of the draws.
    assert seen["samples"] == sum(seen["by_corpus"].values()) > 100
    assert 0.35 < seen["by_corpus"]["beta"] / seen["samples"] < 0.65
    assert 0 < seen["no_emotion"] < seen["by_corpus"]["alpha"]
    share = f"{seen['no_emotion_share']:.1%}"
    assert f"trained on {seen['samples']} samples (alpha " in done.stdout and share in done.stdout

    out = tmp_path / "adapter"
    args = [*_args(base, out), "--samples", str(mixed), *MIX]
    killed_at = _kill_at_first_checkpoint(args, out)
    for changed in (("--neutral-keep", "1"), ("--corpus-mix", "proportional")):
        other = _run([*args, "--resume", *changed])
        assert other.returncode == 2 and "other data or settings" in other.stderr
    resumed = _run([*args, "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    again = json.loads((out / "training_card.json").read_text())
    assert again["resumed_from_step"] >= killed_at
    assert again["loss_history"] == card["loss_history"]
    assert again["data"]["seen"] == seen
    import torch

    first, second = _weights(full), _weights(out)
    assert all(torch.equal(first[k], second[k]) for k in first)


def test_a_short_run_tokenizes_only_the_samples_it_draws(base, tmp_path, capsys):
    # Catches: tokenizing the whole samples file before the first step.
    samples = make_mixed_samples(tmp_path, copies=30)  # 720 samples
    out = tmp_path / "adapter"
    code, err, printed = _cli(
        [*_args(base, out), "--samples", str(samples), "--max-steps", "2", "--json"], capsys
    )
    assert code == 0, err
    data = json.loads(printed)["data"]
    assert data["samples_read"] == 720
    assert data["samples_tokenized"] == 256  # one window of draws
    assert 0 < data["samples_used"] <= data["seen"]["samples"] < 256
