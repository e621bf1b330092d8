"""DialToM item records: validation at load time, errors that name the record, history views."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from cogwm.errors import InputError
from cogwm.tom.items import (
    NONE_OF_THE_ABOVE,
    Task,
    Variant,
    group_turns,
    read_items,
    write_items,
)
from helpers_tom import mc_item


def test_valid_item_round_trips(tmp_path: Path) -> None:
    items = [mc_item("a"), mc_item("b", task=Task.PROSPECTIVE)]
    path = tmp_path / "items.jsonl"
    assert write_items(path, items) == 2
    assert read_items(path) == items


@pytest.mark.parametrize(
    ("options", "gold", "message"),
    [
        (["yes", "no"], "perhaps", "is not among the options"),
        (["yes", "no", "Yes "], "yes", "duplicate options"),  # case and spacing ignored
        (["yes", "no", "  "], "yes", "an option is empty"),
        (["yes"], "yes", "at least 2 options"),
        ([NONE_OF_THE_ABOVE, "yes", "no"], "yes", "must be the last option"),
    ],
)
def test_bad_options_are_rejected(options: list[str], gold: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        mc_item(options=options, gold=gold)


def test_counterfactual_gold_must_be_none_of_the_above() -> None:
    with pytest.raises(ValidationError, match="counterfactual"):
        mc_item(
            task=Task.PROSPECTIVE,
            variant=Variant.COUNTERFACTUAL,
            options=["yes", "no", NONE_OF_THE_ABOVE],
            gold="yes",
        )


def test_prospective_needs_a_profile() -> None:
    with pytest.raises(ValidationError, match="profile"):
        mc_item(task=Task.PROSPECTIVE, profile="  ")


def test_open_items_have_references_not_options() -> None:
    item = mc_item(variant=Variant.OPEN, options=[], references=["ref"], gold="ref")
    assert item.n_options == 0
    with pytest.raises(ValidationError, match="no options"):
        mc_item(variant=Variant.OPEN, references=["ref"])
    with pytest.raises(ValidationError, match="references"):
        mc_item(variant=Variant.OPEN, options=[], references=[], gold="ref")


def test_load_error_names_file_line_and_item(tmp_path: Path) -> None:
    good = mc_item("good").model_dump_json()
    bad = json.loads(mc_item("broken").model_dump_json())
    bad["gold"] = "not an option"
    path = tmp_path / "items.jsonl"
    path.write_text(good + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError) as caught:
        read_items(path)
    message = str(caught.value)
    assert f"{path}:3" in message and "'broken'" in message and "not among the options" in message


def test_load_error_on_duplicate_option_names_the_record(tmp_path: Path) -> None:
    bad = json.loads(mc_item("dup").model_dump_json())
    bad["options"] = ["yes", "YES", "no"]
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=r"items.jsonl:1: item 'dup': .*duplicate options"):
        read_items(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not a JSON object"),
        ('{"id": "z"}', "item 'z'"),
        ('["a list"]', "<not an object>"),
    ],
)
def test_malformed_lines(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(text + "\n")
    with pytest.raises(InputError, match=message):
        read_items(path)


def test_duplicate_ids_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    write_items(path, [mc_item("same"), mc_item("same")])
    with pytest.raises(InputError, match=":2: item 'same': duplicate item id"):
        read_items(path)
    with pytest.raises(InputError, match="does not exist"):
        read_items(tmp_path / "missing.jsonl")


def test_shown_history_counts_turns_not_lines() -> None:
    # context: Counselor | Client, Client | Counselor  -> 3 turns
    item = mc_item(task=Task.PROSPECTIVE)
    assert len(group_turns(item.context)) == 3
    assert item.shown_history() == []
    two = item.model_copy(update={"history_turns": 2})
    assert [line.text for line in two.shown_history()] == ["Fine.", "Really fine.", "Good."]
    retro = mc_item()
    assert retro.shown_history() == retro.context
