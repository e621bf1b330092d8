"""The LLM item generator: any model, through the model interface, with structured output.

Per context (window *i*):

1. a :class:`ProfileDraft`: the recipient's BDIEKT state at the end of the window, one
   statement per attribute. Each statement is the gold of that attribute's retrospective item,
   and together they are the profile shown by the prospective item;
2. per attribute, a :class:`DistractorSet`: 3 plausible but wrong statements, a rationale each;
3. unless the window is the session's last, 3 adversarial continuations (a rationale each) for the
   prospective item, whose gold is the real opening of window *i+1*.

A draft that cannot be used (invalid structured output after the model interface's repair
attempt, a distractor equal to the gold or to another distractor, a speaker outside the dialogue)
drops that item and is counted by reason in the :class:`GenerationReport`; it never becomes an
item.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from cogwm.corpora import word_count
from cogwm.models import Model
from cogwm.models.types import Message, ModelCallError, Sampling, StructuredOutputError
from cogwm.tom.contexts import Context, continuation_text
from cogwm.tom.items import (
    NONE_OF_THE_ABOVE,
    Attribute,
    Provenance,
    Source,
    Task,
    ToMItem,
    option_key,
    render_lines,
)
from cogwm.tom.templates import PROSPECTIVE_QUESTION

M = TypeVar("M", bound=BaseModel)

#: Version of the generator prompts; recorded in every generated item's provenance.
GENERATOR_PROMPT_VERSION = "dialtom-gen-v1"

N_DISTRACTORS = 3

ATTRIBUTE_MEANINGS: dict[Attribute, str] = {
    Attribute.BELIEF: "what they hold to be true",
    Attribute.DESIRE: "what they want",
    Attribute.INTENTION: "what they plan or are about to do",
    Attribute.EMOTION: "what they feel",
    Attribute.KNOWLEDGE: "what they know or have just learned",
    Attribute.TRUST: "how much they trust the other speaker",
}

GENERATOR_SYSTEM = (
    "You write items for a theory-of-mind benchmark built from real conversations. "
    "Be specific to the conversation. Reply with JSON only."
)


class _Draft(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProfileDraft(_Draft):
    """The recipient's BDIEKT state at the end of a window, one statement per attribute."""

    belief: str = Field(min_length=3, description="What they hold to be true.")
    desire: str = Field(min_length=3, description="What they want.")
    intention: str = Field(min_length=3, description="What they plan to do.")
    emotion: str = Field(min_length=3, description="What they feel.")
    knowledge: str = Field(min_length=3, description="What they know or have just learned.")
    trust: str = Field(min_length=3, description="How much they trust the other speaker.")

    def statement(self, attribute: Attribute) -> str:
        """The statement of one attribute."""
        return str(getattr(self, attribute.value)).strip()

    def render(self) -> str:
        """The profile as shown to a subject: one ``Attribute: statement`` line each."""
        return "\n".join(f"{a.value.capitalize()}: {self.statement(a)}" for a in Attribute)


class Distractor(_Draft):
    """A wrong statement and why it is wrong."""

    statement: str = Field(min_length=3)
    rationale: str = Field(min_length=3, description="Why it is wrong for this conversation.")


class DistractorSet(_Draft):
    """Three distractor statements."""

    distractors: list[Distractor] = Field(min_length=N_DISTRACTORS, max_length=N_DISTRACTORS)


class CounterfactualDraft(_Draft):
    """A profile that contradicts the original, so that no option fits it."""

    profile: ProfileDraft
    rationale: str = Field(min_length=3, description="Why no listed continuation fits it.")


