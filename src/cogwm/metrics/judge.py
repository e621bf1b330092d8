"""LLM-judge metrics: Emo, Bel, Des, Int, Utt, Coh on 1-5 per turn, and
GoodOutcome (yes/no) per finished dialogue.

Each metric is one structured-output call through the model interface
(``await model.generate_structured(messages, OutputModel, sampling)``) with a versioned prompt;
the prompt id and version travel with every result. A reply that does not validate even after
the interface's repair attempt (``StructuredOutputError``) is a **failure**: counted and reported
beside the score, never turned into a number. Other call failures (``ModelCallError`` after the
interface's retries) propagate: they are infrastructure trouble to re-run, not a verdict.

Which turns each judge metric covers: Emo where the gold has an emotion; Bel/Des/Int where the
gold dimension has items (as for B/D/I-Sim); Utt where both utterances exist; Coh where the
prediction has a state and an utterance.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Mapping, Sequence
from enum import StrEnum
from typing import NamedTuple, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from cogwm.metrics.aggregate import ReportedMean
from cogwm.metrics.turn import FidelitySample
from cogwm.models.types import Message, Sampling, Structured, StructuredOutputError
from cogwm.schema import CognitiveState, Dimension, Role, TaskSpec
from cogwm.stats.means import (
    DEFAULT_RESAMPLES,
    optional_mean,
)

T = TypeVar("T", bound=BaseModel)


class StructuredModel(Protocol):
    """What the judge needs from a model (``cogwm.models.Model`` has it)."""

    async def generate_structured(
        self,
        messages: list[Message],
        output_model: type[T],
        sampling: Sampling | None = None,
        *,
        sample: int = 0,
        tag: str | None = None,
    ) -> Structured[T]:
        """One validated structured reply; raises ``StructuredOutputError`` when unparsable."""
        ...


class JudgeMetric(StrEnum):
    """The judge metrics."""

    EMO = "Emo"
    BEL = "Bel"
    DES = "Des"
    INT = "Int"
    UTT = "Utt"
    COH = "Coh"
    GOOD_OUTCOME = "GoodOutcome"


TURN_JUDGE_METRICS: tuple[JudgeMetric, ...] = (
    JudgeMetric.EMO,
    JudgeMetric.BEL,
    JudgeMetric.DES,
    JudgeMetric.INT,
    JudgeMetric.UTT,
    JudgeMetric.COH,
)

_DIMENSION_OF = {
    JudgeMetric.BEL: Dimension.BELIEF,
    JudgeMetric.DES: Dimension.DESIRE,
    JudgeMetric.INT: Dimension.INTENTION,
}

#: Deterministic judging: temperature 0, room for a short reason and the verdict.
JUDGE_SAMPLING = Sampling(temperature=0.0, max_tokens=400)


class RatingVerdict(BaseModel):
    """The judge's reply for a 1-5 metric."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(max_length=600, description="One or two sentences of justification.")
    score: int = Field(ge=1, le=5, description="1 = not at all, 5 = completely.")


