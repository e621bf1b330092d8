"""People as a DialToM baseline: the answer sheet they fill in, and importing their answers.

``cogwm tom answers-export ITEMS --out sheet.csv`` writes one row per multiple-choice item with
the options lettered in the same seeded permutation a model run with that seed sees
(:func:`cogwm.tom.prompts.permutation`); the sheet records the seed. Respondents fill in the
columns ``respondent``, ``choice`` and optionally ``time_s``, one copy of a row per respondent.

``cogwm tom answers-import ANSWERS.csv --as human:lay`` reads such a sheet. Its columns
(:data:`ANSWER_COLUMNS`):

- ``item_id`` (required): an item of the items file or the database;
- ``respondent`` (required): who answered (any name or code, no personal data needed);
- ``choice`` (required): the option letter as shown in the sheet ("B", "B.", "(B)"), or the
  option's text; a row with an empty choice is a skipped item and is not imported;
- ``seed`` (optional, default ``--seed``): the seed of the permutation the respondent saw;
- ``time_s`` (optional): seconds spent on the item.

Every row is checked before anything is stored; the first bad row (unknown item, unknown
option, a respondent answering an item twice, a bad time) is named and nothing is imported.
Each respondent becomes one run of the model ``human:lay`` (or ``human:expert``), condition
``plain``; its answers have the scoring path ``human``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogwm.errors import InputError
from cogwm.tom.evaluate import PLAIN, score_answer
from cogwm.tom.items import ToMItem, Variant, option_key, render_lines
from cogwm.tom.prompts import Presentation, permutation, render_options
from cogwm.tom.store import AnswerRow, RunInfo

#: Version of the answer sheet (the "prompt version" of people's runs).
SHEET_VERSION = "dialtom-sheet-v1"
#: Columns the respondents fill in.
ANSWER_COLUMNS = ("item_id", "respondent", "choice")
SHEET_COLUMNS = (
    "item_id",
    "seed",
    "task",
    "domain",
    "attribute",
    "conversation",
    "profile",
    "question",
    "options",
    "respondent",
    "choice",
    "time_s",
)
#: How people's answers are named in the runs.
PEOPLE_PREFIX = "human:"
_KIND = re.compile(r"^human:[a-z][a-z0-9_-]*$")
_LETTER = re.compile(r"^\(?([A-Za-z])\)?[.):]?$")


def is_people(model: str) -> bool:
    """Whether a run's model is a group of people (``human:lay``, ``human:expert``)."""
    return model.startswith(PEOPLE_PREFIX)


def check_kind(kind: str) -> str:
    """Validate an ``--as`` value such as ``human:lay`` or ``human:expert``."""
    if not _KIND.match(kind):
        raise InputError(
            f"--as must name a group of people such as human:lay or human:expert, got {kind!r}"
        )
    return kind


def export_sheet(items: Sequence[ToMItem], path: Path, seed: int = 0) -> int:
    """Write the answer sheet of the multiple-choice items; returns how many rows.

    The conversation column shows what a model sees (the item's shown history), the options
    are lettered in the permutation of ``seed``; the gold is not in the sheet.
    """
    chosen = [i for i in items if i.variant is not Variant.OPEN]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(SHEET_COLUMNS)
        for item in chosen:
            writer.writerow(
                [
                    item.id,
                    seed,
                    item.task.value,
                    item.domain.value,
                    item.attribute.value if item.attribute else "",
                    render_lines(item.shown_history()),
                    item.profile or "",
                    item.question,
                    render_options(item, permutation(item, seed)),
                    "",
                    "",
                    "",
                ]
            )
    return len(chosen)


@dataclass(frozen=True)
class PersonAnswer:
    """One validated row of an answer sheet."""

    row: int
    item: ToMItem
    respondent: str
    seed: int
    shown: Presentation
    letter: str
    written: str
    time_s: float | None


@dataclass(frozen=True)
class SheetRead:
    """A validated answer sheet: its answers and how many rows had no choice."""

    answers: list[PersonAnswer]
    skipped: int


