"""Sliding windows for the DialToM benchmark.

A session is cut into consecutive windows of whole utterances, bounded between 150 and 200
whitespace words (the default, ``max_words=200``):

- a window closes at the last utterance boundary at or under 200 words once it has at least 150;
- a trailing fragment under 150 words is merged into the previous window only if that window
  stays at or under 200 words; otherwise it is its own window;
- a single utterance over 200 words is its own window (kind ``long_utterance``, counted);
- when the next utterance would carry a window still under 150 words past 200, the window closes
  short (kind ``closed_short``, counted);
- a session under 150 words is one window.

Because a window is filled up to the last boundary at or under 200 words, a trailing fragment
fits into the previous window only when that window ended at the session's end; in practice the
tail stays its own window (kind ``tail``, counted).

The earlier greedy rule (``max_words=None``) closes a window at the first boundary at or past
150 words and always merges the tail, so windows may pass 200 words. Its window ids are
``"<dialogue id>#w<k>"``; the bounded rule's are ``"<dialogue id>#w<k>@<max_words>"``, so items
built on different windows never share an id.

Roles map to the benchmark's initiator (the agent side: supporter, persuader, therapist,
recommender) and recipient (the user).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum
from typing import NamedTuple

from pydantic import Field

from cogwm.schema import Dialogue, Record, Role, Utterance

#: A window closes at the first utterance boundary at or past this many words.
WINDOW_MIN_WORDS = 150
#: Windows above this many words are counted in the reported share; the bounded rule's ceiling.
LONG_WINDOW_WORDS = 200


class WindowKind(StrEnum):
    """Why a window closed where it did."""

    BOUNDED = "bounded"  # 150..max words (or the greedy rule's normal close)
    LONG_UTTERANCE = "long_utterance"  # one utterance over max words, alone
    CLOSED_SHORT = "closed_short"  # under 150: the next utterance would pass max words
    TAIL = "tail"  # the session's last fragment under 150, not merged (it would pass max words)
    SESSION = "session"  # the whole session is under 150 words


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
    kind: WindowKind = WindowKind.BOUNDED


def bounded_window_spans(
    word_counts: Sequence[int],
    min_words: int = WINDOW_MIN_WORDS,
    max_words: int = LONG_WINDOW_WORDS,
) -> list[Span]:
    """Cut a session by the bounded rule (windows of ``min_words`` to ``max_words`` words).

    Args:
        word_counts: Words per utterance, in order.
        min_words: A window may close once it has this many words.
        max_words: A window closes at the last utterance boundary at or under this many words.

    Returns:
        Consecutive spans covering every utterance, each with its :class:`WindowKind`.
    """
    spans: list[Span] = []
    start, words = 0, 0
    for position, count in enumerate(word_counts):
        if position > start and words + count > max_words:  # it would pass the ceiling
            kind = WindowKind.BOUNDED if words >= min_words else WindowKind.CLOSED_SHORT
            spans.append(Span(start, position, words, kind))
            start, words = position, 0
        words += count
        if words > max_words:  # a single utterance over the ceiling, alone
            spans.append(Span(start, position + 1, words, WindowKind.LONG_UTTERANCE))
            start, words = position + 1, 0
    if start < len(word_counts):
        spans.extend(_close_tail(spans, start, len(word_counts), words, min_words, max_words))
    return spans


def _close_tail(
    spans: list[Span], start: int, end: int, words: int, min_words: int, max_words: int
) -> list[Span]:
    """The session's last window; a short tail joins the previous window when it fits."""
    if words >= min_words:
        return [Span(start, end, words, WindowKind.BOUNDED)]
    if not spans:
        return [Span(start, end, words, WindowKind.SESSION)]
    last = spans[-1]
    if last.kind is not WindowKind.LONG_UTTERANCE and last.words + words <= max_words:
        spans.pop()
        return [Span(last.start, end, last.words + words, last.kind)]
    return [Span(start, end, words, WindowKind.TAIL)]


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
    kind: WindowKind = Field(default=WindowKind.BOUNDED, description="Why the window closed.")
    initiator: str | None = Field(description="The agent side's speaker name in the dialogue.")
    recipient: str | None = Field(description="The user's speaker name in the dialogue.")
    utterances: list[Utterance]

    def role_of(self, utterance: Utterance) -> WindowRole:
        """Whether ``utterance`` is the initiator's or the recipient's."""
        return WINDOW_ROLES[utterance.role]


def _speaker(dialogue: Dialogue, role: Role) -> str | None:
    return next((u.speaker for u in dialogue.utterances if u.role is role), None)


def make_windows(
    dialogue: Dialogue,
    min_words: int = WINDOW_MIN_WORDS,
    max_words: int | None = LONG_WINDOW_WORDS,
) -> list[Window]:
    """The windows of one dialogue.

    Args:
        dialogue: The session.
        min_words: A window may close once it has this many words.
        max_words: The bounded rule's ceiling; None for the earlier greedy rule.
    """
    counts = [word_count(u.text) for u in dialogue.utterances]
    if max_words is None:
        spans, suffix = window_spans(counts, min_words), ""
    else:
        spans, suffix = bounded_window_spans(counts, min_words, max_words), f"@{max_words}"
    initiator = _speaker(dialogue, Role.AGENT)
    recipient = _speaker(dialogue, Role.USER)
    return [
        Window(
            id=f"{dialogue.id}#w{index}{suffix}",
            dialogue_id=dialogue.id,
            corpus=dialogue.corpus,
            split=dialogue.split,
            task=dialogue.task,
            index=index,
            start=span.start,
            end=span.end,
            word_count=span.words,
            kind=span.kind,
            initiator=initiator,
            recipient=recipient,
            utterances=dialogue.utterances[span.start : span.end],
        )
        for index, span in enumerate(spans)
    ]


def iter_windows(
    dialogues: Iterable[Dialogue],
    min_words: int = WINDOW_MIN_WORDS,
    max_words: int | None = LONG_WINDOW_WORDS,
) -> Iterator[Window]:
    """The windows of every dialogue, dialogue by dialogue (``max_words`` as in make_windows)."""
    for dialogue in dialogues:
        yield from make_windows(dialogue, min_words, max_words)


class WindowSummary(NamedTuple):
    """Count of windows, how many pass :data:`LONG_WINDOW_WORDS`, and the counted kinds."""

    windows: int
    over_long: int
    share_over_long: float | None  # None when there are no windows
    mean_words: float | None
    long_utterance: int = 0
    closed_short: int = 0
    tail: int = 0


def summarize(windows: Iterable[Window], long_words: int = LONG_WINDOW_WORDS) -> WindowSummary:
    """Count windows, the ones over ``long_words`` words, and the mean window length."""
    listed = list(windows)
    counts = [w.word_count for w in listed]
    if not counts:
        return WindowSummary(0, 0, None, None)
    over = sum(c > long_words for c in counts)
    kinds = Counter(w.kind for w in listed)
    return WindowSummary(
        len(counts),
        over,
        over / len(counts),
        sum(counts) / len(counts),
        kinds[WindowKind.LONG_UTTERANCE],
        kinds[WindowKind.CLOSED_SHORT],
        kinds[WindowKind.TAIL],
    )
