"""The simulated user's validity status: its card found by identity, each check's state, and what
the reports may claim ("separated") because of it. Cards here are written by hand."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.report import build_report, load_run, render, to_json
from cogwm.report.tables import ArenaReport
from cogwm.store import RunStore
from cogwm.validate.card import Card, Check, write_card
from cogwm.validate.status import (
    CheckState,
    SimulatorStatus,
    check_statuses,
    find_card,
    register_card,
    separation,
    simulator_status,
)
from helpers_arena import FAKE_NAME, config, register
from helpers_cli import cogwm

IDENTITY = "llamacpp:smollm2@1-aa+adapter.gguf@2-bb"


def _check(name: str, passed: bool | None, value: float | None = 0.5, **extra: Any) -> Check:
    return Check(
        name=name,
        task=extra.pop("task", "ESC"),
        metric=extra.pop("metric", "valence_ordering"),
        value=value,
        ci_low=None if value is None else value - 0.03,
        ci_high=None if value is None else value + 0.03,
        n=extra.pop("n", 60),
        passed=passed,
        rule="lower bound above the copy machine's figure",
        **extra,
    )


def _card(
    checks: list[Check],
    *,
    identity: str = IDENTITY,
    created: str = "2025-01-02T00:00:00+00:00",
    **extra: Any,
) -> Card:
    return Card(
        label="wm",
        model="llamacpp:smollm2-wm",
        model_identity=identity,
        seed=0,
        limit=60,
        resamples=200,
        created=created,
        checks=checks,
        **extra,
    )


@pytest.fixture
def cards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cards folder, the one reports read."""
    folder = tmp_path / "cards"
    monkeypatch.setenv("COGWM_CARDS_DIR", str(folder))
    return folder


# ------------------------------------------------------------------------- the status itself


def test_no_card_means_every_check_never_ran(cards: Path) -> None:
    status = simulator_status("llamacpp:smollm2-wm", IDENTITY, shipped=cards / "none")
    assert not status.has_card and not status.trusted
    assert {c.state for c in status.checks} == {CheckState.NEVER_RUN}
    line = status.line()
    assert line.startswith("Simulated user: llamacpp:smollm2-wm — no validity card")
    assert "cogwm validate --model llamacpp:smollm2-wm --out card.json" in line
    assert "not validated" in line
    assert "never ran" in (status.separation_note() or "")


def test_each_check_state_with_its_figure(cards: Path) -> None:
    register_card(
        _card([_check("counterfactual", False), _check("known_groups", None, value=None)])
    )
    status = simulator_status("llamacpp:smollm2-wm", IDENTITY, shipped=cards / "none")
    states = {c.name: c.state for c in status.checks}
    assert states == {
        "arena_sensitivity": CheckState.NEVER_RUN,
        "counterfactual": CheckState.FAILED,
        "known_groups": CheckState.UNDECIDED,
    }
    assert status.card_source == "registered" and not status.trusted
    line = status.line()
    assert "arena sensitivity: never run" in line
    assert "counterfactual: failed (ESC 0.50 [0.47, 0.53], n 60)" in line
    assert "known groups: undecided (ESC –, n 60)" in line
    assert line.endswith("a dismissive agent may rank first.")


def test_sensitivity_passes_only_when_every_task_passed(cards: Path) -> None:
    passed = _check("arena_sensitivity", True, 0.3, metric="cts_difference", n=20)
    register_card(_card([passed, _check("arena_sensitivity", False, 0.0, task="PD", n=20)]))
    status = simulator_status("m", IDENTITY, shipped=cards / "none")
    assert status.sensitivity is CheckState.FAILED and not status.trusted
    assert "failed its arena-sensitivity check" in (status.separation_note() or "")
    register_card(_card([passed, _check("counterfactual", True)]))  # replaces the first
    status = simulator_status("m", IDENTITY, shipped=cards / "none")
    assert status.trusted and status.separation_note() is None
    assert "not validated" not in status.line() and "care" not in status.line()
    register_card(_card([passed, _check("counterfactual", False)]))
    line = simulator_status("m", IDENTITY, shipped=cards / "none").line()
    assert "not validated" not in line and "read rankings with care" in line


