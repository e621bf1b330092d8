"""``cogwm validate``'s responsiveness checks: counterfactual agent turns and known groups.

Three fake simulators: one copies the state its prompt shows (it must fail both checks at 0.5),
one reads the last agent turn by a few words (it must pass the counterfactual check), and one
answers by the seed alone (the same seed in every condition, so it ties every pair).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import pytest

from cogwm import models
from cogwm.arena import scripted
from cogwm.errors import InputError
from cogwm.models import Message, Sampling, register_fake, unregister_fake
from cogwm.schema import Dialogue, Role, Utterance
from cogwm.schema.labels import AnnoMIMeta
from cogwm.simulator.splits import annomi_quality_holdout
from cogwm.stats.bootstrap import Settings
from cogwm.validate import Card, build_card
from cogwm.validate.counterfactual import (
    CONDITIONS,
    TASK_CORPORA,
    history_sets,
    load_bank,
    ordering_score,
)
from cogwm.validate.groups import (
    RULE,
    delta_check,
    esconv_groups,
    trivial_scores,
)
from cogwm.validate.items import Heldout, esconv_populations
from helpers_validate import LOW_QUALITY, write_corpora


def _annomi(tid: int, quality: str) -> Dialogue:
    return Dialogue(
        id=f"annomi:{tid}",
        corpus="annomi",
        utterances=[Utterance(index=0, speaker="client", role=Role.USER, text="Hi.")],
        meta=AnnoMIMeta(
            transcript_id=tid, mi_quality=quality, video_title="", video_url="", topic=""
        ),
    )


def _split_seed() -> int:
    """A split seed whose AnnoMI quality hold-out takes transcript 1 (high quality, two client
    turns) beside transcript 16 (low); transcript 0 has one client turn, too few for a change."""
    sessions = [_annomi(0, "high"), _annomi(1, "high"), _annomi(16, "low")]
    return next(s for s in range(100) if "annomi:1" in annomi_quality_holdout(sessions, s))


#: Every dialogue, with a split seed that gives the AnnoMI known groups one session each.
ALL = Heldout("all", seed=_split_seed())


# --- corpora: the validate helpers' DailyDialog and AnnoMI, hand-written ESConv, P4G fixture ------


def _esconv_row(emotion: str, start: int, end: int, turns: list[str]) -> dict[str, Any]:
    dialog = []
    for k, text in enumerate(turns):
        if k % 2 == 0:
            dialog.append({"text": text, "speaker": "sys", "strategy": "Question"})
        else:
            dialog.append({"text": text, "speaker": "usr"})
    return {
        "experience_type": "Current Experience",
        "emotion_type": emotion,
        "problem_type": "job crisis",
        "situation": "Things are hard at work.",
        "survey_score": {
            "seeker": {
                "initial_emotion_intensity": str(start),
                "empathy": "4",
                "relevance": "4",
                "final_emotion_intensity": str(end),
            },
            "supporter": {"relevance": "4"},
        },
        "dialog": dialog,
        "seeker_question1": "",
        "seeker_question2": "",
        "supporter_question1": "",
        "supporter_question2": "",
    }


_SEEKER_TURNS = [
    ["Hello, what brings you here?", "I lost my job last week.", "I am sorry. How do you feel?",
     "Worried about the rent.", "Have you looked for help?", "Not yet, I feel stuck.",
     "What could you try first?", "Maybe call my sister. Thanks."],
    ["Hi there.", "My partner left me.", "That must hurt.", "It does, every day.",
     "Who do you talk to?", "Nobody really.", "Could a friend listen?", "I will ask one."],
    ["Good evening.", "I failed my exam.", "That is disappointing.", "I studied so hard.",
     "What happened on the day?", "I panicked.", "Is there a retake?", "Yes, next month."],
]  # fmt: skip


def _failed_record(start: int, end: int, turns: list[str]) -> dict[str, Any]:
    dialog = [
        {
            "speaker": "listener" if k % 2 == 0 else "speaker",
            "annotation": {"strategy": "Question"} if k % 2 == 0 else {},
            "content": text,
        }
        for k, text in enumerate(turns)
    ]
    return {
        "experience_type": "Current Experience",
        "emotion_type": "anxiety",
        "problem_type": "job crisis",
        "situation": "Work is hard.",
        "survey_score": {
            "seeker": {
                "initial_emotion_intensity": str(start),
                "final_emotion_intensity": str(end),
            },
            "supporter": {},
        },
        "dialog": dialog,
    }


def write_check_corpora(root: Path) -> Path:
    """Every corpus the checks read, small and hand-written."""
    write_corpora(root, low_quality=LOW_QUALITY)
    splits = root / "esconv" / "hf_splits"
    splits.mkdir(parents=True)
    test = [
        _esconv_row(emotion, 4, 2, turns)
        for emotion in ("anxiety", "sadness")
        for turns in _SEEKER_TURNS
    ]
    (splits / "test.json").write_text("\n".join(json.dumps(r) for r in test) + "\n")
    # Train and validation hold other dialogues: a test dialogue whose text is in train is not a
    # clean held-out item, and would leave the checks.
    other = [["Hi.", "I moved to a new city.", "How is it going?", "Lonely so far."]]
    (splits / "train.json").write_text(json.dumps(_esconv_row("anxiety", 4, 2, other[0])) + "\n")
    (splits / "valid.json").write_text(json.dumps(_esconv_row("sadness", 4, 2, other[0])) + "\n")
    failed = [_failed_record(3, end, turns) for end in (3, 4) for turns in _SEEKER_TURNS]
    failed.append(_failed_record(4, 2, _SEEKER_TURNS[0]))  # improved: in no group
    (root / "esconv" / "FailedESConv.json").write_text(json.dumps(failed))
    _write_p4g(root / "persuasionforgood")
    return root


#: (persuader, persuader act, persuadee, persuadee act) per turn; the third persuadee turn agrees
#: or disagrees.
_P4G_TURNS = [
    ("Hello, how are you today?", "greeting", "Hi, I am good.", "greeting"),
    ("Would you give to Save the Children?", "proposition-of-donation", "Maybe, tell me more.",
     "ask-org-info"),
    ("They help children in need.", "logical-appeal", "{answer}", "{act}"),
    ("Thanks for your time.", "thank", "Bye now.", "closing"),
]  # fmt: skip


def _write_p4g(folder: Path) -> None:
    """Four act-annotated dialogues, two that agree to donate and two that refuse."""
    import csv

    import openpyxl

    (folder / "AnnotatedData").mkdir(parents=True)
    (folder / "FullData").mkdir()
    annotated = openpyxl.Workbook()
    sheet = annotated.active
    sheet.append([None, "B2", "B4", "Turn", "Unit", "er_label_1", "ee_label_1", "er_label_2",
                  "ee_label_2", "neg", "neu", "pos"])  # fmt: skip
    info = openpyxl.Workbook()
    info.active.append(["B2", "B3", "B4", "B5", "B6", "B7"])
    full_rows: list[list[object]] = []
    people = [["B2", "B3", "B4", "B6", "B7", "extrovert.x", "agreeable.x", "conscientious.x",
               "neurotic.x", "open.x", "care.x", "rational.x", "age.x", "sex.x"]]  # fmt: skip
    for k, agrees in enumerate((True, False, True, False)):
        did = f"20180101-00000{k}_{k}_live"
        answer, act = ("Okay, I will donate $1.", "agree-donation") if agrees else (
            "No, I will not donate.", "disagree-donation")  # fmt: skip
        for turn, (er, er_act, ee, ee_act) in enumerate(_P4G_TURNS):
            ee, ee_act = ee.format(answer=answer), ee_act.format(act=act)
            sheet.append([sheet.max_row - 1, did, 0, turn, er, er_act, None, None, None, 0, 1, 0])
            sheet.append([sheet.max_row - 1, did, 1, turn, ee, None, ee_act, None, None, None,
                          None, None])  # fmt: skip
            full_rows += [
                [len(full_rows), er, turn, 0, did],
                [len(full_rows) + 1, ee, turn, 1, did],
            ]
        info.active.append([did, f"user_{2 * k}", 0, None, 0, 3])
        info.active.append([did, f"user_{2 * k + 1}", 1, 1 if agrees else 0, 0.5 if agrees else 0,
                            None])  # fmt: skip
        for role in (0, 1):
            people.append([did, f"user_{2 * k + role}", role, 0.5 * agrees * role, 3, 3.2, 4.0,
                           3.6, 2.0, 4.4, 5.0, 4.0, 30.0, "Female"])  # fmt: skip
    annotated.save(folder / "AnnotatedData" / "300_dialog.xlsx")
    info.save(folder / "AnnotatedData" / "300_info.xlsx")
    with (folder / "FullData" / "full_dialog.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows([["", "Unit", "Turn", "B4", "B2"], *full_rows])
    with (folder / "FullData" / "full_info.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows(people)


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    return write_check_corpora(tmp_path / "data")


# --- fake simulators ---------------------------------------------------------------------------


def _prompt(messages: list[Message]) -> str:
    return next(m.content for m in messages if m.role == "user")


def _answer(state: dict[str, Any], messages: list[Message]) -> str:
    if "your reply" in _prompt(messages):
        return json.dumps({**state, "utterance": "Okay.", "leave": False})
    return json.dumps(state)


def _shown_state(prompt: str) -> dict[str, Any]:
    """The state after 'Your state before this:' as an answer (scored items only)."""
    found = re.search(r"^Your state before this: (.*)$", prompt, flags=re.MULTILINE)
    state: dict[str, Any] = {
        "emotion": {"label": "confusion", "intensity": 1},
        "beliefs": [],
        "desires": [],
        "intentions": [],
    }
    if found is None:
        return state
    for part in found.group(1).split(" | "):
        if part.startswith("emotion "):
            _, label, intensity = part.split(" ")
            state["emotion"] = {"label": label, "intensity": int(intensity)}
            continue
        name, _, listed = part.partition(": ")
        state[name] = [
            {"text": m.group(1), "score": float(m.group(2))}
            for m in re.finditer(r"([^;]+?) \(([-\d.]+)\)", listed)
        ]
    return state


def copy_machine(messages: list[Message]) -> str:
    return _answer(_shown_state(_prompt(messages)), messages)


#: A few words that give away how the agent treats the user.
HOSTILE = ("pathetic", "stupid", "selfish", "shame", "useless", "fault", "weak", "greedy",
           "whining", "grow up", "ridiculous", "wasting", "shut up", "problem here", "stingy",
           "heartless", "disgusting", "terrible", "excuses", "lying", "hopeless", "crying",
           "killing", "wrong with you", "fail", "mess", "pretend", "waste")  # fmt: skip
SUPPORTIVE = ("sorry", "thank", "understand", "glad", "you're feeling", "hear you", "with you",
              "help", "caring", "kindness", "appreciate", "respect", "gentle", "together",
              "makes sense", "strength", "expert", "worth", "changes before", "tell me more",
              "ready", "doable", "happy to", "matters to", "listening", "join",
              "support")  # fmt: skip


def _last_agent_turn(prompt: str) -> str:
    history = prompt.split("Conversation so far:\n", 1)[1]
    lines = [line for line in history.splitlines() if re.match(r"^[A-Z][a-z]+: ", line)]
    agent = [line for line in lines if not line.startswith("You: ")]
    return agent[-1].split(": ", 1)[1].lower() if agent else ""


def turn_reader(messages: list[Message]) -> str:
    text = _last_agent_turn(_prompt(messages))
    if any(word in text for word in HOSTILE):
        label, intensity = "anger", 3
    elif any(word in text for word in SUPPORTIVE):
        label, intensity = "hope", 2
    else:
        label, intensity = "confusion", 1
    state = {"emotion": {"label": label, "intensity": intensity}, "beliefs": [], "desires": [],
             "intentions": []}  # fmt: skip
    return _answer(state, messages)


def seed_teller(messages: list[Message], sampling: Sampling) -> str:
    intensity = 1 + (sampling.seed or 0) % 3
    state = {"emotion": {"label": "hope", "intensity": intensity}, "beliefs": [], "desires": [],
             "intentions": []}  # fmt: skip
    return _answer(state, messages)


@pytest.fixture()
def fakes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from cogwm.schema import lexicon

    monkeypatch.setattr(lexicon, "_ACTIVE", ContextVar("lexicon", default=lexicon.DEFAULT_LEXICON))
    register_fake("checks-copy", copy_machine)
    register_fake("checks-reader", turn_reader)
    register_fake("checks-seed", seed_teller)
    try:
        yield
    finally:
        for name in ("checks-copy", "checks-reader", "checks-seed"):
            unregister_fake(name)


def _card(name: str, data_dir: Path, parts: list[str], **kwargs: Any) -> Card:
    options: dict[str, Any] = {"resamples": 200, "progress": False, "heldout": ALL, **kwargs}
    return build_card(
        models.load(f"fake:{name}"), address=f"fake:{name}", data_dir=data_dir, parts=parts,
        **options,
    )  # fmt: skip


def _checks(card: Card) -> dict[str, Any]:
    return {c.key: c for c in card.checks}


# --- the bank ----------------------------------------------------------------------------------


def test_bank_loads_with_every_task_and_condition() -> None:
    bank = load_bank()
    assert bank.version
    assert set(bank.lines) == set(TASK_CORPORA)
    for task in TASK_CORPORA:
        for condition in CONDITIONS:
            lines = bank.lines[task][condition]
            assert 8 <= len(lines) <= 12
            assert len(set(lines)) == len(lines)


def _normalised(line: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", line.lower()).strip()


def test_bank_shares_no_line_with_the_scripted_agents() -> None:
    script_lines = {
        _normalised(line)
        for _, cls in inspect.getmembers(scripted, inspect.isclass)
        for line in getattr(cls, "lines", ())
        if isinstance(line, str)
    }
    assert script_lines  # the scripts were found
    bank = load_bank()
    bank_lines = {
        _normalised(line) for by_condition in bank.lines.values()
        for lines in by_condition.values() for line in lines
    }  # fmt: skip
    assert not bank_lines & script_lines


def test_a_bank_without_a_condition_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bank.json"
    path.write_text(json.dumps({"version": "x", "tasks": {"ESC": {"supportive": ["Hi."]}}}))
    with pytest.raises(InputError, match=r"tasks\.ESC\.dismissive"):
        load_bank(path)


def test_ordering_score_counts_ties_as_half() -> None:
    assert ordering_score({"supportive": 3, "dismissive": 2, "hostile": 1}) == 1.0
    assert ordering_score({"supportive": 1, "dismissive": 1, "hostile": 1}) == 0.5
    assert ordering_score({"supportive": 1, "dismissive": 2, "hostile": 3}) == 0.0


# --- histories ---------------------------------------------------------------------------------


def test_histories_end_with_an_agent_turn_and_come_from_held_out_dialogues(
    data_dir: Path,
) -> None:
    sets = {s.task: s for s in history_sets(data_dir, ALL, None, 0)}
    assert set(sets) == {"ESC", "PD", "MI"}
    for history_set in sets.values():
        assert history_set.histories
        for item in history_set.histories:
            assert item.inp.history[-1][0] == "agent"
            assert item.dialogue_id.startswith(f"{history_set.corpus}:")
    # ESConv: official test only (FailedESConv is the known groups' negative group)
    assert all(":test:" in i.dialogue_id for i in sets["ESC"].histories)
    limited = {s.task: s for s in history_sets(data_dir, ALL, 2, 0)}
    assert all(len(s.histories) == 2 for s in limited.values())


# --- the checks on cards -----------------------------------------------------------------------


def test_copy_machine_fails_both_checks_at_one_half(fakes: None, data_dir: Path) -> None:
    card = _card("checks-copy", data_dir, ["counterfactual", "known_groups"])
    checks = _checks(card)
    assert set(checks) == {
        "counterfactual.ESC.valence_ordering", "counterfactual.ESC.composite_ordering",
        "counterfactual.PD.valence_ordering", "counterfactual.PD.composite_ordering",
        "counterfactual.MI.valence_ordering", "counterfactual.MI.composite_ordering",
        "known_groups.ESC.composite_delta_auroc", "known_groups.ESC.valence_delta_auroc",
        "known_groups.MI.composite_delta_auroc",
    }  # fmt: skip
    for check in checks.values():
        assert check.value == pytest.approx(0.5), check.key
        assert check.copy_machine == 0.5
        assert check.n > 0 and check.n_failed == 0
    for key, check in checks.items():
        if key.startswith("counterfactual") or key.startswith("known_groups.ESC"):
            assert check.passed is False, key
    assert checks["known_groups.MI.composite_delta_auroc"].passed is None
    assert "not gating" in checks["known_groups.MI.composite_delta_auroc"].note
    assert card.versions["counterfactual_bank"] == load_bank().version
    assert {p.name for p in card.parts} == {
        "counterfactual.ESC", "counterfactual.PD", "counterfactual.MI",
        "known_groups.ESC", "known_groups.MI",
    }  # fmt: skip


def test_a_simulator_that_reads_the_agent_turn_passes(fakes: None, data_dir: Path) -> None:
    card = _card("checks-reader", data_dir, ["counterfactual"])
    for check in card.checks:
        assert check.value == pytest.approx(1.0), check.key
        assert check.passed is True, check.key
        assert check.ci_low is not None and check.ci_low > 0.5


def test_the_same_seed_in_every_condition(fakes: None, data_dir: Path) -> None:
    for seed in (0, 1, 2):
        card = _card("checks-seed", data_dir, ["counterfactual"], seed=seed)
        assert [c.value for c in card.checks] == [pytest.approx(0.5)] * len(card.checks)


def test_failed_calls_are_left_out_and_counted(fakes: None, data_dir: Path) -> None:
    def flaky(messages: list[Message]) -> str:
        # Fails on the hostile turn of the ESConv histories about a lost job (2 dialogues).
        prompt = _prompt(messages)
        if "lost my job" in prompt and any(w in _last_agent_turn(prompt) for w in HOSTILE):
            return "not json"
        return turn_reader(messages)

    register_fake("checks-flaky", flaky)
    try:
        card = _card("checks-flaky", data_dir, ["counterfactual"])
    finally:
        unregister_fake("checks-flaky")
    for check in card.checks:
        expected_failed = 4 if check.task == "ESC" else 0  # two histories in each dialogue
        assert check.n_failed == expected_failed, check.key
        # the histories that answered still order perfectly: a failure never scores as 0
        assert check.value == pytest.approx(1.0), check.key
    esc = next(c for c in card.checks if c.task == "ESC")
    assert esc.n == 8
    assert "4 histories with a failed or unscorable call left out" in esc.note


def test_limit_caps_histories_and_group_dialogues(fakes: None, data_dir: Path) -> None:
    card = _card("checks-copy", data_dir, ["counterfactual", "known_groups"], limit=2)
    parts = {p.name: p for p in card.parts}
    for task in ("ESC", "PD", "MI"):
        assert parts[f"counterfactual.{task}"].n_items == 2
        assert parts[f"counterfactual.{task}"].n_calls == 8
    assert parts["known_groups.ESC"].n_items == 4  # two per group
    assert parts["known_groups.ESC"].n_calls == 8


def test_checks_have_a_default_cap_without_limit(
    fakes: None, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogwm.validate import run

    assert run.CHECK_DEFAULT_LIMITS == {"counterfactual": 120, "known_groups": None}
    monkeypatch.setitem(run.CHECK_DEFAULT_LIMITS, "counterfactual", 2)
    card = _card("checks-copy", data_dir, ["counterfactual", "known_groups"])
    parts = {p.name: p for p in card.parts}
    for task in ("ESC", "PD", "MI"):
        assert parts[f"counterfactual.{task}"].n_items == 2
        assert parts[f"counterfactual.{task}"].n_population > 2
    assert parts["known_groups.ESC"].n_items == 12  # every dialogue
    card = _card("checks-copy", data_dir, ["counterfactual"], limit=3)  # --limit wins
    assert {p.n_items for p in card.parts} == {3}


# --- known groups ------------------------------------------------------------------------------


def test_esconv_groups_keep_failed_dialogues_without_improvement(data_dir: Path) -> None:
    groups = esconv_groups(data_dir, ALL)
    positives = [d for d in groups.dialogues if d.positive]
    negatives = [d for d in groups.dialogues if not d.positive]
    assert len(positives) == 6 and len(negatives) == 6  # the improved failed one is left out
    for dialogue in groups.dialogues:
        first, last = dialogue.first.inp, dialogue.last.inp
        # the first turn is shown the human-known initial state, as the last turn is
        assert first.previous_state is not None
        assert first.previous_state == last.initial_state == last.previous_state
        assert dialogue.first.turn_index < dialogue.last.turn_index


def test_the_esconv_part_and_the_known_groups_define_failed_alike(data_dir: Path) -> None:
    _, end = esconv_populations(data_dir, ALL)
    failed = {i.dialogue_id for i in end.items if i.gold == "failed"}
    negatives = {d.id for d in esconv_groups(data_dir, ALL).dialogues if not d.positive}
    assert len(failed) == 6  # the improved FailedESConv dialogue is in neither
    assert failed == negatives


_WARM = ("I am so glad you reached out, that is wonderful.",
         "Thank you for sharing, I really appreciate your courage.",
         "That sounds good, I am happy for you.")  # fmt: skip
_PLAIN = ("What happened after that?", "Tell me about your week.", "When did this start?")


def _tone_turns(k: int, warm: bool, better: bool) -> list[str]:
    """Eight turns, the agent's warm or plain; the seeker's last line says whether they feel
    better (what a simulator reading the seeker would see)."""
    agent = [(_WARM if warm else _PLAIN)[(k + j) % 3] for j in range(4)]
    seeker = [f"I have been struggling with my job for {k + 2} long weeks now.",
              f"It started on day {k}.", "I do not know what to do.",
              "I feel better now, thanks." if better else "I still feel the same."]  # fmt: skip
    return [line for pair in zip(agent, seeker, strict=True) for line in pair]


@pytest.fixture()
def tone_dir(data_dir: Path) -> Path:
    """Twelve ESConv test dialogues (ten with a warm agent) against twelve unimproved
    FailedESConv ones (two with a warm agent): the agent's tone separates the groups well, the
    seeker's last line perfectly. ESConv's train split holds the first test dialogue's text."""
    splits = data_dir / "esconv" / "hf_splits"
    test = [_esconv_row("anxiety", 4, 2, _tone_turns(k, k < 10, True)) for k in range(12)]
    (splits / "test.json").write_text("\n".join(json.dumps(r) for r in test) + "\n")
    (splits / "train.json").write_text(json.dumps(test[0]) + "\n")
    failed = [_failed_record(3, 4, _tone_turns(20 + k, k >= 10, False)) for k in range(12)]
    (data_dir / "esconv" / "FailedESConv.json").write_text(json.dumps(failed))
    return data_dir


