"""A GGUF LoRA adapter folded into its base GGUF: one full model file, no adapter at run time.

For every base tensor ``W`` that the adapter changes (``<name>.lora_a`` and ``<name>.lora_b``),
the merged tensor is ``W + scale * B @ A``, with the scale llama.cpp applies at run time:
``alpha / r`` (``adapter.lora.alpha``; ``r`` is the inner dimension of the pair; an alpha of 0
means a scale of 1). The adapter's matrices are stored in llama.cpp's own layout (a Llama q/k
``B`` already carries the rotary row permutation), so the product is already in the layout of
the GGUF's weights. ``W`` is dequantized, the delta added in float32, and the sum written in the
type asked for: ``q8_0`` (the default), ``f16``, ``f32``, or ``base``, the base tensor's own type
where the ``gguf`` package can quantize it (else F16). Every metadata key and every other tensor
is copied as it is, in the base's order, so the same inputs always give the same bytes.

Why Q8_0 and not the base's type: a LoRA's delta is far smaller than a 4-bit quantization step
(SmolLM2's Q4_1 attention weights: a step of about 0.06 per block, a mean delta of about 0.001),
so requantizing ``W + delta`` to Q4_1 lands on ``W``'s own grid points and loses nearly all of
the adapter; Q8_0's step (about 0.004) keeps it.

Why this exists: llama.cpp computes a row of a decode call to the same bits whatever else is in
the call for quantized weights, but not for an adapter's F16 products; a merged model whose
merged tensors are quantized therefore decodes many sequences in one call and gives each the
bits it would get alone (measured for quantized weights; F16 weights take the kernels that
made the adapter's rows depend on their company).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cogwm.errors import ConfigError, InputError

#: The types merged tensors may be written in (``base``: the base tensor's own when quantizable).
MergeType = Literal["q8_0", "f16", "f32", "base"]
MERGE_TYPES: tuple[str, ...] = ("q8_0", "f16", "f32", "base")

#: Changes whenever the merge would write other bytes for the same inputs; part of the name of
#: a merged file in the cache, so that an old one is not taken for a new one.
MERGE_VERSION = "merge1"


@dataclass(frozen=True)
class MergeSummary:
    """What was written: the file, the tensors merged and the types they were written in."""

    path: Path
    merged: int
    copied: int
    rank: int
    alpha: float
    scale: float
    types: dict[str, int]
    bytes: int

    def line(self) -> str:
        """One line for the command line."""
        types = ", ".join(f"{count} {name}" for name, count in sorted(self.types.items()))
        return (
            f"{self.path}: {self.merged} tensors merged (rank {self.rank}, alpha {self.alpha:g}, "
            f"scale {self.scale:g}; written as {types}), {self.copied} copied, "
            f"{self.bytes / 1e6:.1f} MB"
        )


@dataclass(frozen=True)
class LoraPair:
    """The two matrices of one adapted tensor, as numpy arrays in GGUF's (rows, columns)."""

    a: Any  # (r, n_in)
    b: Any  # (n_out, r)


def read_gguf(path: Path, what: str) -> Any:
    """``path`` opened with ``gguf.GGUFReader``.

    Raises:
        InputError: No such file, or not a GGUF file.
    """
    import gguf

    if not path.is_file():
        raise InputError(f"{what} {path}: no such file")
    try:
        return gguf.GGUFReader(str(path))
    except (ValueError, OSError, IndexError, KeyError) as exc:
        raise InputError(f"{what} {path}: not a GGUF file ({exc})") from None


def field_value(reader: Any, key: str) -> Any:
    """The value of metadata ``key`` in ``reader``, or None."""
    found = reader.fields.get(key)
    return None if found is None else found.contents()


def lora_pairs(adapter: Any, path: Path) -> dict[str, LoraPair]:
    """The adapter's (A, B) matrices by the name of the base tensor they change.

    Raises:
        InputError: Not a LoRA adapter, or a tensor without its partner.
    """
    if field_value(adapter, "general.type") != "adapter" or (
        field_value(adapter, "adapter.type") != "lora"
    ):
        raise InputError(f"adapter {path}: not a GGUF LoRA adapter (general.type, adapter.type)")
    import numpy as np

    halves: dict[str, dict[str, Any]] = {}
    for tensor in adapter.tensors:
        name, dot, half = tensor.name.rpartition(".")
        if not dot or half not in ("lora_a", "lora_b"):
            raise InputError(f"adapter {path}: tensor {tensor.name} is not a lora_a/lora_b matrix")
        values = np.asarray(tensor.data, dtype=np.float32).reshape(_rows_columns(tensor))
        halves.setdefault(name, {})[half] = values
    lonely = [name for name, pair in halves.items() if len(pair) != 2]
    if lonely:
        raise InputError(f"adapter {path}: {lonely[0]} lacks its lora_a or lora_b matrix")
    if not halves:
        raise InputError(f"adapter {path}: no LoRA tensors")
    return {name: LoraPair(pair["lora_a"], pair["lora_b"]) for name, pair in halves.items()}


def _rows_columns(tensor: Any) -> tuple[int, ...]:
    """The numpy shape of a GGUF tensor (GGUF lists dimensions innermost first)."""
    return tuple(int(n) for n in reversed(tensor.shape.tolist()))


def lora_scale(alpha: float, rank: int) -> float:
    """The factor llama.cpp multiplies ``B @ A`` by: ``alpha / rank``, or 1 without an alpha."""
    return alpha / rank if alpha else 1.0


