"""The arena report, on a store written by hand with states whose metrics are computed by hand.

Task ESC: Comp = 1/2 * valence + 1/6 * (B + D + I), empty B/D/I = 0 (docs/architecture.md).

Arm a/no_cot (its agent runs on the simulator's model):
  s1: sadness x2 (comp 1/2 * -2 = -1), then hope x1 with one belief scored 2
      (comp 1/2 * 2 + 1/6 * 2 = 4/3).  N = 2: AUC = (1/2) * (-1 + 4/3) / 2 = 1/12;
      Δ = 7/3; PSR = 1; Mono = 1; CTS = 0.4/12 + 0.3 + 0.3 * 7/3 = 31/30;
      E-Δ = 2*1 - (-2*2) = 6; B-Δ = 2; nz = 1/2. GO yes.
  s2: anxiety x1 twice (comp -1, -1): AUC = -1/2, Δ = 0, PSR = 0, Mono = 1 (flat steps),
      CTS = -0.2; E-Δ = 0; nz = 0. GO no.
Arm b/no_cot:
  s1: sadness x2 (-1), sadness x3 (-1): AUC = -1/2, Δ = 0, PSR = 0, Mono = 1, CTS = -0.2,
      E-Δ = -6 - (-4) = -2. GO no.
  s2: anxiety x1 (-1), shame x2 (-1.25): AUC = (1/2) * (-2.25 / 2) = -0.5625, Δ = -0.25,
      PSR = 0, Mono = 1, CTS = 0.4 * -0.5625 + 0.3 * -0.25 = -0.3; E-Δ = -5 - (-2) = -3.
      The judge gave no verdict (None).
  s3: failed (error) -> excluded and counted.
Arm c/no_cot: s1 unfinished -> excluded and counted.

Means: CTS a = (31/30 - 0.2) / 2 = 5/12; CTS b = -0.25; paired a - b over s1, s2 =
(31/30 + 0.2 + (-0.2 + 0.3)) / 2 = 2/3. GO a = 50 %, GO b = 0 % (one judged, one unjudged).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from cogwm.report import build_report, load_run, render, to_csv, to_json, warnings, write_plots
from cogwm.schema import CognitiveState, Emotion, StateItem
from cogwm.store import RunStore, UnitRow


def _state(label: str, intensity: int, belief: float | None = None) -> str:
    beliefs = [StateItem(text="b", score=belief)] if belief is not None else []
    return CognitiveState(
        emotion=Emotion(label=label, intensity=intensity), beliefs=beliefs
    ).model_dump_json()


CONVERSATIONS = [
    # agent, scenario, status, states (initial, then simulated), go
    ("a", "s1", "finished", [_state("sadness", 2), _state("hope", 1, 2.0)], 1.0),
    ("a", "s2", "finished", [_state("anxiety", 1), _state("anxiety", 1)], 0.0),
    ("b", "s1", "finished", [_state("sadness", 2), _state("sadness", 3)], 0.0),
    ("b", "s2", "finished", [_state("anxiety", 1), _state("shame", 2)], None),
    ("b", "s3", "failed", [], None),
    ("c", "s1", "running", [], None),
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return _write_run(
        tmp_path / "runs.sqlite", "fake:sim", {"a": "fake:sim", "b": "fake:b", "c": "fake:c"}
    )


def _write_run(path: Path, simulator: str, models: dict[str, str]) -> Path:
    """The hand-made run of CONVERSATIONS with these simulator and agent models."""
    with RunStore(path) as store:
        run_id = store.create_run(
            name="hand",
            config={"tasks": ["ESC"]},
            config_hash="f" * 64,
            prompts=[],
            git_revision=None,
            packages={},
            seed=0,
            shard=None,
        )
        for agent, scenario, status, states, go in CONVERSATIONS:
            unit = UnitRow(
                f"ESC|{scenario}|{agent}|no_cot",
                "ESC",
                agent,
                "no_cot",
                scenario,
                "builtin",
                models[agent],
                simulator,
                1,
            )
            cid = store.start_conversation(run_id, unit)
            for idx, state in enumerate(states):
                store.add_turn(
                    cid, idx=2 * idx, round=idx + 2, role="agent", phase="simulated", text="a"
                )
                store.add_turn(
                    cid,
                    idx=2 * idx + 1,
                    round=idx + 2,
                    role="user",
                    phase="simulated",
                    text="u",
                    state_json=state,
                )
            if status == "finished":
                store.finish_conversation(
                    cid, status=status, termination="max_rounds", rounds=3, metrics={"go": go}
                )
            elif status == "failed":
                store.finish_conversation(
                    cid, status=status, termination="error", rounds=2, error="boom"
                )
    return path


def _report(db: Path):  # type: ignore[no-untyped-def]
    with RunStore(db) as store:
        data = load_run(store)
    return data, build_report(data, n_resamples=200)


def test_table6_values_by_hand(db: Path) -> None:
    _, report = _report(db)
    rows = {r.arm: r for r in report.arms}
    assert set(rows) == {"a/no_cot", "b/no_cot"}
    a, b = rows["a/no_cot"], rows["b/no_cot"]
    assert a.cells["cts"].mean == pytest.approx(5 / 12)  # type: ignore[union-attr]
    assert b.cells["cts"].mean == pytest.approx(-0.25)  # type: ignore[union-attr]
    assert a.cells["auc"].mean == pytest.approx((1 / 12 - 0.5) / 2)  # type: ignore[union-attr]
    assert a.cells["delta"].mean == pytest.approx(7 / 6)  # type: ignore[union-attr]
    assert a.cells["psr"].mean == pytest.approx(0.5)  # type: ignore[union-attr]
    assert b.cells["mono"].mean == pytest.approx(1.0)  # type: ignore[union-attr]
    assert a.cells["e_delta"].mean == pytest.approx(3.0)  # type: ignore[union-attr]
    assert b.cells["e_delta"].mean == pytest.approx(-2.5)  # type: ignore[union-attr]
    assert a.cells["b_delta"].mean == pytest.approx(1.0)  # type: ignore[union-attr]
    assert a.cells["nz"].mean == pytest.approx(25.0)  # type: ignore[union-attr]
    assert a.go is not None and a.go.mean == pytest.approx(50.0)
    assert b.go is not None and b.go.mean == pytest.approx(0.0) and b.go_unjudged == 1
    assert a.go_by_task["ESC"] is not None
    assert (a.n, b.n, a.errors, b.errors) == (2, 2, 0, 1)
    assert a.mean_length == 2.0
    ci = a.cells["cts"]
    assert ci is not None and ci.ci_low is not None and ci.ci_high is not None
    assert ci.ci_low <= ci.mean <= ci.ci_high


def test_counts_warnings_and_paired_difference(db: Path) -> None:
    _, report = _report(db)
    assert (report.finished, report.errors, report.unfinished) == (4, 1, 1)
    assert report.same_model_agents == ["a"]
    (difference,) = report.differences
    assert (difference.agent_a, difference.agent_b) == ("a/no_cot", "b/no_cot")
    assert difference.difference.mean == pytest.approx(2 / 3)
    assert difference.n_shared == 2
    assert report.typology is None  # two arms cannot be typed
    per_task = {(r.task, r.arm): r for r in report.per_task}
    assert per_task[("ESC", "a/no_cot")].cells["delta"].mean == pytest.approx(7 / 6)  # type: ignore[union-attr]
    d = report.discriminability["ESC"]
    # E-Δ means: a 3, b -2.5 -> sample SD = 5.5 / sqrt(2).
    assert d.per_dimension["emotion"] == pytest.approx(5.5 / 2**0.5)


@pytest.mark.parametrize(
    ("simulator", "agent_model"),
    [
        ("llamacpp:smollm2-wm", "llamacpp:smollm2"),
        ("llamacpp:SmolLM2-WM", "llamacpp:smollm2"),
        ("llamacpp:smollm2-wm", "LlamaCpp:SmolLM2"),
        ("llamacpp:smollm2+adapters/wm/adapter.GGUF", "llamacpp:smollm2"),
        ("hf:./base+./adapter", "hf:./base"),
    ],
)
def test_agents_on_the_simulators_base_model_are_named(
    tmp_path: Path, simulator: str, agent_model: str
) -> None:
    """A fine-tuned simulator is not the agents' model, but shares its base: the report says so."""
    models = {"a": agent_model, "b": "openai:other", "c": "openai:other"}
    path = _write_run(tmp_path / "runs.sqlite", simulator, models)
    _, report = _report(path)
    assert report.same_model_agents == []
    assert report.base_model_agents == ["a"]
    text = "\n".join(warnings(report))
    assert "fine-tuned copy of the agents' model: agent(s) a run" in text
    assert to_json(report)["base_model_agents"] == ["a"]


