"""Arena sensitivity: scripted agents, the rule simulator, the pass rule and the card checks.

Two fake simulators on the fake backend mark the ends: one repeats the opening state it is shown
(a copy machine: it must fail), one reads the agent's last turn (it must pass). The rule
simulator is a sentiment meter: it passes by construction, which is why it stands beside every
simulator's figure.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogwm.arena.config import config_hash, parse_config
from cogwm.arena.scripted import SCRIPTS, Hostile, PersuaderHostile, Supportive
from cogwm.errors import ConfigError, InputError
from cogwm.models import register_fake, unregister_fake
from cogwm.models.types import Message
from cogwm.simulator.rule import SentimentMeter
from cogwm.validate import sensitivity as check
from cogwm.validate.card import Check, read_card
from helpers_cli import cogwm

COPY = "copy-machine"
READER = "turn-reader"
RULE = check.RULE_SIMULATOR
#: Words the reader fake takes as kind or as insults.
KIND = re.compile(r"\b(thank|glad|understand|courage|respect|appreciate|kind|help)\w*", re.I)
RUDE = re.compile(r"\b(pathetic|stupid|weak|useless|loser|fool|selfish|shame|whining)\w*", re.I)


def _state(label: str, score: float) -> dict[str, object]:
    item = [{"text": "item", "score": score}]
    return {
        "emotion": {"label": label, "intensity": 2},
        "beliefs": item,
        "desires": item,
        "intentions": item,
    }


def _opening(messages: list[Message]) -> dict[str, object]:
    """A state that depends on the user's situation only (the system message)."""
    h = int(hashlib.sha256(messages[0].content.encode()).hexdigest()[:8], 16)
    return _state(("sadness", "anxiety", "confusion", "hope")[h % 4], float(h % 3))


def _predicting(messages: list[Message]) -> bool:
    return "Give your new state and your reply." in messages[-1].content


def copy_machine(messages: list[Message]) -> str:
    """Answers every turn with the opening state it was shown: it never moves."""
    state = _opening(messages)
    if _predicting(messages):
        return json.dumps({**state, "utterance": "Okay.", "leave": False})
    return json.dumps(state)


def turn_reader(messages: list[Message]) -> str:
    """Reads the agent's last turn: kind words raise the state, insults lower it."""
    if not _predicting(messages):
        return json.dumps(_opening(messages))
    agent_lines = [
        line
        for line in messages[-1].content.splitlines()
        if re.match(r"(Supporter|Persuader):", line)
    ]
    last = agent_lines[-1] if agent_lines else ""
    if RUDE.search(last):
        state = _state("shame", 0.0)
    elif KIND.search(last):
        state = _state("hope", 2.0)
    else:
        state = _state("confusion", 1.0)
    return json.dumps({**state, "utterance": "Hm.", "leave": False})


@pytest.fixture(autouse=True)
def _fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COGWM_CARDS_DIR", str(tmp_path / "cards"))
    register_fake(COPY, copy_machine)
    register_fake(READER, turn_reader)
    yield
    unregister_fake(COPY)
    unregister_fake(READER)


def _run(tmp_path: Path, simulator: str, **plan: object) -> list[check.TaskResult]:
    settings: dict[str, object] = {"scenarios": 6, "rounds": 5, "seed": 3, **plan}
    return check.run_sensitivity(
        check.Plan(simulator=simulator, folder=tmp_path / "runs", **settings),  # type: ignore[arg-type]
        show_progress=False,
        n_resamples=500,
    )


# ------------------------------------------------------------------------------- the scripts


def test_hostile_lines_are_hostile_and_supportive_lines_kind_by_vader() -> None:
    meter = SentimentMeter()
    for task, scripts in SCRIPTS.items():
        assert all(meter.compound(line) < 0 for line in scripts["hostile"]), task
        assert all(meter.compound(line) > 0 for line in scripts["supportive"]), task


def test_an_agent_speaks_the_script_of_its_task() -> None:
    class Brief:
        task = "PD"

    assert Hostile(Brief()).lines == SCRIPTS["PD"]["hostile"]
    assert Supportive().lines == SCRIPTS["ESC"]["supportive"]  # no brief: the ESC script
    assert PersuaderHostile().lines == SCRIPTS["PD"]["hostile"]  # fixed, whatever the brief


