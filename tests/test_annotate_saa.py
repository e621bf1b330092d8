"""Summarize-and-Allocate: each validation rule, the repair call, failures kept with reasons."""

from __future__ import annotations

import asyncio
import json

import pytest

from cogwm.annotate.outputs import (
    Allocation,
    EmotionOut,
    allocation_model,
    evidence_choices,
    score_choices,
    summary_model,
)
from cogwm.annotate.saa import Annotator, build_profile, global_items
from cogwm.annotate.validate import check_allocation, check_summary, evidence_occurs
from cogwm.models import load, register_fake, unregister_fake
from cogwm.models.structured import schema_for
from cogwm.models.types import Message
from cogwm.schema import BigFive, Dialogue, Role, Utterance
from cogwm.schema.state import Dimension
from cogwm.tasks import get

TASK = get("ESC")
TURN = "I lost my job last week.  I feel   so ashamed! I do not know what to do."
IDS = {Dimension.BELIEF: ["b1"], Dimension.DESIRE: ["d1"], Dimension.INTENTION: []}


def _allocation(**changes: object) -> Allocation:
    data: dict[str, object] = {
        "emotion": {"label": "shame", "intensity": 2, "evidence": "I feel so ashamed!"},
        "beliefs": [{"global_ref": "b1", "score": 0.5, "evidence": "i lost my job last week."}],
        "desires": [{"global_ref": "d1", "score": 1.0, "evidence": '"I do not know what to do."'}],
        "intentions": [],
    }
    data.update(changes)
    return Allocation.model_validate(data)


def _rules(allocation: Allocation) -> list[str]:
    return [p.rule for p in check_allocation(allocation, TASK, TURN, IDS)]


def test_a_good_allocation_passes_with_case_whitespace_and_quotes_normalised() -> None:
    assert _rules(_allocation()) == []


def test_lexicon_rule() -> None:
    bad = _allocation(emotion={"label": "joy", "intensity": 2, "evidence": ""})
    assert _rules(bad) == ["lexicon"]


def test_score_range_rule_uses_the_task_range() -> None:
    bad = _allocation(beliefs=[{"global_ref": "b1", "score": 2.5, "evidence": "I feel so"}])
    assert _rules(bad) == ["score_range"]
    summary = summary_model(TASK).model_validate(
        {"beliefs": [{"text": "x", "score": -1}], "desires": [], "intentions": []}
    )
    assert [p.rule for p in check_summary(summary, TASK)] == ["score_range"]


def test_evidence_rule_for_items_and_emotion() -> None:
    bad = _allocation(desires=[{"global_ref": "d1", "score": 1, "evidence": "I want a new job"}])
    assert _rules(bad) == ["evidence"]
    empty = _allocation(desires=[{"global_ref": "d1", "score": 1, "evidence": ""}])
    assert _rules(empty) == ["evidence"]  # a B/D/I item needs a quote
    emotion = _allocation(emotion={"label": "shame", "intensity": 1, "evidence": "not said"})
    assert _rules(emotion) == ["evidence"]
    assert evidence_occurs("  I FEEL so\nashamed ", TURN)


def test_global_ref_rule_per_dimension() -> None:
    bad = _allocation(beliefs=[{"global_ref": "d1", "score": 1, "evidence": "I feel so"}])
    assert _rules(bad) == ["global_ref"]
    none = _allocation(intentions=[{"global_ref": "i1", "score": 1, "evidence": "I feel so"}])
    assert _rules(none) == ["global_ref"]


def test_schemas_offer_only_valid_choices() -> None:
    schema = json.dumps(schema_for(allocation_model(TASK, IDS, TURN)))
    assert '"b1"' in schema and '"I feel   so ashamed!"' in schema
    assert score_choices(TASK) == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert evidence_choices("One. Two? Two? Three") == ["One.", "Two?", "Three"]
    assert '"maxItems": 0' in schema  # no stage-1 intention: nothing to allocate
    assert "shame" in json.dumps(EmotionOut.model_json_schema())


def _dialogue() -> Dialogue:
    rows = [
        ("supporter", Role.AGENT, "Hello, how are you?"),
        ("seeker", Role.USER, TURN),
        ("supporter", Role.AGENT, "That sounds hard."),
        ("seeker", Role.USER, "Yes. I want to find work soon."),
    ]
    return Dialogue(
        id="t:1",
        corpus="esconv",
        task="ESC",
        utterances=[
            Utterance(index=i, speaker=s, role=r, text=t) for i, (s, r, t) in enumerate(rows)
        ],
    )


SUMMARY = json.dumps(
    {
        "beliefs": [{"text": "Losing the job is shameful", "score": 0.5}],
        "desires": [{"text": "Find work", "score": 1.5}],
        "intentions": [],
    }
)
PROFILE = json.dumps(
    {
        "communication_style": "open",
        "decision_style": "careful",
        "task_features": [{"name": "problem", "value": "job loss"}],
        "confidence": 2,
    }
)


