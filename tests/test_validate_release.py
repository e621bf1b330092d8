"""The release gate on hand-made cards: each criterion failing alone flips the verdict, and an
undefined or missing figure never passes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cogwm.validate.card import Baselines, Card, Check, Figure, Gate, write_card
from cogwm.validate.release import release_gate
from helpers_cli import cogwm


def _valence(subset: str, value: float | None = 0.90, gate_low: float | None = 0.02) -> Figure:
    return Figure(
        part="dailydialog",
        metric="valence_auroc",
        mode="predict",
        value=value,
        ci_low=None if value is None else value - 0.05,
        ci_high=None if value is None else value + 0.05,
        n=100,
        subset=subset,
        baselines=Baselines(
            majority=0.5,
            carry_forward=0.7,
            lexicon=0.8,
            text_classifier=0.85,
            combined=0.84,
            best_trivial="text_classifier",
        ),
        gate=Gate(
            baseline="text_classifier",
            difference=0.05,
            ci_low=gate_low,
            ci_high=0.1,
            n=100,
            passed=None if gate_low is None else gate_low > 0,
        ),
    )


def _check(
    name: str, task: str, metric: str, value: float | None, low: float | None, **extra: Any
) -> Check:
    passed = extra.pop("passed", True)
    return Check(
        name=name,
        task=task,
        metric=metric,
        value=value,
        ci_low=low,
        ci_high=None if value is None else value + 0.05,
        n=extra.pop("n", 60),
        passed=passed,
        rule="r",
        **extra,
    )


def _passing() -> dict[str, Any]:
    """The parts of a card that passes every criterion, by criterion name."""
    parts: dict[str, Any] = {
        "valence:all": _valence("all"),
        "valence:change": _valence("change"),
    }
    for task in ("ESC", "PD", "MI"):
        for metric in ("valence_ordering", "composite_ordering"):
            parts[f"cf.{task}.{metric}"] = _check("counterfactual", task, metric, 0.85, 0.81)
    for metric in ("composite_delta_auroc", "valence_delta_auroc"):
        parts[f"kg.{metric}"] = _check("known_groups", "ESC", metric, 0.70, 0.60, n=120)
    for task in ("ESC", "PD"):
        parts[f"sens.{task}"] = _check(
            "arena_sensitivity", task, "cts_supportive_minus_dismissive", 0.3, 0.1, n=20
        )
    return parts


def _card(parts: dict[str, Any]) -> Card:
    figures = [p for p in parts.values() if isinstance(p, Figure)]
    checks = [p for p in parts.values() if isinstance(p, Check)]
    return Card(
        label="cand",
        model="transition:t.json",
        model_identity="transition:t@1",
        seed=0,
        limit=None,
        resamples=200,
        created="now",
        figures=figures,
        checks=checks,
    )


def test_a_card_meeting_every_criterion_passes() -> None:
    verdict = release_gate(_card(_passing()))
    assert verdict.passed
    assert len([c for c in verdict.criteria if c.gating]) == 12


#: Each criterion broken alone: (part to replace, its failing version).
BREAKS: dict[str, tuple[str, Any]] = {
    "valence below a trivial rule": ("valence:all", _valence("all", value=0.84)),
    "valence gate lower bound at 0": ("valence:change", _valence("change", gate_low=0.0)),
    "valence undefined": ("valence:all", _valence("all", value=None)),
    "valence gate undefined": ("valence:change", _valence("change", gate_low=None)),
    "change items missing": ("valence:change", None),
    "ordering under 0.80": (
        "cf.MI.composite_ordering",
        _check("counterfactual", "MI", "composite_ordering", 0.79, 0.7),
    ),
    "ordering lower bound at 0.5": (
        "cf.ESC.valence_ordering",
        _check("counterfactual", "ESC", "valence_ordering", 0.9, 0.5),
    ),
    "ordering undefined": (
        "cf.PD.composite_ordering",
        _check("counterfactual", "PD", "composite_ordering", None, None, passed=None),
    ),
    "ordering missing": ("cf.PD.valence_ordering", None),
    "known groups under 0.65": (
        "kg.composite_delta_auroc",
        _check("known_groups", "ESC", "composite_delta_auroc", 0.64, 0.55),
    ),
    "known groups lower bound at 0.5": (
        "kg.valence_delta_auroc",
        _check("known_groups", "ESC", "valence_delta_auroc", 0.7, 0.5),
    ),
    "sensitivity lower bound at 0": (
        "sens.PD",
        _check("arena_sensitivity", "PD", "cts_supportive_minus_dismissive", 0.2, 0.0, n=20),
    ),
    "sensitivity under 20 scenarios": (
        "sens.ESC",
        _check("arena_sensitivity", "ESC", "cts_supportive_minus_dismissive", 0.3, 0.1, n=19),
    ),
    "sensitivity with a failed conversation": (
        "sens.ESC",
        _check(
            "arena_sensitivity",
            "ESC",
            "cts_supportive_minus_dismissive",
            0.3,
            0.1,
            n=20,
            n_failed=1,
        ),
    ),
    "sensitivity means out of order": (
        "sens.PD",
        _check(
            "arena_sensitivity",
            "PD",
            "cts_supportive_minus_dismissive",
            0.3,
            0.1,
            n=20,
            passed=False,
        ),
    ),
    "sensitivity missing": ("sens.PD", None),
}


@pytest.mark.parametrize("name", list(BREAKS))
def test_each_criterion_failing_alone_fails_the_gate(name: str) -> None:
    key, broken = BREAKS[name]
    parts = _passing()
    if broken is None:
        del parts[key]
    else:
        parts[key] = broken
    verdict = release_gate(_card(parts))
    assert not verdict.passed
    failed = [c for c in verdict.criteria if not c.passed]
    assert len(failed) == 1, [c.name for c in failed]


def test_reported_figures_do_not_gate() -> None:
    parts = _passing()
    parts["kg.MI"] = _check(
        "known_groups", "MI", "composite_delta_auroc", None, None, n=0, passed=None
    )
    verdict = release_gate(_card(parts))
    assert verdict.passed
    reported = [c for c in verdict.criteria if not c.gating]
    assert [c.name for c in reported] == ["known_groups.MI.composite_delta_auroc"]
    assert not reported[0].passed


def test_an_empty_card_fails_every_criterion() -> None:
    verdict = release_gate(_card({}))
    assert not verdict.passed
    assert not any(c.passed for c in verdict.criteria)


def test_cli_reads_the_sensitivity_checks_from_a_second_card(tmp_path: Path, capsys: Any) -> None:
    parts = _passing()
    sensitivity = {k: parts.pop(k) for k in ("sens.ESC", "sens.PD")}
    write_card(_card(parts), tmp_path / "card.json")
    write_card(_card(sensitivity), tmp_path / "sens.json")
    assert cogwm("validate", "--gate", tmp_path / "card.json") == 1
    capsys.readouterr()
    assert (
        cogwm("validate", "--gate", tmp_path / "card.json", tmp_path / "sens.json", "--json") == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] is True
    assert "dailydialog.valence_auroc:change[predict]" in [c["name"] for c in out["criteria"]]


def test_cli_refuses_cards_of_another_simulator(tmp_path: Path, capsys: Any) -> None:
    write_card(_card(_passing()), tmp_path / "card.json")
    other = _card({}).model_copy(update={"model_identity": "transition:other@2"})
    write_card(other, tmp_path / "other.json")
    assert cogwm("validate", "--gate", tmp_path / "card.json", tmp_path / "other.json") == 2
    assert "one simulator's cards" in capsys.readouterr().err
    assert cogwm("validate", "--gate") == 2


def test_a_verdict_without_gating_criteria_does_not_pass() -> None:
    from cogwm.validate.release import Criterion, Verdict

    reported = Criterion("known_groups.MI.x", 0.9, 0.8, 0.95, 10, True, gating=False)
    assert not Verdict(label="none", criteria=[reported]).passed