def test_known_groups_leave_unclean_dialogues_out_and_say_so(tone_dir: Path) -> None:
    groups = esconv_groups(tone_dir, ALL)
    assert groups.n_unclean == 1
    assert sum(d.positive for d in groups.dialogues) == 11  # the one train holds is left out
    assert "esconv:test:0" not in {d.id for d in groups.dialogues}
    assert "clean: 11 of 12 dialogues (1 left out" in groups.split
    check = delta_check(
        groups, "composite_delta_auroc", [0.0] * len(groups.dialogues),
        trivial_scores(groups.dialogues), Settings(resamples=50, seed=0),
    )  # fmt: skip
    assert "n_unclean 1" in check.note


def test_an_echo_of_the_agents_tone_fails_the_known_groups_gate(tone_dir: Path) -> None:
    groups = esconv_groups(tone_dir, ALL)
    trivial = trivial_scores(groups.dialogues)
    settings = Settings(resamples=500, seed=0)
    echo = delta_check(
        groups, "composite_delta_auroc", trivial["vader_agent_turns"], trivial, settings
    )
    # The AUROC rule alone would pass it ...
    assert echo.value is not None and echo.value >= 0.65
    assert echo.ci_low is not None and echo.ci_low > 0.5
    assert echo.baselines["vader_agent_turns"] == pytest.approx(echo.value)
    # ... but it is no better than the rule it echoes.
    assert echo.baselines["gate_vs_best"] == pytest.approx(0.0)
    assert echo.passed is False
    assert echo.rule == RULE and "vader_agent_turns" in echo.note


