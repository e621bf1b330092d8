"""A round trip through a model: latency, speed, structured output and log-probabilities."""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, Field

from cogwm.models.model import Model
from cogwm.models.types import (
    Capabilities,
    ChoicePath,
    ModelCallError,
    Sampling,
    StructuredOutputError,
)


class _Feeling(BaseModel):
    label: Literal["happy", "sad", "neutral"]
    intensity: int = Field(ge=1, le=3)


class CheckAnswer(BaseModel):
    """The nested structure ``check`` asks for."""

    summary: str = Field(description="One short sentence.")
    feeling: _Feeling


class CheckReport(BaseModel):
    """What ``cogwm models check`` found out about a model."""

    model: str
    identity: str
    endpoints: list[str]
    details: dict[str, str] = Field(default_factory=dict)
    setup_s: float | None = Field(
        default=None, description="Loading, probing and a one-token warm-up call."
    )
    capabilities: Capabilities | None = None
    reply: str | None = None
    latency_s: float | None = None
    completion_tokens: int | None = None
    tokens_per_s: float | None = None
    structured_ok: bool = False
    structured_repaired: bool = False
    structured_value: dict[str, object] | None = None
    structured_error: str | None = None
    logprobs_ok: bool = False
    choice_path: ChoicePath | None = None
    choice_probs: dict[str, float] | None = None
    errors: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The plain round trip and structured output worked."""
        return self.reply is not None and self.structured_ok


async def check_model(model: Model, *, max_tokens: int = 48) -> CheckReport:
    """Run one plain, one structured and one scoring call against ``model`` (no cache).

    Failures are collected in the report (``errors``), not raised.
    """
    report = CheckReport(model=model.spec, identity=model.identity, endpoints=model.endpoints)
    start = time.perf_counter()
    try:
        report.capabilities = await model.capabilities()
        # Warm-up: the first evaluation after loading pages the weights in from disk, which
        # would otherwise be counted as generation speed.
        await model.generate("Hi", Sampling(max_tokens=1), cache=False, tag="check")
        report.setup_s = time.perf_counter() - start
    except ModelCallError as exc:
        report.errors.append(f"capabilities: {exc.reason}")
    except Exception as exc:  # a backend error is a finding here, not a crash
        report.errors.append(f"capabilities: {type(exc).__name__}: {exc}")
    report.details = model.backend.describe()
    await _plain(model, report, max_tokens)
    await _structured(model, report)
    await _scoring(model, report)
    return report


async def _plain(model: Model, report: CheckReport, max_tokens: int) -> None:
    try:
        done = await model.generate(
            "In one short sentence, what is a good way to start a friendly conversation?",
            Sampling(max_tokens=max_tokens),
            cache=False,
            tag="check",
        )
    except ModelCallError as exc:
        report.errors.append(f"generate: {exc.reason}")
        return
    report.reply = done.text
    report.latency_s = done.latency_s
    report.completion_tokens = done.usage.completion_tokens
    if done.latency_s > 0 and done.usage.completion_tokens:
        report.tokens_per_s = done.usage.completion_tokens / done.latency_s


async def _structured(model: Model, report: CheckReport) -> None:
    try:
        result = await model.generate_structured(
            "Someone says: 'I finally passed my driving test!' Summarise it and name the feeling.",
            CheckAnswer,
            Sampling(max_tokens=120),
            cache=False,
            tag="check",
        )
    except StructuredOutputError as exc:
        report.structured_error = exc.reason
        return
    except ModelCallError as exc:
        report.structured_error = exc.reason
        report.errors.append(f"structured: {exc.reason}")
        return
    report.structured_ok = True
    report.structured_repaired = result.repaired
    report.structured_value = result.value.model_dump(mode="json")


async def _scoring(model: Model, report: CheckReport) -> None:
    question = (
        "Which of these is a fruit?\nA. a chair\nB. an apple\nC. a car\n"
        "Answer with the letter only."
    )
    try:
        scores = await model.score_choices(question, ["A", "B", "C"], cache=False, tag="check")
    except ModelCallError as exc:
        report.errors.append(f"score_choices: {exc.reason}")
        return
    report.choice_path = scores.path
    report.choice_probs = scores.probs
    report.logprobs_ok = scores.path is not ChoicePath.PARSED
