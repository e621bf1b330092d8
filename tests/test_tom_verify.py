"""Verification on vote files written here (no human verifiers exist for this project)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from cogwm.errors import InputError
from cogwm.tom.items import Task, ToMItem
from cogwm.tom.verify import (
    Vote,
    aggregate_votes,
    export_for_verification,
    keep_verified,
    read_votes,
)
from helpers_tom import mc_item


def _items() -> list[ToMItem]:
    return [
        mc_item("r1"),
        mc_item("r2"),
        mc_item("p1", task=Task.PROSPECTIVE),
        mc_item("p2", task=Task.PROSPECTIVE),
    ]


VOTES = [
    ("r1", "w1", "valid"), ("r1", "w2", "valid"), ("r1", "w3", "yes"),
    ("r2", "w1", "valid"), ("r2", "w2", "invalid"), ("r2", "w3", "1"),
    ("p1", "w1", "invalid"), ("p1", "w2", "no"), ("p1", "w3", "reject"),
    ("p2", "w1", "valid"), ("p2", "w2", "keep"), ("p2", "w3", "true"),
]  # fmt: skip


def _write_votes(path: Path, rows: list[tuple[str, ...]], header: tuple[str, ...]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_export_marks_the_gold(tmp_path: Path) -> None:
    path = tmp_path / "verify.csv"
    item = mc_item("r1", options=["no", "yes", "maybe"], gold="yes")
    assert export_for_verification([item], path) == 1
    (row,) = list(csv.DictReader(path.open(encoding="utf-8")))
    assert row["item_id"] == "r1" and row["gold_letter"] == "B" and row["gold"] == "yes"
    assert row["options"] == "A. no\nB. yes\nC. maybe"
    assert "Client: Fine." in row["conversation"]


def test_aggregation_agreement_and_retention(tmp_path: Path) -> None:
    items = _items()
    path = _write_votes(tmp_path / "votes.csv", VOTES, ("item_id", "worker", "label"))
    votes = read_votes(path, {i.id for i in items})
    result = aggregate_votes(items, votes)
    assert result.labels == {
        "r1": Vote.VALID,
        "r2": Vote.VALID,
        "p1": Vote.INVALID,
        "p2": Vote.VALID,
    }
    groups = {(g.task, g.domain): g for g in result.groups}
    retro = groups[("retrospective", "MI")]
    # AC1 by hand, 2 categories: pa = (1 + 1/3) / 2 = 2/3 (r1 unanimous, r2 2 of 3 agree);
    # pi(valid) = (1 + 2/3) / 2 = 5/6, pe = 2 * 5/6 * 1/6 = 5/18; AC1 = (2/3 - 5/18) / (13/18)
    assert retro.ac1 == pytest.approx(7 / 13)
    assert (retro.voted, retro.kept, retro.retention, retro.workers) == (2, 2, 1.0, 3)
    prosp = groups[("prospective", "MI")]
    # Both prospective items unanimous: pa = 1, pi = (1/2, 1/2), pe = 1/2 -> AC1 = 1.
    assert prosp.ac1 == pytest.approx(1.0)
    assert (prosp.kept, prosp.retention) == (1, 0.5)
    assert [i.id for i in keep_verified(items, result)] == ["r1", "r2", "p2"]
    assert result.p_valid["p1"] < 0.5 < result.p_valid["p2"]


def test_batches_are_fitted_separately(tmp_path: Path) -> None:
    items = _items()
    rows = [(*v, "b1" if v[0].startswith("r") else "b2") for v in VOTES]
    path = _write_votes(tmp_path / "votes.csv", rows, ("item_id", "worker", "label", "batch"))
    votes = read_votes(path, {i.id for i in items})
    assert {v.batch for v in votes} == {"b1", "b2"}
    assert aggregate_votes(items, votes).kept_ids() == {"r1", "r2", "p2"}


@pytest.mark.parametrize(
    ("rows", "header", "message"),
    [
        ([("r9", "w1", "valid")], ("item_id", "worker", "label"), "row 2: unknown item id 'r9'"),
        ([("r1", "w1", "maybe")], ("item_id", "worker", "label"), "row 2: label 'maybe'"),
        ([("r1", "", "valid")], ("item_id", "worker", "label"), "row 2: empty worker"),
        (
            [("r1", "w1", "valid"), ("r1", "w1", "invalid")],
            ("item_id", "worker", "label"),
            "row 3: worker 'w1' already voted on item 'r1'",
        ),
        ([("r1", "valid")], ("item_id", "label"), "expected the columns item_id, worker, label"),
        ([], ("item_id", "worker", "label"), "no votes"),
    ],
)
def test_bad_votes_are_named(
    tmp_path: Path, rows: list[tuple[str, ...]], header: tuple[str, ...], message: str
) -> None:
    path = _write_votes(tmp_path / "votes.csv", rows, header)
    with pytest.raises(InputError, match=message):
        read_votes(path, {"r1"})