def test_a_reader_of_the_seeker_beats_the_agents_tone_and_passes(tone_dir: Path) -> None:
    groups = esconv_groups(tone_dir, ALL)
    trivial = trivial_scores(groups.dialogues)
    deltas: list[float | None] = [
        1.0 if "better" in d.last.utterance else 0.0 for d in groups.dialogues
    ]
    check = delta_check(
        groups, "composite_delta_auroc", deltas, trivial, Settings(resamples=500, seed=0)
    )
    assert check.value == pytest.approx(1.0)
    gate, low = check.baselines["gate_vs_best"], check.baselines["gate_ci_low"]
    assert gate is not None and gate > 0
    assert low is not None and low > 0
    assert check.passed is True


def test_annomi_quality_holdout_is_stratified_and_seeded() -> None:
    dialogues = [_annomi(i, "low" if i < 5 else "high") for i in range(30)]
    kept = set(annomi_quality_holdout(dialogues, seed=0))
    low = {f"annomi:{i}" for i in range(5)}
    assert len(kept & low) == 3  # half of 5, rounded up
    assert len(kept - low) == 3
    assert set(annomi_quality_holdout(reversed(dialogues), seed=0)) == kept
    assert set(annomi_quality_holdout(dialogues, seed=1)) != kept


def test_cli_prints_the_checks_with_their_verdicts(fakes: None, data_dir: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from cogwm.cli.validate import validate

    app = typer.Typer()
    app.command()(validate)
    result = CliRunner().invoke(
        app,
        ["--model", "fake:checks-copy", "--data-dir", str(data_dir), "--heldout", "all",
         "--split-seed", str(ALL.seed), "--parts", "counterfactual,known_groups", "--limit", "2",
         "--resamples", "50", "--no-preflight"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "responsiveness checks" in result.stdout
    assert "counterfactual.ESC.valence_ordering" in result.stdout
    assert "NO" in result.stdout  # the copy machine fails
