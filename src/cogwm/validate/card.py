"""The validity card: a simulator's figures against human labels, as a self-describing JSON record.

A card names the simulator (address and backend identity), the data behind every figure (corpus,
split, how items were chosen, n), the seed and limit of the run, the input switches (ablations)
and the versions of the software. Each figure carries its point estimate, a bootstrap 95 % CI,
its n, how many items had no usable answer, and the majority and random baselines beside it, so
a number never stands without the yardstick that says whether it means anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cogwm.errors import InputError
from cogwm.stats.estimate import Estimate

#: Schema tag of card files; a reader refuses other tags.
CARD_SCHEMA = "cogwm.validity_card/1"


#: Former part names, read as today's (cards written before a part took its corpus's name).
OLD_PART_NAMES = {"p4g": "persuasionforgood"}


class _Rec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _part_name(name: object) -> object:
    return OLD_PART_NAMES.get(name, name) if isinstance(name, str) else name


class Baselines(_Rec):
    """What a simulator that ignores its input would score on the same items.

    ``majority``: always the most frequent gold answer (a constant score for AUROC, so 0.5).
    ``random``: answers drawn uniformly from the simulator's answer space (expected value).
    None where the baseline has no meaning for the metric.
    """

    majority: float | None = None
    random: float | None = None
    carry_forward: float | None = Field(
        default=None,
        description="Answer the value of the scored field in the state the prompt shows.",
    )
    lexicon: float | None = Field(
        default=None, description="A sentiment lexicon's score of the turn's text (VADER)."
    )
    text_classifier: float | None = Field(
        default=None, description="TF-IDF + logistic regression fitted on the train split."
    )
    combined: float | None = Field(
        default=None,
        description="Logistic regression on carry-forward, text score and the state-shown flag.",
    )
    best_trivial: str | None = Field(
        default=None,
        description="Which trivial rule is the yardstick: the best on the validation split, "
        "chosen there before any test figure is computed.",
    )


class Gate(Estimate):
    """The simulator against the best trivial baseline on the same items: a paired bootstrap
    over dialogues of (simulator - baseline). Passed when the simulator is better beyond the
    interval: for a figure where higher is better (accuracy, AUROC) the interval's lower bound is
    above 0; for an error where lower is better (MAE) its upper bound is below 0. None when the
    difference or its interval is undefined."""

    json_fields = ("baseline", "value", "ci_low", "ci_high", "n")
    json_omitted = frozenset({"se", "confidence"})
    json_names: ClassVar[Mapping[str, str]] = {"value": "difference"}

    baseline: str = Field(description="The trivial rule compared with (Baselines.best_trivial).")
    passed: bool | None = Field(description="None: undefined on these items.")

    @property
    def difference(self) -> float | None:
        """Simulator minus baseline (``value``); None: undefined on these items."""
        return self.value


class Check(Estimate):
    """A responsiveness check: does the simulator's state follow what the agent does?

    The instrument's own unit tests (counterfactual agent turns, known groups of people, arena
    sensitivity). Each says what a simulator that copies the state it is shown would score, so a
    reader sees the figure a copy machine reaches beside the simulator's.
    """

    json_fields = ("name", "task", "metric", "value", "ci_low", "ci_high", "n")
    json_omitted = frozenset({"se", "confidence"})

    name: str = Field(description="'counterfactual', 'known_groups' or 'arena_sensitivity'.")
    task: str = Field(description="The task or corpus pair the check ran on, e.g. 'ESC'.")
    metric: str = Field(description="What the value measures, e.g. 'valence_ordering'.")
    n: int = Field(description="Units behind the value (histories, dialogues or scenarios).")
    n_failed: int = Field(default=0, description="Units with a failed simulator call.")
    copy_machine: float | None = Field(
        default=None, description="What a simulator copying the state it is shown scores."
    )
    baselines: dict[str, float | None] = Field(
        default_factory=dict, description="Other yardsticks on the same units, by name."
    )
    passed: bool | None = Field(description="None: the check could not be decided.")
    rule: str = Field(description="The pass rule, in words.")
    note: str = ""

    @property
    def key(self) -> str:
        """``name.task.metric``: the check's row name."""
        return f"{self.name}.{self.task}.{self.metric}"


class ItemRow(_Rec):
    """One item behind a figure, kept so that two cards can be compared item by item.

    ``truth`` and ``answer`` depend on the figure's ``rows_kind``: for ``auroc`` the class (1 or
    0) and the simulator's score; for ``mean`` 1 and the item's value (1 right, 0 wrong for an
    accuracy). ``answer`` None: the item had no usable answer.
    """

    id: str
    group: str
    truth: float
    answer: float | None