def test_only_a_card_of_this_identity_as_the_arena_runs_it(cards: Path) -> None:
    passing = [_check("arena_sensitivity", True)]
    register_card(_card(passing, identity=IDENTITY + "-other"))
    register_card(_card(passing, ablation="no_state"))  # an input switch: not the arena's
    register_card(_card(passing, pipeline="dual"))
    (cards / "broken.json").write_text("{not json")
    assert find_card(IDENTITY, shipped=cards / "none") is None
    assert not simulator_status("m", None, shipped=cards / "none").has_card
    assert "identity was not recorded" in simulator_status("m", None).line()


def test_the_newest_card_wins_and_shipped_cards_are_found(cards: Path, tmp_path: Path) -> None:
    shipped = tmp_path / "world_models"
    write_card(
        _card([_check("arena_sensitivity", True)], created="2025-01-01T00:00:00+00:00"),
        shipped / "smollm2-wm" / "card.json",
    )
    found = find_card(IDENTITY, shipped=shipped)
    assert found is not None and found[2] == "shipped"
    register_card(_card([_check("arena_sensitivity", False)], created="2025-03-01T00:00:00+00:00"))
    status = simulator_status("m", IDENTITY, shipped=shipped)
    assert status.card_source == "registered" and status.sensitivity is CheckState.FAILED


def test_checks_are_merged_across_the_cards_of_an_identity(cards: Path) -> None:
    """A newer card without a check does not hide an older card's check: per name and task
    the newest card holding it wins."""
    sensitivity = _check("arena_sensitivity", True, n=20)
    register_card(_card([sensitivity], created="2025-01-01T00:00:00+00:00"), part="sens")
    register_card(_card([_check("counterfactual", False)], created="2025-02-01T00:00:00+00:00"))
    status = simulator_status("m", IDENTITY, tasks=["ESC"], shipped=cards / "none")
    assert status.trusted and status.sensitivity is CheckState.PASSED
    assert {c.name: c.state for c in status.checks}["counterfactual"] is CheckState.FAILED
    newer = _check("arena_sensitivity", False, n=20)
    register_card(_card([newer], created="2025-03-01T00:00:00+00:00"), part="sens2")
    status = simulator_status("m", IDENTITY, tasks=["ESC"], shipped=cards / "none")
    assert status.sensitivity is CheckState.FAILED and not status.trusted


def test_trust_is_per_task_and_needs_20_scenarios_and_no_failures(cards: Path) -> None:
    esc = _check("arena_sensitivity", True, n=20)
    pd = _check("arena_sensitivity", True, n=20, task="PD")
    register_card(_card([esc, pd]))
    assert simulator_status("m", IDENTITY, tasks=["ESC", "PD"], shipped=cards / "none").trusted
    on_mi = simulator_status("m", IDENTITY, tasks=["MI"], shipped=cards / "none")
    assert on_mi.sensitivity is CheckState.NEVER_RUN and not on_mi.trusted
    assert not simulator_status("m", IDENTITY, tasks=["ESC", "CR"], shipped=cards / "none").trusted
    assert separation(0.1, 0.5, 20, on_mi)[0] is None
    assert separation(0.1, 0.5, 20, on_mi, tasks=["ESC"]) == (True, None)
    assert "on MI" in str(separation(0.1, 0.5, 20, on_mi, tasks=["MI"])[1])
    for weak in (esc.model_copy(update={"n": 19}), esc.model_copy(update={"n_failed": 1})):
        register_card(_card([weak, pd]))
        status = simulator_status("m", IDENTITY, tasks=["ESC"], shipped=cards / "none")
        assert status.sensitivity is CheckState.UNDECIDED and not status.trusted