class OutcomeVerdict(BaseModel):
    """The judge's reply for GoodOutcome."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(max_length=600, description="One or two sentences of justification.")
    good_outcome: bool = Field(description="True if the success criterion is met.")


class JudgePrompt(NamedTuple):
    """A versioned prompt: change the text, bump the version."""

    id: str
    version: int
    system: str
    template: str


_RATING_SYSTEM = (
    "You are a careful evaluator of user simulators. You compare a predicted description of a "
    "user's mental state or words with the reference, and rate them on a 1-5 scale: 1 = "
    "unrelated or contradictory, 2 = mostly different, 3 = partly aligned, 4 = mostly aligned, "
    "5 = equivalent in meaning. Judge meaning, not wording. Reply with JSON only."
)

PROMPTS: dict[JudgeMetric, JudgePrompt] = {
    JudgeMetric.EMO: JudgePrompt(
        id="judge.turn.emotion",
        version=1,
        system=_RATING_SYSTEM,
        template=(
            "How well does the predicted emotion of the user match the reference emotion, "
            "considering both the emotion and its intensity (1 weak, 2 moderate, 3 strong)?\n\n"
            "Reference emotion: {gold}\nPredicted emotion: {pred}\n\n"
            'Answer as {{"reason": "...", "score": 1-5}}.'
        ),
    ),
    JudgeMetric.BEL: JudgePrompt(
        id="judge.turn.belief",
        version=1,
        system=_RATING_SYSTEM,
        template=(
            "How well do the predicted beliefs of the user (what they hold true; scored for "
            "{meaning}) match the reference beliefs, in content and in score?\n\n"
            "Reference beliefs:\n{gold}\n\nPredicted beliefs:\n{pred}\n\n"
            'Answer as {{"reason": "...", "score": 1-5}}.'
        ),
    ),
    JudgeMetric.DES: JudgePrompt(
        id="judge.turn.desire",
        version=1,
        system=_RATING_SYSTEM,
        template=(
            "How well do the predicted desires of the user (what they want; scored for "
            "{meaning}) match the reference desires, in content and in score?\n\n"
            "Reference desires:\n{gold}\n\nPredicted desires:\n{pred}\n\n"
            'Answer as {{"reason": "...", "score": 1-5}}.'
        ),
    ),
    JudgeMetric.INT: JudgePrompt(
        id="judge.turn.intention",
        version=1,
        system=_RATING_SYSTEM,
        template=(
            "How well do the predicted intentions of the user (what they plan or commit to; "
            "scored for {meaning}) match the reference intentions, in content and in score?\n\n"
            "Reference intentions:\n{gold}\n\nPredicted intentions:\n{pred}\n\n"
            'Answer as {{"reason": "...", "score": 1-5}}.'
        ),
    ),
    JudgeMetric.UTT: JudgePrompt(
        id="judge.turn.utterance",
        version=1,
        system=_RATING_SYSTEM,
        template=(
            "How well does the predicted user utterance match the reference utterance in "
            "meaning, intent and tone?\n\nReference: {gold}\nPredicted: {pred}\n\n"
            'Answer as {{"reason": "...", "score": 1-5}}.'
        ),
    ),
    JudgeMetric.COH: JudgePrompt(
        id="judge.turn.coherence",
        version=1,
        system=(
            "You are a careful evaluator of user simulators. You check whether a simulated "
            "user's stated mental state is consistent with what the same user says, on a 1-5 "
            "scale: 1 = contradictory, 3 = loosely related, 5 = fully consistent. Reply with "
            "JSON only."
        ),
        template=(
            "Is the predicted mental state consistent with the predicted utterance?\n\n"
            "Predicted state:\n{state}\n\nPredicted utterance: {utterance}\n\n"
            'Answer as {{"reason": "...", "score": 1-5}}.'
        ),
    ),
    JudgeMetric.GOOD_OUTCOME: JudgePrompt(
        id="judge.dialogue.good_outcome",
        version=1,
        system=(
            "You judge whether a finished conversation reached its goal. Base the verdict only "
            "on what the user says in the transcript. Reply with JSON only."
        ),
        template=(
            "Task: {title}. {scenario}\nThe {agent_role} talks with the {user_role}.\n"
            "Success criterion: {criterion}.\n\nTranscript:\n{transcript}\n\n"
            "Is the success criterion met by the end of the conversation?\n"
            'Answer as {{"reason": "...", "good_outcome": true or false}}.'
        ),
    ),
}


class JudgeScore(BaseModel):
    """One judge verdict on one sample: a score, or the failure that prevented one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sample_id: str
    metric: JudgeMetric
    score: int | None
    failure: str | None = None
    reason: str | None = None
    prompt_id: str
    prompt_version: int
    call_id: str | None = None


