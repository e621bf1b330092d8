"""How DialToM items are put to a subject model: option order, letters and prompt text.

Options are shuffled with a permutation drawn from a seed and the item id (so it does not
depend on the order items are run in) and recorded with the answer. "None of the above" stays
last.
"""

from __future__ import annotations

import random
import string
from typing import NamedTuple

from cogwm.models.types import Message
from cogwm.tom.items import Task, ToMItem, group_turns, render_lines

#: Version of the subject prompts; part of a run's identity.
PROMPT_VERSION = "dialtom-eval-v1"
#: The closing line of a multiple-choice question (a reasoning run replaces it).
LETTER_INSTRUCTION = "Answer with the letter of the correct option only."

SYSTEM_PROMPT = (
    "You answer multiple-choice questions about real conversations and the mental states "
    "(beliefs, desires, intentions, emotions, knowledge and trust) of the people in them."
)

OPEN_SYSTEM_PROMPT = (
    "You describe the mental states (beliefs, desires, intentions, emotions, knowledge and "
    "trust) of people in real conversations, in one or two specific sentences."
)


class Presentation(NamedTuple):
    """The options in the order shown: ``order[k]`` is the stored index shown as ``letters[k]``."""

    order: list[int]
    letters: list[str]
    has_fixed_last: bool = False  # the last option ("None of the above") is never moved

    def gold_letter(self, item: ToMItem) -> str:
        """The letter under which the gold is shown."""
        return self.letters[self.order.index(item.gold_index)]

    def option_index(self, letter: str) -> int:
        """The stored option index shown under ``letter``."""
        return self.order[self.letters.index(letter)]


def permutation(item: ToMItem, seed: int) -> Presentation:
    """The seeded option order of ``item``; "None of the above" stays last."""
    movable = list(range(item.n_options - 1 if item.has_none_of_the_above else item.n_options))
    random.Random(f"{seed}:{item.id}").shuffle(movable)
    if item.has_none_of_the_above:
        movable.append(item.n_options - 1)
    return Presentation(
        order=movable,
        letters=list(string.ascii_uppercase[: item.n_options]),
        has_fixed_last=item.has_none_of_the_above,
    )


def _indent_option(text: str) -> str:
    return text.replace("\n", "\n   ")


def render_options(item: ToMItem, shown: Presentation) -> str:
    """The lettered option list."""
    return "\n".join(
        f"{letter}. {_indent_option(item.options[index])}"
        for letter, index in zip(shown.letters, shown.order, strict=True)
    )


#: What retrospective items show: the window, or the whole session up to the window's end.
HISTORY_WINDOW = "window"
HISTORY_FULL = "full"
HISTORIES = (HISTORY_WINDOW, HISTORY_FULL)


def _body(item: ToMItem, history_mode: str = HISTORY_WINDOW) -> str:
    parts: list[str] = []
    history = item.shown_history(full=history_mode == HISTORY_FULL)
    if item.task is Task.RETROSPECTIVE:
        parts.append(f"Conversation between a {item.initiator} and a {item.recipient}:")
        parts.append(render_lines(history))
    else:
        parts.append(f"Mental-state profile of the {item.recipient} at this point:")
        parts.append(item.profile or "")
        if history:
            parts.append(
                f"The last {len(group_turns(history))} turn(s) of the conversation so far:"
            )
            parts.append(render_lines(history))
    return "\n".join(parts)


def mc_messages(
    item: ToMItem,
    shown: Presentation,
    *,
    reasoning: str | None = None,
    history: str = HISTORY_WINDOW,
) -> list[Message]:
    """The messages that ask ``item`` as a multiple-choice question.

    ``reasoning`` (the reasoning-injection probe) is another model's analysis with its option
    references masked, shown before the question. ``history`` is ``window`` or ``full`` (the
    whole session up to the window's end, for retrospective items).
    """
    parts = [
        _body(item, history),
        "",
        f"Question: {item.question}",
        render_options(item, shown),
    ]
    if reasoning is not None:
        parts += ["", "An analysis of this question by another model (option names hidden):"]
        parts.append(reasoning)
    parts += ["", LETTER_INSTRUCTION]
    return [
        Message(role="system", content=SYSTEM_PROMPT),
        Message(role="user", content="\n".join(parts)),
    ]


def reasoning_messages(item: ToMItem, shown: Presentation) -> list[Message]:
    """Ask a teacher model to reason about ``item`` step by step (the injection probe)."""
    parts = [
        _body(item),
        "",
        f"Question: {item.question}",
        render_options(item, shown),
        "",
        "Think step by step: compare every option with the evidence and explain which one "
        "fits and why the others do not. End with your answer.",
    ]
    return [
        Message(role="system", content=SYSTEM_PROMPT),
        Message(role="user", content="\n".join(parts)),
    ]


def open_messages(item: ToMItem, history: str = HISTORY_WINDOW) -> list[Message]:
    """The messages that ask an open-ended item (``history`` as in :func:`mc_messages`)."""
    parts = [_body(item, history), "", item.question]
    return [
        Message(role="system", content=OPEN_SYSTEM_PROMPT),
        Message(role="user", content="\n".join(parts)),
    ]


MASKING_SYSTEM_PROMPT = (
    "You edit analyses of multiple-choice questions so that they can be shown to someone who "
    "must still choose an answer on their own."
)


def masking_messages(item: ToMItem, shown: Presentation, reasoning: str) -> list[Message]:
    """Ask a model to hide every reference to the options in a teacher's reasoning.

    The paper's reasoning-injection probe masks option references with a model; the regular
    expressions of :func:`cogwm.tom.evaluate.mask_option_references` are the cheap default.
    """
    parts = [
        f"Question: {item.question}",
        render_options(item, shown),
        "",
        "Analysis:",
        reasoning,
        "",
        "Rewrite the analysis so that it does not reveal or point at any option: replace option "
        "letters and any quotation or close paraphrase of an option's wording with [MASK], and "
        "delete every sentence that says which option is the answer. Keep all reasoning about "
        "the conversation and the people in it. Reply with the rewritten analysis only.",
    ]
    return [
        Message(role="system", content=MASKING_SYSTEM_PROMPT),
        Message(role="user", content="\n".join(parts)),
    ]
