"""Judge metrics: which turns each metric covers, versioned prompts, parse failures counted."""

from __future__ import annotations

import asyncio
from typing import TypeVar

import pytest
from pydantic import BaseModel

from cogwm import models, tasks
from cogwm.metrics.judge import (
    PROMPTS,
    JudgeMetric,
    OutcomeVerdict,
    RatingVerdict,
    judge_good_outcome,
    judge_turns,
    summarize_judge,
)
from cogwm.metrics.turn import FidelitySample
from cogwm.models.types import (
    Completion,
    Message,
    Sampling,
    Structured,
    StructuredOutputError,
    Usage,
)
from cogwm.schema import CognitiveState, Emotion, StateItem, TaskCapabilityError

T = TypeVar("T", bound=BaseModel)


class ScriptedJudge:
    """Test double with the model interface's ``generate_structured``: Emo -> 4, Bel -> an
    unparsable reply, anything else -> 3; GoodOutcome -> yes when the transcript says "thanks"."""

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, list[Message]]] = []

    async def generate_structured(
        self,
        messages: list[Message],
        output_model: type[T],
        sampling: Sampling | None = None,
        *,
        sample: int = 0,
        tag: str | None = None,
    ) -> Structured[T]:
        self.calls.append((tag, messages))
        if tag == "judge:Bel":
            raise StructuredOutputError("not JSON", model="scripted", raw="I think 4")
        if output_model is OutcomeVerdict:
            value: BaseModel = OutcomeVerdict(
                reason="r", good_outcome="thanks" in messages[-1].content
            )
        else:
            value = RatingVerdict(reason="r", score=4 if tag == "judge:Emo" else 3)
        completion = Completion(
            text=value.model_dump_json(),
            usage=Usage(),
            model="scripted",
            call_id=f"c{len(self.calls)}",
        )
        return Structured[output_model](value=value, completion=completion)  # type: ignore[valid-type]


def _samples() -> list[FidelitySample]:
    return [
        FidelitySample(
            id="s1",
            gold=CognitiveState(
                emotion=Emotion(label="sadness", intensity=2),
                beliefs=[StateItem(text="job is lost", score=1.0)],
                desires=[StateItem(text="wants help", score=2.0)],
            ),
            prediction=CognitiveState(
                emotion=Emotion(label="fear", intensity=2),
                intentions=[StateItem(text="call a friend", score=1.0)],
            ),
            gold_utterance="I lost my job.",
            predicted_utterance="I am afraid about work.",
        ),
        FidelitySample(
            id="s2",
            gold=CognitiveState(emotion=Emotion(label="hope", intensity=1)),
            prediction=None,
        ),
    ]


def test_each_metric_covers_its_turns_and_failures_are_counted() -> None:
    judge = ScriptedJudge()
    scores = asyncio.run(judge_turns(judge, _samples(), task=tasks.get("ESC")))
    # s1: Emo, Bel, Des, Utt, Coh (no gold intentions -> no Int); s2: Emo only (no prediction).
    assert [(s.sample_id, s.metric.value) for s in scores] == [
        ("s1", "Emo"), ("s1", "Bel"), ("s1", "Des"), ("s1", "Utt"), ("s1", "Coh"), ("s2", "Emo"),
    ]  # fmt: skip
    bel = scores[1]
    assert bel.score is None and bel.failure is not None and "not JSON" in bel.failure
    assert all(s.prompt_id == PROMPTS[s.metric].id for s in scores)
    assert all(s.prompt_version == PROMPTS[s.metric].version for s in scores)
    summary = summarize_judge(scores, n_resamples=100)
    assert (summary["Emo"].mean, summary["Emo"].n, summary["Emo"].n_failed) == (4.0, 2, 0)
    assert (summary["Bel"].mean, summary["Bel"].n, summary["Bel"].n_failed) == (None, 0, 1)
    assert summary["Des"].mean == 3.0
    assert "Int" not in summary
    assert summary["Coh"].prompt_id == "judge.turn.coherence"


def test_prompts_carry_the_task_meaning_and_the_states() -> None:
    judge = ScriptedJudge()
    asyncio.run(judge_turns(judge, _samples()[:1], task=tasks.get("ESC")))
    prompts = {tag: msgs[-1].content for tag, msgs in judge.calls}
    assert "reality" in prompts["judge:Bel"]  # ESC belief = reality
    assert "job is lost [score 1]" in prompts["judge:Bel"]
    assert (
        "sadness (moderate)" in prompts["judge:Emo"] and "fear (moderate)" in prompts["judge:Emo"]
    )
    assert "call a friend" in prompts["judge:Coh"]


def test_good_outcome_verdicts() -> None:
    judge = ScriptedJudge()
    dialogues = [
        ("d1", [("agent", "How are you?"), ("user", "Better now, thanks.")]),
        ("d2", [("agent", "How are you?"), ("user", "Still bad.")]),
    ]
    verdicts = asyncio.run(judge_good_outcome(judge, dialogues, tasks.get("ESC")))
    assert [v.good_outcome for v in verdicts] == [True, False]
    assert verdicts[0].prompt_id == "judge.dialogue.good_outcome"
    prompt = judge.calls[0][1][-1].content
    assert "action plan" in prompt and "Seeker: Better now, thanks." in prompt


def test_good_outcome_needs_a_criterion() -> None:
    with pytest.raises(TaskCapabilityError):
        asyncio.run(judge_good_outcome(ScriptedJudge(), [], tasks.get("DAILY")))


def test_judge_through_the_fake_schema_model() -> None:
    model = models.load("fake:schema", cache=False)
    scores = asyncio.run(judge_turns(model, _samples()))
    assert len(scores) == 6
    assert all(s.score is not None and 1 <= s.score <= 5 for s in scores)
    assert all(s.call_id for s in scores)
    verdicts = asyncio.run(judge_good_outcome(model, [("d", [("user", "ok")])], tasks.get("PD")))
    assert isinstance(verdicts[0].good_outcome, bool)


def test_unparsable_replies_through_a_scripted_fake_are_failures_not_numbers() -> None:
    models.register_fake("judge-garbage", lambda messages: "no json here", cycle=True)
    try:
        model = models.load("fake:judge-garbage", cache=False)
        scores = asyncio.run(judge_turns(model, _samples()))
    finally:
        models.unregister_fake("judge-garbage")
    assert all(s.score is None and s.failure for s in scores)
    summary = summarize_judge(scores)
    assert summary["Emo"].mean is None
    assert summary["Emo"].n_failed == 2


def test_metric_names() -> None:
    assert [m.value for m in JudgeMetric] == [
        "Emo", "Bel", "Des", "Int", "Utt", "Coh", "GoodOutcome",
    ]  # fmt: skip