def test_render_json_csv_and_plots(db: Path, tmp_path: Path) -> None:
    data, report = _report(db)
    console = Console(width=300, record=True)
    render(report, console)
    text = console.export_text()
    assert "One model plays both sides" in text and "a/no_cot" in text
    assert "1 conversation(s) ended in an infrastructure error" in text
    payload = json.loads(json.dumps(to_json(report)))
    assert payload["counts"] == {"finished": 4, "errors": 1, "agent_failures": 0, "unfinished": 1}
    assert payload["agents"][0]["metrics"]["cts"]["mean"] is not None
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    cts = [r for r in rows if r["metric"] == "cts" and r["table"] == "agents"]
    assert {r["arm"] for r in cts} == {"a/no_cot", "b/no_cot"}
    written = write_plots(data, report, tmp_path / "plots")
    names = {p.name for p in written}
    assert "trajectory_ESC_comp.png" in names and "trajectories_ESC.png" in names
    assert all(p.stat().st_size > 1000 and p.read_bytes()[:4] == b"\x89PNG" for p in written)


def test_carry_policy_changes_empty_dimensions(db: Path) -> None:
    with RunStore(db) as store:
        carried = load_run(store, empty="carry")
    a_s1 = next(c for c in carried.conversations if c.agent == "a" and c.scenario == "s1")
    # With carry, B is unknown at the first state, so B-Δ is undefined (not 2).
    assert a_s1.metrics["b_delta"] is None


