"""Contexts and template items from human labels: hand-built sessions, then the real corpora."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from cogwm.schema import Dialogue, Role, Utterance
from cogwm.schema.labels import ESConvMeta, P4GMeta
from cogwm.tom.contexts import contexts_of, continuation_text, load_contexts, opening
from cogwm.tom.items import Attribute, Domain, Line, SpeakerRole, Task, Variant
from cogwm.tom.templates import DROP_NOT_MOST_CONSISTENT, build_template_items, donation_bin
from helpers_tom import annomi_dialogue, annomi_session, p4g_utterance, words


def _line(role: SpeakerRole, n: int, word: str) -> Line:
    return Line(role=role, speaker=role.value, text=words(n, word))


def test_opening_takes_about_60_words_and_cuts_the_last_line() -> None:
    lines = [
        _line(SpeakerRole.INITIATOR, 40, "i"),
        _line(SpeakerRole.RECIPIENT, 40, "r"),
        _line(SpeakerRole.INITIATOR, 40, "j"),
    ]
    got = opening(lines)
    # 40 initiator words, then 20 of the recipient's 40, marked cut.
    assert [line.text for line in got] == [words(40, "i"), words(20, "r") + " …"]


def test_opening_always_shows_the_recipient() -> None:
    lines = [_line(SpeakerRole.INITIATOR, 80, "i"), _line(SpeakerRole.RECIPIENT, 10, "r")]
    got = opening(lines)
    # Greedy would give 60 initiator words only; instead the initiator keeps its last 30 words
    # (60 // 2) and the recipient's 10 words follow.
    assert [line.text for line in got] == ["… " + words(30, "i"), words(10, "r")]


def _annomi_session() -> Dialogue:
    return annomi_session()


def test_contexts_have_stable_ids_and_know_the_next_window() -> None:
    contexts = contexts_of([_annomi_session()], max_words=None)
    assert [c.id for c in contexts] == ["annomi:7#w0", "annomi:7#w1", "annomi:7#w2"]
    assert [c.is_last for c in contexts] == [False, False, True]
    assert contexts[0].following == contexts[1].utterances
    assert contexts[2].opening() is None
    assert contexts[0].domain is Domain.MI and contexts[0].recipient == "Client"


def test_annomi_retrospective_gold_is_the_last_labelled_client_utterance() -> None:
    items = build_template_items(
        contexts_of([_annomi_session()], max_words=None), tasks=[Task.RETROSPECTIVE]
    )
    golds = {i.provenance.window_id: i.provenance.label_value for i in items}
    assert golds == {"annomi:7#w0": "sustain", "annomi:7#w1": "neutral", "annomi:7#w2": "change"}
    for item in items:
        assert item.attribute is Attribute.DESIRE and item.n_options == 3
        assert "smoking cessation" in item.gold
        assert item.provenance.label_field == "client_talk_type"
        assert item.id == f"tpl:{item.provenance.window_id}:retro:annomi_talk_type"


def test_annomi_prospective_distractors_follow_other_label_values() -> None:
    # w0 ends in sustain (u3) and w1 in neutral (u7); the client opens w1 with sustain talk
    # (u5) and w2 with change talk (u9): w0's gold (the opening of w1) is the most consistent
    # with its profile, w1's gold (change talk) is not, so only w0 is kept.
    talk = [None, "change", None, "sustain", None, "sustain", None, "neutral", None, "change",
            None, "change"]  # fmt: skip
    rows = [("therapist" if k % 2 == 0 else "client", words(40, f"u{k}"), talk[k])
            for k in range(12)]  # fmt: skip
    contexts = contexts_of([annomi_dialogue("annomi:7", rows)], max_words=None)
    report: Counter[str] = Counter()
    items = build_template_items(contexts, tasks=[Task.PROSPECTIVE], report=report)
    assert [i.provenance.window_id for i in items] == ["annomi:7#w0"]
    assert report == Counter({f"annomi_talk_type: {DROP_NOT_MOST_CONSISTENT}": 1})
    (w0,) = items
    open1 = continuation_text(contexts[0].opening() or [])
    open2 = continuation_text(contexts[1].opening() or [])
    assert w0.gold == open1 and set(w0.options) == {open1, open2}
    assert w0.history_turns == 0 and w0.profile is not None and "reasons to keep" in w0.profile
    assert w0.gold.startswith("Counselor: " + words(40, "u4")) and "Client: " in w0.gold
    assert w0.variant is Variant.BASE  # label-contrast distractors: not called "hard"
    # the session of the other tests: both golds tie with their distractor (0 = 0): dropped
    assert (
        build_template_items(
            contexts_of([_annomi_session()], max_words=None), tasks=[Task.PROSPECTIVE]
        )
        == []
    )


def _esconv(emotion: str, dialogue_id: str = "esconv:train:1") -> Dialogue:
    rows = [(Role.USER if k % 2 else Role.AGENT, words(40, f"e{k}")) for k in range(8)]
    return Dialogue(
        id=dialogue_id,
        corpus="esconv",
        utterances=[
            Utterance(index=k, speaker="usr" if r is Role.USER else "sys", role=r, text=t)
            for k, (r, t) in enumerate(rows)
        ],
        meta=ESConvMeta.model_validate(
            {
                "experience_type": "Current Experience",
                "emotion_type": emotion,
                "problem_type": "job crisis",
                "situation": "s",
                "survey": {},
            }
        ),
    )


def test_esconv_emotion_only_on_the_first_window_with_distinct_families() -> None:
    contexts = contexts_of([_esconv("nervousness")], max_words=None)
    assert len(contexts) == 2
    items = build_template_items(contexts)
    assert [i.provenance.window_id for i in items] == ["esconv:train:1#w0"]
    item = items[0]
    assert item.gold == "The seeker is feeling nervous." and item.n_options == 4
    distractors = [o for o in item.options if o != item.gold]
    # Nervousness is a near-synonym of anxiety and fear: neither appears; depression and
    # sadness are near-synonyms, so at most one of them does.
    assert "The seeker is feeling anxious." not in distractors
    assert "The seeker is feeling afraid." not in distractors
    assert sum(d in {"The seeker is feeling sad.", "The seeker is feeling depressed."}
               for d in distractors) <= 1  # fmt: skip
    assert build_template_items(contexts) == items  # seeded: the same every time


def _p4g(acts_by_turn: list[list[str | None]], intended: float | None) -> Dialogue:
    utterances = []
    for k, acts in enumerate(acts_by_turn):
        utterances.append(p4g_utterance(2 * k, Role.AGENT, words(45, f"er{k}"), []))
        utterances.append(p4g_utterance(2 * k + 1, Role.USER, words(45, f"ee{k}"), acts))
    participant = {"user_id": "u", "actual_donation": 0.0, "num_turns": 3}
    meta = P4GMeta.model_validate(
        {
            "annotated": True,
            "persuader": participant,
            "persuadee": {**participant, "intended_donation": intended},
        }
    )
    return Dialogue(id="persuasionforgood:d1", corpus="persuasionforgood",
                    utterances=utterances, meta=meta)  # fmt: skip


def test_p4g_last_acts_and_intended_donation() -> None:
    # 4 turns of 2 x 45 words -> w0 = turns 0-1 (180 words), w1 = turns 2-3.
    dialogue = _p4g(
        [
            ["positive-reaction-to-donation", "ask-donation-procedure"],
            ["negative-reaction-to-donation", "agree-donation"],
            ["disagree-donation-more"],  # no new decision value, but a donation act
            ["thank"],
        ],
        intended=0.5,
    )
    contexts = contexts_of([dialogue], max_words=None)
    assert len(contexts) == 2
    items = build_template_items(contexts, tasks=[Task.RETROSPECTIVE])
    by_field = {(i.provenance.window_id, i.id.rsplit(":", 1)[1]): i for i in items}
    reaction = by_field[("persuasionforgood:d1#w0", "p4g_donation_reaction")]
    assert reaction.provenance.label_value == "negative-reaction-to-donation"
    assert reaction.attribute is Attribute.DESIRE and reaction.n_options == 3
    decision = by_field[("persuasionforgood:d1#w0", "p4g_donation_decision")]
    assert decision.gold == "The persuadee intends to donate to the charity."
    # w1 holds only disagree-donation-more and thank: no reaction or decision item there ...
    assert ("persuasionforgood:d1#w1", "p4g_donation_decision") not in by_field
    # ... but disagree-donation-more is the last donation act, so B5 is placed on w1.
    intended = by_field[("persuasionforgood:d1#w1", "p4g_intended_donation")]
    assert intended.provenance.label_value == "0.5" and intended.n_options == 4
    assert intended.gold == "The persuadee intends to donate a small amount, up to $0.50."


@pytest.mark.parametrize(
    ("amount", "expected"),
    [
        (0, "nothing"),
        (0.01, "small"),
        (0.5, "small"),
        (0.51, "moderate"),
        (1.99, "moderate"),
        (2, "all"),
        (10_000, "all"),
    ],
)
def test_donation_bins(amount: float, expected: str) -> None:
    assert donation_bin(amount) == expected


def test_template_items_from_the_real_corpora(real_data_dir: Path) -> None:
    contexts = load_contexts(["annomi", "esconv", "persuasionforgood"], real_data_dir)
    assert len(contexts) == 7207  # 150-200-word windows (5,864 by the earlier greedy rule)
    assert len({c.id for c in contexts}) == len(contexts)
    items = build_template_items(contexts)
    counts = Counter((i.domain.value, i.task.value, i.attribute.value if i.attribute else "-")
                     for i in items)  # fmt: skip
    for key, n in sorted(counts.items()):
        print(f"template items {key}: {n}")
    # ESConv: one emotion item per session (1,300 sessions, first window only).
    assert counts[("ESC", "retrospective", "emotion")] == 1300
    # AnnoMI: 914 windows, 909 with a labelled client utterance (no annotator votes given here).
    assert counts[("MI", "retrospective", "desire")] == 909
    # P4G B5: 217 persuadees have an intended donation; 6 contradict the amount they state.
    assert sum(1 for i in items if i.provenance.label_field == "intended_donation") == 217 - 6
    assert counts[("MI", "prospective", "desire")] > 0
    prospective_windows = {i.provenance.window_id for i in items if i.task is Task.PROSPECTIVE}
    assert not any(c.is_last for c in contexts if c.id in prospective_windows)
