"""The memorisation check of a trained simulator: does it repeat its training utterances?

An utterance counts as memorised when it shares at least one word :data:`NGRAM`-gram with any
utterance of the training samples (words: lower-cased runs of letters, digits and inner
apostrophes). Eight words in a row rarely recur by chance, but real people do repeat stock
phrases, so the card puts the same share for the real held-out utterances beside the
simulator's: a model memorises only where it clearly exceeds that.

The training set can hold hundreds of thousands of samples, so its n-grams are kept as a sorted
array of 8-byte BLAKE2b digests (8 bytes per distinct n-gram, against some 60 for a Python set
of tuples), built once per card while the samples file is streamed.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from hashlib import blake2b
from pathlib import Path

import numpy as np
import numpy.typing as npt

from cogwm.errors import InputError
from cogwm.simulator.samples import read_samples

#: Words in a row that an utterance must share with a training utterance to count as memorised.
NGRAM = 8
#: The training file of a samples directory (as ``cogwm samples build`` writes it).
TRAIN_FILE = "train.jsonl"

_WORD = re.compile(r"\w+(?:'\w+)*")


def words(text: str) -> list[str]:
    """The lower-cased words of ``text`` (punctuation dropped, "don't" one word)."""
    return _WORD.findall(text.lower())


def ngram_digests(text: str, n: int = NGRAM) -> Iterator[int]:
    """An unsigned 64-bit digest of each word ``n``-gram of ``text`` (none under ``n`` words)."""
    tokens = words(text)
    for start in range(len(tokens) - n + 1):
        # The unit separator cannot occur inside a word, so different n-grams never join alike.
        key = "\x1f".join(tokens[start : start + n]).encode("utf-8")
        yield int.from_bytes(blake2b(key, digest_size=8).digest(), "little")


@dataclass(frozen=True)
class NgramIndex:
    """The distinct word n-grams of a set of training utterances, as sorted digests."""

    digests: npt.NDArray[np.uint64]
    n_utterances: int
    source: str
    n: int = NGRAM

    @classmethod
    def from_utterances(cls, utterances: Iterable[str], source: str, n: int = NGRAM) -> NgramIndex:
        """Index ``utterances`` (streamed: only their digests are kept)."""
        found = array("Q")
        count = 0
        for text in utterances:
            found.extend(ngram_digests(text, n))
            count += 1
        digests = np.unique(np.frombuffer(found, dtype=np.uint64))
        return cls(digests=digests, n_utterances=count, source=source, n=n)

    def shares_ngram(self, text: str) -> bool:
        """Whether ``text`` has a word n-gram that some indexed utterance has too."""
        probe = np.fromiter(ngram_digests(text, self.n), dtype=np.uint64)
        if probe.size == 0 or self.digests.size == 0:
            return False
        where = np.searchsorted(self.digests, probe)
        found = self.digests[np.minimum(where, self.digests.size - 1)] == probe
        return bool(found.any())


def train_file(directory: Path) -> Path:
    """``DIR/train.jsonl`` of a samples directory.

    Raises:
        InputError: The directory or its training file does not exist.
    """
    if not directory.is_dir():
        raise InputError(f"--train-samples {directory}: no such directory")
    path = directory / TRAIN_FILE
    if not path.is_file():
        raise InputError(f"--train-samples {directory}: no {TRAIN_FILE} in it")
    return path


def training_utterances(path: Path) -> Iterator[str]:
    """The real utterances of a samples file's prediction-mode samples, streamed.

    State-understanding samples have no utterance in their target and are skipped.

    Raises:
        InputError: A bad line, or a prediction-mode target that is not JSON with a text
            ``utterance``.
    """
    for sample in read_samples(path):
        if sample.mode == "understand":
            continue
        try:
            utterance = json.loads(sample.target).get("utterance")
        except (json.JSONDecodeError, AttributeError):
            utterance = None
        if not isinstance(utterance, str):
            raise InputError(f"{path}: sample {sample.id}: target has no text 'utterance'")
        yield utterance


def training_index(directory: Path) -> NgramIndex:
    """The word n-gram index of a samples directory's training utterances.

    Raises:
        InputError: See :func:`train_file` and :func:`training_utterances`.
    """
    path = train_file(directory)
    return NgramIndex.from_utterances(training_utterances(path), source=str(path))