# ------------------------------------------------------------------------------ "separated"


def _trusted() -> SimulatorStatus:
    card = _card([_check("arena_sensitivity", True)])
    return SimulatorStatus("m", IDENTITY, "card.json", "registered", check_statuses(card))


def test_separation_rules() -> None:
    untrusted = simulator_status("m", None)
    assert separation(0.1, 0.5, 20, _trusted()) == (True, None)
    assert separation(-0.1, 0.5, 20, _trusted()) == (False, None)
    assert separation(0.1, 0.5, 19, _trusted())[0] is None  # under 20, whatever the card
    assert "20 paired scenarios" in str(separation(0.1, 0.5, 19, _trusted())[1])
    assert separation(0.1, 0.5, 500, untrusted)[0] is None
    assert separation(0.1, 0.5, 500, None)[0] is None
    assert separation(None, None, 20, _trusted())[0] is None


# ------------------------------------------------------------------- reports of a stored run


def _run(path: Path) -> Path:
    register()
    raw = config(dialogues_per_task=1, tasks=["ESC"])
    with RunStore(path) as store:
        asyncio.run(run_arena(parse_config(raw), store, show_progress=False))
    return path


def _report(db: Path) -> ArenaReport:
    with RunStore(db) as store:
        return build_report(load_run(store), n_resamples=100)


def _text(report: ArenaReport) -> str:
    console = Console(record=True, width=200, file=io.StringIO())
    render(report, console)
    return console.export_text()


def _with_scenarios(report: ArenaReport, n: int) -> ArenaReport:
    """The report with every paired difference over ``n`` scenarios and an interval above 0
    (the verdict depends only on those two and the simulator)."""
    differences = [
        d._replace(n_shared=n, difference=d.difference._replace(mean=0.3, ci_low=0.1, ci_high=0.5))
        for d in report.differences
    ]
    return report._replace(differences=differences)


def test_the_run_records_its_simulators_identity(tmp_path: Path, cards: Path) -> None:
    db = _run(tmp_path / "run.sqlite")
    report = _report(db)
    assert report.simulator is not None
    assert report.simulator.identity == f"fake:{FAKE_NAME}"
    assert report.simulator.model == f"fake:{FAKE_NAME}"
    register_card(_card([_check("arena_sensitivity", True)], identity=f"fake:{FAKE_NAME}"))
    status = _report(db).simulator
    assert status is not None and status.trusted and status.card_source == "registered"


