"""Samples → token ids and loss weights, and the batch plan (no torch needed beyond tokenizers)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from cogwm.errors import InputError
from cogwm.simulator.train.data import (
    LazyEncoder,
    encode_all,
    encode_sample,
    load_encoded,
    manifest_hash,
    plan_batches,
    read_train_samples,
    save_encoded,
    span_weights,
)
from helpers_train import CHATML, FIXTURE_SAMPLES, fixture_texts

needs_tokenizers = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("tokenizers", "transformers")),
    reason="needs the 'train' extra (tokenizers, transformers)",
)


@pytest.fixture(scope="module")
def tokenizer():
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        fixture_texts(), vocab_size=400, special_tokens=["<|im_end|>", "<|im_start|>"]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|im_end|>"
    )
    tok.chat_template = CHATML
    return tok


def _samples():
    return list(read_train_samples(FIXTURE_SAMPLES / "train.jsonl"))


def _target_text(tok, encoded, weight_filter):
    return "".join(
        tok.decode([i])
        for i, w in zip(encoded.ids, encoded.weights, strict=True)
        if weight_filter(w)
    )


@needs_tokenizers
def test_weights_follow_spans_unknown_never_a_target(tokenizer):
    samples = _samples()
    weights = span_weights("joint", state_weight=2.0)
    for sample in samples:
        encoded = encode_sample(sample, tokenizer, weights, 4096)
        assert encoded is not None
        learned = _target_text(tokenizer, encoded, lambda w: w > 0)
        assert learned.endswith("<|im_end|>")  # the model learns to stop
        assert learned.count("<|im_end|>") == 1
        if any(kind == "unknown" for *_, kind in sample.target_spans):
            # The tokens of unknown fields ("null") are never learned, whatever their neighbours.
            assert "null" in sample.target and "null" not in learned
        # The prompt weighs nothing.
        prompt_len = len(
            tokenizer(
                tokenizer.apply_chat_template(
                    [m.model_dump() for m in sample.messages],
                    add_generation_prompt=True,
                    tokenize=False,
                ),
                add_special_tokens=False,
            )["input_ids"]
        )
        assert not any(encoded.weights[:prompt_len])
        assert encoded.weights[prompt_len] > 0  # the first target token is learned
    # State tokens carry the state weight (the emotion label "joy" is a state span).
    first = encode_sample(samples[0], tokenizer, weights, 4096)
    assert first is not None
    state_text = _target_text(tokenizer, first, lambda w: w == 2.0)
    assert "joy" in state_text and "I think" not in state_text


@needs_tokenizers
def test_utt_only_learns_the_utterance_alone(tokenizer):
    sample = _samples()[0]
    encoded = encode_sample(sample, tokenizer, span_weights("utt-only", 3.0), 4096)
    assert encoded is not None
    learned = _target_text(tokenizer, encoded, lambda w: w > 0)
    assert "I think I can try that tomorrow." in learned
    assert "emotion" not in learned and "joy" not in learned and "<|im_end|>" not in learned


@needs_tokenizers
def test_too_long_samples_are_left_out_and_counted(tokenizer):
    samples = _samples()
    kept, too_long = encode_all(samples, tokenizer, span_weights("joint", 1.0), 60)
    assert too_long == len(samples) and not kept
    kept, too_long = encode_all(samples, tokenizer, span_weights("joint", 1.0), 4096)
    assert too_long == 0 and len(kept) == len(samples)


@needs_tokenizers
def test_a_template_that_rewrites_the_target_is_refused(tokenizer):
    tokenizer.chat_template = CHATML.replace(
        "message['content']", "message['content'] | trim | upper"
    )
    try:
        with pytest.raises(InputError, match="verbatim"):
            encode_sample(_samples()[0], tokenizer, span_weights("joint", 1.0), 4096)
    finally:
        tokenizer.chat_template = CHATML


def test_plan_batches_covers_each_sample_once_within_budget():
    lengths = [10 + (i * 37) % 90 for i in range(200)]
    batches = plan_batches(lengths, batch_tokens=400, seed=3, epoch=0, bucket=64)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(200))
    assert all(max(lengths[i] for i in b) * len(b) <= 400 for b in batches)
    assert plan_batches(lengths, 400, 3, 0, 64) == batches  # deterministic in (seed, epoch)
    assert plan_batches(lengths, 400, 3, 1, 64) != batches  # another epoch, another order
    # Length bucketing: padding stays small (sorted within buckets).
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    assert padded < 1.25 * sum(lengths)
    assert plan_batches([1000], 400, 0, 0) == [[0]]  # an over-long sample is a batch of its own


def test_bad_samples_files_are_one_line_input_errors(tmp_path: Path):
    with pytest.raises(InputError, match="not found"):
        list(read_train_samples(tmp_path / "missing.jsonl"))
    row = json.loads((FIXTURE_SAMPLES / "train.jsonl").read_text().splitlines()[0])
    cases = {
        "not valid JSON": "{oops\n",
        "cogwm.samples/1": json.dumps({**row, "schema": "other"}) + "\n",
        "outside the target": json.dumps({**row, "target_spans": [[0, 10_000, "state"]]}) + "\n",
        "target_spans": json.dumps({**row, "target_spans": [[0, 1, "bogus"]]}) + "\n",
        "target": json.dumps({k: v for k, v in row.items() if k != "target"}) + "\n",
    }
    for message, line in cases.items():
        path = tmp_path / "bad.jsonl"
        path.write_text(line)
        with pytest.raises(InputError, match=message):
            list(read_train_samples(path))


def test_manifest_hash_changes_with_the_manifest(tmp_path: Path):
    (tmp_path / "manifest.json").write_text('{"a": 1}')
    first = manifest_hash(tmp_path)
    (tmp_path / "manifest.json").write_text('{"a": 2}')
    assert manifest_hash(tmp_path) != first


@needs_tokenizers
def test_a_token_partly_unknown_is_not_learned(tokenizer):
    # "null" is one token here; the unknown span covers only its last three chars.
    sample = _samples()[0].model_copy(
        update={"target": '{"a":null}', "target_spans": [(6, 9, "unknown")]}
    )
    assert "null" in tokenizer.convert_ids_to_tokens(tokenizer("null")["input_ids"])
    encoded = encode_sample(sample, tokenizer, span_weights("joint", 1.0), 4096)
    assert encoded is not None
    learned = _target_text(tokenizer, encoded, lambda w: w > 0)
    assert "null" not in learned and learned.startswith('{"')


@needs_tokenizers
def test_encoded_samples_round_trip_through_the_cache(tokenizer, tmp_path):
    # Catches: a cache file that loses a too-long mark or shifts the samples after it.
    weights = span_weights("joint", 0.3)
    encoded = [encode_sample(s, tokenizer, weights, 4096) for s in _samples()]
    entries = [(7, encoded[0]), (3, None), (12, encoded[1]), (5, encoded[2])]
    save_encoded(tmp_path / "e.npz", entries)
    again = load_encoded(tmp_path / "e.npz")
    assert sorted(again) == [3, 5, 7, 12] and again[3] is None
    for position, original in entries:
        if original is None:
            continue
        back = again[position]
        assert back is not None
        assert (back.id, back.ids) == (original.id, original.ids)
        # Weights come back as float32 values: what the loss uses anyway.
        assert all(abs(a - b) < 1e-7 for a, b in zip(back.weights, original.weights, strict=True))


@needs_tokenizers
def test_the_lazy_encoder_tokenizes_a_sample_once_when_asked(tokenizer, tmp_path):
    # Catches: tokenizing up front, re-tokenizing cached samples, or reading the wrong line.
    from cogwm.simulator.train.mix import index_samples

    path = FIXTURE_SAMPLES / "train.jsonl"
    index = index_samples(path)
    weights = span_weights("joint", 1.0)
    calls = []

    class Counting:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def __call__(self, *args, **kwargs):
            calls.append(args[0])
            return self.inner(*args, **kwargs)

    encoder = LazyEncoder(path, index.offsets, Counting(tokenizer), weights, 4096)
    assert not calls and not encoder.cache
    fifth = encoder(5)
    assert fifth is not None and fifth.id == index.ids[5] == _samples()[5].id
    assert fifth == encode_sample(_samples()[5], tokenizer, weights, 4096)
    n_calls = len(calls)
    assert encoder(5) is fifth and len(calls) == n_calls  # cached
    assert [p for p, _ in encoder.take_unsaved()] == [5] and encoder.take_unsaved() == []
    assert encoder.counts() == {
        "samples_tokenized": 1,
        "samples_too_long": 0,
        "samples_without_target": 0,
    }
    short = LazyEncoder(path, index.offsets, tokenizer, weights, 60)
    assert short(0) is None and short.counts()["samples_too_long"] == 1
    # What a killed run saved is not tokenized again.
    again = LazyEncoder(path, index.offsets, Counting(tokenizer), weights, 4096)
    again.preload({5: fifth})
    calls.clear()
    assert again(5) is fifth and not calls and again.take_unsaved() == []
