"""Annotation quality: failed outputs are misses, the sheet's figures, and the whole pipeline on
the fake backend (annotate -> export -> samples -> quality-export -> quality)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cogwm.annotate.quality import (
    FAILED,
    SHEET_COLUMNS,
    _ranked_with_misses,
    _Turn,
    against_sheet,
    direction_figures,
    emotion_figures,
)
from cogwm.cli.annotate import app
from cogwm.cli.main import _register
from cogwm.cli.main import app as main_app
from cogwm.schema.lexicon import valence_table
from cogwm.schema.partial import Constraint, EmotionField, FieldKind, Origin, PartialState, Source
from cogwm.schema.state import Emotion
from cogwm.simulator.samples import read_samples
from cogwm.stats.bootstrap import bootstrap_ci_of_groups
from cogwm.stats.pairs import auroc_of, f1_of

HUMAN = Origin(source=Source.HUMAN)
LLM = Origin(source=Source.LLM)


def _emotion(label: str, origin: Origin) -> PartialState:
    value = Emotion(label=label, intensity=2)
    return PartialState(emotion=EmotionField(kind=FieldKind.VALUE, value=value, origin=origin))


def _direction(sign: int) -> PartialState:
    direction = Constraint(target="intention", relation="direction", value=sign, origin=HUMAN)
    return PartialState(constraints=[direction])


def test_a_failed_output_is_a_wrong_label_not_a_skipped_one() -> None:
    turns = [
        _Turn("d1", _emotion("anger", LLM), _emotion("anger", HUMAN)),
        _Turn("d1", _emotion("fear", LLM), _emotion("fear", HUMAN)),
        _Turn("d2", None, _emotion("fear", HUMAN)),
        _Turn("d2", _emotion("anger", LLM), _emotion("anger", HUMAN)),
    ]
    accuracy = next(f for f in emotion_figures("x", turns) if f.name == "emotion accuracy")
    assert accuracy.value == pytest.approx(0.75) and accuracy.n == 4
    assert accuracy.valid_rate == pytest.approx(0.75)
    assert accuracy.baselines["majority"] == pytest.approx(0.5)
    offered = len(valence_table())
    assert accuracy.baselines["random"] == pytest.approx(1 / offered)  # expected, not one draw


def test_intensity_rho_only_where_the_corpus_grades_intensity() -> None:
    def ungraded(label: str) -> PartialState:
        state = _emotion(label, HUMAN)
        state.emotion.intensity_known = False  # DailyDialog: the label only
        return state

    turns = [
        _Turn(f"d{i}", _emotion(label, LLM), ungraded(label))
        for i, label in enumerate(["anger", "fear", "sadness", "anger"])
    ]
    names = [f.name for f in emotion_figures("dailydialog", turns)]
    assert "emotion kappa" in names and "intensity rho" not in names


def test_auroc_random_baseline_is_chance_with_few_negatives() -> None:
    positive = _Turn("d1", None, _direction(+1))
    negative = _Turn("d2", None, _direction(-1))
    figure = direction_figures("annomi", [positive] * 20 + [negative] * 2)[0]
    assert figure.baselines == {"majority": 0.5, "random": 0.5}


def test_auroc_ranks_misses_worst_for_their_class() -> None:
    pairs = [(True, 2.0), (True, None), (False, 0.0), (False, None)]
    ranked = _ranked_with_misses(pairs)
    assert auroc_of(ranked) == pytest.approx(0.25)  # skipping the misses would give 1.0
    assert auroc_of([(True, 1.0)]) is None


def test_f1_and_bootstrap() -> None:
    assert f1_of([(True, True), (True, False), (False, True), (False, False)]) == 0.5
    assert f1_of([(False, False)]) is None
    groups = [[1.0, 1.0], [0.0], [1.0]]
    ci = bootstrap_ci_of_groups(groups, lambda xs: sum(xs) / len(xs), resamples=1000, seed=0)
    assert ci is not None and 0.0 <= ci[0] <= ci[1] <= 1.0
    assert bootstrap_ci_of_groups([[1.0]], lambda xs: 1.0, resamples=1000, seed=0) is None


def _row(**values: str) -> dict[str, str]:
    return {c: values.get(c, "") for c in SHEET_COLUMNS}


def test_sheet_figures() -> None:
    rows = [
        _row(dialogue_id="a", kind="global", llm_score="1", human_ok="1", human_score="1"),
        _row(dialogue_id="a", kind="global", llm_score="2", human_ok="0"),
        _row(dialogue_id="a", kind="missed", text="wants a job", human_ok="1"),
        _row(dialogue_id="a", kind="allocation", llm_label="1", human_label="1"),
        _row(dialogue_id="a", kind="allocation", llm_label=FAILED, human_label="1"),
        _row(dialogue_id="a", kind="emotion", llm_label="fear", llm_score="2", human_label="Fear"),
        _row(dialogue_id="b", kind="emotion", llm_label=FAILED, human_label="anger"),
        _row(dialogue_id="b", kind="allocation", llm_label="0", human_label=""),  # not judged
    ]
    figures = {f.name: f for f in against_sheet(rows)}
    assert figures["global B/D/I precision"].value == 0.5
    assert figures["global B/D/I recall"].value == 0.5  # 1 found, 1 added by the judge
    f1 = figures["allocation F1"]
    assert f1.value == pytest.approx(2 / 3) and f1.n == 2 and f1.valid_rate == 0.5
    kappa = figures["emotion kappa"]
    assert kappa.n == 2 and kappa.valid_rate == 0.5


def test_pipeline_on_the_fake_backend(tmp_path: Path, fixtures_dir: Path) -> None:
    runner = CliRunner()
    db = tmp_path / "a.sqlite"
    for corpus in ("dailydialog", "esconv", "persuasionforgood"):
        resume = ("--resume",) if db.exists() else ()  # --resume of no store is refused
        result = runner.invoke(
            app,
            [
                *("run", corpus, "--model", "fake:schema", "--db", str(db), *resume),
                *("--data-dir", str(fixtures_dir), "--no-progress", "--extensions"),
            ],
        )
        assert result.exit_code == 0, result.output
    out = tmp_path / "a.jsonl"
    assert runner.invoke(app, ["export", "--db", str(db), "--out", str(out)]).exit_code == 0
    assert out.read_text().count("\n") >= 3
    samples_dir = tmp_path / "samples"
    _register()
    built = runner.invoke(
        main_app, ["samples", "build", "--out", str(samples_dir), "--annotations", str(out)]
    )
    assert built.exit_code == 0, built.output
    samples = [
        s
        for split in ("train", "val", "test")
        for s in read_samples(samples_dir / f"{split}.jsonl")
    ]
    assert {s.corpus for s in samples} == {"dailydialog", "esconv", "persuasionforgood"}
    assert any(s.provenance["emotion"] == "llm" for s in samples)

    sheet = tmp_path / "sheet.csv"
    assert (
        runner.invoke(app, ["quality-export", "--db", str(db), "--out", str(sheet)]).exit_code == 0
    )
    with sheet.open() as handle:
        rows = list(csv.DictReader(handle))
    kinds = {r["kind"] for r in rows}
    assert {"global", "emotion", "allocation"} <= kinds
    # A judge who agrees with everything: precision, recall and F1 are 1.
    for row in rows:
        if row["kind"] == "global":
            row.update(human_ok="1", human_score=row["llm_score"])
        else:
            row.update(human_label=row["llm_label"], human_score=row["llm_score"])
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(SHEET_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    result = runner.invoke(
        app,
        [
            *("quality", "--db", str(db), "--human", str(sheet)),
            *("--data-dir", str(fixtures_dir), "--json"),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    by_name = {(f["corpus"], f["name"]): f for f in report["figures"]}
    assert by_name[("sheet", "global B/D/I precision")]["value"] == 1.0
    assert by_name[("sheet", "global B/D/I recall")]["value"] == 1.0
    assert by_name[("sheet", "allocation F1")]["value"] == 1.0
    kappa = by_name[("dailydialog", "emotion kappa")]
    assert kappa["n"] > 0 and kappa["valid_rate"] == 1.0 and "majority" in kappa["baselines"]
    assert ("persuasionforgood", "intention AUROC") in by_name
    assert report["valid_rate"] == 1.0 and report["dialogues"] >= 3


def test_bounds_and_scores_put_a_dimension_high_or_low() -> None:
    from cogwm.annotate.quality import human_class
    from cogwm.schema.partial import Constraint
    from cogwm.schema.state import Dimension

    def bound(relation: str, value: float) -> PartialState:
        constraint = Constraint(
            target="intention",
            relation=relation,  # type: ignore[arg-type]
            value=value,
            origin=HUMAN,
        )
        return PartialState(constraints=[constraint])

    assert human_class(bound("at_least", 1.5), Dimension.INTENTION) is True
    assert human_class(bound("at_most", 0.5), Dimension.INTENTION) is False
    assert human_class(bound("at_least", 1.5), Dimension.DESIRE) is None
    assert human_class(PartialState(), Dimension.INTENTION) is None
