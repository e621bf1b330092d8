"""Variants of DialToM items: easy set, counterfactual probe, context degradation, open-ended.

Every variant is a new item with its own id (``<parent id>~easy``, ``~cf``, ``~deg<k>``,
``~open``), ``provenance.parent_id`` set to the item it comes from, and the same domain, task and
attribute, so that the statistics can pair it with its parent.
"""

from __future__ import annotations

import asyncio
import csv
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from cogwm.corpora import word_count
from cogwm.errors import InputError
from cogwm.models import Model
from cogwm.models.types import ModelCallError
from cogwm.tom.generator import CounterfactualDraft, counterfactual_profile
from cogwm.tom.items import (
    NONE_OF_THE_ABOVE,
    Attribute,
    Task,
    ToMItem,
    Variant,
    group_turns,
    option_key,
)

DEFAULT_VARIANT_SEED = 7

#: Easy distractors are drawn among continuations within this factor of the gold's length.
EASY_LENGTH_RATIO = 1.5


def _derived(
    parent: ToMItem, suffix: str, variant: Variant, seed: int | None, **update: object
) -> ToMItem:
    provenance = parent.provenance.model_copy(update={"parent_id": parent.id, "seed": seed})
    data = parent.model_dump()
    data.update(
        id=f"{parent.id}~{suffix}",
        variant=variant,
        provenance=provenance.model_dump(),
        **update,
    )
    return ToMItem.model_validate(data, strict=False)


def _base_prospective(items: Iterable[ToMItem]) -> list[ToMItem]:
    return [i for i in items if i.task is Task.PROSPECTIVE and i.is_base]


# -- easy set ----------------------------------------------------------------


def make_easy(items: Sequence[ToMItem], seed: int = DEFAULT_VARIANT_SEED) -> list[ToMItem]:
    """Easy versions of the prospective items: distractors from *other* dialogues.

    The pool is the gold continuations of all prospective items of the same domain; a
    distractor never comes from the item's own dialogue. Distractors are drawn (seeded per item)
    among continuations within :data:`EASY_LENGTH_RATIO` of the gold's length, or the nearest
    in length when too few are. Each easy item keeps its parent's number of options.
    """
    base = _base_prospective(items)
    pool: dict[str, tuple[str, str, str]] = {}  # option key -> (domain, dialogue, text)
    for item in base:
        pool.setdefault(
            option_key(item.gold), (item.domain.value, item.provenance.dialogue_id, item.gold)
        )
    easy: list[ToMItem] = []
    for item in base:
        gold_key = option_key(item.gold)
        candidates = [
            text
            for key, (domain, dialogue, text) in pool.items()
            # another dialogue may hold the very same continuation ("Client: Okay."): never
            # offer the gold again as a distractor
            if domain == item.domain.value
            and dialogue != item.provenance.dialogue_id
            and key != gold_key
        ]
        picked = _pick_similar_length(item, candidates, item.n_options - 1, seed)
        if picked is None:
            continue
        options = [item.gold, *picked]
        random.Random(f"{seed}:{item.id}:order").shuffle(options)
        easy.append(_derived(item, "easy", Variant.EASY, seed, options=options, rationales={}))
    return easy


def _pick_similar_length(
    item: ToMItem, candidates: list[str], n: int, seed: int
) -> list[str] | None:
    if len(candidates) < n:
        return None
    target = max(word_count(item.gold), 1)
    near = [c for c in candidates if _ratio(word_count(c), target) <= EASY_LENGTH_RATIO]
    if len(near) < n:
        near = sorted(candidates, key=lambda c: (abs(word_count(c) - target), c))[: max(n, 20)]
    return random.Random(f"{seed}:{item.id}:easy").sample(sorted(near), n)


def _ratio(a: int, b: int) -> float:
    return max(a, b) / max(min(a, b), 1)


# -- counterfactual probe ------------------------------------------------------