def read_sheet(path: Path, items: Mapping[str, ToMItem], default_seed: int = 0) -> SheetRead:
    """Read and validate an answer sheet (see the module docstring).

    Raises:
        InputError: A missing file or column, or a bad row (named by its row number).
    """
    if not path.is_file():
        raise InputError(f"answers file {path} does not exist")
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in ANSWER_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(
                f"{path}: missing column(s) {', '.join(missing)}; an answer sheet has "
                f"{', '.join(ANSWER_COLUMNS)} and optionally seed, time_s"
            )
        answers: list[PersonAnswer] = []
        skipped = 0
        seen: set[tuple[str, str, int]] = set()
        for row_no, row in enumerate(reader, start=2):
            answer = _row(path, row_no, row, items, default_seed)
            if answer is None:
                skipped += 1
                continue
            key = (answer.item.id, answer.respondent, answer.seed)
            if key in seen:
                raise InputError(
                    f"{path}: row {row_no}: respondent {answer.respondent!r} already answered "
                    f"item {answer.item.id!r}"
                )
            seen.add(key)
            answers.append(answer)
    if not answers:
        raise InputError(f"{path}: no answers (every row has an empty choice)")
    return SheetRead(answers=answers, skipped=skipped)


def _row(
    path: Path,
    row_no: int,
    row: Mapping[str, str | None],
    items: Mapping[str, ToMItem],
    default_seed: int,
) -> PersonAnswer | None:
    def cell(name: str) -> str:
        return (row.get(name) or "").strip()

    def fail(message: str) -> InputError:
        return InputError(f"{path}: row {row_no}: {message}")

    written, respondent, item_id = cell("choice"), cell("respondent"), cell("item_id")
    if not written:
        return None  # a skipped item (or a row nobody filled in)
    item = items.get(item_id)
    if item is None:
        raise fail(f"unknown item id {item_id!r}")
    if item.variant is Variant.OPEN:
        raise fail(f"item {item_id!r} is open-ended and has no options")
    if not respondent:
        raise fail("empty respondent")
    seed = _int(cell("seed"), default_seed, fail)
    shown = permutation(item, seed)
    letter = _letter(written, item, shown)
    if letter is None:
        raise fail(
            f"choice {written!r:.60} is neither an option letter "
            f"({shown.letters[0]}-{shown.letters[-1]}) nor the text of an option of {item_id!r}"
        )
    return PersonAnswer(
        row=row_no,
        item=item,
        respondent=respondent,
        seed=seed,
        shown=shown,
        letter=letter,
        written=written,
        time_s=_time(cell("time_s"), fail),
    )


def _int(text: str, default: int, fail: Any) -> int:
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise fail(f"seed {text!r} is not an integer") from None


def _time(text: str, fail: Any) -> float | None:
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise fail(f"time_s {text!r} is not a number of seconds") from None
    if not value >= 0 or value == float("inf"):
        raise fail(f"time_s {text!r} must be a non-negative number of seconds")
    return value


def _letter(written: str, item: ToMItem, shown: Presentation) -> str | None:
    match = _LETTER.match(written)
    if match and match.group(1).upper() in shown.letters:
        return match.group(1).upper()
    key = option_key(written)
    for letter, index in zip(shown.letters, shown.order, strict=True):
        if option_key(item.options[index]) == key:
            return letter
    return None


def people_run(kind: str, respondent: str, seed: int) -> RunInfo:
    """The run of one respondent (its id is a hash of kind, respondent and seed)."""
    key = json.dumps([kind, PLAIN, seed, SHEET_VERSION, respondent])
    run_id = hashlib.sha256(key.encode()).hexdigest()[:16]
    return RunInfo(run_id, kind, PLAIN, None, seed, SHEET_VERSION)


def people_rows(
    kind: str, answers: Sequence[PersonAnswer], source: str
) -> tuple[list[tuple[RunInfo, dict[str, Any]]], list[AnswerRow]]:
    """The runs (one per respondent and seed) and stored answers of a validated sheet."""
    runs: dict[str, tuple[RunInfo, dict[str, Any]]] = {}
    rows: list[AnswerRow] = []
    for answer in answers:
        run = people_run(kind, answer.respondent, answer.seed)
        runs.setdefault(
            run.run_id,
            (
                run,
                {
                    "model": kind,
                    "condition": PLAIN,
                    "seed": answer.seed,
                    "respondent": answer.respondent,
                    "prompt_version": SHEET_VERSION,
                    "sheet": source,
                },
            ),
        )
        raw = json.dumps({"choice": answer.written, "time_s": answer.time_s})
        rows.append(
            score_answer(
                run.run_id,
                answer.item,
                answer.shown,
                answer.letter,
                path="human",
                raw=raw,
                probs={},
                call_id="",
            )
        )
    return list(runs.values()), rows
