"""Clean held-out dialogues (no long user line shared with train), the samples build dropping
the unclean ones, and the known-groups hold-outs (AnnoMI's quality, FailedESConv's survey), on
hand-made dialogues."""

from __future__ import annotations

import json
from pathlib import Path

from cogwm.annotate.io import write_labelled
from cogwm.schema import Dialogue, Role, Utterance
from cogwm.schema.labels import AnnoMIMeta, ESConvMeta, ESConvSurvey
from cogwm.schema.partial import LabelledDialogue
from cogwm.simulator.build import Source, build_samples
from cogwm.simulator.clean import (
    MIN_WORDS,
    clean_dialogues,
    clean_heldout,
    long_lines,
    normalise_line,
    train_lines,
    train_of,
)
from cogwm.simulator.samples import Sample, read_samples
from cogwm.simulator.splits import annomi_quality_holdout, failed_esconv_holdout, plan_splits

EIGHT = "we could go to the cinema on friday"  # 8 words
SEVEN = "we could go to the cinema friday"


def _dialogue(
    did: str,
    user: list[str],
    agent: list[str] | None = None,
    *,
    corpus: str = "esconv",
    split: str | None = None,
    meta: AnnoMIMeta | ESConvMeta | None = None,
) -> Dialogue:
    """Agent and user lines in turn, agent first (missing agent lines are 'ok')."""
    agent = agent or []
    utterances = []
    for i, text in enumerate(user):
        said = agent[i] if i < len(agent) else "ok"
        utterances.append(Utterance(index=2 * i, speaker="b", role=Role.AGENT, text=said))
        utterances.append(Utterance(index=2 * i + 1, speaker="a", role=Role.USER, text=text))
    return Dialogue(id=did, corpus=corpus, split=split, utterances=utterances, meta=meta)


def test_normalisation_ignores_case_punctuation_and_spacing() -> None:
    assert normalise_line("  Don't   STOP,me -- now!! ") == "don t stop me now"
    # DailyDialog's tokenised spelling reads the same as the plain one.
    assert normalise_line("Don ' t stop , me now !") == normalise_line("Don't stop, me now!")
    assert normalise_line("Café_au lait") == "café au lait"


def test_the_word_limit_is_eight_after_normalisation() -> None:
    assert MIN_WORDS == 8
    assert long_lines([EIGHT, SEVEN]) == {EIGHT}
    # Punctuation is not a word: seven words and a full stop stay short.
    assert long_lines([SEVEN + " ."]) == set()
    train = [_dialogue("esconv:train:1", [EIGHT.upper() + "!", SEVEN])]
    test = [
        _dialogue("esconv:test:1", [SEVEN]),  # shares only a 7-word line
        _dialogue("esconv:test:2", [f"Well... {EIGHT}?"]),  # 9 words: not the train line
        _dialogue("esconv:test:3", [f"{EIGHT}."]),  # the train line, other case and punctuation
    ]
    cleaned = clean_dialogues(test, train)
    assert [d.id for d in cleaned.kept] == ["esconv:test:1", "esconv:test:2"]
    assert cleaned.removed == {"esconv": 1}


def test_only_the_held_out_users_lines_count_but_train_lines_of_any_role_do() -> None:
    scripted = "would you like to donate some of your task payment"
    train = [_dialogue("persuasionforgood:1", ["no thanks"], [scripted])]
    agent_repeats = _dialogue(
        "persuasionforgood:2", ["maybe"], [scripted], corpus="persuasionforgood"
    )
    user_repeats = _dialogue("persuasionforgood:3", [scripted], corpus="persuasionforgood")
    cleaned = clean_dialogues([agent_repeats, user_repeats], train)
    assert [d.id for d in cleaned.kept] == ["persuasionforgood:2"]
    assert cleaned.removed == {"persuasionforgood": 1}


def test_in_dailydialog_both_speakers_are_users_and_readings_count_once() -> None:
    train = [_dialogue("dailydialog:train:1", ["sure"], [EIGHT], corpus="dailydialog")]
    # The shared line is the other speaker's in reading #A and the user's in reading #B.
    readings = [
        _dialogue("dailydialog:test:4#A", ["fine"], [EIGHT], corpus="dailydialog"),
        _dialogue("dailydialog:test:4#B", [EIGHT], ["fine"], corpus="dailydialog"),
        _dialogue("dailydialog:test:5#A", ["hello"], corpus="dailydialog"),
    ]
    cleaned = clean_dialogues(readings, train)
    assert [d.id for d in cleaned.kept] == ["dailydialog:test:5#A"]
    assert cleaned.removed == {"dailydialog": 1}  # one dialogue, two readings
    # One reading alone (e.g. under --limit) still counts the other speaker's line.
    assert clean_dialogues(readings[:1], train).kept == []


