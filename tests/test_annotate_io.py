"""The cogwm.labels/1 reader and writer: round trip, refused tags and lines, lexicon extensions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

import pytest

from cogwm.annotate.io import SCHEMA, dump_line, read_labelled, write_labelled
from cogwm.errors import InputError
from cogwm.schema import Dialogue, Emotion, Role, StateItem, Utterance, lexicon
from cogwm.schema.partial import (
    Constraint,
    EmotionField,
    FieldKind,
    ItemsField,
    LabelledDialogue,
    Origin,
    PartialState,
    Source,
)

HUMAN = Origin(source=Source.HUMAN, rule="test.E1", exact=True)


@pytest.fixture(autouse=True)
def _isolated_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexicon, "_ACTIVE", ContextVar("lexicon", default=lexicon.DEFAULT_LEXICON))


def _dialogue(dialogue_id: str = "t:1") -> Dialogue:
    return Dialogue(
        id=dialogue_id,
        corpus="test",
        utterances=[
            Utterance(index=0, speaker="a", role=Role.AGENT, text="Hi."),
            Utterance(index=1, speaker="u", role=Role.USER, text="I am scared."),
            Utterance(index=2, speaker="a", role=Role.AGENT, text="Why?"),
            Utterance(index=3, speaker="u", role=Role.USER, text="Exams."),
        ],
    )


def _item() -> LabelledDialogue:
    return LabelledDialogue(
        dialogue=_dialogue(),
        states={
            1: PartialState(
                emotion=EmotionField(
                    kind=FieldKind.VALUE, value=Emotion(label="fear", intensity=3), origin=HUMAN
                ),
                beliefs=ItemsField(kind=FieldKind.EMPTY, origin=HUMAN),
                desires=ItemsField(
                    kind=FieldKind.VALUE, items=[StateItem(text="pass", score=None)], origin=HUMAN
                ),
            ),
            3: PartialState(
                constraints=[
                    Constraint(target="intention", relation="direction", value=1.0, origin=HUMAN)
                ]
            ),
        },
    )


def test_round_trip_keeps_unknown_empty_and_value_apart(tmp_path: Path) -> None:
    # Catches a writer/reader that collapses empty into unknown or loses integer turn keys.
    path = tmp_path / "labels.jsonl"
    assert write_labelled(path, [_item(), _item()]) == 2
    items = list(read_labelled(path))
    assert items == [_item(), _item()]
    state = items[0].states[1]
    assert state.kind("beliefs") is FieldKind.EMPTY
    assert state.kind("intentions") is FieldKind.UNKNOWN
    assert state.kind("desires") is FieldKind.VALUE
    assert set(items[0].states) == {1, 3}


def test_every_line_carries_the_schema_tag(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    write_labelled(path, [_item()])
    line = json.loads(path.read_text().splitlines()[0])
    assert line["schema"] == SCHEMA
    assert "emotions" not in line  # fear is in the paper's lexicon


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("schema"), 'expected "schema"'),
        (lambda d: d.update(schema="cogwm.samples/1"), "cogwm.samples/1"),
        (lambda d: d["states"]["1"]["emotion"].update(kind="maybe"), "states.1.emotion.kind"),
    ],
)
def test_bad_line_is_named_by_file_and_line(tmp_path: Path, mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    # Catches a reader that skips a bad line or reports it without its place.
    good = dump_line(_item())
    bad = json.loads(good)
    mutate(bad)
    path = tmp_path / "labels.jsonl"
    path.write_text(good + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=rf"labels.jsonl: line 3: .*{message}"):
        list(read_labelled(path))


def test_not_json_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text("{not json\n")
    with pytest.raises(InputError, match="line 1: not valid JSON"):
        list(read_labelled(path))


def test_missing_file_fails_at_once(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_labelled(tmp_path / "absent.jsonl")


def test_extension_labels_travel_with_the_line(tmp_path: Path) -> None:
    # Catches a file that only the process that registered 'happiness' could read back.
    lexicon.register_emotion("happiness", 1.5)
    item = LabelledDialogue(
        dialogue=_dialogue(),
        states={
            1: PartialState(
                emotion=EmotionField(
                    kind=FieldKind.VALUE,
                    value=Emotion(label="happiness", intensity=2),
                    origin=HUMAN,
                )
            )
        },
    )
    path = tmp_path / "labels.jsonl"
    write_labelled(path, [item])
    assert json.loads(path.read_text())["emotions"] == {"happiness": 1.5}
    lexicon._ACTIVE.set(lexicon.DEFAULT_LEXICON)  # a fresh reader that never registered the label
    assert list(read_labelled(path)) == [item]
    assert lexicon.valence("happiness") == 1.5


def test_extension_with_another_valence_is_refused(tmp_path: Path) -> None:
    lexicon.register_emotion("happiness", 1.5)
    line = json.loads(dump_line(_item()))
    line["emotions"] = {"happiness": -1.0}
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(InputError, match=r"line 1: .*already has valence"):
        list(read_labelled(path))


def test_write_to_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        write_labelled(tmp_path / "no" / "labels.jsonl", [_item()])


def test_failed_write_leaves_no_file(tmp_path: Path) -> None:
    # Catches a writer that leaves a truncated file under the final name.
    def items() -> Iterator[LabelledDialogue]:
        yield _item()
        raise RuntimeError("boom")

    path = tmp_path / "labels.jsonl"
    with pytest.raises(RuntimeError):
        write_labelled(path, items())
    assert list(tmp_path.iterdir()) == []