def _alloc_reply(evidence: str, ref: str = "b1") -> str:
    return json.dumps(
        {
            "emotion": {"label": "shame", "intensity": 2, "evidence": ""},
            "beliefs": [{"global_ref": ref, "score": 0.5, "evidence": evidence}],
            "desires": [],
            "intentions": [],
        }
    )


def _annotate(name: str, replies: list[str]) -> tuple[object, list[list[Message]]]:
    seen: list[list[Message]] = []
    queue = list(replies)

    def reply(messages: list[Message]) -> str:
        seen.append(messages)
        return queue.pop(0)

    register_fake(name, reply)
    try:
        dialogue = _dialogue().model_copy(
            update={
                "profile": build_profile(
                    BigFive(
                        openness=2,
                        conscientiousness=3,
                        extraversion=4,
                        agreeableness=5,
                        neuroticism=1,
                    ),
                    None,
                )[0]
            }
        )
        annotator = Annotator(load(f"fake:{name}"), TASK)
        return asyncio.run(annotator.annotate(dialogue)), seen
    finally:
        unregister_fake(name)


def test_repair_call_carries_the_validator_message_and_a_fixed_answer_counts() -> None:
    result, seen = _annotate(
        "saa-repair",
        [
            SUMMARY,
            _alloc_reply("made up"),
            _alloc_reply("I lost my job"),
            _alloc_reply("Yes."),
            PROFILE,
        ],
    )
    assert not result.failures  # type: ignore[attr-defined]
    turns = result.turns  # type: ignore[attr-defined]
    assert [t.turn_index for t in turns] == [1, 3] and turns[0].repaired
    repair = seen[2]
    assert repair[-2].role == "assistant" and "made up" in repair[-1].content
    assert "not in the turn" in repair[-1].content
    profile = result.profile  # type: ignore[attr-defined]
    assert profile.big_five.openness == 2 and profile.communication_style == "open"
    assert result.profile_fields["big_five"] == "self_report"  # type: ignore[attr-defined]
    assert result.profile_fields["decision_style"] == "llm"  # type: ignore[attr-defined]


def test_what_still_fails_is_kept_with_its_reason_never_filled() -> None:
    result, _ = _annotate(
        "saa-fail",
        [
            SUMMARY,
            _alloc_reply("x", "b9"),
            _alloc_reply("y", "b9"),
            "not json",
            "still not",
            PROFILE,
        ],
    )
    failures = result.failures  # type: ignore[attr-defined]
    assert [(f.stage, f.turn_index, f.reason) for f in failures] == [
        ("allocation", 1, "global_ref"),
        ("allocation", 3, "schema"),
    ]
    assert "b9" in failures[0].message and failures[0].raw
    assert all(t.allocation is None for t in result.turns)  # type: ignore[attr-defined]


def test_a_failed_summary_leaves_no_items_and_is_a_failure() -> None:
    bad = json.dumps({"beliefs": [{"text": "x", "score": 7}], "desires": [], "intentions": []})
    result, _ = _annotate(
        "saa-nosum", [bad, bad, _alloc_reply_empty(), _alloc_reply_empty(), PROFILE]
    )
    assert result.summary is None  # type: ignore[attr-defined]
    assert [f.reason for f in result.failures] == ["score_range"]  # type: ignore[attr-defined]
    assert global_items(None) == {d: [] for d in IDS}


def _alloc_reply_empty() -> str:
    return json.dumps(
        {
            "emotion": {"label": "sadness", "intensity": 1, "evidence": ""},
            "beliefs": [],
            "desires": [],
            "intentions": [],
        }
    )


@pytest.mark.parametrize("given", [None, "traits"])
def test_profile_provenance(given: str | None) -> None:
    from cogwm.annotate.outputs import ProfileOut

    traits = BigFive(
        openness=1, conscientiousness=1, extraversion=1, agreeableness=1, neuroticism=1
    )
    answer = ProfileOut.model_validate(
        {
            "big_five": {
                "openness": 5,
                "conscientiousness": 5,
                "extraversion": 5,
                "agreeableness": 5,
                "neuroticism": 5,
            },
            **json.loads(PROFILE),
        }
    )
    profile, fields = build_profile(traits if given else None, answer)
    assert profile is not None and profile.big_five is not None
    assert profile.big_five.openness == (1 if given else 5)
    assert fields["big_five"] == ("self_report" if given else "llm")
    assert build_profile(None, None) == (None, {})


def test_offered_quotes_hold_no_quote_marks_backslashes_or_control_characters() -> None:
    # llama.cpp's schema-to-grammar converter mis-escapes them inside enum strings: the grammar
    # does not parse and the process crashes.
    turn = "That's a word, isn't it, \"betrayed\". Um, wow.\nA back\\slash."
    choices = evidence_choices(turn)
    assert choices == ["That's a word, isn't it,", "betrayed", "Um, wow.", "A back", "slash."]
    assert all(evidence_occurs(c, turn) for c in choices)
