"""Which samples a training run draws, in which order, and how the draws become batches.

Pool. Every sample of ``train.jsonl``, except that ``--neutral-keep F`` keeps only a seeded
fraction F of the *no-emotion* samples: those whose target emotion is the label ``neutral``
(DailyDialog's "no emotion", a lexicon extension) or an explicit empty emotion (``null`` tagged
``state``: an annotator said there is none). An emotion the source says nothing about (``null``
tagged ``unknown``) is not a no-emotion sample. A sample is kept when
``sha256("<seed>:neutral-keep:<sample id>")`` read as a fraction of 2^64 is below F: the choice
depends on the seed and the id alone, not on the file's order or size. A prediction sample and
its understanding twin are separate samples and are drawn independently.

Draw order (``--corpus-mix``), an endless sequence of pool samples:

- ``proportional``: epoch after epoch, a seeded permutation of the whole pool (epoch e shuffled by
  ``Random("<seed>:<e>")``), so each corpus appears in proportion to its size.
- ``uniform``: each draw first picks a corpus with equal probability (``Random("<seed>:corpus-
  mix")``), then takes that corpus's next sample in a seeded order without replacement
  (pass p of corpus c shuffled by ``Random("<seed>:<c>:<p>")``); an exhausted corpus starts its
  next pass. Small corpora are repeated more often than large ones.

An epoch is as many draws as the pool holds samples (with ``proportional``, exactly one pass).

Change share (``--change-share S``): the pool is cut in two, the *change* samples (the prompt
shows a previous state and a known field of the gold state differs from it; see
:mod:`cogwm.simulator.train.states`) and the others, each drawn as above on its own (seeds
``"<seed>:change"`` and ``"<seed>:other"``); each draw takes the next change sample with
probability S (``Random("<seed>:change-share")``), else the next other one.

Batches. The draws are cut into windows of :data:`WINDOW` consecutive draws (never across an
epoch's end); a window's samples are tokenized when it is planned, the trainable ones (within
``--max-length``, with a target token) sorted by token length and packed under
``--batch-tokens``, and the window's batches shuffled (``Random("<seed>:<epoch>:<window>")``).
So only what is drawn is ever tokenized, and the order is a pure function of the seed, the
options and the samples file: a resumed run plans the same batches again.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from cogwm.errors import InputError
from cogwm.simulator.samples import EMPTY_EMOTION, Sample, parse_sample, target_emotion
from cogwm.simulator.train.data import Encoded, check_spans, pack_batches
from cogwm.simulator.train.states import changed_fields

CorpusMix = Literal["proportional", "uniform"]
CORPUS_MIXES: tuple[CorpusMix, ...] = ("proportional", "uniform")
#: The lexicon extension DailyDialog's "no emotion" maps to
#: (:mod:`cogwm.corpora.labels.extensions`).
NO_EMOTION_LABEL = "neutral"
#: Consecutive draws batched together (length-sorted within, like a bucket).
WINDOW = 256
#: How draws become batches; part of the run hash, so a checkpoint of a run that ordered its
#: data otherwise (whole-epoch length buckets before this) is refused on resume.
DATA_ORDER = f"cogwm.data-order/2:window-{WINDOW}"


@dataclass(frozen=True)
class SampleIndex:
    """Where each sample of a samples file starts, and what choosing it needs to know."""

    path: Path
    offsets: list[int]
    ids: list[str]
    corpora: list[str]
    no_emotion: list[bool]
    changed: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.offsets)


def is_no_emotion(sample: Sample) -> bool:
    """True when the sample's target emotion is ``neutral`` or an explicit empty emotion."""
    return target_emotion(sample) in (NO_EMOTION_LABEL, EMPTY_EMOTION)


def index_samples(path: Path) -> SampleIndex:
    """Read and check every sample of ``path`` once, keeping only its offset, id, corpus and
    whether it is a no-emotion sample (a few seconds for 200,000 samples; tokenizing them
    would take minutes).

    Raises:
        InputError: A missing or unreadable file, or a bad sample (named by line).
    """
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    index = SampleIndex(path, [], [], [], [])
    offset = 0
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                line = raw.decode("utf-8")
                if line.strip():
                    sample = parse_sample(line, f"{path}: line {number}")
                    check_spans(sample, f"{path}: line {number}")
                    index.offsets.append(offset)
                    index.ids.append(sample.id)
                    index.corpora.append(sample.corpus)
                    index.no_emotion.append(is_no_emotion(sample))
                    index.changed.append(bool(changed_fields(sample)))
                offset += len(raw)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start} of a line)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    return index


