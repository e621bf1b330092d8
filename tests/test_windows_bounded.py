"""The bounded window rule (150 to 200 words), clause by clause, and its counts on the corpora.

Each hand-worked case is one the earlier greedy rule cuts differently (checked in every test).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cogwm import corpora
from cogwm.corpora import Span, WindowKind, bounded_window_spans, make_windows, window_spans
from cogwm.corpora.windows import _close_tail
from cogwm.schema import Dialogue, Role, Utterance
from cogwm.tom.contexts import contexts_of, load_contexts

B, SHORT, LONG, TAIL, SESSION = (
    WindowKind.BOUNDED,
    WindowKind.CLOSED_SHORT,
    WindowKind.LONG_UTTERANCE,
    WindowKind.TAIL,
    WindowKind.SESSION,
)


def _cut(counts: Sequence[int]) -> list[tuple[int, int, int, WindowKind]]:
    spans = bounded_window_spans(counts)
    assert [s[:3] for s in spans] != [s[:3] for s in window_spans(counts)], "greedy agrees"
    return [tuple(s) for s in spans]  # type: ignore[misc]


def test_a_window_closes_at_the_last_boundary_at_or_under_200_once_it_has_150() -> None:
    # greedy closes at 160 (the first boundary past 150); bounded keeps filling up to 200
    assert _cut([100, 60, 30, 50, 100, 60]) == [(0, 3, 190, B), (3, 5, 150, B), (5, 6, 60, TAIL)]
    assert _cut([100, 60, 30, 10, 150]) == [(0, 4, 200, B), (4, 5, 150, B)]


def test_a_short_tail_stays_its_own_window_when_merging_would_pass_200() -> None:
    # greedy merges the 60-word tail into a 220-word window
    assert _cut([160, 30, 30, 30]) == [(0, 2, 190, B), (2, 4, 60, TAIL)]


def test_a_short_tail_is_merged_when_the_window_stays_at_or_under_200() -> None:
    spans = bounded_window_spans([150, 20], max_words=200)
    assert spans == [Span(0, 2, 170, B)]  # filled to the end: nothing left over
    # the merge clause itself, on a window that closed before the session's end
    assert _close_tail([Span(0, 1, 150, B)], 1, 2, 40, 150, 200) == [Span(0, 2, 190, B)]
    assert _close_tail([Span(0, 1, 180, B)], 1, 2, 40, 150, 200) == [Span(1, 2, 40, TAIL)]
    assert _close_tail([Span(0, 1, 190, LONG)], 1, 2, 5, 150, 200) == [Span(1, 2, 5, TAIL)]


def test_an_utterance_over_200_words_is_its_own_window() -> None:
    # greedy glues the long utterance to what precedes and follows it
    assert _cut([160, 10, 250, 30]) == [(0, 2, 170, B), (2, 3, 250, LONG), (3, 4, 30, TAIL)]
    assert _cut([50, 250, 170]) == [(0, 1, 50, SHORT), (1, 2, 250, LONG), (2, 3, 170, B)]


def test_a_window_under_150_closes_short_when_the_next_utterance_would_pass_200() -> None:
    # greedy closes at 100 + 120 = 220 words
    assert _cut([100, 120, 90]) == [(0, 1, 100, SHORT), (1, 2, 120, SHORT), (2, 3, 90, TAIL)]
    assert _cut([100, 120, 40]) == [(0, 1, 100, SHORT), (1, 3, 160, B)]


def test_a_session_under_150_words_is_one_window() -> None:
    assert bounded_window_spans([40, 50]) == [Span(0, 2, 90, SESSION)]
    assert bounded_window_spans([]) == []


def assert_bounded(counts: Sequence[int], spans: Sequence[Span], floor: int, ceiling: int) -> None:
    """The rule restated: covering, and every window's kind matches its size and neighbours."""
    if not counts:
        assert spans == []
        return
    assert spans[0].start == 0 and spans[-1].end == len(counts)
    for before, after in pairwise(spans):
        assert before.end == after.start
    for k, span in enumerate(spans):
        assert span.words == sum(counts[span.start : span.end])
        following = counts[span.end] if span.end < len(counts) else None
        if span.kind is LONG:
            assert span.end - span.start == 1 and span.words > ceiling
            continue
        assert span.words <= ceiling
        if following is not None and span.words + following <= ceiling:
            raise AssertionError(f"window {k} could have taken the next utterance")
        if span.kind is B:
            assert span.words >= floor
        elif span.kind is SHORT:
            assert span.words < floor and following is not None
        else:
            assert span.words < floor and following is None
            assert (span.kind is SESSION) == (k == 0)


@given(st.lists(st.integers(min_value=0, max_value=260), max_size=80))
def test_bounded_spans_obey_the_rule(counts: list[int]) -> None:
    assert_bounded(counts, bounded_window_spans(counts), 150, 200)


@given(st.lists(st.integers(0, 90), max_size=40), st.integers(1, 120), st.integers(0, 200))
def test_bounded_spans_obey_the_rule_for_any_bounds(
    counts: list[int], floor: int, extra: int
) -> None:
    ceiling = floor + extra
    assert_bounded(counts, bounded_window_spans(counts, floor, ceiling), floor, ceiling)


def _dialogue(words: Sequence[int]) -> Dialogue:
    roles = [Role.AGENT, Role.USER]
    return Dialogue(
        id="annomi:9",
        corpus="annomi",
        task="MI",
        utterances=[
            Utterance(index=i, speaker=str(roles[i % 2]), role=roles[i % 2], text="w " * n)
            for i, n in enumerate(words)
        ],
    )


def test_window_ids_name_the_rule_so_items_of_either_rule_never_share_an_id() -> None:
    dialogue = _dialogue([160, 30, 30, 30])
    assert [w.id for w in make_windows(dialogue)] == ["annomi:9#w0@200", "annomi:9#w1@200"]
    assert [w.id for w in make_windows(dialogue, max_words=None)] == ["annomi:9#w0"]
    contexts = contexts_of([dialogue])
    assert [(c.id, c.kind) for c in contexts] == [("annomi:9#w0@200", B), ("annomi:9#w1@200", TAIL)]


#: Measured with ``cogwm tom contexts --json`` (and ``--max-words 0`` for the greedy rule).
BOUNDED_COUNTS = {
    "annomi": (914, 2, 2, 81, 91),
    "esconv": (3954, 0, 0, 86, 949),
    "persuasionforgood": (2339, 0, 0, 58, 685),
}
GREEDY_COUNTS = {"annomi": (848, 175), "esconv": (3259, 993), "persuasionforgood": (1757, 697)}


def test_real_window_counts_per_corpus_before_and_after(real_data_dir: Path) -> None:
    corpora_names = list(BOUNDED_COUNTS)
    for name in corpora_names:
        dialogues = corpora.load(name, real_data_dir)
        bounded = list(corpora.iter_windows(dialogues))
        kinds = Counter(w.kind for w in bounded)
        over = sum(w.word_count > 200 for w in bounded)
        got = (len(bounded), over, kinds[LONG], kinds[SHORT], kinds[TAIL])
        assert got == BOUNDED_COUNTS[name], name
        greedy = list(corpora.iter_windows(dialogues, max_words=None))
        assert (len(greedy), sum(w.word_count > 200 for w in greedy)) == GREEDY_COUNTS[name]
    assert sum(c[0] for c in BOUNDED_COUNTS.values()) == 7207
    assert len(load_contexts(["annomi"], real_data_dir)) == 914
