"""Human verification of DialToM items: export for verifiers, import votes, aggregate, filter.

Verifiers judge each item as shown in the exported CSV (the gold is marked): ``valid`` when the
gold is uniquely correct and every distractor is plausible but wrong, ``invalid`` otherwise.
Their votes come back as a CSV with the columns ``item_id, worker, label`` (and optionally
``batch``). Labels ``valid``/``invalid`` (also ``1``/``0``, ``yes``/``no``, ``keep``/``reject``,
``true``/``false``).

Votes are aggregated with Dawid-Skene, fitted separately per annotation batch (the ``batch``
column, default: one batch per task x domain). Agreement is Gwet's AC1 per task x domain (robust
to the skewed label distributions where kappa breaks down). An item is kept when its Dawid-Skene
label is ``valid``; the retention rate is kept / voted items.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Hashable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from cogwm.errors import InputError
from cogwm.stats import dawid_skene, gwet_ac1
from cogwm.stats._validate import StatsInputError
from cogwm.tom.items import ToMItem, render_lines

EXPORT_COLUMNS = (
    "item_id",
    "task",
    "domain",
    "attribute",
    "variant",
    "conversation",
    "profile",
    "question",
    "options",
    "gold_letter",
    "gold",
)
VOTE_COLUMNS = ("item_id", "worker", "label")


class Vote(StrEnum):
    """A verifier's judgement of an item."""

    VALID = "valid"
    INVALID = "invalid"


_VOTE_ALIASES = {
    "valid": Vote.VALID,
    "1": Vote.VALID,
    "yes": Vote.VALID,
    "keep": Vote.VALID,
    "true": Vote.VALID,
    "invalid": Vote.INVALID,
    "0": Vote.INVALID,
    "no": Vote.INVALID,
    "reject": Vote.INVALID,
    "false": Vote.INVALID,
}


class VoteRow(NamedTuple):
    """One imported vote."""

    item_id: str
    worker: str
    label: Vote
    batch: str | None


class GroupAgreement(BaseModel):
    """Verification of one task x domain."""

    model_config = ConfigDict(extra="forbid")

    task: str
    domain: str
    items: int
    voted: int
    kept: int
    retention: float | None
    ac1: float | None
    workers: int
    note: str = ""


class VerificationResult(BaseModel):
    """Aggregated votes: per-item labels and posteriors, and per-group agreement."""

    model_config = ConfigDict(extra="forbid")

    labels: dict[str, Vote]
    p_valid: dict[str, float]
    groups: list[GroupAgreement]

    def kept_ids(self) -> set[str]:
        """Ids of the items whose aggregated label is valid."""
        return {i for i, label in self.labels.items() if label is Vote.VALID}