def neutral_kept(sample_id: str, seed: int, fraction: float) -> bool:
    """Whether a no-emotion sample stays in the pool under ``--neutral-keep fraction``."""
    if fraction >= 1:
        return True
    digest = hashlib.sha256(f"{seed}:neutral-keep:{sample_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < fraction * 2**64


def select_pool(index: SampleIndex, neutral_keep: float, seed: int) -> dict[str, list[int]]:
    """The positions of the pool's samples by corpus (corpora by name, positions in file order).

    Raises:
        InputError: The file has no sample, or ``--neutral-keep`` leaves none.
    """
    pool: dict[str, list[int]] = {}
    for position, (sample_id, corpus, neutral) in enumerate(
        zip(index.ids, index.corpora, index.no_emotion, strict=True)
    ):
        if not neutral or neutral_kept(sample_id, seed, neutral_keep):
            pool.setdefault(corpus, []).append(position)
    if not pool:
        if not len(index):
            raise InputError(f"{index.path} has no sample")
        raise InputError(f"--neutral-keep {neutral_keep:g} leaves no sample of {index.path}")
    return dict(sorted(pool.items()))


def draw_order(
    pool: dict[str, list[int]],
    mix: CorpusMix,
    seed: int | str,
    *,
    change_share: float | None = None,
    changed: list[bool] | None = None,
) -> Iterator[int]:
    """The endless sequence of pool positions a run draws (see the module docstring).

    Args:
        pool: Pool positions by corpus.
        mix: How a draw picks a corpus.
        seed: The run's seed.
        change_share: Share of the draws that are change samples (None: as the pool has them).
        changed: Whether each file position is a change sample (needed with ``change_share``).

    Raises:
        InputError: ``change_share`` asks for change samples (or others) the pool lacks.
    """
    if change_share is not None:
        return _balanced(pool, mix, seed, change_share, changed or [])
    if mix == "proportional":
        return _proportional(sorted(p for positions in pool.values() for p in positions), seed)
    return _uniform(pool, seed)


def _balanced(
    pool: dict[str, list[int]], mix: CorpusMix, seed: int | str, share: float, changed: list[bool]
) -> Iterator[int]:
    parts: dict[bool, dict[str, list[int]]] = {True: {}, False: {}}
    for corpus, positions in pool.items():
        for position in positions:
            parts[changed[position]].setdefault(corpus, []).append(position)
    for is_change, wanted in ((True, share > 0), (False, share < 1)):
        if wanted and not parts[is_change]:
            what = "differs from" if is_change else "repeats"
            raise InputError(
                f"--change-share {share:g}: no sample of the pool has a gold state that "
                f"{what} the previous state shown"
            )
    change = draw_order(parts[True], mix, f"{seed}:change")
    other = draw_order(parts[False], mix, f"{seed}:other")
    chooser = random.Random(f"{seed}:change-share")
    while True:
        yield next(change) if chooser.random() < share else next(other)


def _proportional(everything: list[int], seed: int | str) -> Iterator[int]:
    epoch = 0
    while True:
        order = list(everything)
        random.Random(f"{seed}:{epoch}").shuffle(order)
        yield from order
        epoch += 1


def _uniform(pool: dict[str, list[int]], seed: int | str) -> Iterator[int]:
    names = sorted(pool)
    chooser = random.Random(f"{seed}:corpus-mix")
    passes = dict.fromkeys(names, 0)
    queues: dict[str, deque[int]] = {name: deque() for name in names}
    while True:
        name = names[chooser.randrange(len(names))]
        if not queues[name]:
            order = list(pool[name])
            random.Random(f"{seed}:{name}:{passes[name]}").shuffle(order)
            passes[name] += 1
            queues[name].extend(order)
        yield queues[name].popleft()


@dataclass(frozen=True)
class Batch:
    """One batch: the epoch it belongs to and the pool positions of its samples."""

    epoch: int
    positions: list[int]


@dataclass
class BatchStream:
    """The run's batches in order, planned a window of draws at a time (module docstring).

    ``encode`` gives a position's trainable encoding or None (too long, nothing to learn).
    """

    draws: Iterator[int]
    epoch_size: int
    encode: Callable[[int], Encoded | None]
    batch_tokens: int
    seed: int
    window: int = WINDOW
    batches: list[Batch] = field(default_factory=list, init=False)
    drawn: int = field(default=0, init=False)
    _usable_in_epoch: int = field(default=0, init=False)

    def get(self, index: int) -> Batch:
        """The ``index``-th batch of the run (planning windows until it exists)."""
        while len(self.batches) <= index:
            self._plan_window()
        return self.batches[index]

    def plan_epochs(self, epochs: int) -> int:
        """Plan every batch of the first ``epochs`` epochs; how many batches they hold."""
        while self.drawn < epochs * self.epoch_size:
            self._plan_window()
        return sum(1 for b in self.batches if b.epoch < epochs)

    def _plan_window(self) -> None:
        epoch, done = divmod(self.drawn, self.epoch_size)
        drawn = list(islice(self.draws, min(self.window, self.epoch_size - done)))
        self.drawn += len(drawn)
        lengths: dict[int, int] = {}
        for slot, position in enumerate(drawn):  # slots: a window may draw a sample twice
            encoded = self.encode(position)
            if encoded is not None:
                lengths[slot] = len(encoded.ids)
        packed = pack_batches(list(lengths), lengths, self.batch_tokens)
        random.Random(f"{self.seed}:{epoch}:{done // self.window}").shuffle(packed)
        self.batches.extend(Batch(epoch, [drawn[s] for s in b]) for b in packed)
        self._usable_in_epoch += len(lengths)
        if self.drawn % self.epoch_size == 0:
            if not self._usable_in_epoch:
                raise InputError(
                    f"none of the {self.epoch_size} samples of epoch {epoch + 1} has a target "
                    "token to learn within --max-length"
                )
            self._usable_in_epoch = 0


def mix_counts(index: SampleIndex, positions: Iterable[int]) -> dict[str, Any]:
    """How many samples (each draw counted) per corpus, and the no-emotion and change shares
    among them."""
    by_corpus: Counter[str] = Counter()
    no_emotion = changed = 0
    for position in positions:
        by_corpus[index.corpora[position]] += 1
        no_emotion += index.no_emotion[position]
        changed += index.changed[position] if index.changed else 0
    total = sum(by_corpus.values())
    return {
        "samples": total,
        "by_corpus": dict(sorted(by_corpus.items())),
        "no_emotion": no_emotion,
        "no_emotion_share": round(no_emotion / total, 4) if total else None,
        "change": changed,
        "change_share": round(changed / total, 4) if total and index.changed else None,
    }
