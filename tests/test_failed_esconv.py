"""FailedESConv: the loader, its per-turn feedback, and its human-label states."""

from __future__ import annotations

import json
from collections import Counter
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import pytest

from cogwm.annotate.human import labelled_dialogues
from cogwm.corpora.failed_esconv import loader as failed_esconv
from cogwm.errors import InputError
from cogwm.schema import Role, lexicon
from cogwm.schema.labels import ESConvUtteranceLabels


@pytest.fixture(autouse=True)
def _isolated_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexicon, "_ACTIVE", ContextVar("lexicon", default=lexicon.DEFAULT_LEXICON))


def _record(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "experience_type": "Current Experience",
        "emotion_type": "anxiety",
        "problem_type": "job crisis",
        "situation": "Work is awful.",
        "survey_score": {
            "seeker": {"initial_emotion_intensity": "3", "final_emotion_intensity": "4"},
            "supporter": {},
        },
        "dialog": [
            {"speaker": "speaker", "annotation": {}, "content": "Hi\n"},
            {"speaker": "listener", "annotation": {"strategy": "Question"}, "content": "Why?"},
            {"speaker": "speaker", "annotation": {"feedback": "2"}, "content": "My boss.\n"},
            {"speaker": "speaker", "annotation": {}, "content": "Bye\n"},
        ],
    }
    record.update(changes)
    return record


def _write(root: Path, records: list[dict[str, Any]]) -> Path:
    folder = root / "esconv"
    folder.mkdir()
    (folder / failed_esconv.FILE).write_text(json.dumps(records))
    return root


def test_loader_keeps_feedback_on_seeker_rows(tmp_path: Path) -> None:
    # Catches: the seeker and supporter swapped ('speaker' is the seeker) or feedback lost.
    (dialogue,) = failed_esconv.load(_write(tmp_path, [_record()]) / "esconv")
    assert dialogue.id == "failed_esconv:0" and dialogue.corpus == "failed_esconv"
    assert [u.role for u in dialogue.utterances][:2] == [Role.USER, Role.AGENT]
    assert failed_esconv.feedback_ratings(dialogue) == [(2, 2)]
    assert dialogue.utterances[0].text == "Hi"
    labels = dialogue.utterances[1].labels
    assert isinstance(labels, ESConvUtteranceLabels) and labels.strategy == "Question"


def test_feedback_on_a_supporter_row_is_an_error(tmp_path: Path) -> None:
    bad = _record()
    bad["dialog"][1]["annotation"] = {"feedback": "3"}
    with pytest.raises(InputError, match=r"dialogue 0, dialog\[1\].*no feedback"):
        failed_esconv.load(_write(tmp_path, [bad]) / "esconv")


def test_feedback_out_of_range_is_an_error(tmp_path: Path) -> None:
    bad = _record()
    bad["dialog"][2]["annotation"] = {"feedback": "7"}
    with pytest.raises(InputError, match="from 1 to 5"):
        failed_esconv.load(_write(tmp_path, [bad]) / "esconv")


def test_states_follow_the_esconv_table_and_feedback_is_no_state(tmp_path: Path) -> None:
    # Catches: the feedback turned into an emotion, or the worse final intensity dropped.
    root = _write(tmp_path, [_record()])
    (item,) = labelled_dialogues("failed_esconv", root)
    first, last = item.states[0], item.states[2]
    assert first.emotion.value is not None and last.emotion.value is not None
    assert (first.emotion.value.label, first.emotion.value.intensity) == ("anxiety", 2)
    assert (last.emotion.value.label, last.emotion.value.intensity) == ("anxiety", 3)
    assert set(item.states) == {0, 2}


def test_real_counts(real_data_dir: Path) -> None:
    # Raw json (FailedESConv.json): 196 dialogues, 5,230 utterances (2,853 'speaker' rows);
    # 987 feedback ratings in 193 dialogues: 1:172, 2:174, 3:264, 4:209, 5:168 (LABELS.md);
    # 142 dialogues have a final intensity, two of them a single seeker turn.
    dialogues = failed_esconv.load(real_data_dir / "esconv")
    assert len(dialogues) == 196
    assert sum(len(d.utterances) for d in dialogues) == 5_230
    assert sum(1 for d in dialogues for u in d.utterances if u.role is Role.USER) == 2_853
    ratings = [r for d in dialogues for _, r in failed_esconv.feedback_ratings(d)]
    assert Counter(ratings) == {1: 172, 2: 174, 3: 264, 4: 209, 5: 168}
    assert sum(1 for d in dialogues if failed_esconv.feedback_ratings(d)) == 193
    items = list(labelled_dialogues("failed_esconv", real_data_dir))
    finals = sum(
        1
        for i in items
        for s in i.states.values()
        if s.emotion.origin is not None and s.emotion.origin.rule == "esconv.E12"
    )
    assert finals == 142 - 2