def make_counterfactual(parent: ToMItem, draft: CounterfactualDraft) -> ToMItem:
    """The counterfactual item: the contradictory profile, the parent's options, and
    "None of the above" added last as the correct answer."""
    if parent.task is not Task.PROSPECTIVE:
        raise InputError(f"item {parent.id!r}: counterfactual items need a prospective item")
    options = [o for o in parent.options if option_key(o) != option_key(NONE_OF_THE_ABOVE)]
    return _derived(
        parent,
        "cf",
        Variant.COUNTERFACTUAL,
        None,
        profile=draft.profile.render(),
        options=[*options, NONE_OF_THE_ABOVE],
        gold=NONE_OF_THE_ABOVE,
        rationales={parent.gold: draft.rationale.strip()},
    )


async def build_counterfactuals(
    items: Sequence[ToMItem],
    model: Model,
    *,
    concurrency: int = 4,
    on_done: Callable[[], None] | None = None,
) -> tuple[list[ToMItem], list[str]]:
    """Counterfactual items for every hard prospective item, their profiles written by ``model``.

    Returns:
        The items and, for the ones that failed, a message each (they are left out).
    """
    limit = asyncio.Semaphore(concurrency)
    failures: list[str] = []

    async def one(item: ToMItem) -> ToMItem | None:
        async with limit:
            try:
                draft = await counterfactual_profile(model, item)
            except ModelCallError as exc:
                failures.append(f"{item.id}: {exc.reason}")
                return None
            finally:
                if on_done is not None:
                    on_done()
        return make_counterfactual(item, draft)

    made = await asyncio.gather(*(one(i) for i in _base_prospective(items)))
    return [m for m in made if m is not None], failures


# -- context degradation -------------------------------------------------------


def make_degraded(items: Sequence[ToMItem], max_turns: int) -> list[ToMItem]:
    """Prospective items with 0, 1, ..., ``max_turns`` history turns restored.

    The restored turns are the last turns of the window right before the continuation. A window
    with fewer turns gives fewer variants (no two variants show the same history).
    """
    if max_turns < 0:
        raise InputError(f"--degrade needs a number of turns >= 0, got {max_turns}")
    made: list[ToMItem] = []
    for item in _base_prospective(items):
        available = len(group_turns(item.context))
        for k in range(min(max_turns, available) + 1):
            made.append(_derived(item, f"deg{k}", Variant.DEGRADED, None, history_turns=k))
    return made


# -- open-ended ----------------------------------------------------------------


def open_question(recipient: str, attribute: Attribute) -> str:
    """The open-ended question of one attribute."""
    return (
        f"In one or two sentences, what is the {recipient}'s {attribute.value} at the end of "
        "this conversation?"
    )


def make_open(
    items: Sequence[ToMItem], references: dict[tuple[str, str], list[str]] | None = None
) -> list[ToMItem]:
    """Open-ended prompts from the retrospective items.

    The item's gold is the first reference; ``references`` adds human references by
    (window id, attribute) (see :func:`read_references`).
    """
    refs = references or {}
    made: list[ToMItem] = []
    for item in items:
        if item.task is not Task.RETROSPECTIVE or not item.is_base:
            continue
        assert item.attribute is not None  # guaranteed for retrospective items
        extra = refs.get((item.provenance.window_id, item.attribute.value), [])
        made.append(
            _derived(
                item,
                "open",
                Variant.OPEN,
                None,
                options=[],
                rationales={},
                question=open_question(item.recipient, item.attribute),
                references=[item.gold, *extra],
            )
        )
    return made


def read_references(path: Path) -> dict[tuple[str, str], list[str]]:
    """Human references from a CSV with columns ``window_id, attribute, reference``."""
    if not path.is_file():
        raise InputError(f"references file {path} does not exist")
    found: dict[tuple[str, str], list[str]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        needed = {"window_id", "attribute", "reference"}
        if reader.fieldnames is None or not needed <= set(reader.fieldnames):
            raise InputError(f"{path}: expected the columns {', '.join(sorted(needed))}")
        for row_no, row in enumerate(reader, start=2):
            attribute = (row["attribute"] or "").strip().lower()
            if attribute not in {a.value for a in Attribute}:
                raise InputError(f"{path}: row {row_no}: unknown attribute {row['attribute']!r}")
            text = (row["reference"] or "").strip()
            if not text:
                raise InputError(f"{path}: row {row_no}: empty reference")
            found.setdefault((row["window_id"].strip(), attribute), []).append(text)
    return found
