"""Schema and task-spec behaviour: strictness, lexicon, unknown-vs-zero, DAILY's missing weights."""

from __future__ import annotations

import copy
import pickle
from contextvars import ContextVar

import pytest
from pydantic import ValidationError

from cogwm import tasks
from cogwm.errors import InputError
from cogwm.schema import (
    CognitiveState,
    Dialogue,
    Dimension,
    Emotion,
    Role,
    StateItem,
    TaskCapabilityError,
    Utterance,
    lexicon,
    register_emotion,
    valence,
)
from cogwm.schema.transcript import SeedSeries, derive_seed


def test_emotion_label_must_be_in_lexicon() -> None:
    assert Emotion(label="Hope", intensity=2).label == "hope"
    with pytest.raises(ValidationError):
        # Not "happiness": the DailyDialog mapping registers it process-wide when it runs.
        Emotion(label="euphoria", intensity=2)
    with pytest.raises(ValidationError):
        Emotion(label="hope", intensity=4)


def test_quantified_emotion_is_valence_times_intensity() -> None:
    # shame has valence -2.5; strong (3) -> -7.5
    assert Emotion(label="shame", intensity=3).quantified == -7.5
    assert valence("relief") == 1.5


def test_lexicon_extension_keeps_one_value_per_label(monkeypatch: pytest.MonkeyPatch) -> None:
    # The extension is process-wide: give this test its own, so "neutral" does not leak into
    # tests that expect the default twelve labels.
    monkeypatch.setattr(lexicon, "_ACTIVE", ContextVar("lexicon", default=lexicon.DEFAULT_LEXICON))
    register_emotion("neutral", 0.0)
    assert Emotion(label="neutral", intensity=1).valence == 0.0
    with pytest.raises(ValueError, match="already has valence"):
        register_emotion("hope", 1.0)


def test_an_emotion_keeps_its_valence_in_copies_and_nowhere_else() -> None:
    # Catches: the valence looked up again outside the lexicon it was read under (a lazy or
    # dropped cache, or one that copies, pickles or a containing state lose), and the kept value
    # leaking into dumps, schemas, reprs or equality as if it were a field.
    with lexicon.using_lexicon(lexicon.DEFAULT_LEXICON.extended({"boredom": -1.0})):
        bored = Emotion(label="boredom", intensity=2)
        state = CognitiveState.model_validate({"emotion": {"label": "boredom", "intensity": 1}})
    assert not lexicon.is_known("boredom")
    copies = [
        bored.model_copy(),
        bored.model_copy(update={"intensity": 3}),
        copy.deepcopy(bored),
        pickle.loads(pickle.dumps(bored)),
    ]
    assert [c.valence for c in [bored, *copies]] == [-1.0] * 5
    assert state.emotion is not None and state.emotion.valence == -1.0
    assert state.model_copy(deep=True).emotion == state.emotion
    assert bored.model_dump() == {"label": "boredom", "intensity": 2, "evidence": ""}
    assert "valence" not in bored.model_dump_json() and "valence" not in repr(bored)
    assert "valence" not in Emotion.model_json_schema()["properties"]
    hope = Emotion(label="hope", intensity=2)
    assert hope == Emotion.model_validate_json(hope.model_dump_json()) and hope.valence == 2.0


def test_records_reject_unknown_fields_and_coercion() -> None:
    with pytest.raises(ValidationError):
        StateItem(text="x", score=1.0, colour="red")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        StateItem(text="x", score="1.0")  # type: ignore[arg-type]


def test_empty_dimension_is_unknown_not_zero() -> None:
    state = CognitiveState(beliefs=[StateItem(text="a", score=1.0), StateItem(text="b", score=2.0)])
    assert state.dimension_value(Dimension.BELIEF) == 1.5
    assert state.dimension_value(Dimension.DESIRE) is None
    assert state.has_bdi()
    assert not CognitiveState().has_bdi()


def test_turns_group_consecutive_utterances_and_rounds() -> None:
    speakers = ["sys", "usr", "usr", "sys", "sys", "usr"]
    dialogue = Dialogue(
        id="t:1",
        corpus="test",
        utterances=[
            Utterance(
                index=i,
                speaker=s,
                role=Role.USER if s == "usr" else Role.AGENT,
                text=f"u{i}",
            )
            for i, s in enumerate(speakers)
        ],
    )
    turns = dialogue.turns()
    assert [t.speaker for t in turns] == ["sys", "usr", "sys", "usr"]
    assert turns[1].text == "u1 u2"
    assert len(dialogue.user_turns()) == 2
    assert dialogue.rounds() == 2


def test_task_registry_and_weights() -> None:
    esc = tasks.get("esc")
    weights = esc.require_weights()
    assert weights.emotion == pytest.approx(0.5)
    assert weights.belief == pytest.approx(1 / 6)
    pd = tasks.get("PD").require_weights()
    assert (pd.emotion, pd.intention) == pytest.approx((0.1, 0.3))
    assert tasks.get("MI").require_weights() == tasks.get("PD").require_weights()
    assert tasks.get("CR").require_good_outcome() == "the user accepted a recommendation"


def test_daily_has_neither_weights_nor_good_outcome() -> None:
    daily = tasks.get("DAILY")
    with pytest.raises(TaskCapabilityError, match="no composite weights"):
        daily.require_weights()
    with pytest.raises(TaskCapabilityError, match="no GoodOutcome"):
        daily.require_good_outcome()


def test_unknown_task_names_choices() -> None:
    with pytest.raises(InputError, match="known tasks: CR, DAILY, ESC, MI, PD"):
        tasks.get("XYZ")


def test_dialogue_round_trips_through_json() -> None:
    dialogue = Dialogue(
        id="t:2",
        corpus="test",
        utterances=[Utterance(index=0, speaker="a", role=Role.USER, text="hi")],
    )
    assert Dialogue.model_validate_json(dialogue.model_dump_json()) == dialogue


def test_structured_schema_follows_a_lexicon_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    from cogwm.models.structured import schema_for

    monkeypatch.setattr(lexicon, "_ACTIVE", ContextVar("lexicon", default=lexicon.DEFAULT_LEXICON))
    before = schema_for(Emotion)["properties"]["label"]["enum"]
    assert "calm" not in before
    register_emotion("calm", 0.5)
    assert "calm" in schema_for(Emotion)["properties"]["label"]["enum"]


def test_a_seed_series_gives_derive_seeds_numbers() -> None:
    # Catches: a series whose prefix is hashed differently from derive_seed's text (a missing
    # separator, another encoding), which would change every seeded conversation.
    for prefix in [(7, "agent"), (2**31 - 1, "user"), ("ESC", "sc-é", "user", 2), (0,)]:
        series = SeedSeries(*prefix)
        for part in [1, 3, 20, "judge", "ü"]:
            assert series(part) == derive_seed(*prefix, part)
    with pytest.raises(ValueError, match="needs a prefix"):
        SeedSeries()
