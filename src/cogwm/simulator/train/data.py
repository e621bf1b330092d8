"""Samples files → token ids with per-token loss weights, and length-bucketed batches.

A sample (contract ``cogwm.samples/1``) carries the prompt messages, the assistant target text and
char spans of that text tagged ``state``, ``utterance``, ``syntax`` or ``unknown``. The prompt is
tokenized on its own (exactly as at inference, where the model continues the generation prompt)
and the target plus the template's end-of-turn text after it; every target token gets the weight
of the spans it covers. A token touching an ``unknown`` span weighs 0 whatever else it covers:
unknown fields are rendered as null and must never be learned. Prompt tokens weigh 0.

This module needs a tokenizer object but not torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cogwm.errors import InputError
from cogwm.simulator.samples import Sample, parse_sample, read_samples

SPAN_KINDS = ("state", "utterance", "syntax", "unknown")
#: The kind of the state chars inside a changed field's range (``--change-weight``).
CHANGED = "changed"
Objective = Literal["joint", "utt-only"]


def read_train_samples(path: Path) -> Iterator[Sample]:
    """The samples of one ``cogwm.samples/1`` file, with their spans checked against the target.

    Raises:
        InputError: A missing or malformed file, or a span outside its target.
    """
    for sample in read_samples(path):
        check_spans(sample, str(path))
        yield sample


def check_spans(sample: Sample, where: str) -> None:
    """Raise :class:`InputError` (naming ``where``) when a span of ``sample`` leaves its target."""
    for start, end, _ in sample.target_spans:
        if not 0 <= start <= end <= len(sample.target):
            raise InputError(
                f"{where}: sample {sample.id}: span [{start}, {end}) outside the target"
            )


def manifest_hash(samples_dir: Path) -> str:
    """SHA-256 of the samples manifest (of the train file when there is no manifest)."""
    manifest = samples_dir / "manifest.json"
    source = manifest if manifest.is_file() else samples_dir / "train.jsonl"
    return hashlib.sha256(source.read_bytes()).hexdigest()


def span_weights(
    objective: Objective, state_weight: float, change_weight: float = 1.0
) -> dict[str, float]:
    """Loss weight per span kind: ``utt-only`` learns the utterance spans alone.

    With ``change_weight`` other than 1, the kind ``changed`` (state spans of the fields whose
    gold differs from the previous state, see :func:`encode_sample`) weighs
    ``state_weight x change_weight``.
    """
    if objective == "utt-only":
        weights = {"state": 0.0, "utterance": 1.0, "syntax": 0.0, "unknown": 0.0}
    else:
        weights = {"state": state_weight, "utterance": 1.0, "syntax": 1.0, "unknown": 0.0}
    if change_weight != 1:
        weights[CHANGED] = weights["state"] * change_weight
    return weights


@dataclass(frozen=True)
class Encoded:
    """One sample as token ids and the loss weight of each token (as a prediction target)."""

    id: str
    ids: list[int]
    weights: list[float]

    @property
    def n_target(self) -> int:
        """Tokens with a positive weight."""
        return sum(1 for w in self.weights if w > 0)


def encode_sample(
    sample: Sample,
    tokenizer: Any,
    weights: dict[str, float],
    max_length: int,
    changed: Sequence[tuple[int, int]] = (),
) -> Encoded | None:
    """Token ids and weights of ``sample``; None when it is longer than ``max_length`` tokens.

    The state chars inside the target ranges ``changed`` take the weight of the kind
    :data:`CHANGED` (which ``weights`` must then hold).

    Raises:
        InputError: The tokenizer's chat template changes the target text (so char spans
            cannot be mapped to tokens) or the tokenizer gives no char offsets.
    """
    messages = [{"role": m.role, "content": m.content} for m in sample.messages]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    full = tokenizer.apply_chat_template(
        [*messages, {"role": "assistant", "content": sample.target}], tokenize=False
    )
    if not full.startswith(prompt + sample.target):
        raise InputError(
            f"sample {sample.id}: the chat template does not render the target verbatim after "
            "the generation prompt; choose a base whose template does"
        )
    suffix = full[len(prompt) + len(sample.target) :]
    prompt_ids: list[int] = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    if len(prompt_ids) + 1 > max_length:
        return None
    enc = tokenizer(sample.target + suffix, add_special_tokens=False, return_offsets_mapping=True)
    target_ids: list[int] = enc["input_ids"]
    offsets: list[tuple[int, int]] = enc.get("offset_mapping") or []
    if len(offsets) != len(target_ids):
        raise InputError("the base's tokenizer gives no char offsets (a fast tokenizer is needed)")
    kinds = _char_kinds(sample, changed)
    token_weights = _token_weights(offsets, kinds, weights, tokenizer, target_ids)
    ids = prompt_ids + target_ids
    if len(ids) > max_length:
        return None
    return Encoded(sample.id, ids, [0.0] * len(prompt_ids) + token_weights)


def _char_kinds(sample: Sample, changed: Sequence[tuple[int, int]] = ()) -> list[str]:
    # Chars no span covers are JSON syntax (braces, keys); unknown wins where spans overlap.
    kinds = ["syntax"] * len(sample.target)
    for start, end, kind in sorted(sample.target_spans, key=lambda s: s[2] == "unknown"):
        kinds[start:end] = [kind] * (end - start)
    for start, end in changed:
        kinds[start:end] = [CHANGED if k == "state" else k for k in kinds[start:end]]
    return kinds


def _token_weights(
    offsets: Sequence[tuple[int, int]],
    kinds: list[str],
    weights: dict[str, float],
    tokenizer: Any,
    ids: list[int],
) -> list[float]:
    n_chars = len(kinds)
    eos = tokenizer.eos_token_id
    result: list[float] = []
    in_suffix_done = False
    for (start, end), token in zip(offsets, ids, strict=True):
        if start < n_chars:
            covered = kinds[start : min(max(end, start + 1), n_chars)]
            if "unknown" in covered:
                result.append(0.0)
            else:
                result.append(max(weights[k] for k in covered))
        elif not in_suffix_done:
            # The end-of-turn token is learned (as syntax) so the model stops; later template
            # text (a trailing newline) is not.
            result.append(weights["syntax"])
            in_suffix_done = token == eos or eos is None
        else:
            result.append(0.0)
    return result


def encode_all(
    samples: Sequence[Sample], tokenizer: Any, weights: dict[str, float], max_length: int
) -> tuple[list[Encoded], int]:
    """Encoded samples with at least one target token, and how many were too long."""
    kept: list[Encoded] = []
    too_long = 0
    for sample in samples:
        encoded = encode_sample(sample, tokenizer, weights, max_length)
        if encoded is None:
            too_long += 1
        elif encoded.n_target:
            kept.append(encoded)
    return kept, too_long


def plan_batches(
    lengths: Sequence[int], batch_tokens: int, seed: int, epoch: int, bucket: int = 256
) -> list[list[int]]:
    """Index batches of one epoch: shuffled, length-sorted within buckets, padded size ≤ budget.

    Deterministic in (seed, epoch). A sample longer than the budget forms a batch of its own.
    (The training run batches lazily drawn samples with :func:`pack_batches` window by window;
    this whole-list plan serves the validation subset.)
    """
    rng = random.Random(f"{seed}:{epoch}")
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    for first in range(0, len(order), bucket):
        batches.extend(pack_batches(order[first : first + bucket], lengths, batch_tokens))
    rng.shuffle(batches)
    return batches


def pack_batches(
    indices: Sequence[int], lengths: Sequence[int] | Mapping[int, int], batch_tokens: int
) -> list[list[int]]:
    """``indices`` sorted by length (stably) and cut into batches whose padded size
    (longest × count) stays within ``batch_tokens``; an over-long sample is a batch of its own."""
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index in sorted(indices, key=lambda i: lengths[i]):
        longest_if_added = max(longest, lengths[index])
        if current and longest_if_added * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, longest_if_added = [], lengths[index]
        current.append(index)
        longest = longest_if_added
    if current:
        batches.append(current)
    return batches


#: The layout of the encoding cache files; part of their key, so files of another layout are
#: never read (version 1 held every sample of the file in one array set).
ENCODING_FORMAT = "cogwm.encoded/2"


def encoding_key(
    samples_file: Path,
    tokenizer_dir: Path,
    weights: dict[str, float],
    max_length: int,
    view: str = "",
) -> str:
    """What the encoding of a samples file depends on: the file, the tokenizer, weights, length,
    how samples are changed before encoding (``view``, e.g. state dropout; '' for none) and the
    cache layout (:data:`ENCODING_FORMAT`)."""
    digest = hashlib.sha256(ENCODING_FORMAT.encode())
    stat = samples_file.stat()
    digest.update(f"{samples_file.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        path = tokenizer_dir / name
        if path.is_file():
            digest.update(path.read_bytes())
    digest.update(json.dumps([sorted(weights.items()), max_length]).encode())
    if view:
        digest.update(view.encode())
    return digest.hexdigest()[:16]


#: One line of a samples file as the training run holds it: its encoding, or None when the
#: sample is longer than ``--max-length``.
Encoding = Encoded | None
#: A sample as written → the sample trained on and the target ranges whose state chars are
#: :data:`CHANGED` (see :class:`cogwm.simulator.train.states.TrainingView`).
SampleView = Callable[[Sample], tuple[Sample, list[tuple[int, int]]]]


class LazyEncoder:
    """Encodes the samples of a file by line position when first asked, and keeps the result.

    A run that trains on a few thousand of a file's samples tokenizes those alone (a SmolLM2
    tokenizer needs about 2 ms a sample: minutes for a full samples file).
    """

    def __init__(
        self,
        path: Path,
        offsets: Sequence[int],
        tokenizer: Any,
        weights: dict[str, float],
        max_length: int,
        view: SampleView | None = None,
    ) -> None:
        self.path = path
        self.view = view
        self.offsets = offsets
        self.tokenizer = tokenizer
        self.weights = weights
        self.max_length = max_length
        self.cache: dict[int, Encoding] = {}
        self._unsaved: list[int] = []

    def __call__(self, position: int) -> Encoded | None:
        """The sample at ``position`` if it is trainable (within ``max_length``, with a target
        token), else None."""
        encoded = self.encoding(position)
        return encoded if encoded is not None and encoded.n_target else None

    def encoding(self, position: int) -> Encoding:
        """The encoding of the sample at ``position`` (None: too long), tokenized once."""
        if position not in self.cache:
            sample, changed = self._trained_sample(position)
            self.cache[position] = encode_sample(
                sample, self.tokenizer, self.weights, self.max_length, changed
            )
            self._unsaved.append(position)
        return self.cache[position]

    def _trained_sample(self, position: int) -> tuple[Sample, list[tuple[int, int]]]:
        sample = self.read(position)
        return self.view(sample) if self.view is not None else (sample, [])

    def read(self, position: int) -> Sample:
        """The sample at ``position`` as the file writes it."""
        with self.path.open("rb") as handle:
            handle.seek(self.offsets[position])
            line = handle.readline().decode("utf-8")
        sample = parse_sample(line, f"{self.path}: byte {self.offsets[position]}")
        check_spans(sample, str(self.path))
        return sample

    def preload(self, entries: dict[int, Encoding]) -> None:
        """Take encodings read back from the cache files (they are not saved again)."""
        self.cache.update(entries)

    def take_unsaved(self) -> list[tuple[int, Encoding]]:
        """The encodings made since the last call, for the next cache file."""
        taken = [(p, self.cache[p]) for p in self._unsaved]
        self._unsaved = []
        return taken

    def counts(self) -> dict[str, int]:
        """Samples tokenized so far, and how many of them were too long or had no target."""
        values = list(self.cache.values())
        return {
            "samples_tokenized": len(values),
            "samples_too_long": sum(1 for e in values if e is None),
            "samples_without_target": sum(1 for e in values if e is not None and not e.n_target),
        }


def save_encoded(path: Path, entries: Sequence[tuple[int, Encoding]]) -> None:
    """Write encodings by line position (flat numpy arrays) atomically, so a restart skips
    the tokenizer for them; a too-long sample is stored with length -1."""
    import numpy as np

    present = [e for _, e in entries if e is not None]
    lengths = np.array([-1 if e is None else len(e.ids) for _, e in entries], dtype=np.int64)
    meta = json.dumps(
        {
            "format": ENCODING_FORMAT,
            "positions": [p for p, _ in entries],
            "sample_ids": [None if e is None else e.id for _, e in entries],
        }
    )
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(
        tmp,
        ids=np.fromiter((i for e in present for i in e.ids), dtype=np.int32),
        weights=np.fromiter((w for e in present for w in e.weights), dtype=np.float32),
        lengths=lengths,
        meta=np.array(meta),
    )
    os.replace(tmp, path)


def load_encoded(path: Path) -> dict[int, Encoding]:
    """What :func:`save_encoded` wrote, by line position."""
    import numpy as np

    with np.load(path) as data:
        meta = json.loads(str(data["meta"]))
        ids, weights = data["ids"].tolist(), data["weights"].tolist()
        lengths = data["lengths"].tolist()
    result: dict[int, Encoding] = {}
    start = 0
    for position, sample_id, length in zip(
        meta["positions"], meta["sample_ids"], lengths, strict=True
    ):
        if length < 0:
            result[position] = None
            continue
        end = start + length
        result[position] = Encoded(sample_id, ids[start:end], weights[start:end])
        start = end
    return result