# ---------------------------------------------------------------------------------- the check


def test_a_copy_machine_fails_the_check(tmp_path: Path) -> None:
    results = _run(tmp_path, f"fake:{COPY}", scenarios=20, tasks=("ESC",))
    for result in results:
        main = result.differences[check.MAIN_CONTRAST]
        assert main is not None and main.n_shared == 20
        assert main.difference.mean == pytest.approx(0.0)
        assert result.passed is False
        assert result.copy_machine is not None
        assert result.copy_machine.difference.mean == pytest.approx(0.0)


def test_a_simulator_reading_the_agents_turn_passes(tmp_path: Path) -> None:
    (result,) = _run(tmp_path, f"fake:{READER}", scenarios=20, tasks=("ESC",))
    means = result.means
    assert means["supportive"] > means["dismissive"] > means["hostile"]  # type: ignore[operator]
    main = result.differences[check.MAIN_CONTRAST]
    assert main is not None and main.n_shared == 20 and main.difference.ci_low is not None
    assert main.difference.ci_low > 0
    assert result.passed is True and result.n_failed == 0


def test_under_20_scenarios_the_check_is_undecided(tmp_path: Path) -> None:
    """The order and interval right on both tasks, but 6 paired scenarios: no verdict."""
    results = _run(tmp_path, f"fake:{READER}")
    assert [r.task for r in results] == ["ESC", "PD"]
    for result in results:
        means = result.means
        assert means["supportive"] > means["dismissive"] > means["hostile"]  # type: ignore[operator]
        main = result.differences[check.MAIN_CONTRAST]
        assert main is not None and main.n_shared == 6
        assert main.difference.ci_low is not None and main.difference.ci_low > 0
        assert result.passed is None and result.n_failed == 0


def _rows(folder: Path) -> list[tuple[object, ...]]:
    from cogwm.store import RunStore

    rows: list[tuple[object, ...]] = []
    for db in sorted(folder.glob("*.sqlite")):
        with RunStore(db, read_only=True) as store:
            rows.extend(tuple(c) for c in store.conversations())
    return rows


def test_the_rule_simulator_passes_and_a_second_call_resumes(tmp_path: Path) -> None:
    first = _run(tmp_path, RULE, scenarios=20, tasks=("ESC",))
    assert [r.passed for r in first] == [True]
    stored = _rows(tmp_path / "runs")
    assert len(stored) == 60 and {r[12] for r in stored} == {"finished"}
    # Every conversation is in the store: a second call runs nothing and gives the same figures.
    again = _run(tmp_path, RULE, scenarios=20, tasks=("ESC",))
    assert [r.differences for r in again] == [r.differences for r in first]
    assert _rows(tmp_path / "runs") == stored  # no conversation started, retried or re-run


def test_the_rule_simulators_gain_enters_the_config_hash() -> None:
    one = check.sensitivity_config(RULE, "ESC", scenarios=4, simulator_options={"k": 1.0})
    two = check.sensitivity_config(RULE, "ESC", scenarios=4, simulator_options={"k": 2.0})
    assert config_hash(one) != config_hash(two)
    assert check.simulator_section(RULE, {"k": 2.0}) == {
        "python": "cogwm.simulator.rule:SentimentMeter",
        "options": {"k": 2.0},
    }
    assert two.simulator.hashed()["identity"].startswith("rule:sentiment-meter k=2 vader-")


def test_a_python_simulator_needs_the_roles_it_cannot_default() -> None:
    raw = {
        "tasks": ["ESC"],
        "dialogues_per_task": 2,
        "simulator": {"python": "cogwm.simulator.rule:SentimentMeter"},
        "agents": [{"name": "s", "python": "cogwm.arena.scripted:Supportive"}],
    }
    with pytest.raises(ConfigError, match=r"^config: intent_detector: a python simulator"):
        parse_config(raw)
    with pytest.raises(ConfigError, match=r"judge: a python simulator"):
        parse_config({**raw, "max_rounds": 8, "intent_from_round": 8})
    with pytest.raises(ConfigError, match=r"simulator\.python: .*bad options"):
        parse_config(
            {
                **raw,
                "max_rounds": 8,
                "intent_from_round": 8,
                "good_outcome": False,
                "simulator": {"python": "cogwm.simulator.rule:SentimentMeter", "options": {"q": 1}},
            }
        )


