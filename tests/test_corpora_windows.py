"""The earlier greedy window rule (``max_words=None``): hand-worked cases, properties, real windows.

The default bounded rule is tested in test_windows_bounded.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogwm import corpora
from cogwm.corpora import Span, Window, WindowRole, make_windows, summarize, window_spans
from cogwm.schema import Dialogue, Role, Utterance

RULE = 150


def assert_window_rule(counts: Sequence[int], spans: Sequence[Span], rule: int = RULE) -> None:
    """The rule, restated independently of the implementation.

    Windows are consecutive runs of whole utterances covering the session. Every window but
    the last ends at the first utterance boundary where it reaches ``rule`` words. The last
    does the same and then carries the session's tail, which is under ``rule`` words; or, when
    the session never reaches ``rule`` words, it is the session's only window.
    """
    if not counts:
        assert spans == []
        return
    assert spans[0].start == 0 and spans[-1].end == len(counts)
    for before, after in pairwise(spans):
        assert before.end == after.start
    for span in spans:
        assert span.start < span.end
        assert span.words == sum(counts[span.start : span.end])
    for span in spans[:-1]:
        assert sum(counts[span.start : span.end]) >= rule
        assert sum(counts[span.start : span.end - 1]) < rule
    last = spans[-1]
    running, close = 0, None
    for position in range(last.start, last.end):
        running += counts[position]
        if running >= rule:
            close = position + 1
            break
    if close is None:
        assert len(spans) == 1, "a window under the rule must be the session's only window"
    else:
        assert sum(counts[close : last.end]) < rule, "a merged tail must be under the rule"


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        # 60+50+45 = 155 closes w0 at utterance 3; 100+60 = 160 closes w1; tail 20 joins w1
        ([60, 50, 45, 100, 60, 20], [Span(0, 3, 155), Span(3, 6, 180)]),
        ([100], [Span(0, 1, 100)]),  # a session under 150 words is one window
        ([10] * 10, [Span(0, 10, 100)]),
        ([150], [Span(0, 1, 150)]),  # exactly 150 closes
        ([149, 1], [Span(0, 2, 150)]),
        ([150, 149], [Span(0, 2, 299)]),  # a 149-word tail is merged, not its own window
        ([150, 150], [Span(0, 1, 150), Span(1, 2, 150)]),
        ([400, 5, 0], [Span(0, 3, 405)]),  # a long utterance; the tail (5, 0) is merged
        ([0, 0], [Span(0, 2, 0)]),
        ([], []),
    ],
)
def test_window_spans_by_hand(counts: list[int], expected: list[Span]) -> None:
    assert window_spans(counts) == expected
    assert_window_rule(counts, expected)


@given(st.lists(st.integers(min_value=0, max_value=400), max_size=80))
def test_window_spans_obey_the_rule(counts: list[int]) -> None:
    assert_window_rule(counts, window_spans(counts))


@given(st.lists(st.integers(min_value=0, max_value=60), max_size=40), st.integers(1, 300))
def test_window_spans_obey_the_rule_for_any_threshold(counts: list[int], rule: int) -> None:
    assert_window_rule(counts, window_spans(counts, rule), rule)


def _dialogue(plan: Sequence[tuple[Role, int]], dialogue_id: str = "toy:0") -> Dialogue:
    speakers = {Role.USER: "client", Role.AGENT: "therapist"}
    return Dialogue(
        id=dialogue_id,
        corpus="toy",
        task="MI",
        utterances=[
            Utterance(index=i, speaker=speakers[role], role=role, text=" ".join(["w"] * words))
            for i, (role, words) in enumerate(plan)
        ],
    )


_plans = st.lists(
    st.tuples(st.sampled_from([Role.USER, Role.AGENT]), st.integers(0, 120)),
    min_size=1,
    max_size=40,
)


@given(_plans)
@settings(max_examples=60)
def test_windows_of_synthetic_dialogues(plan: list[tuple[Role, int]]) -> None:
    dialogue = _dialogue(plan)
    windows = make_windows(dialogue, max_words=None)
    spans = [Span(w.start, w.end, w.word_count) for w in windows]
    assert_window_rule([words for _, words in plan], spans)
    assert [u for w in windows for u in w.utterances] == dialogue.utterances
    assert [w.id for w in windows] == [f"toy:0#w{k}" for k in range(len(windows))]
    assert all(w.index == k and w.dialogue_id == "toy:0" for k, w in enumerate(windows))


def test_window_record() -> None:
    dialogue = _dialogue([(Role.AGENT, 100), (Role.USER, 60), (Role.AGENT, 10)], "annomi:3")
    (window,) = make_windows(dialogue, max_words=None)
    assert window.id == "annomi:3#w0"
    assert (window.start, window.end, window.word_count) == (0, 3, 170)
    assert (window.initiator, window.recipient) == ("therapist", "client")
    assert window.role_of(window.utterances[0]) is WindowRole.INITIATOR
    assert window.role_of(window.utterances[1]) is WindowRole.RECIPIENT
    assert (window.corpus, window.task) == ("toy", "MI")
    assert Window.model_validate_json(window.model_dump_json()) == window


def test_summary_counts_windows_over_200_words() -> None:
    # windows of 155 and 290 words (the 140-word tail joins the second): one of two over 200
    dialogue = _dialogue([(Role.AGENT, 155), (Role.USER, 150), (Role.AGENT, 140)])
    summary = summarize(make_windows(dialogue, max_words=None))
    assert (summary.windows, summary.over_long, summary.share_over_long) == (2, 1, 0.5)
    assert summary.mean_words == (155 + 290) / 2
    assert summarize([]).share_over_long is None


@pytest.fixture(scope="module")
def real_window_corpora(real_data_dir: Path) -> dict[str, list[Dialogue]]:
    return {name: corpora.load(name, real_data_dir) for name in ("annomi", "esconv", "p4g")}


def test_every_real_window_obeys_the_rule(real_window_corpora: dict[str, list[Dialogue]]) -> None:
    totals: dict[str, int] = {}
    for name, dialogues in real_window_corpora.items():
        count = 0
        for dialogue in dialogues:
            windows = make_windows(dialogue, max_words=None)
            counts = [corpora.word_count(u.text) for u in dialogue.utterances]
            assert_window_rule(counts, [Span(w.start, w.end, w.word_count) for w in windows])
            assert [u for w in windows for u in w.utterances] == dialogue.utterances
            count += len(windows)
        totals[name] = count
    # the greedy pass over the three corpora gives 5,864 windows
    assert totals == {"annomi": 848, "esconv": 3259, "p4g": 1757}
    assert sum(totals.values()) == 5864


def test_real_share_of_windows_over_200_words(
    real_window_corpora: dict[str, list[Dialogue]],
) -> None:
    windows = [
        w for ds in real_window_corpora.values() for w in corpora.iter_windows(ds, max_words=None)
    ]
    summary = summarize(windows)
    assert summary.windows == 5864
    assert summary.over_long == 1865
    assert summary.share_over_long == pytest.approx(0.318, abs=0.001)