def test_a_turn_of_short_utterances_is_one_line() -> None:
    # A user turn made of two short rows is what a sample's target holds.
    first, second = "we could go to the", "cinema on friday"
    user = [
        Utterance(index=0, speaker="b", role=Role.AGENT, text="hi"),
        Utterance(index=1, speaker="a", role=Role.USER, text=first),
        Utterance(index=2, speaker="a", role=Role.USER, text=second),
    ]
    test = Dialogue(id="esconv:test:9", corpus="esconv", utterances=user)
    assert EIGHT in train_lines([test]).lines
    assert clean_dialogues([test], [_dialogue("esconv:train:2", [EIGHT])]).removed == {"esconv": 1}


def test_the_train_side_keeps_the_twins_the_split_rule_drops() -> None:
    # Catches: cleaning against train after twins were dropped, which would call a test
    # dialogue clean although its exact text is in the corpus's train split.
    text = [EIGHT, "thanks"]
    dialogues = [
        _dialogue("esconv:train:1", text, split="train"),
        _dialogue("esconv:test:1", text, split="test"),
        _dialogue("esconv:train:2", ["other"], split="train"),
    ]
    plan = plan_splits("esconv", dialogues, seed=0)
    assert plan.split_of("esconv:train:1") is None  # dropped as the test dialogue's twin
    train = train_of("esconv", dialogues, seed=0)
    assert {d.id for d in train} == {"esconv:train:1", "esconv:train:2"}
    assert clean_dialogues([dialogues[1]], train).removed == {"esconv": 1}


def test_an_exact_twin_of_a_train_dialogue_is_unclean_even_with_short_lines() -> None:
    short = ["Hi , how are you ?", "fine"]
    train = [_dialogue("dailydialog:train:1", short, corpus="dailydialog")]
    twin = _dialogue("dailydialog:test:1#A", ["hi how are you", "Fine!"], corpus="dailydialog")
    other = _dialogue("dailydialog:test:2#A", ["hi how are you"], corpus="dailydialog")
    cleaned = clean_dialogues([twin, other], train)
    assert [d.id for d in cleaned.kept] == ["dailydialog:test:2#A"]


def test_clean_heldout_keeps_any_item_type_in_order() -> None:
    items = [("x", _dialogue("esconv:test:1", ["hi"])), ("y", _dialogue("esconv:test:2", [EIGHT]))]
    train = train_lines([_dialogue("esconv:train:1", ["ok", EIGHT])])
    cleaned = clean_heldout(items, train, lambda item: item[1])
    assert [name for name, _ in cleaned.kept] == ["x"]
    assert cleaned.removed_from("esconv") == 1 and cleaned.removed_from("annomi") == 0


# ------------------------------------------------------------------------ AnnoMI quality hold-out


def _session(number: int, quality: str) -> Dialogue:
    meta = AnnoMIMeta(
        transcript_id=number, mi_quality=quality, video_title="t", video_url="u", topic="x"
    )
    return _dialogue(f"annomi:{number}", [f"client line {number}"], corpus="annomi", meta=meta)


def _sessions() -> list[Dialogue]:
    return [_session(i, "low" if i < 7 else "high") for i in range(60)]


def test_the_quality_holdout_is_half_the_low_sessions_and_as_many_high_ones() -> None:
    sessions = _sessions()
    held = annomi_quality_holdout(sessions, seed=0)
    low = {f"annomi:{i}" for i in range(7)}
    assert len(held) == 8 and len(set(held) & low) == 4  # 7 low: half rounded up
    assert annomi_quality_holdout(list(reversed(sessions)), seed=0) == held  # order-free
    assert annomi_quality_holdout(sessions, seed=1) != held
    assert annomi_quality_holdout([_dialogue("annomi:1", ["x"], corpus="annomi")], 0) == []


def test_plan_splits_puts_the_quality_holdout_in_test() -> None:
    # Catches: a hold-out computed but not enforced, so a seeded split trains on it.
    sessions = _sessions()
    plan = plan_splits("annomi", sessions, seed=0)
    held = annomi_quality_holdout(sessions, seed=0)
    assert plan.held_out == held
    assert all(plan.split_of(b) == "test" for b in held)
    bare = plan_splits("annomi", sessions, seed=0, held_out=[])
    assert any(bare.split_of(b) == "train" for b in held)  # the seeded split alone trains on some
    # Other dialogues keep their seeded split.
    assert all(plan.split_of(b) == bare.split_of(b) for b in bare.splits if b not in held)


# --------------------------------------------------------------- FailedESConv survey hold-out


def _failed(number: int, initial: int | None, final: int | None) -> Dialogue:
    survey = ESConvSurvey(initial_emotion_intensity=initial, final_emotion_intensity=final)
    meta = ESConvMeta(
        experience_type="x", emotion_type="sadness", problem_type="x", situation="x", survey=survey
    )
    return _dialogue(
        f"failed_esconv:{number}", [f"seeker line {number}"], corpus="failed_esconv", meta=meta
    )


#: 7 improved (5 -> 2), 13 not improved (3 -> 4 or 3 -> 3), 5 without a final intensity.
_IMPROVED = {f"failed_esconv:{i}" for i in range(7)}
_UNKNOWN = {f"failed_esconv:{i}" for i in range(20, 25)}


