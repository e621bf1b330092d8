"""Cards side by side (the paper's Table 4 layout): rows are figures, columns are simulators.

Every row also carries the majority and random baselines, the trivial rules (carry the shown
state forward, VADER, TF-IDF, their combination, and which is the yardstick) and the n of its
items; each cell carries its simulator's gate against the best trivial rule. Baselines and n
come from the first card that has the row; when cards were measured on different items (another
``--limit`` or seed) their n differ, and the comparison says so rather than hiding it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from cogwm.errors import InputError
from cogwm.stats.bootstrap import Settings, paired_answer_difference
from cogwm.stats.estimate import Estimate
from cogwm.validate.card import Card, Figure, Gate


class Cell(Estimate):
    """One simulator's value for one row."""

    json_omitted = frozenset({"se", "confidence"})

    gate: Gate | None = None


class Row(BaseModel):
    """One figure across simulators."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    higher_is_better: bool | None
    majority: float | None
    random: float | None
    cells: list[Cell | None]
    same_items: bool
    carry_forward: float | None = None
    lexicon: float | None = None
    text_classifier: float | None = None
    combined: float | None = None
    best_trivial: str | None = None


class Comparison(BaseModel):
    """Cards side by side."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    columns: list[str]
    rows: list[Row]


def compare(cards: Sequence[Card]) -> Comparison:
    """Align the figures of ``cards`` by ``part.metric[mode]``, rows in first-seen order.

    Raises:
        InputError: No cards.
    """
    if not cards:
        raise InputError("compare needs at least one card")
    keys: dict[str, Figure] = {}
    for card in cards:
        for fig in card.figures:
            keys.setdefault(fig.key, fig)
    rows = []
    for key, first in keys.items():
        figs = [card.figure(key) for card in cards]
        cells = [
            None
            if f is None
            else Cell(value=f.value, ci_low=f.ci_low, ci_high=f.ci_high, n=f.n, gate=f.gate)
            for f in figs
        ]
        counts = {f.n + f.n_failed for f in figs if f is not None}
        rows.append(
            Row(
                key=key,
                higher_is_better=first.higher_is_better,
                majority=first.baselines.majority,
                random=first.baselines.random,
                cells=cells,
                same_items=len(counts) <= 1,
                carry_forward=first.baselines.carry_forward,
                lexicon=first.baselines.lexicon,
                text_classifier=first.baselines.text_classifier,
                combined=first.baselines.combined,
                best_trivial=first.baselines.best_trivial,
            )
        )
    return Comparison(columns=_column_names(cards), rows=rows)


def _column_names(cards: Sequence[Card]) -> list[str]:
    names = [card.label for card in cards]
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if names.count(name) == 1 else f"{name} #{seen[name]}")
    return out


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _cell_text(cell: Cell | None) -> str:
    if cell is None:
        return "-"
    if cell.ci_low is None or cell.ci_high is None:
        return f"{_num(cell.value)} (n={cell.n})"
    return f"{_num(cell.value)} [{cell.ci_low:.3f}, {cell.ci_high:.3f}] (n={cell.n})"


#: Short column names of the trivial rules in text tables.
TRIVIAL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("carry_forward", "carry"),
    ("lexicon", "VADER"),
    ("text_classifier", "tfidf"),
    ("combined", "comb"),
)


def short_rule(name: str | None) -> str:
    """A trivial rule's column name (``text_classifier`` -> ``tfidf``); ``-`` for None."""
    return "-" if name is None else dict(TRIVIAL_COLUMNS).get(name, name)


def gate_text(gate: Gate | None) -> str:
    """``+0.012 [-0.020, +0.041] pass``: the difference from the best trivial rule, its paired
    interval and the verdict; ``-`` without a gate."""
    if gate is None:
        return "-"
    if gate.difference is None:
        return f"{gate.baseline}: undefined"
    ci = "" if gate.ci_low is None or gate.ci_high is None else (
        f" [{gate.ci_low:+.3f}, {gate.ci_high:+.3f}]"
    )  # fmt: skip
    verdict = {True: "pass", False: "fail", None: "undecided"}[gate.passed]
    return f"{gate.difference:+.3f}{ci} {verdict}"


