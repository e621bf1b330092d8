"""What a training run draws: the no-emotion filter, the corpus mix, and lazily planned batches."""

from __future__ import annotations

import json
from collections import Counter
from itertools import islice
from pathlib import Path

import pytest

from cogwm.errors import InputError
from cogwm.simulator.samples import parse_sample
from cogwm.simulator.train.config import TrainConfig
from cogwm.simulator.train.data import Encoded
from cogwm.simulator.train.mix import (
    WINDOW,
    BatchStream,
    SampleIndex,
    draw_order,
    index_samples,
    is_no_emotion,
    mix_counts,
    select_pool,
)
from helpers_train import FIXTURE_SAMPLES


def _fixture_row() -> dict:
    return json.loads((FIXTURE_SAMPLES / "train.jsonl").read_text().splitlines()[0])


def _with_emotion(emotion: str, tag: str = "state"):
    """A fixture sample whose target is just an emotion (spans consistent with it)."""
    target = '{"emotion":' + emotion + ',"utterance":"ok"}'
    value = (len('{"emotion":'), len('{"emotion":') + len(emotion))
    spans = [[0, value[0], "syntax"], [*value, tag], [value[1], len(target), "syntax"]]
    line = json.dumps({**_fixture_row(), "target": target, "target_spans": spans})
    return parse_sample(line)


def _index(sizes: dict[str, int], neutral_every: int = 0) -> SampleIndex:
    """A synthetic index: ``sizes[c]`` samples of corpus c; every n-th sample no-emotion."""
    ids, corpora, neutral = [], [], []
    for corpus, size in sizes.items():
        for i in range(size):
            ids.append(f"{corpus}:{i}")
            corpora.append(corpus)
            neutral.append(bool(neutral_every) and i % neutral_every == 0)
    return SampleIndex(Path("train.jsonl"), list(range(len(ids))), ids, corpora, neutral)


def test_which_samples_count_as_no_emotion():
    # Catches: a neutral-keep filter that drops unknown emotions or real emotions.
    assert is_no_emotion(_with_emotion('{"label":"neutral","intensity":null}'))
    assert is_no_emotion(_with_emotion("null", "state"))  # an annotator said: no emotion
    assert not is_no_emotion(_with_emotion("null", "unknown"))  # the source says nothing
    assert not is_no_emotion(_with_emotion('{"label":"anger","intensity":2}'))
    index = index_samples(FIXTURE_SAMPLES / "train.jsonl")
    labels = [
        json.loads(json.loads(line)["target"])["emotion"]
        for line in (FIXTURE_SAMPLES / "train.jsonl").read_text().splitlines()
    ]
    expected = [bool(e) and e["label"] == "neutral" for e in labels]
    assert index.no_emotion == expected and sum(expected) == 3


def test_neutral_keep_keeps_a_seeded_fraction_of_no_emotion_samples_only():
    # Catches: the fraction ignored, non-neutral samples dropped, or a choice tied to file order.
    index = _index({"dailydialog": 4000, "esconv": 500}, neutral_every=2)
    pool = select_pool(index, 0.25, seed=3)
    kept = [p for positions in pool.values() for p in positions]
    neutral_kept = sum(index.no_emotion[p] for p in kept)
    assert 0.22 * 2250 < neutral_kept < 0.28 * 2250  # of the 2,250 no-emotion samples
    assert sum(not index.no_emotion[p] for p in kept) == 2250  # every other sample stays
    assert select_pool(index, 0.25, seed=3) == pool
    assert select_pool(index, 0.25, seed=4) != pool
    assert select_pool(index, 1.0, seed=3)["dailydialog"] == list(range(4000))
    # The choice follows the sample's id, not its place in the file.
    reverse = SampleIndex(
        index.path, index.offsets, index.ids[::-1], index.corpora[::-1], index.no_emotion[::-1]
    )
    chosen = {index.ids[p] for p in kept}
    again = {
        reverse.ids[p] for positions in select_pool(reverse, 0.25, 3).values() for p in positions
    }
    assert chosen == again
    with pytest.raises(InputError, match="leaves no sample"):
        select_pool(_index({"dailydialog": 3}, neutral_every=1), 1e-9, seed=0)


