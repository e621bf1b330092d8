"""One estimate type: every reported statistic with an interval is a ``stats.estimate.Estimate``
(or extends it), and each record reads back from its own JSON unchanged, keeping its keys."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pkgutil
from typing import Any

import pytest

import cogwm
from cogwm.annotate.quality import Figure as QualityFigure
from cogwm.metrics.aggregate import ReportedMean
from cogwm.metrics.turn import MetricSummary
from cogwm.stats.bootstrap import PairedDifference
from cogwm.stats.estimate import Estimate
from cogwm.stats.means import DifferenceEstimate, MeanEstimate, mean_estimate
from cogwm.tom.stats import RateRow
from cogwm.validate.card import Baselines, Check, Figure, Gate
from cogwm.validate.compare import CardDifference
from cogwm.validate.release import Criterion


def _declared_fields(cls: type) -> set[str]:
    fields = set(getattr(cls, "model_fields", None) or {})
    fields |= set(getattr(cls, "_fields", ()) or ())
    if dataclasses.is_dataclass(cls):
        fields |= {f.name for f in dataclasses.fields(cls)}
    return fields | set(getattr(cls, "__annotations__", {}))


def _estimate_like_classes() -> dict[str, type]:
    """Every class defined in cogwm that is named an estimate or a figure, or declares an
    interval (``ci_low`` and ``ci_high``, or ``ci``)."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(cogwm.__path__, "cogwm."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, cls in vars(module).items():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            fields = _declared_fields(cls)
            named = name.endswith(("Estimate", "Figure"))
            if named or {"ci_low", "ci_high"} <= fields or "ci" in fields:
                found[f"{module.__name__}.{name}"] = cls
    return found


def test_every_estimate_and_figure_type_is_the_one_estimate() -> None:
    found = _estimate_like_classes()
    # the walk sees the records it must (a walk that finds nothing proves nothing)
    assert {"cogwm.validate.card.Figure", "cogwm.annotate.quality.Figure"} <= set(found)
    assert {"cogwm.stats.means.MeanEstimate", "cogwm.tom.stats.Rate"} <= set(found)
    others = {path for path, cls in found.items() if not issubclass(cls, Estimate)}
    assert others == set(), "estimate types that are not cogwm.stats.estimate.Estimate"
    named = [path for path in found if path.rsplit(".", 1)[1] == "Estimate"]
    assert named == ["cogwm.stats.estimate.Estimate"], "one name, one thing"


def _round_trip(record: Estimate) -> dict[str, Any]:
    """The record's JSON as a dict, after checking that reading it back gives the record."""
    text = record.model_dump_json()
    assert type(record).model_validate_json(text) == record
    data: dict[str, Any] = json.loads(text)
    return data


def test_undefined_bounds_stay_none_through_json() -> None:
    estimate = Estimate(value=0.5, ci_low=None, ci_high=None, n=1)
    data = _round_trip(estimate)
    assert data == {
        "value": 0.5, "se": None, "ci_low": None, "ci_high": None, "n": 1, "confidence": 0.95,
    }  # fmt: skip
    assert estimate.ci is None
    undefined = Estimate(value=None, n=0)
    assert _round_trip(undefined)["value"] is None
    bounded = Estimate(value=0.5, ci_low=0.25, ci_high=0.75, n=8)
    assert Estimate.model_validate_json(bounded.model_dump_json()).ci == (0.25, 0.75)


def test_records_keep_their_keys_and_order() -> None:
    mean = mean_estimate([1.0, 2.0, 4.0], n_resamples=50)
    assert list(_round_trip(mean)) == ["mean", "se", "ci_low", "ci_high", "n", "confidence"]
    reported = MetricSummary.of("ROUGE-L", mean, misses=1, applicable=4)
    data = _round_trip(reported)
    assert list(data) == ["mean", "se", "ci_low", "ci_high", "n", "name", "misses", "miss_rate"]
    assert data["mean"] == mean.mean and reported.mean == mean.mean
    assert _round_trip(ReportedMean.of(None)) == {
        "mean": None, "se": None, "ci_low": None, "ci_high": None, "n": 0,
    }  # fmt: skip
    figure = Figure(part="dailydialog", metric="emotion_accuracy", mode="understand", value=None,
                    n=0, baselines=Baselines(majority=0.4),
                    gate=Gate(baseline="lexicon", value=None, n=0, passed=None))  # fmt: skip
    data = _round_trip(figure)
    assert list(data)[:8] == ["part", "metric", "mode", "value", "ci_low", "ci_high", "n",
                              "n_failed"]  # fmt: skip
    assert "se" not in data and "confidence" not in data
    assert list(data["gate"]) == ["baseline", "difference", "ci_low", "ci_high", "n", "passed"]


@pytest.mark.parametrize(
    "record",
    [
        DifferenceEstimate(
            agent_a="a", agent_b="b", value=-0.5, se=0.1, ci_low=-0.7, ci_high=None, n=3
        ),
        PairedDifference(value=None, n=4, n_groups=2),
        CardDifference(
            key="dd.x[understand]", column="b", value=0.1, ci_low=None, ci_high=0.2, n=5
        ),
        Check(
            name="counterfactual",
            task="ESC",
            metric="valence_ordering",
            value=0.8,
            ci_low=None,
            ci_high=None,
            n=12,
            passed=None,
            rule="lower bound above 0.5",
        ),
        RateRow(
            n=3,
            correct=2,
            unparsed=0,
            value=2 / 3,
            ci_low=0.2,
            ci_high=0.94,
            baseline=0.25,
            model="fake:schema",
            domain="ESC",
        ),
        Criterion("known_groups.MI.x", 0.9, None, 0.95, 10, True, gating=False),
    ],
    ids=lambda r: type(r).__name__,
)
def test_every_record_reads_back_from_its_json(record: Estimate) -> None:
    data = _round_trip(record)
    for name, key in type(record).json_names.items():
        assert key in data and name not in data  # written under its own key
    assert record.value == type(record).model_validate(data).value


def test_json_keys_name_fields_when_built_or_copied() -> None:
    """A record built or copied with its JSON key (``rate``, ``mean``) sets ``value``."""
    row = RateRow(n=2, correct=1, unparsed=0, rate=0.5, ci_low=0.1, ci_high=0.9, baseline=0.5,
                  model="m", domain="ESC")  # fmt: skip
    assert row.value == row.rate == 0.5
    assert row.model_copy(update={"rate": 0.75}).value == 0.75
    assert MeanEstimate(mean=1.5, n=2).mean == 1.5


def test_quality_figure_keeps_its_positional_form_and_dict() -> None:
    figure = QualityFigure("emotion kappa", "esconv", 0.5, 10, (0.1, 0.9), 1.0, {"majority": 0.4})
    assert (figure.ci_low, figure.ci_high) == (0.1, 0.9) and figure.ci == (0.1, 0.9)
    data = figure.as_dict()
    assert list(data) == ["name", "corpus", "value", "n", "ci", "valid_rate", "baselines", "note"]
    assert data["ci"] == [0.1, 0.9]
    assert QualityFigure("x", "c", None, 0, None, None).as_dict()["ci"] is None
    assert QualityFigure.model_validate_json(figure.model_dump_json()) == figure