def to_csv(comparison: Comparison) -> str:
    """One CSV row per figure: key, direction, baselines, then value/low/high/n per simulator;
    the trivial rules and each simulator's gate follow (after the older columns)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["metric", "higher_is_better", "majority", "random", "same_items"]
    for column in comparison.columns:
        header += [column, f"{column} ci_low", f"{column} ci_high", f"{column} n"]
    header += [name for name, _ in TRIVIAL_COLUMNS] + ["best_trivial"]
    for column in comparison.columns:
        header += [f"{column} gate", f"{column} gate ci_low", f"{column} gate ci_high",
                   f"{column} gate passed"]  # fmt: skip
    writer.writerow(header)
    for row in comparison.rows:
        line: list[object] = [
            row.key,
            row.higher_is_better,
            row.majority,
            row.random,
            row.same_items,
        ]
        for cell in row.cells:
            line += [None, None, None, None] if cell is None else [
                cell.value, cell.ci_low, cell.ci_high, cell.n
            ]  # fmt: skip
        line += [getattr(row, name) for name, _ in TRIVIAL_COLUMNS] + [row.best_trivial]
        for cell in row.cells:
            gate = None if cell is None else cell.gate
            line += [None, None, None, None] if gate is None else [
                gate.difference, gate.ci_low, gate.ci_high, gate.passed
            ]  # fmt: skip
        writer.writerow(["" if v is None else v for v in line])
    return buffer.getvalue()


def text_rows(comparison: Comparison) -> list[list[str]]:
    """Table cells as text: metric, majority, random, the trivial rules (carry, VADER, tfidf,
    comb, best), then one cell per simulator (with its gate against the best trivial rule)."""
    rows = []
    for row in comparison.rows:
        arrow = {True: "↑", False: "↓", None: "→1"}[row.higher_is_better]
        mark = "" if row.same_items else " *"
        trivial = [_num(getattr(row, name)) for name, _ in TRIVIAL_COLUMNS]
        rows.append(
            [f"{row.key} {arrow}{mark}", _num(row.majority), _num(row.random), *trivial,
             short_rule(row.best_trivial)]
            + [_with_gate(c) for c in row.cells]
        )  # fmt: skip
    return rows


def _with_gate(cell: Cell | None) -> str:
    text = _cell_text(cell)
    if cell is None or cell.gate is None:
        return text
    return f"{text}\ngate Δ {gate_text(cell.gate)}"


class CardDifference(Estimate):
    """A figure of one simulator minus the first simulator's, on the items both cards share.

    The interval comes from a paired bootstrap: each resample draws dialogues once and scores
    both simulators on the same items (the gate of a trained model against its base).
    """

    json_fields = ("key", "column", "value", "ci_low", "ci_high", "n")
    json_omitted = frozenset({"se", "confidence"})
    json_names: ClassVar[Mapping[str, str]] = {"value": "difference"}

    key: str
    column: str

    @property
    def difference(self) -> float | None:
        """The other simulator minus the first (``value``); None: undefined."""
        return self.value


def paired_differences(
    cards: Sequence[Card], *, resamples: int = 2000, seed: int = 0
) -> list[CardDifference]:
    """Every figure that keeps its items, each later card minus the first, on shared items.

    Raises:
        InputError: Fewer than two cards.
    """
    if len(cards) < 2:
        raise InputError("a paired comparison needs at least two cards")
    columns = _column_names(cards)
    settings = Settings(resamples=resamples, seed=seed)
    out = []
    for base in cards[0].figures:
        if base.rows is None:
            continue
        for column, card in zip(columns[1:], cards[1:], strict=True):
            other = card.figure(base.key)
            if other is None or other.rows is None or other.rows_kind != base.rows_kind:
                continue
            out.append(_paired(base, other, column, settings))
    return out


def _paired(base: Figure, other: Figure, column: str, settings: Settings) -> CardDifference:
    theirs = {row.id: row for row in other.rows or []}
    pairs = [(row, theirs[row.id]) for row in base.rows or [] if row.id in theirs]
    # Items both simulators answered: a paired difference compares like with like.
    answered = [
        (a.truth, a.answer, b.answer, a.group)
        for a, b in pairs
        if a.answer is not None and b.answer is not None
    ]
    # The other simulator minus the first, both scored on each resample's same dialogues.
    result = paired_answer_difference(
        "auroc" if base.rows_kind == "auroc" else "mean",
        [truth for truth, *_ in answered],
        [theirs_ for _, _, theirs_, _ in answered],
        [mine for _, mine, _, _ in answered],
        [group for *_, group in answered],
        settings,
    )
    return CardDifference(
        key=base.key,
        column=column,
        value=result.difference,
        ci_low=result.ci_low,
        ci_high=result.ci_high,
        n=result.n,
    )
