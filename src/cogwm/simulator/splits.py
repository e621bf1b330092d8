"""Dialogue-level train/val/test splits for the samples (never split by turn).

The rule, per corpus:

1. A corpus with an official train split (DailyDialog, ESConv's HF splits) keeps its official
   splits, so its official test dialogues are never trained on.
2. A corpus with official splits but no train split (INSPIRED's text is dev + test only) keeps its
   official test split as test; its other dialogues are split seeded into train and val (8 : 1).
3. A corpus without official splits is split seeded 80 / 10 / 10.

Seeded splits hash the seed, the corpus and the *base* dialogue id, so a dialogue's split depends
on nothing else (not on which other dialogues are present or their order), and the two DailyDialog
readings of one dialogue (``<id>#A`` / ``<id>#B``), or a human-label and an LLM-annotated copy of
it, always land in the same split.

**AnnoMI quality hold-out**: AnnoMI rates each session's counselling as high or low quality
(``mi_quality``; only 23 of 133 sessions are low). A known-groups check (can a simulator tell the
clients of good counselling from those of poor counselling?) needs both groups unseen in
training, which a plain seeded split does not give (seed 0 puts 22 of the 23 low-quality
sessions in train). :func:`annomi_quality_holdout` picks half of the low-quality sessions
(rounded up) and as many high-quality ones, each group ordered by sha256(seed:annomi:quality:id),
and :func:`plan_splits` puts them in AnnoMI's test split, so no simulator trains or selects on
them.

**FailedESConv survey hold-out**: FailedESConv (no official split) supplies the known-groups
check's dialogues without improvement; a plain seeded split leaves a tenth of them in test.
:func:`failed_esconv_holdout` picks half (rounded up) of each group by the seeker's survey
(improved, not improved, intensities missing), each ordered by
sha256(seed:failed_esconv:survey:id), and :func:`plan_splits` puts them in its test split: at
least half of FailedESConv is never trained on. Both hold-outs share :func:`corpus_holdout`.

**Twins**: a dialogue whose normalised text also occurs in a higher split (test above val above
train) is dropped from its lower split (DailyDialog has test dialogues whose exact text is also in
its train and validation splits). They are counted, not silently lost.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from pydantic import Field

from cogwm import corpora
from cogwm.schema import Dialogue, Record
from cogwm.schema.labels import AnnoMIMeta, ESConvMeta
from cogwm.simulator.samples import SPLITS, Split

#: Shares of a seeded split (train, val; the rest is test).
SEEDED_SHARES = (0.8, 0.1)

#: Official split names and what they are called here.
_OFFICIAL: dict[str, Split] = {
    "train": "train",
    "valid": "val",
    "validation": "val",
    "val": "val",
    "dev": "val",
    "test": "test",
}
_RANK: dict[str, int] = {name: rank for rank, name in enumerate(SPLITS)}
_NOT_WORDS = re.compile(r"[^0-9a-z]+")

#: One line describing the rule, stored in the manifest.
SPLIT_RULE = (
    "by dialogue; official splits where the corpus has a train split (DailyDialog, ESConv), "
    "official test kept where it has no train split (INSPIRED: the rest 8:1 train/val, seeded), "
    "else seeded 80/10/10 by sha256(seed:corpus:base dialogue id); AnnoMI's quality hold-out "
    "(half of the low-quality sessions and as many high-quality ones, seeded) is test; "
    "FailedESConv's survey hold-out (half of each of its improved, not improved and unknown "
    "dialogues, rounded up, seeded) is test; dialogues whose normalised "
    "text (lower case, letters and digits only) occurs in a higher split (test > val > train) "
    "are dropped from the lower one"
)


#: The version of :data:`SPLIT_RULE`, stored in the manifest (``split_rule_version``) from 2 on:
#: 1 forced no hold-out into test, 2 forces AnnoMI's and FailedESConv's.
SPLIT_RULE_VERSION = 2


def base_id(dialogue_id: str) -> str:
    """The dialogue id without a reading suffix (``dailydialog:train:3#A`` → ``...:3``)."""
    return dialogue_id.split("#", 1)[0]


def official_split(dialogue: Dialogue) -> Split | None:
    """The dialogue's official split under this module's names, or None."""
    if dialogue.split is None:
        return None
    return _OFFICIAL.get(dialogue.split.strip().lower())


def normalised_text(dialogue: Dialogue) -> str:
    """The dialogue's words, lower case, without punctuation or spacing differences."""
    words = (_NOT_WORDS.sub(" ", u.text.lower()).strip() for u in dialogue.utterances)
    return " | ".join(w for w in words if w)


def seeded_fraction(seed: int, corpus: str, dialogue_id: str) -> float:
    """A number in [0, 1) fixed by the seed, the corpus and the base dialogue id."""
    key = f"{seed}:{corpus}:{base_id(dialogue_id)}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2**64


class SplitPlan(Record):
    """The split of every base dialogue of one corpus, and what was dropped as a twin."""

    corpus: str
    rule: str = Field(description="'official', 'official test + seeded' or 'seeded'.")
    splits: dict[str, Split] = Field(default_factory=dict, description="Base id -> split.")
    dropped: dict[str, Split] = Field(
        default_factory=dict, description="Base ids dropped as twins -> the split they were in."
    )
    twins: dict[str, int] = Field(
        default_factory=dict,
        description="Twin pairs by kind, e.g. 'test~train': test dialogues with a train twin.",
    )
    held_out: list[str] = Field(
        default_factory=list,
        description="Base ids put in test whatever their seeded split (a known-groups "
        "hold-out: AnnoMI's quality, FailedESConv's survey).",
    )

    def split_of(self, dialogue_id: str) -> Split | None:
        """The split of a dialogue (any reading), or None when it was dropped or is unknown."""
        return self.splits.get(base_id(dialogue_id))


def plan_splits(
    corpus: str,
    dialogues: Iterable[Dialogue],
    seed: int,
    *,
    held_out: Collection[str] | None = None,
) -> SplitPlan:
    """The split of each dialogue of one corpus (readings of one dialogue count once).

    Args:
        corpus: The corpus name.
        dialogues: Its dialogues (any readings).
        seed: Seeds the split where the corpus has no official one.
        held_out: Base ids to put in test whatever their split; default the corpus's own
            hold-out (:func:`corpus_holdout` of ``dialogues``: AnnoMI's quality hold-out,
            FailedESConv's survey hold-out; none elsewhere).
    """
    by_base: dict[str, Dialogue] = {}
    for dialogue in dialogues:
        by_base.setdefault(base_id(dialogue.id), dialogue)
    official = {b: official_split(d) for b, d in by_base.items()}
    present = {s for s in official.values() if s is not None}
    if "train" in present:
        rule = "official"
        splits = {b: s or _seeded(seed, corpus, b) for b, s in official.items()}
    elif "test" in present:
        rule = "official test + seeded"
        splits = {
            b: "test" if s == "test" else _seeded(seed, corpus, b, no_test=True)
            for b, s in official.items()
        }
    else:
        rule = "seeded"
        splits = {b: _seeded(seed, corpus, b) for b in by_base}
    if held_out is None:
        held_out = corpus_holdout(corpus, by_base.values(), seed)
    forced = sorted(base_id(b) for b in held_out if base_id(b) in splits)
    for b in forced:
        splits[b] = "test"
    dropped, twins = _twins(by_base, splits)
    for b in dropped:
        del splits[b]
    return SplitPlan(
        corpus=corpus, rule=rule, splits=splits, dropped=dropped, twins=twins, held_out=forced
    )


#: The corpus whose sessions carry a counselling-quality rating.
ANNOMI = "annomi"
#: The corpus of failed emotional-support conversations, with the seekers' survey.
FAILED_ESCONV = "failed_esconv"


def corpus_holdout(corpus: str, dialogues: Iterable[Dialogue], seed: int) -> list[str]:
    """The corpus's known-groups hold-out (base ids, always test); none for most corpora.

    The choice depends on the dialogues given: pass the whole corpus.
    """
    if corpus == ANNOMI:
        return annomi_quality_holdout(dialogues, seed)
    if corpus == FAILED_ESCONV:
        return failed_esconv_holdout(dialogues, seed)
    return []


def annomi_quality_holdout(dialogues: Iterable[Dialogue], seed: int) -> list[str]:
    """AnnoMI's known-groups hold-out: base ids of half of the low-quality sessions (rounded
    up) and as many high-quality ones, each group ordered by sha256(seed:annomi:quality:id).

    Sessions without a quality rating (not AnnoMI metadata) are in neither group. The choice
    depends on the sessions given: pass the whole corpus.
    """

    def quality(dialogue: Dialogue) -> str | None:
        meta = dialogue.meta
        return meta.mi_quality.strip().lower() if isinstance(meta, AnnoMIMeta) else None

    groups = _seeded_groups(dialogues, seed, f"{ANNOMI}:quality", quality)
    low = groups.get("low", [])
    size = _half(low)
    return sorted(low[:size] + groups.get("high", [])[:size])


def failed_esconv_holdout(dialogues: Iterable[Dialogue], seed: int) -> list[str]:
    """FailedESConv's known-groups hold-out: base ids of half (rounded up) of each group of
    dialogues by the seeker's survey (improved: final intensity below the initial one; not
    improved; intensities missing), each group ordered by sha256(seed:failed_esconv:survey:id).

    Dialogues without ESConv metadata are in no group. The choice depends on the dialogues
    given: pass the whole corpus.
    """
    groups = _seeded_groups(dialogues, seed, f"{FAILED_ESCONV}:survey", survey_outcome)
    return sorted(b for ids in groups.values() for b in ids[: _half(ids)])


def survey_outcome(dialogue: Dialogue) -> str | None:
    """``improved`` (final intensity below the initial one), ``not improved``, or ``unknown``
    (an intensity missing) by an ESConv seeker's survey; None without ESConv metadata."""
    meta = dialogue.meta
    if not isinstance(meta, ESConvMeta):
        return None
    start, end = meta.survey.initial_emotion_intensity, meta.survey.final_emotion_intensity
    if start is None or end is None:
        return "unknown"
    return "improved" if end < start else "not improved"


def _half(ids: Collection[str]) -> int:
    return (len(ids) + 1) // 2


def _seeded_groups(
    dialogues: Iterable[Dialogue],
    seed: int,
    key: str,
    group_of: Callable[[Dialogue], str | None],
) -> dict[str, list[str]]:
    """Base ids by ``group_of`` (None: in no group; readings of one dialogue count once), each
    group ordered by sha256(seed:key:base id)."""
    groups: dict[str, list[str]] = defaultdict(list)
    seen: set[str] = set()
    for dialogue in dialogues:
        base = base_id(dialogue.id)
        if base in seen or (group := group_of(dialogue)) is None:
            continue
        seen.add(base)
        groups[group].append(base)
    return {
        g: sorted(ids, key=lambda b: (seeded_fraction(seed, key, b), b))
        for g, ids in groups.items()
    }


def _seeded(seed: int, corpus: str, base: str, *, no_test: bool = False) -> Split:
    value = seeded_fraction(seed, corpus, base)
    train, val = SEEDED_SHARES
    if no_test:
        return "train" if value < train / (train + val) else "val"
    if value < train:
        return "train"
    return "val" if value < train + val else "test"


def _twins(
    by_base: dict[str, Dialogue], splits: dict[str, Split]
) -> tuple[dict[str, Split], dict[str, int]]:
    """Dialogues to drop because their text occurs in a higher split, and twin counts by kind."""
    groups: dict[str, list[str]] = defaultdict(list)
    for base, dialogue in by_base.items():
        groups[normalised_text(dialogue)].append(base)
    dropped: dict[str, Split] = {}
    twins: dict[str, int] = defaultdict(int)
    for members in groups.values():
        in_split = {splits[b] for b in members}
        if len(in_split) < 2:
            continue
        top = max(in_split, key=_RANK.__getitem__)
        for split in sorted(in_split - {top}, key=_RANK.__getitem__):
            twins[f"{top}~{split}"] += sum(1 for b in members if splits[b] == top)
        for base in members:
            if splits[base] != top:
                dropped[base] = splits[base]
    return dropped, dict(twins)


#: The corpora whose known-groups hold-out the current rule forces into test.
HOLDOUT_CORPORA: frozenset[str] = frozenset(c.name for c in corpora.EVERY if c.holdout)
#: How a manifest's ``split_rule`` text names each hold-out (manifests before
#: ``split_rule_version`` say only there whether a hold-out was forced).
_HOLDOUT_WORDS = {c.name: c.holdout for c in corpora.EVERY if c.holdout}


def forced_holdouts(manifest: Mapping[str, Any]) -> frozenset[str]:
    """The corpora whose hold-out a samples manifest's split forced into test: every one of
    :data:`HOLDOUT_CORPORA` from ``split_rule_version`` 2 on; before the version was written,
    those its ``split_rule`` text names (none in the first rule)."""
    version = manifest.get("split_rule_version")
    if isinstance(version, int) and version >= 2:
        return HOLDOUT_CORPORA
    rule = str(manifest.get("split_rule") or "")
    return frozenset(c for c, words in _HOLDOUT_WORDS.items() if words in rule)


def training_plan(
    corpus: str, dialogues: Iterable[Dialogue], seed: int, forced: Collection[str]
) -> SplitPlan:
    """:func:`plan_splits` as a simulator's samples were split: seeded with ``seed``, the
    corpus's hold-out forced into test only when ``corpus`` is in ``forced``."""
    return plan_splits(corpus, dialogues, seed, held_out=None if corpus in forced else [])
