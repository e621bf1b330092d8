"""The two-part simulated user: the transition model's state, the world model's words written
after that state (fixed in the output schema), one identity over both parts, seeded sampling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cogwm import tasks
from cogwm.errors import ConfigError
from cogwm.models import register_fake, unregister_fake
from cogwm.models.types import Message
from cogwm.schema import CognitiveState, Profile, Role
from cogwm.schema.termination import Phase
from cogwm.schema.transcript import ArenaTurn, UserSetup
from cogwm.simulator.transition.fit import Settings, fit_model
from cogwm.simulator.transition.model import save_model
from cogwm.simulator.transition.simulator import TransitionSimulator
from cogwm.simulator.transition.two_part import SHOWN_DECIMALS, TwoPartSimulator
from cogwm.validate.python_sim import load_simulator, two_part_options
from test_transition_model import _rows

TASK = tasks.get("ESC")
SETUP = UserSetup(context="I lost my job last week.", profile=Profile.neutral())
SAID = "Thanks, that actually helps a little."


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("two_part") / "esc.json"
    save_model(fit_model(_rows(), Settings(features="per-task"), {"rows": 120}), path)
    return path


@pytest.fixture()
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))


def _turns(simulator: TwoPartSimulator | TransitionSimulator, agent: str) -> list[ArenaTurn]:
    """A cold-start user turn (with the opening state on it) and the agent's reply."""
    user = ArenaTurn(index=0, round=0, role=Role.USER, phase=Phase.COLD_START, text="I feel awful.")
    opening = simulator.read_state(TASK, SETUP, [user])
    user = user.model_copy(update={"state": opening})
    reply = ArenaTurn(index=1, round=1, role=Role.AGENT, phase=Phase.SIMULATED, text=agent)
    return [user, reply]


def _predicted(model_file: Path, turns: list[ArenaTurn]) -> CognitiveState:
    state = TransitionSimulator(str(model_file)).respond(TASK, SETUP, turns, seed=0).state
    assert state is not None
    return state


def _answer(state: CognitiveState, utterance: str, *, own_texts: bool = True) -> str:
    """What a world model that keeps to the schema says: the given state (with item texts of
    its own, or the state's), then its words."""

    def items(field: str) -> list[dict[str, Any]]:
        return [
            {
                "text": f"my {field} {i}" if own_texts else x.text,
                "score": round(x.score or 0.0, SHOWN_DECIMALS),
            }
            for i, x in enumerate(getattr(state, field))
        ]

    assert state.emotion is not None
    return json.dumps(
        {
            "emotion": {"label": state.emotion.label, "intensity": state.emotion.intensity},
            **{f: items(f) for f in ("beliefs", "desires", "intentions")},
            "utterance": utterance,
            "leave": False,
        }
    )


@pytest.mark.parametrize("agent", ["I hear you, that sounds really hard.", "Stop whining."])
def test_the_state_is_the_transition_models_and_the_words_the_world_models(
    model_file: Path, isolated_cache: None, agent: str
) -> None:
    turns = _turns(TransitionSimulator(str(model_file)), agent)
    expected = _predicted(model_file, turns)
    register_fake("two-part-wm", lambda _messages: _answer(expected, SAID))
    register_fake("two-part-fixed", lambda _m: _answer(expected, SAID, own_texts=False))
    try:
        simulator = TwoPartSimulator(str(model_file), "fake:two-part-wm", write_items=True)
        out = simulator.respond(TASK, SETUP, turns, seed=3)
        fixed = TwoPartSimulator(str(model_file), "fake:two-part-fixed")
        fixed_out = fixed.respond(TASK, SETUP, turns, seed=3)
    finally:
        unregister_fake("two-part-wm")
        unregister_fake("two-part-fixed")
    assert out.text == SAID and not out.leave
    assert out.state is not None
    assert out.state.emotion == expected.emotion
    assert [i.score for i in out.state.intentions] == [i.score for i in expected.intentions]
    assert [i.text for i in out.state.intentions] == ["my intentions 0"]
    # With the item texts fixed too, the state is the transition model's to the last digit.
    assert fixed_out.state == expected and fixed_out.text == SAID


def test_the_schema_fixes_the_state_and_the_prompt_shows_the_previous_one(
    model_file: Path, isolated_cache: None
) -> None:
    simulator = TwoPartSimulator(str(model_file), "fake:schema")
    turns = _turns(simulator, "Stop whining, nobody cares.")
    expected = _predicted(model_file, turns)
    out = simulator.respond(TASK, SETUP, turns, seed=1)
    request = simulator.model.backend.requests[-1]  # type: ignore[attr-defined]
    schema = request.json_schema
    assert schema is not None
    defs = schema["$defs"]
    emotion = defs[f"FixedEmotion{TASK.name}"]["properties"]
    assert expected.emotion is not None
    assert emotion["label"]["const"] == expected.emotion.label
    assert emotion["intensity"]["const"] == expected.emotion.intensity
    score = defs["Intentions0"]["properties"]["score"]["const"]
    assert score == round(expected.intentions[0].score or 0.0, SHOWN_DECIMALS)
    assert list(schema["properties"])[-2:] == ["utterance", "leave"]
    shown = request.messages[-1].content
    assert "Your state before this: emotion" in shown and "Stop whining" in shown
    assert out.state is not None and out.state.emotion == expected.emotion