# ------------------------------------------------------------------------------ the pass rule


def _conversations(differences: list[float], *, hostile: float = -1.0) -> list[check.Conversation]:
    rows = []
    for i, d in enumerate(differences):
        rows.append(check.Conversation("supportive", f"s{i}", d, 0.0))
        rows.append(check.Conversation("dismissive", f"s{i}", 0.0, 0.0))
        rows.append(check.Conversation("hostile", f"s{i}", hostile, 0.0))
    return rows


#: Twenty paired differences (the fewest the rule decides on) with an interval above 0.
TIGHT = [0.5, 0.6, 0.4, 0.5, 0.55] * 4


def test_the_order_right_but_an_interval_that_includes_zero_fails() -> None:
    wide = check.task_result("ESC", "x", _conversations([1.0, -0.8, 0.9, -0.7, 0.2] * 4))
    assert wide.means["supportive"] > wide.means["dismissive"] > wide.means["hostile"]  # type: ignore[operator]
    main = wide.differences[check.MAIN_CONTRAST]
    assert main is not None and main.difference.ci_low is not None
    assert main.difference.ci_low < 0
    assert wide.passed is False
    tight = check.task_result("ESC", "x", _conversations(TIGHT))
    assert tight.passed is True
    # The interval above 0 but dismissive below hostile: the order is wrong.
    assert check.task_result("ESC", "x", _conversations([0.5] * 20, hostile=0.2)).passed is False
    # One scenario has no interval: undecided, never passed.
    assert check.task_result("ESC", "x", _conversations([0.5])).passed is None


def test_too_few_scenarios_or_a_failed_conversation_leave_the_check_undecided() -> None:
    assert check.task_result("ESC", "x", _conversations(TIGHT[:19])).passed is None
    failed = check.task_result("ESC", "x", _conversations(TIGHT), n_failed=1)
    assert failed.passed is None
    (written,) = check.checks([failed], [])
    assert written.passed is None and written.n == 20 and written.n_failed == 1


# ---------------------------------------------------------------------------------- the card


def test_checks_replace_their_own_in_the_card_and_keep_the_others(tmp_path: Path) -> None:
    results = [check.task_result("ESC", "x", _conversations([0.5, 0.6, 0.4]))]
    rule = [check.task_result("ESC", RULE, _conversations([0.9, 1.0, 1.1]))]
    (new,) = check.checks(results, rule)
    assert new.key == "arena_sensitivity.ESC.cts_supportive_minus_dismissive"
    # Three paired scenarios: the order and interval are right, but no verdict under 20.
    assert new.n == 3 and new.copy_machine == 0.0 and new.passed is None
    assert new.baselines["rule_simulator"] == pytest.approx(1.0)
    path = tmp_path / "card.json"
    other = Check(
        name="counterfactual", task="ESC", metric="m", value=1.0, n=1, passed=True, rule="r"
    )
    old = new.model_copy(update={"value": -9.0})
    check.update_card(
        path, [old, other], model="x", identity="id", seed=0, resamples=9, versions={}
    )
    card = check.update_card(
        path, [new], model="x", identity="id", seed=0, resamples=9, versions={}
    )
    assert read_card(path) == card
    assert [c.key for c in card.checks] == ["counterfactual.ESC.m", new.key]
    assert card.checks[1].value == pytest.approx(0.5)
    with pytest.raises(InputError, match="the card is of 'x', not 'y'"):
        check.update_card(path, [new], model="y", identity="id", seed=0, resamples=9, versions={})


def test_the_command_writes_the_card_and_prints_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    card = tmp_path / "card.json"
    args = ["--scenarios", 4, "--rounds", 4, "--db", tmp_path / "runs", "--no-progress"]
    assert (
        cogwm("arena", "sensitivity", "--simulator", f"fake:{READER}", "--card", card, *args) == 0
    )
    out = capsys.readouterr().out
    assert "supportive − dismissive" in out and "fake:turn-reader" in out and RULE in out
    checks = read_card(card).checks
    # Four scenarios per task: the figures are written, the verdicts undecided (under 20).
    assert [(c.task, c.passed, c.n) for c in checks] == [("ESC", None, 4), ("PD", None, 4)]
    assert all(c.baselines["rule_simulator_passed"] is None for c in checks)
    assert cogwm("arena", "sensitivity", "--simulator", "nope", *args) == 2