@cache
def continuation_model(initiator: str, recipient: str) -> type[BaseModel]:
    """The structured output of adversarial continuations, speakers limited to the two roles."""
    speaker: Any = Literal[initiator, recipient]
    line = create_model(
        "ContinuationLine",
        __config__=ConfigDict(extra="forbid"),
        speaker=(speaker, ...),
        text=(str, Field(min_length=1)),
    )
    continuation = create_model(
        "Continuation",
        __config__=ConfigDict(extra="forbid"),
        lines=(list[line], Field(min_length=1, max_length=8)),
        rationale=(str, Field(min_length=3)),
    )
    return create_model(
        "ContinuationSet",
        __config__=ConfigDict(extra="forbid"),
        continuations=(
            list[continuation],
            Field(min_length=N_DISTRACTORS, max_length=N_DISTRACTORS),
        ),
    )


class DropReason(StrEnum):
    """Why a generated item was dropped."""

    INVALID_OUTPUT = "invalid_output"  # structured output still invalid after the repair
    MODEL_ERROR = "model_error"  # the call failed after the retries
    DUPLICATE = "duplicate"  # a distractor equals the gold or another distractor
    NO_PROFILE = "no_profile"  # the profile call failed, so the context has no items


@dataclass
class GenerationReport:
    """What the generator produced and dropped."""

    contexts: int = 0
    items: Counter[tuple[str, str]] = field(default_factory=Counter)  # (domain, task)
    dropped: Counter[str] = field(default_factory=Counter)  # DropReason value
    examples: list[str] = field(default_factory=list)  # first messages of drops, for the user

    def drop(self, reason: DropReason, where: str, detail: str) -> None:
        """Count a dropped item (keeps the first few messages)."""
        self.dropped[reason.value] += 1
        if len(self.examples) < 5:
            self.examples.append(f"{where}: {reason.value}: {detail[:160]}")


def model_slug(spec: str) -> str:
    """A model spec as an id part (``openai:gpt-4o`` -> ``openai-gpt-4o``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-")


def _conversation(context: Context) -> str:
    return (
        f"Conversation between a {context.initiator} and a {context.recipient}:\n"
        f"{render_lines(context.lines())}"
    )


def profile_messages(context: Context) -> list[Message]:
    """Ask for the recipient's BDIEKT profile at the end of the window."""
    meanings = "; ".join(f"{a.value} ({m})" for a, m in ATTRIBUTE_MEANINGS.items())
    text = (
        f"{_conversation(context)}\n\n"
        f"Describe the {context.recipient}'s mental state at the end of this conversation in "
        f"one specific sentence per attribute: {meanings}. Every sentence must be supported by "
        f"the conversation and name the {context.recipient}."
    )
    return [Message(role="system", content=GENERATOR_SYSTEM), Message(role="user", content=text)]


def distractor_messages(context: Context, attribute: Attribute, gold: str) -> list[Message]:
    """Ask for 3 distractor statements of one attribute."""
    text = (
        f"{_conversation(context)}\n\n"
        f"A correct statement of the {context.recipient}'s {attribute.value} "
        f'({ATTRIBUTE_MEANINGS[attribute]}) at the end of this conversation:\n"{gold}"\n\n'
        f"Write {N_DISTRACTORS} wrong statements of the {context.recipient}'s {attribute.value}: "
        "each about the same topic, as long and in the same style as the correct one, plausible "
        "at first sight, but contradicted or unsupported by the conversation. Give each a "
        "one-sentence rationale saying why it is wrong."
    )
    return [Message(role="system", content=GENERATOR_SYSTEM), Message(role="user", content=text)]


def continuation_messages(context: Context, profile: str, gold: str) -> list[Message]:
    """Ask for 3 adversarial continuations inconsistent with the profile."""
    words = word_count(gold)
    first = gold.split(":", 1)[0]
    text = (
        f"Mental-state profile of the {context.recipient} at this point of a conversation with "
        f"a {context.initiator}:\n{profile}\n\n"
        f"What was actually said next ({words} words):\n{gold}\n\n"
        f"Write {N_DISTRACTORS} alternative continuations: each starts with the {first}, has "
        f"about {words} words, stays on the same topic and sounds like the real one, but shows "
        f"the {context.recipient} behaving in a way that is inconsistent with the profile. "
        "Give each a one-sentence rationale naming the part of the profile it contradicts."
    )
    return [Message(role="system", content=GENERATOR_SYSTEM), Message(role="user", content=text)]