def _failed_dialogues() -> list[Dialogue]:
    return [
        _failed(i, 5, 2)
        if i < 7
        else _failed(i, 3, 4 if i % 2 else 3)
        if i < 20
        else _failed(i, 4, None)
        for i in range(25)
    ]


def test_the_failed_esconv_holdout_is_half_of_each_survey_group_rounded_up() -> None:
    dialogues = _failed_dialogues()
    held = failed_esconv_holdout(dialogues, seed=0)
    assert len(set(held) & _IMPROVED) == 4  # half of 7, rounded up
    assert len(set(held) - _IMPROVED - _UNKNOWN) == 7  # half of 13
    assert len(set(held) & _UNKNOWN) == 3  # half of 5
    assert len(held) == 14 and held == sorted(set(held))
    assert failed_esconv_holdout(list(reversed(dialogues)), seed=0) == held  # order-free
    assert failed_esconv_holdout(dialogues, seed=1) != held  # seeded
    # Readings of one dialogue count once; dialogues without ESConv metadata are in no group.
    readings = [d.model_copy(update={"id": f"{d.id}#{r}"}) for d in dialogues for r in "AB"]
    assert failed_esconv_holdout(readings, seed=0) == held
    assert (
        failed_esconv_holdout([_dialogue("failed_esconv:1", ["x"], corpus="failed_esconv")], 0)
        == []
    )


def test_plan_splits_puts_the_failed_esconv_holdout_in_test() -> None:
    # Catches: a hold-out computed but not enforced for FailedESConv, so the samples train on it.
    dialogues = _failed_dialogues()
    plan = plan_splits("failed_esconv", dialogues, seed=0)
    held = failed_esconv_holdout(dialogues, seed=0)
    assert plan.held_out == held
    assert all(plan.split_of(b) == "test" for b in held)
    bare = plan_splits("failed_esconv", dialogues, seed=0, held_out=[])
    assert any(bare.split_of(b) == "train" for b in held)  # the seeded split alone trains on some
    assert all(plan.split_of(b) == bare.split_of(b) for b in bare.splits if b not in held)
    # Another corpus with the same metadata has no such hold-out.
    assert plan_splits("esconv", dialogues, seed=0).held_out == []


# ------------------------------------------------------------------------ samples build


def _labelled(dialogue: Dialogue) -> LabelledDialogue:
    return LabelledDialogue(dialogue=dialogue, states={})


def test_build_drops_unclean_held_out_dialogues_and_counts_them(tmp_path: Path) -> None:
    dialogues = [
        _dialogue("esconv:train:1", [EIGHT, "yes"], split="train"),
        _dialogue("esconv:train:2", ["fine", "no"], split="train"),
        _dialogue("esconv:validation:1", ["hm", EIGHT], split="validation"),
        _dialogue("esconv:validation:2", ["hm", "ok then"], split="validation"),
        _dialogue("esconv:test:1", [f"{EIGHT}!"], split="test"),
        _dialogue("esconv:test:2", ["fine"], [EIGHT], split="test"),  # agent line: clean
        _dialogue("esconv:test:3", ["fine", SEVEN], split="test"),
    ]
    path = tmp_path / "ann.jsonl"
    write_labelled(path, [_labelled(d) for d in dialogues])
    out = tmp_path / "out"
    manifest = build_samples(
        out, [Source("annotations", str(path))], count_tokens=lambda _: {"measured": 0}
    )
    written: dict[str, set[str]] = {}
    for split in ("train", "val", "test"):
        samples: list[Sample] = list(read_samples(out / f"{split}.jsonl"))
        written[split] = {s.dialogue_id for s in samples}
    assert written["val"] == {"esconv:validation:2"}
    assert written["test"] == {"esconv:test:2", "esconv:test:3"}
    assert written["train"] == {"esconv:train:1", "esconv:train:2"}
    esconv = manifest["corpora"]["esconv"]
    assert esconv["dropped_as_unclean"] == {"val": 1, "test": 1}
    assert esconv["clean_reference"].startswith("the build's own train dialogues")
    assert esconv["dialogues"] == {"train": 2, "val": 1, "test": 2}
    assert "8+ words" in manifest["clean_rule"]
    assert json.loads((out / "manifest.json").read_text())["corpora"]["esconv"][
        "dropped_as_unclean"
    ] == {"val": 1, "test": 1}


def test_build_puts_the_annomi_quality_holdout_in_test(tmp_path: Path) -> None:
    sessions = _sessions()
    path = tmp_path / "ann.jsonl"
    write_labelled(path, [_labelled(d) for d in sessions])
    out = tmp_path / "out"
    manifest = build_samples(
        out, [Source("annotations", str(path))], count_tokens=lambda _: {"measured": 0}
    )
    held = annomi_quality_holdout(sessions, seed=0)
    test = {s.dialogue_id for s in read_samples(out / "test.jsonl")}
    assert set(held) <= test
    assert manifest["corpora"]["annomi"]["held_out"] == held