def test_a_backend_that_cannot_enforce_a_schema_is_refused_in_one_line(
    model_file: Path, isolated_cache: None
) -> None:
    register_fake("two-part-prompt-only", modes=[])
    try:
        simulator = TwoPartSimulator(str(model_file), "fake:two-part-prompt-only")
        turns = _turns(simulator, "How are you?")
        with pytest.raises(ConfigError, match="cannot enforce a JSON schema") as caught:
            simulator.respond(TASK, SETUP, turns, seed=0)
    finally:
        unregister_fake("two-part-prompt-only")
    assert "\n" not in str(caught.value)


def test_the_identity_names_both_parts(
    model_file: Path, tmp_path: Path, isolated_cache: None
) -> None:
    simulator = TwoPartSimulator(str(model_file), "fake:schema")
    assert simulator.identity.startswith("two-part:transition:esc.json@")
    assert "fake:schema" in simulator.identity
    other_fit = tmp_path / "esc.json"
    save_model(fit_model(_rows(60), Settings(features="per-task"), {"rows": 60}), other_fit)
    assert TwoPartSimulator(str(other_fit), "fake:schema").identity != simulator.identity
    assert TwoPartSimulator(str(model_file), "fake:echo").identity != simulator.identity
    writing = TwoPartSimulator(str(model_file), "fake:schema", write_items=True)
    assert writing.identity != simulator.identity
    with pytest.raises(ConfigError, match="two-part simulator"):
        TwoPartSimulator(str(model_file), "no-such-kind")


def test_the_seed_drives_the_words_and_reproduces_them(
    model_file: Path, isolated_cache: None
) -> None:
    simulator = TwoPartSimulator(str(model_file), "fake:schema")
    turns = _turns(simulator, "That sounds hard. What happened?")
    first = simulator.respond(TASK, SETUP, turns, seed=5)
    again = TwoPartSimulator(str(model_file), "fake:schema").respond(TASK, SETUP, turns, seed=5)
    assert again == first
    others = {simulator.respond(TASK, SETUP, turns, seed=s).text for s in range(6, 10)}
    assert others - {first.text}
    # Only the words move with the seed: the state is the transition model's every time.
    states = [simulator.respond(TASK, SETUP, turns, seed=s).state for s in range(3)]
    assert first.state is not None
    assert all(s is not None and s.emotion == first.state.emotion for s in states)


def test_validate_addresses_name_the_file_and_the_model(model_file: Path) -> None:
    assert two_part_options("a.json") == {"path": "a.json"}
    assert two_part_options("a@b.json@fake:schema") == {"path": "a@b.json", "model": "fake:schema"}
    loaded = load_simulator(f"two-part:{model_file}@fake:schema")
    assert loaded.identity.startswith("two-part:transition:esc.json@")
    assert loaded.identity.endswith("+fake:schema+fixed-items")


def test_the_world_model_sees_the_world_model_format(model_file: Path) -> None:
    simulator = TwoPartSimulator(str(model_file), "fake:schema", history_turns=2)
    turns = _turns(simulator, "Tell me more.")
    messages = simulator.messages(TASK, SETUP, turns)
    assert [m.role for m in messages] == ["system", "user"]
    assert isinstance(messages[0], Message)
    assert "You: I feel awful." in messages[1].content
    assert messages[1].content.endswith("Give your new state and your reply.")


def test_an_arena_run_plays_the_two_part_user(
    model_file: Path, tmp_path: Path, isolated_cache: None
) -> None:
    """The arena config's python simulator with both files: every simulated user turn carries
    the world model's words (not the transition model's fixed line) and a state."""
    from cogwm.simulator.transition.simulator import UTTERANCE
    from cogwm.store import RunStore
    from cogwm.validate import sensitivity as check

    plan = check.Plan(
        simulator=f"two-part:{model_file}@fake:schema", folder=tmp_path / "runs",
        tasks=("ESC",), scenarios=3, rounds=3, seed=1,
    )  # fmt: skip
    (result,) = check.run_sensitivity(plan, show_progress=False, n_resamples=50)
    assert result.n_failed == 0
    (db,) = sorted((tmp_path / "runs").glob("*.sqlite"))
    with RunStore(db) as store:
        run = store.run()
        assert run is not None and "two-part:transition:esc.json@" in run.config_json
        said = [
            t
            for c in store.conversations(run.id)
            for t in store.turns(c.id)
            if t.role == "user" and t.phase == Phase.SIMULATED
        ]
    # Every conversation (scenarios x scripted agents) has its user's turns (the fake's random
    # ``leave`` may end one after its first).
    assert len({t.conversation_id for t in said}) == 3 * 3
    assert all(t.text and t.text != UTTERANCE and t.state_json for t in said)