def test_uniform_mix_draws_corpora_equally_each_without_replacement():
    # Catches: a size-proportional "uniform" mix, repeats before a corpus is exhausted, an
    # unseeded order.
    index = _index({"big": 3000, "mid": 90, "tiny": 7})
    pool = select_pool(index, 1.0, seed=0)
    draws = list(islice(draw_order(pool, "uniform", seed=5), 3000))
    shares = Counter(index.corpora[p] for p in draws)
    assert all(900 < shares[c] < 1100 for c in ("big", "mid", "tiny"))
    tiny = [p for p in draws if index.corpora[p] == "tiny"]
    for first in range(0, len(tiny) - 7, 7):  # each pass over "tiny" is a permutation
        assert sorted(tiny[first : first + 7]) == pool["tiny"]
    big = [p for p in draws if index.corpora[p] == "big"]
    assert len(set(big)) == len(big)  # not exhausted yet: no repeat
    assert draws == list(islice(draw_order(pool, "uniform", seed=5), 3000))
    assert draws != list(islice(draw_order(pool, "uniform", seed=6), 3000))


def test_proportional_mix_is_one_seeded_pass_per_epoch():
    # Catches: the default mix no longer visiting every sample once per epoch.
    index = _index({"big": 300, "tiny": 7})
    pool = select_pool(index, 1.0, seed=0)
    draws = list(islice(draw_order(pool, "proportional", seed=1), 614))
    assert sorted(draws[:307]) == sorted(draws[307:]) == list(range(307))
    assert draws[:307] != draws[307:]


def _stream(index, mix="proportional", too_long=frozenset(), seed=0, log=None, window=WINDOW):
    pool = select_pool(index, 1.0, seed)

    def encode(position: int) -> Encoded | None:
        if log is not None:
            log.append(position)
        if position in too_long:
            return None
        length = 20 + (position * 37) % 200
        return Encoded(index.ids[position], [1] * length, [1.0] * length)

    size = sum(len(v) for v in pool.values())
    return BatchStream(draw_order(pool, mix, seed), size, encode, 800, seed, window=window)


def test_batches_are_planned_and_tokenized_a_window_at_a_time():
    # Catches: tokenizing the whole pool for the first batch (the 194k-sample start-up), batches
    # over the token budget, a plan that differs between two runs (resume).
    index = _index({"a": 5000, "b": 3000})
    log: list[int] = []
    stream = _stream(index, log=log)
    first = stream.get(0)
    assert len(log) == WINDOW and stream.drawn == WINDOW
    for n in range(40):
        batch = stream.get(n)
        longest = max(20 + (p * 37) % 200 for p in batch.positions)
        assert longest * len(batch.positions) <= 800
    assert len(log) < 8 * WINDOW
    again = _stream(index)
    assert [again.get(n) for n in range(40)] == stream.batches[:40] and stream.batches[0] == first


def test_an_epoch_plans_every_trainable_sample_once():
    # Catches: samples lost or doubled at window and epoch edges, too-long samples trained on.
    index = _index({"a": 700, "b": 300})
    too_long = frozenset(range(0, 1000, 10))
    stream = _stream(index, too_long=too_long)
    n_batches = stream.plan_epochs(1)
    planned = [p for b in stream.batches[:n_batches] for p in b.positions]
    assert sorted(planned) == [p for p in range(1000) if p not in too_long]
    assert {b.epoch for b in stream.batches[:n_batches]} == {0}
    assert stream.plan_epochs(2) > n_batches and stream.batches[-1].epoch == 1
    nothing = _stream(_index({"a": 30}), too_long=frozenset(range(30)))
    with pytest.raises(InputError, match="target token to learn"):
        nothing.get(0)


