"""Sliding windows for the DialToM benchmark (DESIGN.md §3).

A session is cut into consecutive windows of whole utterances. A window closes at the first
utterance boundary at or past 150 whitespace words; a trailing fragment under 150 words is
merged into the previous window; a session under 150 words is one window. A window may pass
200 words (a long utterance, a merged tail): that is allowed, and the share is reported.

Roles map to the benchmark's initiator (the agent side: supporter, persuader, therapist,
recommender) and recipient (the user).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum
from typing import NamedTuple

from pydantic import Field

from cogwm.schema import Dialogue, Record, Role, Utterance

#: A window closes at the first utterance boundary at or past this many words.
WINDOW_MIN_WORDS = 150
#: Windows above this many words are counted in the reported share.
LONG_WINDOW_WORDS = 200


class WindowRole(StrEnum):
    """A participant's part in a window."""

    INITIATOR = "initiator"
    RECIPIENT = "recipient"


#: Initiator = the agent side, recipient = the user.
WINDOW_ROLES: dict[Role, WindowRole] = {
    Role.AGENT: WindowRole.INITIATOR,
    Role.USER: WindowRole.RECIPIENT,
}


def word_count(text: str) -> int:
    """Whitespace-separated words."""
    return len(text.split())


class Span(NamedTuple):
    """Utterance positions ``start`` (inclusive) to ``end`` (exclusive) and their word count."""

    start: int
    end: int
    words: int


def window_spans(word_counts: Sequence[int], min_words: int = WINDOW_MIN_WORDS) -> list[Span]:
    """Cut a session, given each utterance's word count, by the window rule.

    Args:
        word_counts: Words per utterance, in order.
        min_words: A window closes at the first boundary at or past this many words.

    Returns:
        Consecutive spans covering every utterance; empty for an empty session.
    """
    spans: list[Span] = []
    start, words = 0, 0
    for position, count in enumerate(word_counts):
        words += count
        if words >= min_words:
            spans.append(Span(start, position + 1, words))
            start, words = position + 1, 0
    if start < len(word_counts):
        if spans:  # a tail under min_words joins the previous window
            last = spans.pop()
            spans.append(Span(last.start, len(word_counts), last.words + words))
        else:  # the whole session is under min_words
            spans.append(Span(start, len(word_counts), words))
    return spans


class Window(Record):
    """A run of whole utterances of one dialogue."""

    id: str = Field(description="'<dialogue id>#w<index>', stable across runs.")
    dialogue_id: str
    corpus: str
    split: str | None = None
    task: str | None = None
    index: int = Field(ge=0)
    start: int = Field(ge=0, description="Position of the first utterance in the dialogue.")
    end: int = Field(ge=1, description="Position after the last utterance (exclusive).")
    word_count: int = Field(ge=0)
    initiator: str | None = Field(description="The agent side's speaker name in the dialogue.")
    recipient: str | None = Field(description="The user's speaker name in the dialogue.")
    utterances: list[Utterance]

    def role_of(self, utterance: Utterance) -> WindowRole:
        """Whether ``utterance`` is the initiator's or the recipient's."""
        return WINDOW_ROLES[utterance.role]


def _speaker(dialogue: Dialogue, role: Role) -> str | None:
    return next((u.speaker for u in dialogue.utterances if u.role is role), None)


def make_windows(dialogue: Dialogue, min_words: int = WINDOW_MIN_WORDS) -> list[Window]:
    """The windows of one dialogue.

    Args:
        dialogue: The session.
        min_words: A window closes at the first utterance boundary at or past this many words.
    """
    spans = window_spans([word_count(u.text) for u in dialogue.utterances], min_words)
    initiator = _speaker(dialogue, Role.AGENT)
    recipient = _speaker(dialogue, Role.USER)
    return [
        Window(
            id=f"{dialogue.id}#w{index}",
            dialogue_id=dialogue.id,
            corpus=dialogue.corpus,
            split=dialogue.split,
            task=dialogue.task,
            index=index,
            start=span.start,
            end=span.end,
            word_count=span.words,
            initiator=initiator,
            recipient=recipient,
            utterances=dialogue.utterances[span.start : span.end],
        )
        for index, span in enumerate(spans)
    ]


def iter_windows(
    dialogues: Iterable[Dialogue], min_words: int = WINDOW_MIN_WORDS
) -> Iterator[Window]:
    """The windows of every dialogue, dialogue by dialogue."""
    for dialogue in dialogues:
        yield from make_windows(dialogue, min_words)


class WindowSummary(NamedTuple):
    """Count of windows and how many pass :data:`LONG_WINDOW_WORDS`."""

    windows: int
    over_long: int
    share_over_long: float | None  # None when there are no windows
    mean_words: float | None


def summarize(windows: Iterable[Window], long_words: int = LONG_WINDOW_WORDS) -> WindowSummary:
    """Count windows, the ones over ``long_words`` words, and the mean window length."""
    counts = [w.word_count for w in windows]
    if not counts:
        return WindowSummary(0, 0, None, None)
    over = sum(c > long_words for c in counts)
    return WindowSummary(len(counts), over, over / len(counts), sum(counts) / len(counts))