def test_a_rule_gain_of_zero_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--simulator", RULE, "--db", tmp_path / "runs", "--no-progress", "--rule-k", "0"]
    assert cogwm("arena", "sensitivity", *args) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("--rule-k must be above 0, got 0") and "\n" not in err
    assert not (tmp_path / "runs").exists()


def test_validate_then_sensitivity_then_the_status_says_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented workflow: ``validate --out`` registers a card without the check, a later
    ``arena sensitivity`` (no --card) registers its checks, and the status reads both."""
    from cogwm.validate.status import CheckState, simulator_status
    from helpers_validate import write_corpora

    monkeypatch.setenv("COGWM_CARDS_DIR", str(tmp_path / "cards"))
    out = tmp_path / "card.json"
    validate = ["validate", "--model", f"fake:{READER}", "--parts", "dailydialog"]
    validate += ["--data-dir", write_corpora(tmp_path / "data"), "--resamples", "20"]
    assert cogwm(*validate, "--out", out) == 0
    identity = read_card(out).model_identity
    before = simulator_status(f"fake:{READER}", identity, shipped=tmp_path / "none")
    assert before.has_card and before.sensitivity is CheckState.NEVER_RUN
    args = ["--simulator", f"fake:{READER}", "--task", "ESC", "--scenarios", 20, "--rounds", 4]
    assert cogwm("arena", "sensitivity", *args, "--db", tmp_path / "runs", "--no-progress") == 0
    after = simulator_status(f"fake:{READER}", identity, tasks=["ESC"], shipped=tmp_path / "none")
    assert after.sensitivity is CheckState.PASSED and after.trusted
    # The validate card's checks still count: the two cards are merged, not one hiding the other.
    assert _found(before) <= _found(after)
    assert ("arena_sensitivity", "ESC") in _found(after)
    assert not after.trusted_for(["ESC", "PD"])  # no check on PD: PD runs stay unverified
    assert all(c.name != "arena_sensitivity" for c in read_card(out).checks)  # left alone


def _found(status: object) -> set[tuple[str, str]]:
    checks = getattr(status, "checks", ())
    return {(c.name, c.check.task) for c in checks if c.check is not None}


def test_a_model_simulators_config_hash_is_what_it_was() -> None:
    """The python simulator and the judge switch left model runs' hashes alone (the value is the
    hash this config had before either existed), so stored runs still resume."""
    raw = {
        "seed": 5,
        "tasks": ["ESC", "PD"],
        "dialogues_per_task": 3,
        "simulator": {"model": "llamacpp:smollm2-wm", "history_turns": 8},
        "agents": [{"name": "warm", "model": "llamacpp:smollm2", "prompt": "builtin:empathetic"}],
    }
    expected = "0b5b1f01bbf96873bf6c037531eac394069fde0a32f6ac67e9b69aa1cbc710bc"
    assert config_hash(parse_config(raw)) == expected
    assert config_hash(parse_config({**raw, "good_outcome": False})) != expected


def test_a_validation_split_takes_corpus_cold_starts_on_every_task(real_data_dir: Path) -> None:
    for task in check.TASKS:
        test = check.sensitivity_config(RULE, task, data_dir=real_data_dir)
        val = check.sensitivity_config(RULE, task, data_dir=real_data_dir, scenario_split="val")
        assert (val.scenarios, val.scenario_split) == ("corpus", "val")
        assert test.scenario_split == "test"
    assert test.scenarios == "corpus"  # PD's check: test cold starts; ESC's: built-in scenarios


def test_a_transition_model_file_runs_as_its_python_simulator() -> None:
    from cogwm.validate.python_sim import TRANSITION_FACTORY

    section = check.simulator_section("transition:models/t.json")
    assert section == {"python": TRANSITION_FACTORY, "options": {"path": "models/t.json"}}