def test_mix_counts_report_corpora_and_the_no_emotion_share():
    index = _index({"dailydialog": 8, "esconv": 2}, neutral_every=2)
    counts = mix_counts(index, [0, 0, 1, 8, 9])
    assert counts == {
        "samples": 5,
        "by_corpus": {"dailydialog": 3, "esconv": 2},
        "no_emotion": 3,  # positions 0, 0 and 8 (esconv:0)
        "no_emotion_share": 0.6,
        "change": 0,
        "change_share": None,  # an index without change flags
    }
    index.changed.extend(i % 3 == 0 for i in range(len(index)))
    counts = mix_counts(index, [0, 0, 1, 8, 9])
    assert (counts["change"], counts["change_share"]) == (3, 0.6)  # positions 0, 0 and 9


def test_the_data_options_are_part_of_the_run_hash():
    # Catches: a resume that silently changes the mix (the checkpoint's hash would still match).
    base = TrainConfig(samples=Path("s"), base="b", out=Path("o"))
    hashes = {
        base.run_hash("m"),
        base.model_copy(update={"corpus_mix": "uniform"}).run_hash("m"),
        base.model_copy(update={"neutral_keep": 0.2}).run_hash("m"),
    }
    assert len(hashes) == 3
    with pytest.raises(ValueError):
        TrainConfig(samples=Path("s"), base="b", out=Path("o"), neutral_keep=0)
    with pytest.raises(ValueError):
        TrainConfig(samples=Path("s"), base="b", out=Path("o"), corpus_mix="sqrt")  # type: ignore[arg-type]


def test_step_plan_deals_epochs_round_robin_and_wraps_the_last_step():
    # Catches: --epochs losing or repeating batches when they do not divide among the processes,
    # --max-steps stopping at an epoch's end, and a card mix that is not what was dealt.
    from cogwm.simulator.train.loop import StepPlan

    index = _index({"a": 704, "b": 300})  # 173 batches: an odd count for two processes
    config = TrainConfig(samples=Path("s"), base="b", out=Path("o"), epochs=1)
    one = StepPlan(_stream(index), config, world=1)
    batches = one.stream.batches[: one.total]
    assert one.total == one.wrap == 173
    assert [one.batch(s, 0) for s in range(one.total)] == batches
    assert sorted(one.dealt()) == list(range(1004))
    two = StepPlan(_stream(index), config, world=2)
    assert two.total == 87
    assert two.batch(86, 1) == batches[0]  # the spare slot wraps to the first batch
    assert len(list(two.dealt())) == 1004 + len(batches[0].positions)
    steps = StepPlan(_stream(index), config.model_copy(update={"max_steps": 178}), 1)
    assert steps.batch(177, 0).epoch == 1  # past the first epoch, into the second


def test_step_plan_gives_each_step_the_same_batches_however_split():
    # Catches: micro-batches of one step overlapping the next step's, a step count that ignores
    # --grad-accum, and accumulation dealing other batches than the same number of processes.
    from cogwm.simulator.train.loop import StepPlan

    index = _index({"a": 704, "b": 300})  # 173 batches
    config = TrainConfig(samples=Path("s"), base="b", out=Path("o"), epochs=1)
    accumulated = StepPlan(_stream(index), config.model_copy(update={"grad_accum": 3}), world=2)
    batches = accumulated.stream.batches[:173]
    assert accumulated.total == 29  # ceil(173 / (3 x 2))
    assert accumulated.batch(4, 1, 2) == batches[4 * 6 + 2 * 2 + 1]
    assert accumulated.micro_batches(28, 0)[-1] == batches[(28 * 6 + 4) % 173]  # wraps round
    assert sorted(set(accumulated.dealt())) == list(range(1004))
    processes = StepPlan(_stream(index), config, world=2)
    two_micro = StepPlan(_stream(index), config.model_copy(update={"grad_accum": 2}), world=1)
    for step in range(processes.total):
        by_processes = [processes.batch(step, rank) for rank in range(2)]
        assert two_micro.micro_batches(step, 0) == by_processes
