"""Multiple-choice answers from models that think before they answer (``tom eval --reasoning``).

Such a model gets a token budget (``--reasoning-tokens``, default :data:`DEFAULT_REASONING_TOKENS`)
instead of the few tokens a bare letter needs, and is asked to think and then end with
``Answer: <letter>``. Its chosen letter is extracted by one documented rule:

1. The thinking is set aside. Where the server returns it in a field of its own (an
   OpenAI-compatible ``reasoning_content``), the answer is the reply's content; otherwise the
   reply with every ``<think>...</think>`` block removed (a ``<think>`` never closed, as when the
   budget runs out mid-thought, leaves no answer).
2. In that answer, the **last** ``Answer: X`` (also "answer is X", "final answer: (X)",
   markdown emphasis allowed) gives the letter, so letters the model weighed earlier never count.
3. Failing that, the answer's last non-empty line when it is a bare option letter ("B", "(B)",
   "**B.**").
4. Failing that, nothing: the answer is stored unparsed and counts as wrong (and is reported).

The stored raw reply keeps everything: ``<think>reasoning</think>`` followed by the content when
the server returned the reasoning apart, else the reply as it came.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cogwm.models import Model
from cogwm.models.types import ChoicePath, ChoiceScores, Message, Sampling
from cogwm.tom.prompts import LETTER_INSTRUCTION

#: Tokens a reasoning model may spend on one item (thinking and answer together).
DEFAULT_REASONING_TOKENS = 4096
#: The instruction that closes a question asked with ``--reasoning``.
THINK_INSTRUCTION = (
    "Think it through step by step, then end with a last line of the form "
    "'Answer: <letter>' naming the correct option."
)

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think>.*", re.DOTALL | re.IGNORECASE)
# The mark is matched in any case, the letter only as written (so "answer a question" is no answer).
_ANSWER_MARK = r"(?i:final\s+answer|answer)(?i:\s+is)?\s*[*_]*\s*[:=]?\s*[*_]*\s*\(?\s*"


def answer_part(text: str) -> str:
    """The reply without its thinking: ``<think>`` blocks removed, an unclosed one to the end."""
    return _OPEN_THINK.sub("", _THINK_BLOCK.sub("", text)).strip()


def final_letter(answer: str, letters: Sequence[str]) -> str | None:
    """The option letter an answer ends on, by the rule of the module doc; None if none."""
    by_case = {letter.casefold(): letter for letter in letters}
    alternation = "|".join(re.escape(letter) for letter in letters)
    marked = list(re.finditer(rf"{_ANSWER_MARK}({alternation})\b(?!['’]\w)", answer))
    if marked:
        return by_case.get(marked[-1].group(1).casefold())
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    if lines:
        bare = re.fullmatch(rf"[\W_]*({alternation})[\W_]*", lines[-1])
        if bare is not None:
            return by_case.get(bare.group(1).casefold())
    return None


def think_messages(messages: Sequence[Message]) -> list[Message]:
    """A multiple-choice prompt whose closing instruction asks the model to think first."""
    *head, last = messages
    body = last.content.removesuffix(LETTER_INSTRUCTION).rstrip("\n")
    return [*head, last.model_copy(update={"content": f"{body}\n\n{THINK_INSTRUCTION}"})]


async def reasoned_choice(
    model: Model, messages: Sequence[Message], letters: Sequence[str], max_tokens: int, tag: str
) -> ChoiceScores:
    """Ask with a thinking budget of ``max_tokens`` and extract the final letter.

    Raises:
        ModelCallError: The call failed after the model interface's retries.
    """
    sampling = Sampling(temperature=0.0, max_tokens=max_tokens)
    completion = await model.generate(think_messages(messages), sampling, tag=tag)
    thinking = completion.reasoning
    answer = answer_part(completion.text)
    raw = completion.text if not thinking else f"<think>{thinking}</think>\n{completion.text}"
    choice = final_letter(answer, letters)
    probs = {x: 1.0 if x == choice else 0.0 for x in letters} if choice is not None else {}
    return ChoiceScores(
        probs=probs, choice=choice, path=ChoicePath.PARSED, raw=raw, call_id=completion.call_id
    )
