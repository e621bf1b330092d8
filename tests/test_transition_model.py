"""The transition model: its TF-IDF matches scikit-learn's, it learns which way an agent turn moves
the state, and its JSON file predicts exactly what the fitted model did, run after run."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cogwm.errors import InputError
from cogwm.schema import CognitiveState, Emotion, StateItem
from cogwm.simulator.transition.features import TfidfTable, TurnView, view_of_history
from cogwm.simulator.transition.fit import Row, Settings, fit_model
from cogwm.simulator.transition.model import (
    TransitionModel,
    load_model,
    save_model,
)

KIND = ["I hear you, that sounds really hard and I am glad you told me.",
        "Thank you for sharing, you are doing great and I am here to help."]  # fmt: skip
RUDE = ["That is stupid, stop whining.", "Nobody cares about your silly problem."]
USER = ["I lost my job last week.", "My friend stopped talking to me."]


def _state(label: str, intensity: int, intention: float | None = None) -> CognitiveState:
    items = [] if intention is None else [StateItem(text="donate", score=intention)]
    return CognitiveState(emotion=Emotion(label=label, intensity=intensity), intentions=items)


def _rows(n: int = 120) -> list[Row]:
    """Turns where a kind agent line lifts the user (hope, intention up) and a rude one sinks
    them (anger, intention down), whatever state was shown before."""
    rows = []
    for i in range(n):
        kind = i % 2 == 0
        agent = (KIND if kind else RUDE)[i % 4 // 2]
        shown = _state("sadness", 1 + i % 3, 1.0) if i % 3 else None
        label, intensity = ("hope", 2) if kind else ("anger", 3)
        rows.append(
            Row(
                id=f"d{i}:1",
                corpus="esconv",
                view=TurnView(task="ESC", agent=agent, user=USER[i // 2 % 2], previous=shown),
                label=label,
                value=(2.0 * intensity) if kind else (-1.5 * intensity),
                bdi={"intention": 0.9 if kind else 0.1},
            )
        )
    return rows


def _fit(**settings: object) -> TransitionModel:
    return fit_model(_rows(), Settings(**settings), {"rows": 120})  # type: ignore[arg-type]


def test_tfidf_table_matches_scikit_learn() -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [*KIND, *RUDE, *USER, "I I I am am glad glad glad, really!"]
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=1, sublinear_tf=True)
    expected = vectorizer.fit_transform(texts).toarray()
    table = TfidfTable(
        {str(t): int(i) for t, i in vectorizer.vocabulary_.items()}, vectorizer.idf_, 2
    )
    got = np.vstack([table.vector(t) for t in texts])
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert TfidfTable.from_json(table.to_json()).vector(texts[-1]) == pytest.approx(expected[-1])


def test_view_takes_the_last_agent_turn_and_the_user_turn_before_it() -> None:
    history = [("user", "first"), ("agent", "a1"), ("user", "second"), ("agent", "a2")]
    view = view_of_history("ESC", history, None)
    assert (view.agent, view.user) == ("a2", "second")
    assert view_of_history("ESC", [("user", "...")], None) == TurnView("ESC", "", "", None)


@pytest.mark.parametrize("features", ["text", "numeric", "per-task"])
def test_a_kind_turn_lifts_the_state_a_rude_one_sinks_it(features: str) -> None:
    model = _fit(features=features, max_features=200)
    shown = _state("sadness", 2, 1.0)
    kind = model.predict(TurnView("ESC", "I am glad you told me, thank you.", USER[0], shown))
    rude = model.predict(TurnView("ESC", "Stop whining, that is stupid.", USER[0], shown))
    assert kind.emotion is not None and rude.emotion is not None
    assert kind.emotion.quantified > 0 > rude.emotion.quantified
    assert (kind.emotion.label, rude.emotion.label) == ("hope", "anger")
    low, high = kind.dimension_value("intention"), rude.dimension_value("intention")
    assert low is not None and high is not None and low > high


def test_the_json_file_predicts_as_the_fitted_model(tmp_path: Path) -> None:
    model = _fit(max_features=200)
    path = tmp_path / "t.json"
    save_model(model, path)
    loaded = load_model(path)
    for row in _rows(12):
        np.testing.assert_allclose(
            loaded.label_probabilities(loaded.features(row.view)),
            model.label_probabilities(model.features(row.view)),
            atol=1e-5,
        )
        got, fitted = loaded.predict(row.view), model.predict(row.view)
        assert got.emotion == fitted.emotion
        assert got.dimension_value("intention") == pytest.approx(
            fitted.dimension_value("intention"), abs=1e-4
        )


def test_fitting_twice_writes_the_same_file(tmp_path: Path) -> None:
    save_model(_fit(max_features=200), tmp_path / "a.json")
    save_model(_fit(max_features=200), tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_bad_model_files_are_one_line_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        load_model(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text(json.dumps({"schema": "x"}), encoding="utf-8")
    with pytest.raises(InputError, match="not a transition model"):
        load_model(tmp_path / "other.json")
    data = _fit(max_features=200).to_json()
    del data["heads"]
    (tmp_path / "broken.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match="broken"):
        load_model(tmp_path / "broken.json")


def test_bad_settings_are_input_errors() -> None:
    with pytest.raises(InputError, match="features"):
        Settings(features="words").check()
    with pytest.raises(InputError, match="positive"):
        Settings(c=0).check()


def test_the_emotion_takes_the_valence_heads_sign_and_size() -> None:
    model = _fit(max_features=200)
    assert model.labels == ["anger", "hope"]
    # The label head prefers hope, but the valence head says clearly negative: anger, strong.
    assert model._emotion(np.array([0.2, 0.8]), -4.0) == Emotion(label="anger", intensity=3)
    assert model._emotion(np.array([0.9, 0.1]), 2.2) == Emotion(label="hope", intensity=1)
    # No label without valence sign was seen: inside the band the most probable label stands.
    assert model._emotion(np.array([0.9, 0.1]), 0.1) == Emotion(label="anger", intensity=1)


def test_pleasant_weight_mixes_the_label_heads_pleasant_share_into_the_valence() -> None:
    model = _fit(max_features=200)
    x = model.features(_rows(1)[0].view)
    head = float(model.valence_head.scores(x)[0])
    probabilities = np.array([0.2, 0.8])  # anger (unpleasant) 0.2, hope (pleasant) 0.8
    assert model.valence_value(x, probabilities) == pytest.approx(head)
    mixed = replace(model, settings={**model.settings, "pleasant_weight": 0.5})
    # share 0.8 -> 3 * (2 * 0.8 - 1) = 1.8, half of it beside half of the head
    assert mixed.valence_value(x, probabilities) == pytest.approx(0.5 * head + 0.9)
    share_only = replace(model, settings={**model.settings, "pleasant_weight": 1.0})
    assert share_only.valence_value(x, np.array([0.9, 0.1])) == pytest.approx(-2.4)
    with pytest.raises(InputError, match="pleasant-weight"):
        Settings(pleasant_weight=1.5).check()


def test_pleasant_weight_is_kept_in_the_model_file(tmp_path: Path) -> None:
    model = _fit(max_features=200, pleasant_weight=0.5)
    save_model(model, tmp_path / "t.json")
    loaded = load_model(tmp_path / "t.json")
    assert loaded.settings["pleasant_weight"] == 0.5
    for row in _rows(8):
        assert loaded.predict(row.view).emotion == model.predict(row.view).emotion
