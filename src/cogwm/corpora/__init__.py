"""Corpus loaders and sliding windows.

Each corpus is a package (``cogwm.corpora.esconv`` ...) holding its loader, its human-label
mapping and its :class:`Corpus` record; :mod:`cogwm.corpora.registry` lists them.

Each corpus is read from its raw files under ``<data_dir>/<corpus>/`` into
:class:`cogwm.schema.Dialogue` records that keep every original label (typed, in
``Utterance.labels`` and ``Dialogue.meta``)::

    from cogwm import corpora

    corpora.names()                       # ['esconv', 'persuasionforgood', ...]
    dialogues = corpora.load("p4g", "/data/corpora")
    windows = [w for d in dialogues for w in corpora.make_windows(d)]

A missing directory or file, or a malformed row, raises :class:`cogwm.errors.InputError`
naming the file, the place in it and what was expected; no row is ever skipped.
"""

from __future__ import annotations

from pathlib import Path

from cogwm.corpora.corpus import Corpus, ReleaseCounts
from cogwm.corpora.readers import require_dir
from cogwm.corpora.registry import (
    COMPANIONS,
    CORPORA,
    EVERY,
    every_name,
    find,
    get,
    lookup,
    names,
)
from cogwm.corpora.stats import CorpusStats, ReleaseCheck, corpus_stats
from cogwm.corpora.windows import (
    LONG_WINDOW_WORDS,
    WINDOW_MIN_WORDS,
    Span,
    Window,
    WindowKind,
    WindowRole,
    WindowSummary,
    bounded_window_spans,
    iter_windows,
    make_windows,
    summarize,
    window_spans,
    word_count,
)
from cogwm.errors import InputError
from cogwm.schema import Dialogue


def corpus_dir(name: str, data_dir: Path | str) -> Path:
    """The folder of corpus ``name`` under ``data_dir`` (not checked)."""
    return Path(data_dir) / get(name).folder


def load(name: str, data_dir: Path | str) -> list[Dialogue]:
    """Read one corpus whole.

    Args:
        name: A corpus name or alias (see :func:`names`; ``p4g`` = ``persuasionforgood``).
        data_dir: The directory holding one folder per corpus.

    Returns:
        The corpus's dialogues in file order, ids stable across runs.

    Raises:
        InputError: Unknown corpus, missing directory or file, malformed content.
    """
    return read(get(name), data_dir)


def read(corpus: Corpus, data_dir: Path | str) -> list[Dialogue]:
    """Read one corpus of the registry whole, a release or a companion (see :func:`load`).

    Raises:
        InputError: Missing directory or file, malformed content.
    """
    require_dir(Path(data_dir), "one folder per corpus")
    files = corpus.files or f"the {corpus.name} files"
    folder = require_dir(Path(data_dir) / corpus.folder, files)
    dialogues = corpus.loader(folder)
    _check_ids(folder, dialogues)
    return dialogues


def _check_ids(folder: Path, dialogues: list[Dialogue]) -> None:
    seen: set[str] = set()
    for dialogue in dialogues:
        if dialogue.id in seen:
            raise InputError(f"{folder}: dialogue {dialogue.id} occurs twice")
        if not dialogue.utterances:
            raise InputError(f"{folder}: dialogue {dialogue.id} has no utterances")
        seen.add(dialogue.id)


__all__ = [
    "COMPANIONS",
    "CORPORA",
    "EVERY",
    "LONG_WINDOW_WORDS",
    "WINDOW_MIN_WORDS",
    "Corpus",
    "CorpusStats",
    "ReleaseCheck",
    "ReleaseCounts",
    "Span",
    "Window",
    "WindowKind",
    "WindowRole",
    "WindowSummary",
    "bounded_window_spans",
    "corpus_dir",
    "corpus_stats",
    "every_name",
    "find",
    "get",
    "iter_windows",
    "load",
    "lookup",
    "make_windows",
    "names",
    "read",
    "summarize",
    "window_spans",
    "word_count",
]