class OutcomeJudgement(BaseModel):
    """The GoodOutcome verdict on one dialogue (None with ``failure`` when unparsable)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dialogue_id: str
    good_outcome: bool | None
    failure: str | None = None
    reason: str | None = None
    prompt_id: str
    prompt_version: int
    call_id: str | None = None


class JudgeSummary(ReportedMean):
    """A judge metric over many samples: mean of the parsed scores, and the failures beside it."""

    name: str
    n_failed: int
    prompt_id: str
    prompt_version: int


# --- rendering ----------------------------------------------------------------------------------


def _emotion_text(state: CognitiveState | None) -> str:
    if state is None or state.emotion is None:
        return "(none)"
    names = {1: "weak", 2: "moderate", 3: "strong"}
    return f"{state.emotion.label} ({names[state.emotion.intensity]})"


def _items_text(state: CognitiveState | None, dim: Dimension) -> str:
    items = state.items(dim) if state is not None else []
    if not items:
        return "(none)"
    return "\n".join(
        f"- {item.text}" + (f" [score {item.score:g}]" if item.score is not None else "")
        for item in items
    )


def _state_text(state: CognitiveState) -> str:
    parts = [f"Emotion: {_emotion_text(state)}"]
    for dim, name in (
        (Dimension.BELIEF, "Beliefs"),
        (Dimension.DESIRE, "Desires"),
        (Dimension.INTENTION, "Intentions"),
    ):
        parts.append(f"{name}:\n{_items_text(state, dim)}")
    return "\n".join(parts)


def _meaning(task: TaskSpec | None, dim: Dimension) -> str:
    if task is None or dim not in task.dimensions:
        return "how strongly it holds, 0-2"
    spec = task.dimensions[dim]
    low, high = task.score_range
    return f"{spec.name}: {spec.meaning}, {low:g}-{high:g}"


def turn_prompt_fields(
    metric: JudgeMetric, sample: FidelitySample, task: TaskSpec | None
) -> dict[str, str] | None:
    """The fields of ``metric``'s prompt for ``sample``, or None when the metric does not apply."""
    gold, pred = sample.gold, sample.prediction
    if metric is JudgeMetric.EMO:
        if gold.emotion is None:
            return None
        return {"gold": _emotion_text(gold), "pred": _emotion_text(pred)}
    if metric in _DIMENSION_OF:
        dim = _DIMENSION_OF[metric]
        if not gold.items(dim):
            return None
        return {
            "gold": _items_text(gold, dim),
            "pred": _items_text(pred, dim),
            "meaning": _meaning(task, dim),
        }
    if metric is JudgeMetric.UTT:
        if not sample.gold_utterance or sample.predicted_utterance is None:
            return None
        return {"gold": sample.gold_utterance, "pred": sample.predicted_utterance}
    if metric is JudgeMetric.COH:
        if pred is None or sample.predicted_utterance is None:
            return None
        return {"state": _state_text(pred), "utterance": sample.predicted_utterance}
    raise ValueError(f"{metric} is not a turn metric")


def _messages(prompt: JudgePrompt, fields: dict[str, str]) -> list[Message]:
    return [
        Message(role="system", content=prompt.system),
        Message(role="user", content=prompt.template.format(**fields)),
    ]


# --- calls --------------------------------------------------------------------------------------


async def _rate(
    model: StructuredModel,
    metric: JudgeMetric,
    sample_id: str,
    fields: dict[str, str],
    sampling: Sampling,
    limit: asyncio.Semaphore,
) -> JudgeScore:
    prompt = PROMPTS[metric]
    async with limit:
        try:
            result = await model.generate_structured(
                _messages(prompt, fields), RatingVerdict, sampling, tag=f"judge:{metric.value}"
            )
        except StructuredOutputError as exc:
            return JudgeScore(
                sample_id=sample_id,
                metric=metric,
                score=None,
                failure=f"unparsable reply: {exc.reason}",
                prompt_id=prompt.id,
                prompt_version=prompt.version,
            )
    return JudgeScore(
        sample_id=sample_id,
        metric=metric,
        score=result.value.score,
        reason=result.value.reason,
        prompt_id=prompt.id,
        prompt_version=prompt.version,
        call_id=result.completion.call_id,
    )


async def judge_turns(
    model: StructuredModel,
    samples: Sequence[FidelitySample],
    *,
    task: TaskSpec | None = None,
    metrics: Sequence[JudgeMetric] = TURN_JUDGE_METRICS,
    sampling: Sampling = JUDGE_SAMPLING,
    concurrency: int = 8,
) -> list[JudgeScore]:
    """Rate every applicable (sample, metric) pair; one structured call each.

    Args:
        model: Anything with ``generate_structured`` (e.g. ``cogwm.models.load("openai:...")``).
        samples: The turn-tier samples.
        task: The task, whose dimension meanings go into the Bel/Des/Int prompts.
        metrics: Which turn metrics to judge.
        sampling: Sampling of the judge calls.
        concurrency: At most this many calls in flight (the model has its own limits too).

    Returns:
        One ``JudgeScore`` per applicable pair, in sample order then metric order.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    limit = asyncio.Semaphore(concurrency)
    jobs = []
    for sample in samples:
        for metric in metrics:
            fields = turn_prompt_fields(metric, sample, task)
            if fields is not None:
                jobs.append(_rate(model, metric, sample.id, fields, sampling, limit))
    return list(await asyncio.gather(*jobs))


def transcript_text(transcript: Sequence[tuple[Role | str, str]], task: TaskSpec) -> str:
    """A transcript as ``Role: text`` lines, with the task's role names."""
    names = {Role.USER.value: task.user_role, Role.AGENT.value: task.agent_role}
    lines = []
    for role, text in transcript:
        key = role.value if isinstance(role, Role) else str(role)
        lines.append(f"{names.get(key, key).capitalize()}: {text}")
    return "\n".join(lines)