class Figure(Estimate):
    """One measured number of a card."""

    json_fields = ("part", "metric", "mode", "value", "ci_low", "ci_high", "n")
    json_omitted = frozenset({"se", "confidence"})

    part: str = Field(description="The card part, e.g. 'dailydialog'.")
    metric: str = Field(description="Metric name, e.g. 'emotion_accuracy', 'valence_auroc'.")
    mode: str = Field(description="'understand' (real utterance given) or 'predict'.")
    n: int = Field(description="Items the figure is computed on.")
    n_failed: int = Field(
        default=0,
        description="Items whose simulator call gave no usable answer (how they count: 'note').",
    )
    baselines: Baselines = Field(default_factory=Baselines)
    higher_is_better: bool | None = Field(
        default=True, description="None: neither (the note says what is ideal, e.g. LenR 1)."
    )
    note: str = ""
    rows_kind: str | None = Field(
        default=None, description="How ``rows`` make the value: 'mean' or 'auroc'."
    )
    rows: list[ItemRow] | None = Field(
        default=None, description="The items behind the value (for paired comparisons)."
    )
    subset: str = Field(
        default="all",
        description="Which of the part's items: 'all', 'change' (the gold differs from the "
        "value the prompt shows), 'same' or 'no_previous' (the prompt shows none).",
    )
    gate: Gate | None = Field(
        default=None, description="The paired comparison with the best trivial baseline."
    )

    _current_part = field_validator("part", mode="before")(_part_name)

    @property
    def key(self) -> str:
        """The figure's row name in a comparison: ``part.metric[mode]``, with ``:subset``
        after the metric for a subset other than all items."""
        metric = self.metric if self.subset == "all" else f"{self.metric}:{self.subset}"
        return f"{self.part}.{metric}[{self.mode}]"


class PartInfo(_Rec):
    """The data behind one part of the card."""

    name: str
    corpus: str
    split: str = Field(description="Which dialogues: an official split or a stated rule.")
    selection: str = Field(description="Which turns are items, in words.")
    mode: str
    n_items: int
    n_population: int = Field(description="Items before --limit sampled from them.")
    n_dialogues: int
    n_calls: int = 0
    n_failed: int = 0
    n_unclean: int | None = Field(
        default=None,
        description="Held-out dialogues left out because a user line of theirs occurs in "
        "train (None: the rule did not apply, e.g. simulators trained on none).",
    )

    _current_name = field_validator("name", mode="before")(_part_name)


class Card(_Rec):
    """A simulator's validity card (see the module docstring)."""

    schema_tag: str = Field(default=CARD_SCHEMA, alias="schema")
    label: str = Field(description="Column name of this simulator in comparisons.")
    model: str = Field(description="The model address, e.g. 'llamacpp:smollm2'.")
    model_identity: str = Field(description="The backend's identity (file, hash, adapter).")
    ablation: str = Field(default="none", description="Input switch applied to every call.")
    pipeline: str = Field(
        default="joint", description="joint (one call) or dual (generator + verifier baseline)."
    )
    heldout: str = Field(
        default="test", description="Dialogues used where a corpus has no official split."
    )
    seed: int
    limit: int | None = Field(description="Items sampled per part; None: the full sets.")
    resamples: int
    confidence: float = 0.95
    created: str
    versions: dict[str, str] = Field(default_factory=dict)
    answer_labels: list[str] = Field(
        default_factory=list, description="The emotion labels the simulator could answer."
    )
    input: str = Field(default="", description="What the simulator was shown, in words.")
    parts: list[PartInfo] = Field(default_factory=list)
    figures: list[Figure] = Field(default_factory=list)
    left_out: dict[str, str] = Field(
        default_factory=dict, description="Parts asked for but not measured, with the reason."
    )
    checks: list[Check] = Field(
        default_factory=list, description="Responsiveness checks (see :class:`Check`)."
    )

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def figure(self, key: str) -> Figure | None:
        """The figure whose ``key`` is ``key`` (``part.metric[mode]``), if the card has it."""
        return next((f for f in self.figures if f.key == key), None)


def write_card(card: Card, path: Path) -> None:
    """Write ``card`` as indented JSON to ``path`` (parent folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(card.model_dump_json(indent=2, by_alias=True) + "\n", encoding="utf-8")


def card_json(card: Card) -> dict[str, object]:
    """The card as a JSON-ready dict (the same keys as the file)."""
    data: dict[str, object] = json.loads(card.model_dump_json(by_alias=True))
    return data


def read_card(path: Path) -> Card:
    """Read a card file.

    Raises:
        InputError: A missing or unreadable file, not JSON, another schema tag, or fields that
            do not fit the card record.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read the card ({exc.strerror or exc})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict) or data.get("schema") != CARD_SCHEMA:
        tag = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise InputError(f"{path}: expected a validity card (schema {CARD_SCHEMA!r}), got {tag!r}")
    try:
        return Card.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise InputError(f"{path}: invalid card: {where}: {first.get('msg')}") from exc
