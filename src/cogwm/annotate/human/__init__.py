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

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from cogwm import corpora
from cogwm.corpora.annomi import annotators as annomi_annotators
from cogwm.corpora.annomi import mapping as annomi
from cogwm.corpora.dailydialog import mapping as dailydialog
from cogwm.corpora.esconv import mapping as esconv
from cogwm.corpora.failed_esconv import loader as failed_esconv
from cogwm.corpora.inspired import mapping as inspired
from cogwm.corpora.labels.table import MappingRow, MappingTable
from cogwm.corpora.persuasionforgood import mapping as persuasionforgood
from cogwm.corpora.readers import require_data_dir, require_dir
from cogwm.errors import InputError
from cogwm.schema import Dialogue
from cogwm.schema.partial import LabelledDialogue

DATA_DIR_ENV = "COGWM_DATA_DIR"

#: The mapping table of each corpus.
TABLES: dict[str, MappingTable] = {
    "esconv": esconv.TABLE,
    "dailydialog": dailydialog.TABLE,
    "annomi": annomi.TABLE,
    "persuasionforgood": persuasionforgood.TABLE,
    "inspired": inspired.TABLE,
    # The dropped ESConv dialogues carry the same self-reports: one table, one set of rules.
    "failed_esconv": esconv.TABLE,
}

_Labeller = Callable[[list[Dialogue], Path], Iterator[LabelledDialogue]]


def _esconv(dialogues: list[Dialogue], _: Path) -> Iterator[LabelledDialogue]:
    return (esconv.label(d) for d in dialogues)


def _dailydialog(dialogues: list[Dialogue], _: Path) -> Iterator[LabelledDialogue]:
    return (reading for d in dialogues for reading in dailydialog.readings(d))


def _annomi(dialogues: list[Dialogue], corpus_dir: Path) -> Iterator[LabelledDialogue]:
    votes = annomi_annotators.load(corpus_dir)
    return (annomi.label(d, votes) for d in dialogues)


def _persuasionforgood(dialogues: list[Dialogue], _: Path) -> Iterator[LabelledDialogue]:
    # Only the 300 dialogues with act labels: the others have no turn-level human label.
    return (persuasionforgood.label(d) for d in dialogues if persuasionforgood.is_labelled(d))


def _inspired(dialogues: list[Dialogue], _: Path) -> Iterator[LabelledDialogue]:
    return (inspired.label(d) for d in dialogues)


_LABELLERS: dict[str, _Labeller] = {
    "esconv": _esconv,
    "dailydialog": _dailydialog,
    "annomi": _annomi,
    "persuasionforgood": _persuasionforgood,
    "inspired": _inspired,
    "failed_esconv": _esconv,
}


def names() -> list[str]:
    """The corpora with a human-label mapping."""
    return list(_LABELLERS)


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
    name = _canonical(corpus)
    root = _data_dir(data_dir)
    folder, dialogues = _load(name, root)
    if split is not None:
        dialogues = _in_split(name, dialogues, split)
    return _LABELLERS[name](dialogues, folder)


def rows(corpus: str) -> tuple[MappingRow, ...]:
    """The mapping-table rows of ``corpus``."""
    return TABLES[_canonical(corpus)].rows


def _canonical(corpus: str) -> str:
    key = corpus.strip().lower()
    if key not in _LABELLERS:
        with contextlib.suppress(InputError):  # not a corpus name either: reported below
            key = corpora.get(key).name
    if key not in _LABELLERS:
        raise InputError(
            f"no human-label mapping for corpus {corpus!r}; known: {', '.join(_LABELLERS)}"
        )
    return key


def _load(name: str, root: Path) -> tuple[Path, list[Dialogue]]:
    """The corpus folder and its dialogues (FailedESConv is read from the ESConv folder)."""
    if name == failed_esconv.NAME:
        folder = require_dir(root / "esconv", f"{failed_esconv.FILE}")
        return folder, failed_esconv.load(folder)
    return corpora.corpus_dir(name, root), corpora.load(name, root)


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
