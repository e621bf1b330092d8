"""DialToM item records: multiple-choice and open-ended items with their provenance.

An item is self-contained: it carries the dialogue lines it was built from, so that variants
(easy, counterfactual, degradation, open-ended) and evaluation need no corpus.

Items are stored one JSON object a line (``ITEMS.jsonl``). :func:`read_items` validates every
record at load time and names the file, line and item id of the first bad record: an item whose
gold is not among its options, duplicate options, "None of the above" anywhere but last, a
prospective item without a profile...
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from enum import StrEnum
from pathlib import Path

from pydantic import Field, ValidationError, model_validator

from cogwm.errors import InputError
from cogwm.jsonl import write_lines
from cogwm.schema.base import Record

#: The option that becomes correct in counterfactual items; it is always the last option.
NONE_OF_THE_ABOVE = "None of the above"

#: Version of the item format (bump when the meaning of a field changes).
ITEM_FORMAT_VERSION = 1


class Task(StrEnum):
    """The two DialToM tasks."""

    RETROSPECTIVE = "retrospective"  # history -> statement about a mental state (literal ToM)
    PROSPECTIVE = "prospective"  # profile only -> consistent continuation (functional ToM)


class Attribute(StrEnum):
    """The BDIEKT mental-state attributes."""

    BELIEF = "belief"
    DESIRE = "desire"
    INTENTION = "intention"
    EMOTION = "emotion"
    KNOWLEDGE = "knowledge"
    TRUST = "trust"


class Domain(StrEnum):
    """The three DialToM domains, named as the tasks are everywhere else in cogwm."""

    MI = "MI"  # motivational interviewing (AnnoMI)
    ESC = "ESC"  # emotional support (ESConv)
    PD = "PD"  # persuasion to donate (PersuasionForGood)

    @classmethod
    def _missing_(cls, value: object) -> Domain | None:
        """Older items and stores name persuasion ``PFG`` (the paper's name); read them as PD."""
        name = str(value).strip().upper()
        return cls.PD if name in OLD_DOMAIN_NAMES else next((d for d in cls if d == name), None)


#: Former spellings of a domain, still read (items files and stores written before the rename).
OLD_DOMAIN_NAMES = frozenset({"PFG"})


class Variant(StrEnum):
    """Which set an item belongs to."""

    HARD = "hard"  # the base item of the LLM generator: adversarial distractors
    BASE = "base"  # the base item of a template: label-contrast distractors, not adversarial
    EASY = "easy"  # distractor continuations from other dialogues
    COUNTERFACTUAL = "counterfactual"  # contradictory profile, "None of the above" correct
    DEGRADED = "degraded"  # prospective item with some history turns restored
    OPEN = "open"  # free-form answer compared with references


#: The variants of base items (what the easy, counterfactual, degraded and open variants derive
#: from, and what Tables 3-5 report).
BASE_VARIANTS = frozenset({Variant.HARD, Variant.BASE})


class Source(StrEnum):
    """Where the item's gold and distractors came from."""

    TEMPLATE = "template"  # corpus human labels, no LLM
    LLM = "llm"  # the LLM generator


class SpeakerRole(StrEnum):
    """DialToM's dyadic roles."""

    INITIATOR = "initiator"  # counselor / supporter / persuader
    RECIPIENT = "recipient"  # client / seeker / persuadee


CORPUS_DOMAIN: dict[str, Domain] = {
    "annomi": Domain.MI,
    "esconv": Domain.ESC,
    "persuasionforgood": Domain.PD,
}


class Line(Record):
    """One utterance as an item shows it."""

    role: SpeakerRole
    speaker: str = Field(min_length=1, description="Display name, e.g. 'Client'.")
    text: str


class Provenance(Record):
    """Where an item comes from, enough to rebuild or audit it."""

    source: Source
    corpus: str
    dialogue_id: str
    window_id: str
    window_index: int = Field(ge=0)
    label_field: str | None = Field(
        default=None, description="Template items: the corpus label the gold comes from."
    )
    label_value: str | None = Field(default=None, description="The gold's raw label value.")
    generator_model: str | None = Field(default=None, description="LLM items: the model spec.")
    prompt_version: str | None = None
    parent_id: str | None = Field(default=None, description="Variants: the item derived from.")
    seed: int | None = Field(default=None, description="Seed of a random choice made for it.")
    format_version: int = ITEM_FORMAT_VERSION


class ToMItem(Record):
    """One DialToM item.

    ``context`` always holds the dialogue lines the item was built from (the window). What the
    subject sees is decided by ``history_turns``: ``None`` shows all of it (retrospective
    items), ``0`` none (prospective items), ``k`` the last ``k`` turns (degradation variants).
    """

    id: str = Field(min_length=1)
    task: Task
    variant: Variant = Variant.HARD
    domain: Domain
    attribute: Attribute | None = Field(
        default=None,
        description="Retrospective: the attribute asked about. Prospective: the attribute the "
        "profile is built on, when it is a single one (template items), else None.",
    )
    initiator: str = Field(min_length=1, description="Display name of the initiator.")
    recipient: str = Field(min_length=1, description="Display name of the recipient.")
    context: list[Line]
    earlier: list[Line] = Field(
        default_factory=list,
        description="Retrospective items: the session's lines before the window, shown only "
        "when evaluated with the full session history.",
    )
    history_turns: int | None = Field(default=None, ge=0)
    profile: str | None = Field(
        default=None, description="The recipient's mental-state profile shown (prospective)."
    )
    question: str = Field(min_length=1)
    options: list[str] = Field(default_factory=list)
    gold: str = Field(description="The correct option's text (open items: the main reference).")
    references: list[str] = Field(
        default_factory=list, description="Open items: reference answers (gold first)."
    )
    rationales: dict[str, str] = Field(
        default_factory=dict, description="Why each distractor is wrong (LLM items)."
    )
    provenance: Provenance

    @model_validator(mode="after")
    def _check_consistency(self) -> ToMItem:
        if self.variant is Variant.OPEN:
            self._check_open()
        else:
            self._check_choices()
        if self.task is Task.PROSPECTIVE and not (self.profile and self.profile.strip()):
            raise ValueError("a prospective item needs a non-empty profile")
        if self.task is Task.RETROSPECTIVE and self.attribute is None:
            raise ValueError("a retrospective item needs an attribute")
        return self

    def _check_open(self) -> None:
        if self.options:
            raise ValueError("an open-ended item has no options")
        if not self.references or any(not r.strip() for r in self.references):
            raise ValueError("an open-ended item needs non-empty references")

    def _check_choices(self) -> None:
        if len(self.options) < 2:
            raise ValueError(f"needs at least 2 options, got {len(self.options)}")
        keys = [option_key(o) for o in self.options]
        if any(not k for k in keys):
            raise ValueError("an option is empty")
        dupes = sorted({o for o, k in zip(self.options, keys, strict=True) if keys.count(k) > 1})
        if dupes:
            raise ValueError(f"duplicate options: {dupes[0]!r:.80}")
        if self.gold not in self.options:
            raise ValueError(f"gold {self.gold!r:.80} is not among the options")
        nota = [i for i, o in enumerate(self.options) if option_key(o) == _NOTA_KEY]
        if nota and nota != [len(self.options) - 1]:
            raise ValueError(f"{NONE_OF_THE_ABOVE!r} must be the last option")
        if self.variant is Variant.COUNTERFACTUAL and self.gold != NONE_OF_THE_ABOVE:
            raise ValueError(f"a counterfactual item's gold must be {NONE_OF_THE_ABOVE!r}")

    @property
    def is_base(self) -> bool:
        """Whether this is a base item (hard or template base), not a variant of one."""
        return self.variant in BASE_VARIANTS

    @property
    def n_options(self) -> int:
        """Number of options (0 for open-ended items)."""
        return len(self.options)

    @property
    def gold_index(self) -> int:
        """Index of the gold in ``options`` (stored order)."""
        return self.options.index(self.gold)

    @property
    def has_none_of_the_above(self) -> bool:
        """Whether the last option is "None of the above" (it stays last when shuffled)."""
        return bool(self.options) and option_key(self.options[-1]) == _NOTA_KEY

    def shown_history(self, *, full: bool = False) -> list[Line]:
        """The context lines the subject sees (see ``history_turns``).

        ``full`` shows a retrospective item the whole session up to the window's end
        (``earlier`` and the window) instead of the window alone.
        """
        if self.history_turns is None:
            return [*self.earlier, *self.context] if full else list(self.context)
        if self.history_turns == 0:
            return []
        turns = group_turns(self.context)
        return [line for turn in turns[-self.history_turns :] for line in turn]

    def content_hash(self) -> str:
        """A short hash of the whole record (detects two different items under one id).

        An empty ``earlier`` is left out, so items written before it existed keep their hash.
        """
        exclude = None if self.earlier else {"earlier"}
        return hashlib.sha256(self.model_dump_json(exclude=exclude).encode()).hexdigest()[:16]

    @property
    def lacks_earlier(self) -> bool:
        """A retrospective item of a later window without the session before it."""
        return (
            self.task is Task.RETROSPECTIVE
            and self.history_turns is None
            and self.provenance.window_index > 0
            and not self.earlier
        )


def option_key(text: str) -> str:
    """The form under which two options count as duplicates (case and spacing ignored)."""
    return re.sub(r"\s+", " ", text).strip().casefold()


_NOTA_KEY = option_key(NONE_OF_THE_ABOVE)


def group_turns(lines: list[Line]) -> list[list[Line]]:
    """Group lines into turns: maximal runs by the same speaker."""
    turns: list[list[Line]] = []
    for line in lines:
        if turns and turns[-1][-1].speaker == line.speaker:
            turns[-1].append(line)
        else:
            turns.append([line])
    return turns


def render_lines(lines: Iterable[Line]) -> str:
    """Lines as ``Speaker: text``, one a line."""
    return "\n".join(f"{line.speaker}: {line.text}" for line in lines)


def read_items(path: Path) -> list[ToMItem]:
    """Read and validate an ``ITEMS.jsonl`` file.

    Raises:
        InputError: the file is missing, a line is not JSON, a record is invalid, or two
            records share an id. The message names the file, line and item id.
    """
    return list(iter_items(path))


def iter_items(path: Path) -> Iterator[ToMItem]:
    """Validate and yield the items of ``path`` one by one (see :func:`read_items`)."""
    if not path.is_file():
        raise InputError(f"items file {path} does not exist")
    seen: set[str] = set()
    lineno = 0
    try:
        with path.open(encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                item = _parse_line(path, lineno, line)
                if item.id in seen:
                    raise InputError(f"{path}:{lineno}: item {item.id!r}: duplicate item id")
                seen.add(item.id)
                yield item
    except UnicodeDecodeError:
        raise InputError(f"{path}:{lineno + 1}: not UTF-8 text") from None


def _parse_line(path: Path, lineno: int, line: str) -> ToMItem:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{lineno}: not a JSON object ({exc.msg})") from exc
    item_id = raw.get("id", "<no id>") if isinstance(raw, dict) else "<not an object>"
    try:
        return ToMItem.model_validate_json(line)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        detail = f"{where}: {first['msg']}" if where else first["msg"]
        raise InputError(f"{path}:{lineno}: item {item_id!r}: {detail}") from exc


def write_items(path: Path, items: Iterable[ToMItem], *, append: bool = False) -> int:
    """Write items as JSON lines; returns how many were written.

    A new file is written beside its name and renamed at the end, so a failure never leaves
    an empty or partial file under that name.

    Raises:
        InputError: The path is a directory or cannot be written.
    """
    if path.is_dir():
        raise InputError(f"{path} is a directory; give a file name for the items")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{path}: cannot create {path.parent} ({exc.strerror})") from None
    if not append:
        return write_lines(path, (item.model_dump_json() for item in items))
    count = 0
    try:
        with path.open("a", encoding="utf-8") as handle:
            for item in items:
                handle.write(item.model_dump_json() + "\n")
                count += 1
    except OSError as exc:
        raise InputError(f"{path}: cannot write ({exc.strerror})") from None
    return count