def test_pass_k_needs_every_trial_good() -> None:
    from cogwm.arena.run_data import ConversationData
    from cogwm.report.tables import pass_k

    def conv(scenario: str, trial: int, go: bool | None) -> ConversationData:
        return ConversationData(
            1, "ESC", "a", "no_cot", scenario, "max_rounds", 3, [], {}, go, None, trial
        )

    convs = [
        *(conv("s1", t, True) for t in range(3)),  # all good: passes
        conv("s2", 0, True),
        conv("s2", 1, False),
        conv("s2", 2, True),  # one bad trial: fails
        conv("s3", 0, True),
        conv("s3", 1, None),
        conv("s3", 2, True),  # a trial unjudged: not counted
    ]
    found = pass_k(convs, 3)
    assert found is not None and (found.value, found.scenarios) == (0.5, 2)
    assert pass_k(convs, 1) is None


@pytest.mark.parametrize(("effect", "expected"), [(0.5, 34), (0.8, 15), (0.2, 199)])
def test_scenarios_needed_match_the_paired_t_test_tables(effect: float, expected: int) -> None:
    # Paired t-test, two-sided 5%, 80% power: n = 34, 15 and 199 for effect sizes .5, .8, .2
    # (Cohen's tables; G*Power gives the same).
    from cogwm.stats.power import paired_t_sample_size as scenarios_needed

    assert scenarios_needed(1.0, effect) == expected
    assert scenarios_needed(0.3, 0.3 * effect) == expected  # only the ratio matters
    assert scenarios_needed(0.3, -0.3 * effect) == expected


def test_scenarios_needed_is_undefined_without_a_difference() -> None:
    from cogwm.stats.power import paired_t_sample_size as scenarios_needed

    assert scenarios_needed(1.0, 0.0) is None
    assert scenarios_needed(0.0, 0.2) == 2