def merge_gguf(
    base: Path, adapter: Path, out: Path, *, out_type: MergeType = "q8_0"
) -> MergeSummary:
    """Write ``base`` with ``adapter`` folded into its weights as the GGUF model ``out``.

    The file is written beside ``out`` under a temporary name and renamed, so ``out`` is either
    absent or whole.

    Raises:
        InputError: A file that is not a GGUF, not a LoRA adapter, or an adapter whose tensors do
            not fit the base's (other architecture, names or shapes).
        ConfigError: An unknown ``out_type``.
    """
    if out_type not in MERGE_TYPES:
        raise ConfigError(f"--type {out_type}: not one of {', '.join(MERGE_TYPES)}")
    base_reader = read_gguf(base, "base")
    adapter_reader = read_gguf(adapter, "adapter")
    _check_architecture(base_reader, adapter_reader, base, adapter)
    pairs = lora_pairs(adapter_reader, adapter)
    alpha = float(field_value(adapter_reader, "adapter.lora.alpha") or 0.0)
    out.parent.mkdir(parents=True, exist_ok=True)
    # One name per process and thread, so concurrent builds of one file never share a temp file.
    aside = out.with_name(f".{out.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        summary = _write(base_reader, pairs, alpha, aside, out_type, adapter)
        os.replace(aside, out)
    finally:
        aside.unlink(missing_ok=True)
    return dataclasses.replace(summary, path=out, bytes=out.stat().st_size)


def _check_architecture(base: Any, adapter: Any, base_path: Path, adapter_path: Path) -> None:
    """Raises InputError when the adapter was made for another architecture or is not one."""
    if field_value(base, "general.type") == "adapter":
        raise InputError(f"base {base_path}: is an adapter, not a model")
    ours, theirs = (field_value(r, "general.architecture") for r in (base, adapter))
    if ours != theirs:
        raise InputError(
            f"adapter {adapter_path}: made for architecture {theirs}, the base {base_path.name} "
            f"is {ours}"
        )


def _write(
    base: Any, pairs: dict[str, LoraPair], alpha: float, out: Path, out_type: str, adapter: Path
) -> MergeSummary:
    """Copy ``base``'s metadata and tensors to ``out``, the adapted ones merged."""
    import gguf

    tensors = {tensor.name: tensor for tensor in base.tensors}
    unknown = sorted(set(pairs) - set(tensors))
    if unknown:
        raise InputError(f"adapter {adapter}: the base has no tensor {unknown[0]}")
    writer = gguf.GGUFWriter(str(out), arch=field_value(base, "general.architecture"))
    _copy_metadata(base, writer)
    types: dict[str, int] = {}
    rank = 0
    for name, tensor in tensors.items():
        pair = pairs.get(name)
        if pair is None:
            writer.add_tensor(name, tensor.data, raw_dtype=tensor.tensor_type)
            continue
        rank = int(pair.a.shape[0])
        data, qtype = merged_tensor(tensor, pair, lora_scale(alpha, rank), out_type, adapter)
        writer.add_tensor(name, data, raw_dtype=qtype)
        types[qtype.name] = types.get(qtype.name, 0) + 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return MergeSummary(
        out, len(pairs), len(tensors) - len(pairs), rank, alpha, lora_scale(alpha, rank), types, 0
    )


def _copy_metadata(base: Any, writer: Any) -> None:
    """Every key of ``base`` but the file's own header fields and the architecture (the writer
    adds it first, where the base has it too), with its type."""
    import gguf

    for key, found in base.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        sub_type = found.types[-1] if found.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, found.contents(), found.types[0], sub_type=sub_type)


def merged_tensor(
    tensor: Any, pair: LoraPair, scale: float, out_type: str, adapter: Path
) -> tuple[Any, Any]:
    """``W + scale * B @ A`` as the bytes (or floats) to write, and their GGML type.

    Raises:
        InputError: ``A`` and ``B`` do not fit ``W``'s shape.
    """
    import gguf
    import numpy as np

    rows, columns = _rows_columns(tensor)
    if pair.b.shape[1] != pair.a.shape[0] or (pair.b.shape[0], pair.a.shape[1]) != (rows, columns):
        raise InputError(
            f"adapter {adapter}: {tensor.name} is {rows}x{columns} in the base, its LoRA gives "
            f"{pair.b.shape[0]}x{pair.a.shape[1]} (rank {pair.a.shape[0]}/{pair.b.shape[1]})"
        )
    weights = gguf.quants.dequantize(tensor.data, tensor.tensor_type).reshape(rows, columns)
    merged = weights.astype(np.float32) + np.float32(scale) * (pair.b @ pair.a)
    qtype = _target_type(tensor.tensor_type, out_type, columns)
    return gguf.quants.quantize(merged.astype(np.float32), qtype), qtype


def _target_type(base_type: Any, out_type: str, columns: int) -> Any:
    """The GGML type a merged tensor is written in (see the module)."""
    import gguf

    kinds = gguf.GGMLQuantizationType
    if out_type != "base":
        return kinds[out_type.upper()]
    block, _ = gguf.GGML_QUANT_SIZES[base_type]
    if base_type in (kinds.F32, kinds.F16, kinds.BF16) or (
        _quantizable(base_type) and columns % block == 0
    ):
        return base_type
    return kinds.F16


def _quantizable(qtype: Any) -> bool:
    """Whether ``gguf.quants`` can quantize to ``qtype`` (it dequantizes more types)."""
    import gguf
    import numpy as np

    block, _ = gguf.GGML_QUANT_SIZES[qtype]
    try:
        gguf.quants.quantize(np.zeros((1, block), dtype=np.float32), qtype)
    except (NotImplementedError, gguf.quants.QuantError):
        return False
    return True


def merge_key(base_fingerprint: str, adapter_fingerprint: str, out_type: str) -> str:
    """A short name for the merge of two files (by their content) in one type."""
    text = f"{MERGE_VERSION}|{base_fingerprint}|{adapter_fingerprint}|{out_type}"
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()
