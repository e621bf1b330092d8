"""Partial states from the corpora's own human labels, through one mapping table per corpus.

::

    from cogwm.annotate.human import labelled_dialogues, TABLES

    for item in labelled_dialogues("annomi", "/data/corpora"):
        ...  # LabelledDialogue: the dialogue and a PartialState per labelled user turn

    TABLES["esconv"].row("esconv.E7")  # depression -> sadness, approximate, and why

Three kinds of value stay apart (:mod:`cogwm.schema.partial`): a field no label speaks about is
**unknown** (no entry, or a field of kind unknown), a field an annotator said is absent is
**empty**, and a label gives a **value**. Labels that give only a direction or a bound are
constraints. Every field names the table row that produced it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from cogwm import corpora
from cogwm.corpora import Corpus
from cogwm.corpora.labels.table import MappingRow, MappingTable
from cogwm.corpora.readers import require_data_dir
from cogwm.errors import InputError
from cogwm.schema import Dialogue
from cogwm.schema.partial import LabelledDialogue

DATA_DIR_ENV = "COGWM_DATA_DIR"

#: The mapping table of each corpus (FailedESConv shares ESConv's: one table, one set of rules).
TABLES: dict[str, MappingTable] = {corpus.name: corpus.label_table for corpus in corpora.EVERY}


def names() -> list[str]:
    """The corpora with a human-label mapping."""
    return corpora.every_name()


def labelled_dialogues(
    corpus: str, data_dir: Path | str | None = None, *, split: str | None = None
) -> Iterator[LabelledDialogue]:
    """The partial states the corpus's human labels give, one labelled dialogue at a time.

    Args:
        corpus: A corpus name or alias with a mapping (see :func:`names`).
        data_dir: The directory holding one folder per corpus; default ``$COGWM_DATA_DIR``.
        split: Keep only dialogues of this official split (only corpora that have one).

    Returns:
        Labelled dialogues in corpus order; DailyDialog yields each dialogue twice (``#A``,
        ``#B``), once per speaker as the user.

    Raises:
        InputError: Unknown corpus, no data directory, a split the corpus does not have, or
            raw files that do not read or map.
    """
    found = _canonical(corpus)
    root = _data_dir(data_dir)
    dialogues = corpora.read(found, root)
    if split is not None:
        dialogues = _in_split(found.name, dialogues, split)
    return found.labeller(dialogues, root / found.folder)


def rows(corpus: str) -> tuple[MappingRow, ...]:
    """The mapping-table rows of ``corpus``."""
    return _canonical(corpus).label_table.rows


def _canonical(corpus: str) -> Corpus:
    found = corpora.find(corpus)
    if found is None:
        raise InputError(
            f"no human-label mapping for corpus {corpus!r}; known: {', '.join(names())}"
        )
    return found


def _data_dir(data_dir: Path | str | None) -> Path:
    if data_dir is not None:
        return require_data_dir(Path(data_dir), "data_dir")
    env = os.environ.get(DATA_DIR_ENV)
    if not env:
        raise InputError(f"no data directory: pass one or set {DATA_DIR_ENV}")
    return require_data_dir(Path(env), f"${DATA_DIR_ENV}")


def _in_split(name: str, dialogues: list[Dialogue], split: str) -> list[Dialogue]:
    known = sorted({d.split for d in dialogues if d.split is not None})
    if not known:
        raise InputError(f"{name} has no official split; leave --split out")
    if split not in known:
        raise InputError(f"{name} has no split {split!r}; its splits: {', '.join(known)}")
    return [d for d in dialogues if d.split == split]


__all__ = ["TABLES", "MappingRow", "MappingTable", "labelled_dialogues", "names", "rows"]