async def judge_good_outcome(
    model: StructuredModel,
    dialogues: Sequence[tuple[str, Sequence[tuple[Role | str, str]]]],
    task: TaskSpec,
    *,
    sampling: Sampling = JUDGE_SAMPLING,
    concurrency: int = 8,
) -> list[OutcomeJudgement]:
    """GoodOutcome (yes/no) for each finished dialogue against ``task``'s success criterion.

    Args:
        model: Anything with ``generate_structured``.
        dialogues: ``(dialogue id, [(role, text), ...])`` with role ``user`` or ``agent``.
        task: The task; its ``require_good_outcome()`` is the criterion (DAILY has none).
        sampling: Sampling of the judge calls.
        concurrency: At most this many calls in flight.

    Raises:
        TaskCapabilityError: The task has no GoodOutcome criterion.
    """
    criterion = task.require_good_outcome()
    prompt = PROMPTS[JudgeMetric.GOOD_OUTCOME]
    limit = asyncio.Semaphore(concurrency)

    async def one(
        dialogue_id: str, transcript: Sequence[tuple[Role | str, str]]
    ) -> OutcomeJudgement:
        fields = {
            "title": task.title,
            "scenario": task.scenario,
            "agent_role": task.agent_role,
            "user_role": task.user_role,
            "criterion": criterion,
            "transcript": transcript_text(transcript, task),
        }
        async with limit:
            try:
                result = await model.generate_structured(
                    _messages(prompt, fields), OutcomeVerdict, sampling, tag="judge:GoodOutcome"
                )
            except StructuredOutputError as exc:
                return OutcomeJudgement(
                    dialogue_id=dialogue_id,
                    good_outcome=None,
                    failure=f"unparsable reply: {exc.reason}",
                    prompt_id=prompt.id,
                    prompt_version=prompt.version,
                )
        return OutcomeJudgement(
            dialogue_id=dialogue_id,
            good_outcome=result.value.good_outcome,
            reason=result.value.reason,
            prompt_id=prompt.id,
            prompt_version=prompt.version,
            call_id=result.completion.call_id,
        )

    return list(await asyncio.gather(*(one(d, t) for d, t in dialogues)))


def summarize_judge(
    scores: Sequence[JudgeScore],
    *,
    groups: Mapping[str, Hashable] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, JudgeSummary]:
    """Mean judge score per metric (over parsed verdicts) with CI, and the failure count.

    Args:
        scores: Verdicts from ``judge_turns``.
        groups: Optional cluster id per sample id (e.g. the dialogue) for the bootstrap.
        n_resamples: Bootstrap resamples.
        seed: Seed of the bootstrap.
    """
    out: dict[str, JudgeSummary] = {}
    for metric in TURN_JUDGE_METRICS:
        mine = [s for s in scores if s.metric is metric]
        if not mine:
            continue
        prompt = PROMPTS[metric]
        parsed = [s for s in mine if s.score is not None]
        cluster = [groups.get(s.sample_id, s.sample_id) for s in parsed] if groups else None
        estimate = optional_mean(
            [float(s.score) for s in parsed if s.score is not None],
            groups=cluster,
            n_resamples=n_resamples,
            seed=seed,
        )
        out[metric.value] = JudgeSummary(
            name=metric.value,
            **ReportedMean.fields(estimate, n=len(parsed)),
            n_failed=len(mine) - len(parsed),
            prompt_id=prompt.id,
            prompt_version=prompt.version,
        )
    return out
