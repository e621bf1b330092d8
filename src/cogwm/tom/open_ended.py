"""Scoring open-ended answers: BLEU, ROUGE-L, embedding similarity and a 3-point judge.

Each answer is compared with every reference of its item and the scores are averaged over the
references (as the paper does with several human references). BLEU is sentence BLEU-4 and
ROUGE-L the F-measure, both from :mod:`cogwm.metrics.text`; embedding similarity is the cosine
of sentence embeddings (:mod:`cogwm.metrics.embeddings`). The judge rates, on 1-3, propositional
agreement (same core proposition), causal attribution (same cause or evidence) and specificity
alignment (same level of detail), seeing the source dialogue, the reference and the answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from cogwm.metrics.embeddings import Embedder, cosine_rows
from cogwm.metrics.text import utterance_scores
from cogwm.models import Model
from cogwm.models.types import Message, ModelCallError, Sampling
from cogwm.tom.items import ToMItem, render_lines
from cogwm.tom.store import OpenScoreRow, ToMStore

JUDGE_PROMPT_VERSION = "dialtom-judge-v1"
JUDGE_SAMPLING = Sampling(temperature=0.0, max_tokens=300)

JUDGE_SYSTEM = (
    "You compare an AI's inference about a person's mental state in a conversation with a "
    "reference inference written for the same conversation. Rate three aspects from 1 to 3 "
    "(1 = no, 2 = partly, 3 = yes). Judge meaning, not wording. Reply with JSON only."
)


class OpenJudgeVerdict(BaseModel):
    """The judge's 3-point ratings of one open-ended answer."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(max_length=600, description="One or two sentences of justification.")
    propositional_agreement: int = Field(
        ge=1, le=3, description="Do both express the same core proposition about the state?"
    )
    causal_attribution: int = Field(
        ge=1, le=3, description="Do both anchor the state to the same cause or evidence?"
    )
    specificity_alignment: int = Field(
        ge=1, le=3, description="Are both at the same level of specificity?"
    )


def judge_messages(item: ToMItem, answer: str, reference: str) -> list[Message]:
    """The judge prompt for one answer against one reference."""
    text = (
        f"Conversation between a {item.initiator} and a {item.recipient}:\n"
        f"{render_lines(item.context)}\n\n"
        f"Question: {item.question}\n\n"
        f"Reference inference: {reference}\n"
        f"AI inference: {answer}\n\n"
        "Rate propositional agreement, causal attribution and specificity alignment (1-3)."
    )
    return [Message(role="system", content=JUDGE_SYSTEM), Message(role="user", content=text)]


@dataclass
class OpenScoringSummary:
    """What :func:`score_open_answers` did."""

    scored: int = 0
    skipped: int = 0
    judge_failures: int = 0
    failures: list[str] = field(default_factory=list)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


async def score_open_answers(
    store: ToMStore,
    *,
    judge: Model | None = None,
    embedder: Embedder | None = None,
    rescore: bool = False,
    concurrency: int = 4,
    on_progress: Callable[[], None] | None = None,
) -> OpenScoringSummary:
    """Score every stored open-ended answer not scored yet (all of them with ``rescore``).

    Args:
        store: The DialToM database.
        judge: The judge model; without it the judge scores stay None.
        embedder: Sentence embedder; without it the embedding similarity stays None.
        rescore: Score answers that already have scores again.
        concurrency: Judge calls in flight.
        on_progress: Called after each answer.
    """
    summary = OpenScoringSummary()
    done = set() if rescore else store.scored_open_ids()
    todo = [(r, i, t) for r, i, t in store.open_answers() if (r, i) not in done]
    summary.skipped = len(store.open_answers()) - len(todo)
    items: dict[str, ToMItem] = {}
    for _, item_id, _ in todo:
        if item_id not in items:
            item = store.get_item(item_id)
            assert item is not None  # the foreign key guarantees it
            items[item_id] = item
    similarity = _embedding_similarity(todo, items, embedder)
    limit = asyncio.Semaphore(concurrency)

    async def one(index: int, run_id: str, item_id: str, text: str) -> None:
        item = items[item_id]
        lexical = [utterance_scores(text, ref) for ref in item.references]
        verdicts: list[OpenJudgeVerdict] = []
        if judge is not None:
            async with limit:
                verdicts = await _judge(judge, item, text, summary)
        store.put_open_score(
            OpenScoreRow(
                run_id=run_id,
                item_id=item_id,
                bleu=_mean([s.bleu4 for s in lexical]),
                rouge_l=_mean([s.rouge_l for s in lexical]),
                embedding=similarity[index],
                judge_model=judge.spec if judge is not None and verdicts else None,
                agreement=_mean([float(v.propositional_agreement) for v in verdicts]),
                causal_attribution=_mean([float(v.causal_attribution) for v in verdicts]),
                specificity=_mean([float(v.specificity_alignment) for v in verdicts]),
                judge_raw=" | ".join(v.reason for v in verdicts) or None,
            )
        )
        summary.scored += 1
        if on_progress is not None:
            on_progress()

    await asyncio.gather(*(one(k, r, i, t) for k, (r, i, t) in enumerate(todo)))
    return summary


async def _judge(
    judge: Model, item: ToMItem, answer: str, summary: OpenScoringSummary
) -> list[OpenJudgeVerdict]:
    verdicts = []
    for reference in item.references:
        try:
            result = await judge.generate_structured(
                judge_messages(item, answer, reference),
                OpenJudgeVerdict,
                JUDGE_SAMPLING,
                tag="tom-judge",
            )
        except ModelCallError as exc:
            summary.judge_failures += 1
            if len(summary.failures) < 5:
                summary.failures.append(f"{item.id}: {exc.reason}")
            continue
        verdicts.append(result.value)
    return verdicts


def _embedding_similarity(
    todo: Sequence[tuple[str, str, str]], items: dict[str, ToMItem], embedder: Embedder | None
) -> list[float | None]:
    if embedder is None or not todo:
        return [None] * len(todo)
    answers: list[str] = []
    references: list[str] = []
    owner: list[int] = []
    for k, (_, item_id, text) in enumerate(todo):
        for reference in items[item_id].references:
            answers.append(text if text.strip() else " ")
            references.append(reference)
            owner.append(k)
    a, b = embedder.encode(answers), embedder.encode(references)
    sims: list[list[float]] = [[] for _ in todo]
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        try:
            sims[owner[k]].append(float(cosine_rows(x[None, :], y[None, :])[0]))
        except ValueError:  # a zero vector has no direction: leave that pair out
            continue
    return [_mean(s) for s in sims]