def test_no_card_the_report_says_so_and_claims_no_separation(
    tmp_path: Path, cards: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _run(tmp_path / "run.sqlite")
    report = _with_scenarios(_report(db), 20)
    text = _text(report)
    assert f"Simulated user: fake:{FAKE_NAME} — no validity card" in text
    assert "Rankings from this simulator are not validated" in text
    assert "separated" not in text and "never ran an arena-sensitivity check" in text
    data = to_json(report)
    assert data["simulator_status"]["arena_sensitivity"] == "never run"
    assert {d["separated"] for d in data["cts_differences"]} == {None}
    assert all("arena-sensitivity" in d["separated_reason"] for d in data["cts_differences"])
    # The command line's JSON carries the same object; the other keys are as they were.
    assert cogwm("arena", "report", "--db", str(db), "--json") == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["simulator_status"]["identity"] == f"fake:{FAKE_NAME}"
    assert {"run", "agents", "cts_differences", "warnings", "usage"} <= set(printed)


def test_a_failed_sensitivity_check_withholds_separation(tmp_path: Path, cards: Path) -> None:
    db = _run(tmp_path / "run.sqlite")
    register_card(
        _card(
            [_check("arena_sensitivity", False, 0.01), _check("counterfactual", False)],
            identity=f"fake:{FAKE_NAME}",
        )
    )
    report = _with_scenarios(_report(db), 40)
    text = _text(report)
    assert "arena sensitivity: failed (ESC 0.01 [-0.02, 0.04], n 60)" in text
    assert "separated" not in text and "failed its arena-sensitivity check" in text
    assert {d["separated"] for d in to_json(report)["cts_differences"]} == {None}


@pytest.mark.parametrize(("scenarios", "said"), [(19, None), (20, True)])
def test_a_passing_card_says_separated_from_20_scenarios(
    tmp_path: Path, cards: Path, scenarios: int, said: bool | None
) -> None:
    db = _run(tmp_path / "run.sqlite")
    register_card(_card([_check("arena_sensitivity", True)], identity=f"fake:{FAKE_NAME}"))
    report = _with_scenarios(_report(db), scenarios)
    assert report.differences
    text = _text(report)
    assert "not validated" not in text
    assert ("separated" in text) is (said is not None)
    verdicts = [d["separated"] for d in to_json(report)["cts_differences"]]
    assert set(verdicts) == {said}
    if said is None:
        assert "fewer than 20" in to_json(report)["cts_differences"][0]["separated_reason"]


def test_shipped_cards_are_looked_for_beside_the_shipped_adapters() -> None:
    from cogwm.models.llamacpp import ADAPTER_ALIASES, adapter_alias_folder
    from cogwm.validate.status import SHIPPED_CARD, shipped_cards_root

    folder = adapter_alias_folder(ADAPTER_ALIASES["smollm2-wm"])
    assert folder.parent == shipped_cards_root() and (folder / "adapter.gguf").is_file()
    assert SHIPPED_CARD == "card.json"


def test_the_shipped_card_lookup_reads_a_card_in_a_world_models_folder(
    cards: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A card file placed beside a shipped model is found by the default lookup (no folder
    given), with its checks."""
    from cogwm.validate import status as status_module

    root = tmp_path / "world_models"
    monkeypatch.setattr(status_module, "shipped_cards_root", lambda: root)
    assert simulator_status("m", IDENTITY).card_source is None
    write_card(_card([_check("arena_sensitivity", True)]), root / "smollm2-wm" / "card.json")
    write_card(_card([], identity="other"), root / "other-wm" / "card.json")
    status = simulator_status("m", IDENTITY, tasks=["ESC"])
    assert status.card_source == "shipped" and status.trusted
    assert status.card_path == str(root / "smollm2-wm" / "card.json")


def test_a_python_simulator_is_named_by_its_import_path(cards: Path) -> None:
    from cogwm.report.tables import run_simulator_status

    config = {
        "tasks": ["ESC"],
        "simulator": {"model": "", "python": "cogwm.simulator.rule:SentimentMeter"},
        "simulator_identity": "rule:sentiment-meter k=1",
    }
    status = run_simulator_status(config)
    assert status.model == "python:cogwm.simulator.rule:SentimentMeter"
    assert status.line().startswith("Simulated user: python:cogwm.simulator.rule:SentimentMeter ")
    assert status.tasks == ("ESC",)


def test_a_card_file_is_parsed_once_until_it_changes(
    cards: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live page polls the status: an unchanged card file is not read again."""
    import os

    from cogwm.validate import status as status_module

    path = register_card(_card([_check("arena_sensitivity", True)]))
    calls: list[Path] = []
    real = status_module.read_card

    def counting(where: Path) -> Card:
        calls.append(where)
        return real(where)

    monkeypatch.setattr(status_module, "read_card", counting)
    for _ in range(3):
        assert simulator_status("m", IDENTITY, shipped=cards / "none").trusted
    assert calls.count(path) == 1
    register_card(_card([_check("arena_sensitivity", False)]))
    os.utime(path, ns=(1, 1))  # a changed file is read again, whatever its clock
    assert not simulator_status("m", IDENTITY, shipped=cards / "none").trusted
    assert calls[-1] == path
