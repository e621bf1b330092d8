"""The corpora cogwm reads, one :class:`~cogwm.corpora.corpus.Corpus` per package.

:data:`CORPORA` are the published releases (what ``cogwm data`` lists and loads);
:data:`COMPANIONS` are read from a release's folder without being one (FailedESConv). Both have
a loader and a human-label mapping; :func:`find` asks for either, :func:`get` for a release.
"""

from __future__ import annotations

from cogwm.corpora import annomi, dailydialog, esconv, failed_esconv, inspired, persuasionforgood
from cogwm.corpora.corpus import Corpus
from cogwm.errors import InputError

#: The releases, in the order every listing shows them.
CORPORA: tuple[Corpus, ...] = (
    esconv.CORPUS,
    persuasionforgood.CORPUS,
    dailydialog.CORPUS,
    annomi.CORPUS,
    inspired.CORPUS,
)
#: Corpora read from the folder of a release (``Corpus.companion_of``), not releases of their own.
COMPANIONS: tuple[Corpus, ...] = (failed_esconv.CORPUS,)
#: Every corpus with a loader and a human-label mapping: the releases, then their companions.
EVERY: tuple[Corpus, ...] = (*CORPORA, *COMPANIONS)

_RELEASES: dict[str, Corpus] = {key: corpus for corpus in CORPORA for key in corpus.keys}
_EVERY: dict[str, Corpus] = {key: corpus for corpus in EVERY for key in corpus.keys}


def names() -> list[str]:
    """Canonical names of the releases, in registry order."""
    return [corpus.name for corpus in CORPORA]


def every_name() -> list[str]:
    """Canonical names of every corpus, companions included, in registry order."""
    return [corpus.name for corpus in EVERY]


def lookup(name: str) -> Corpus | None:
    """The corpus (release or companion) called ``name`` exactly, or None for a name outside
    the registry, such as a custom corpus's."""
    return _EVERY.get(name)


def ends_by_choice(name: str) -> bool:
    """Whether the transcripts of corpus ``name`` end where the participants ended them (True
    for a name outside the registry, such as a custom corpus of live conversations)."""
    corpus = _EVERY.get(name.lower())
    return corpus.ends_by_choice if corpus is not None else True


def get(name: str) -> Corpus:
    """The release called ``name`` or one of its aliases (case-insensitive).

    Raises:
        InputError: Unknown name; the message lists the known ones.
    """
    corpus = _RELEASES.get(name.strip().lower())
    if corpus is None:
        known = ", ".join(
            f"{c.name} ({', '.join(c.aliases)})" if c.aliases else c.name for c in CORPORA
        )
        raise InputError(f"unknown corpus {name!r}; known corpora: {known}")
    return corpus


def find(name: str) -> Corpus | None:
    """The corpus, release or companion, called ``name`` or one of its aliases
    (case-insensitive; ``-`` counts as ``_``); None when there is none."""
    key = name.strip().lower()
    return _EVERY.get(key) or _EVERY.get(key.replace("-", "_"))