def export_for_verification(items: Sequence[ToMItem], path: Path) -> int:
    """Write the items for verifiers (one row each, gold marked); returns the count.

    Verifiers see the whole window (``conversation``) even for prospective items, whose subjects
    see only the profile: judging whether the profile and the gold fit needs the dialogue.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(EXPORT_COLUMNS)
        for item in items:
            letters = [chr(ord("A") + k) for k in range(item.n_options)]
            options = "\n".join(
                f"{letter}. {option}" for letter, option in zip(letters, item.options, strict=True)
            )
            gold_letter = letters[item.gold_index] if item.options else ""
            writer.writerow(
                [
                    item.id,
                    item.task.value,
                    item.domain.value,
                    item.attribute.value if item.attribute else "",
                    item.variant.value,
                    render_lines(item.context),
                    item.profile or "",
                    item.question,
                    options,
                    gold_letter,
                    item.gold,
                ]
            )
    return len(items)


def read_votes(path: Path, known_ids: set[str]) -> list[VoteRow]:
    """Read a votes CSV; every row is checked and a bad one named by its row number.

    Raises:
        InputError: Missing file or columns, an unknown item id, an empty worker, an unknown
            label, or the same worker voting twice on one item.
    """
    if not path.is_file():
        raise InputError(f"votes file {path} does not exist")
    try:
        return _read_votes(path, known_ids)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _read_votes(path: Path, known_ids: set[str]) -> list[VoteRow]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        columns = set(reader.fieldnames or [])
        if not set(VOTE_COLUMNS) <= columns:
            raise InputError(
                f"{path}: expected the columns {', '.join(VOTE_COLUMNS)} (and optionally batch), "
                f"got {', '.join(reader.fieldnames or []) or 'none'}"
            )
        votes: list[VoteRow] = []
        seen: set[tuple[str, str]] = set()
        for row_no, row in enumerate(reader, start=2):
            vote = _vote(path, row_no, row, known_ids)
            if (vote.item_id, vote.worker) in seen:
                raise InputError(
                    f"{path}: row {row_no}: worker {vote.worker!r} already voted on item "
                    f"{vote.item_id!r}"
                )
            seen.add((vote.item_id, vote.worker))
            votes.append(vote)
    if not votes:
        raise InputError(f"{path}: no votes")
    return votes


def _vote(path: Path, row_no: int, row: dict[str, str | None], known: set[str]) -> VoteRow:
    item_id = (row.get("item_id") or "").strip()
    worker = (row.get("worker") or "").strip()
    raw = (row.get("label") or "").strip()
    if item_id not in known:
        raise InputError(f"{path}: row {row_no}: unknown item id {item_id!r}")
    if not worker:
        raise InputError(f"{path}: row {row_no}: empty worker")
    label = _VOTE_ALIASES.get(raw.lower())
    if label is None:
        raise InputError(
            f"{path}: row {row_no}: label {raw!r} is not one of valid/invalid (or 1/0, yes/no)"
        )
    batch = (row.get("batch") or "").strip() or None
    return VoteRow(item_id=item_id, worker=worker, label=label, batch=batch)


def aggregate_votes(items: Sequence[ToMItem], votes: Sequence[VoteRow]) -> VerificationResult:
    """Dawid-Skene labels per batch, Gwet's AC1 and retention per task x domain."""
    by_id = {i.id: i for i in items}
    batches: dict[str, list[VoteRow]] = defaultdict(list)
    for vote in votes:
        item = by_id[vote.item_id]
        batches[vote.batch or f"{item.task.value}/{item.domain.value}"].append(vote)
    labels: dict[str, Vote] = {}
    p_valid: dict[str, float] = {}
    categories: list[Hashable] = [Vote.VALID.value, Vote.INVALID.value]
    for batch_votes in batches.values():
        fitted = dawid_skene(
            [(v.item_id, v.worker, v.label.value) for v in batch_votes], labels=categories
        )
        for item_id, label in fitted.labels.items():
            labels[str(item_id)] = Vote(str(label))
            p_valid[str(item_id)] = float(fitted.posteriors[item_id][Vote.VALID.value])
    groups = _group_agreement(items, votes, labels)
    return VerificationResult(labels=labels, p_valid=p_valid, groups=groups)


def _group_agreement(
    items: Sequence[ToMItem], votes: Sequence[VoteRow], labels: dict[str, Vote]
) -> list[GroupAgreement]:
    by_group: dict[tuple[str, str], list[ToMItem]] = defaultdict(list)
    for item in items:
        by_group[(item.task.value, item.domain.value)].append(item)
    votes_of: dict[str, dict[str, str]] = defaultdict(dict)
    for vote in votes:
        votes_of[vote.item_id][vote.worker] = vote.label.value
    rows = []
    for (task, domain), group in sorted(by_group.items()):
        voted = [i for i in group if i.id in votes_of]
        workers = sorted({w for i in voted for w in votes_of[i.id]})
        kept = sum(labels.get(i.id) is Vote.VALID for i in voted)
        ac1: float | None = None
        note = ""
        if voted:
            ratings = [[votes_of[i.id].get(w) for w in workers] for i in voted]
            try:
                ac1 = gwet_ac1(
                    ratings, categories=[Vote.VALID.value, Vote.INVALID.value]
                ).coefficient
            except StatsInputError as exc:
                note = str(exc)
        rows.append(
            GroupAgreement(
                task=task,
                domain=domain,
                items=len(group),
                voted=len(voted),
                kept=kept,
                retention=kept / len(voted) if voted else None,
                ac1=ac1,
                workers=len(workers),
                note=note,
            )
        )
    return rows


def keep_verified(items: Sequence[ToMItem], result: VerificationResult) -> list[ToMItem]:
    """The items whose aggregated label is valid, in their original order."""
    kept = result.kept_ids()
    return [i for i in items if i.id in kept]