def counterfactual_messages(item: ToMItem) -> list[Message]:
    """Ask for a profile that contradicts ``item``'s profile so that none of its options fits."""
    options = "\n\n".join(f"Option {k + 1}:\n{o}" for k, o in enumerate(item.options))
    text = (
        f"Mental-state profile of the {item.recipient} in a conversation with a "
        f"{item.initiator}:\n{item.profile}\n\n"
        f"Candidate continuations of the conversation:\n{options}\n\n"
        f"Write a counterfactual profile of the {item.recipient}: one sentence per attribute "
        "(belief, desire, intention, emotion, knowledge, trust) that contradicts the original "
        "profile, so that none of the candidate continuations is consistent with it. Give a "
        "one-sentence rationale."
    )
    return [Message(role="system", content=GENERATOR_SYSTEM), Message(role="user", content=text)]


@dataclass
class ItemGenerator:
    """Generates DialToM items with one model.

    Args:
        model: A loaded model (``cogwm.models.load(spec)``).
        attributes: The attributes to build retrospective items for.
        tasks: The tasks to build.
        sampling: Sampling of every generator call.
        concurrency: Contexts in flight at once.
    """

    model: Model
    attributes: Sequence[Attribute] = tuple(Attribute)
    tasks: Sequence[Task] = (Task.RETROSPECTIVE, Task.PROSPECTIVE)
    sampling: Sampling = field(default_factory=lambda: Sampling(temperature=0.0, max_tokens=768))
    concurrency: int = 4
    report: GenerationReport = field(default_factory=GenerationReport)

    @property
    def slug(self) -> str:
        """The model's part of generated item ids."""
        return model_slug(self.model.spec)

    async def run(
        self,
        contexts: Iterable[Context],
        on_items: Callable[[Context, list[ToMItem]], None],
        *,
        on_progress: Callable[[], Awaitable[None] | None] | None = None,
    ) -> GenerationReport:
        """Generate the items of every context; ``on_items`` receives them context by context."""
        limit = asyncio.Semaphore(self.concurrency)

        async def one(context: Context) -> None:
            async with limit:
                items = await self.context_items(context)
            self.report.contexts += 1
            on_items(context, items)
            if on_progress is not None:
                result = on_progress()
                if result is not None:
                    await result

        await asyncio.gather(*(one(c) for c in contexts))
        return self.report

    async def context_items(self, context: Context) -> list[ToMItem]:
        """All items of one context (dropped ones counted in the report)."""
        profile = await self._structured(context.id, profile_messages(context), ProfileDraft)
        if profile is None:
            self.report.drop(DropReason.NO_PROFILE, context.id, "the profile call failed")
            return []
        jobs: list[Awaitable[ToMItem | None]] = []
        if Task.RETROSPECTIVE in self.tasks:
            jobs += [self.retrospective(context, profile, a) for a in self.attributes]
        if Task.PROSPECTIVE in self.tasks and not context.is_last:
            jobs.append(self.prospective(context, profile))
        found = await asyncio.gather(*jobs)
        items = [i for i in found if i is not None]
        for item in items:
            self.report.items[(item.domain.value, item.task.value)] += 1
        return items

    async def retrospective(
        self, context: Context, profile: ProfileDraft, attribute: Attribute
    ) -> ToMItem | None:
        """The retrospective item of one attribute."""
        item_id = f"llm:{self.slug}:{context.id}:retro:{attribute.value}"
        gold = profile.statement(attribute)
        drafted = await self._structured(
            item_id, distractor_messages(context, attribute, gold), DistractorSet
        )
        if drafted is None:
            return None
        distractors = {d.statement.strip(): d.rationale.strip() for d in drafted.distractors}
        if not self._distinct(item_id, gold, list(distractors)):
            return None
        return self._item(
            item_id,
            context,
            task=Task.RETROSPECTIVE,
            attribute=attribute,
            gold=gold,
            distractors=distractors,
            question=f"Which statement best describes the {context.recipient}'s "
            f"{attribute.value} at the end of this conversation?",
            profile=None,
        )

    async def prospective(self, context: Context, profile: ProfileDraft) -> ToMItem | None:
        """The prospective item of a context that is not the session's last."""
        item_id = f"llm:{self.slug}:{context.id}:prosp"
        opening = context.opening()
        if not opening:
            return None
        gold = continuation_text(opening)
        shown = profile.render()
        output = continuation_model(context.initiator, context.recipient)
        drafted = await self._structured(
            item_id, continuation_messages(context, shown, gold), output
        )
        if drafted is None:
            return None
        distractors = {
            "\n".join(f"{ln.speaker}: {ln.text.strip()}" for ln in c.lines): c.rationale.strip()
            for c in drafted.continuations  # type: ignore[attr-defined]
        }
        if not self._distinct(item_id, gold, list(distractors)):
            return None
        return self._item(
            item_id,
            context,
            task=Task.PROSPECTIVE,
            attribute=None,
            gold=gold,
            distractors=distractors,
            question=PROSPECTIVE_QUESTION,
            profile=shown,
        )

    def _distinct(self, item_id: str, gold: str, distractors: list[str]) -> bool:
        keys = [option_key(gold), *(option_key(d) for d in distractors)]
        if len(set(keys)) != len(keys) or len(distractors) != N_DISTRACTORS:
            self.report.drop(DropReason.DUPLICATE, item_id, "a distractor repeats another option")
            return False
        if option_key(NONE_OF_THE_ABOVE) in keys:  # reserved for the counterfactual probe
            self.report.drop(DropReason.DUPLICATE, item_id, f"an option is {NONE_OF_THE_ABOVE!r}")
            return False
        return True

    def _item(
        self,
        item_id: str,
        context: Context,
        *,
        task: Task,
        attribute: Attribute | None,
        gold: str,
        distractors: dict[str, str],
        question: str,
        profile: str | None,
    ) -> ToMItem:
        return ToMItem(
            id=item_id,
            task=task,
            domain=context.domain,
            attribute=attribute,
            initiator=context.initiator,
            recipient=context.recipient,
            context=context.lines(),
            earlier=context.earlier_lines() if task is Task.RETROSPECTIVE else [],
            history_turns=None if task is Task.RETROSPECTIVE else 0,
            profile=profile,
            question=question,
            options=[gold, *distractors],
            gold=gold,
            rationales=distractors,
            provenance=Provenance(
                source=Source.LLM,
                corpus=context.corpus,
                dialogue_id=context.dialogue.id,
                window_id=context.id,
                window_index=context.index,
                generator_model=self.model.spec,
                prompt_version=GENERATOR_PROMPT_VERSION,
            ),
        )

    async def _structured(self, where: str, messages: list[Message], output: type[M]) -> M | None:
        try:
            result = await self.model.generate_structured(
                messages, output, self.sampling, tag="tom-generator"
            )
        except StructuredOutputError as exc:
            self.report.drop(DropReason.INVALID_OUTPUT, where, exc.reason)
            return None
        except ModelCallError as exc:
            self.report.drop(DropReason.MODEL_ERROR, where, exc.reason)
            return None
        return result.value


async def counterfactual_profile(
    model: Model, item: ToMItem, sampling: Sampling | None = None
) -> CounterfactualDraft:
    """A contradictory profile for a prospective item (raises the model interface's errors)."""
    result = await model.generate_structured(
        counterfactual_messages(item),
        CounterfactualDraft,
        sampling or Sampling(temperature=0.0, max_tokens=768),
        tag="tom-counterfactual",
    )
    return result.value
