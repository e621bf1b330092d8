"""One stepped conversation: the cast's own agent or replies from outside, termination, a failed
call that leaves the conversation as it was, and the same transcript as the runner's."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from cogwm import tasks
from cogwm.arena.cast import Cast, Roles
from cogwm.arena.config import ArenaConfig, ModelConfig, parse_config
from cogwm.arena.conversation import Conversation, Limits, Opening, RoundResult
from cogwm.arena.runner import planned_units
from cogwm.arena.termination import Termination
from cogwm.arena.transcript import derive_seed
from cogwm.errors import InputError
from cogwm.models import Model, load, unregister_fake
from cogwm.models.types import ModelCallError
from cogwm.schema import Role
from cogwm.store import RunStore
from helpers_arena import FAKE_NAME, Script, config, register, run_recording


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def script() -> Iterator[Script]:
    yield register(Script())
    unregister_fake(FAKE_NAME)


def _raw(**overrides: Any) -> dict[str, Any]:
    """One ESC scenario, one agent without CoT."""
    raw = config(tasks=["ESC"], dialogues_per_task=1, **overrides)
    raw["agents"] = [{**raw["agents"][0], "conditions": ["no_cot"]}]
    return raw


def _config(**overrides: Any) -> ArenaConfig:
    return parse_config(_raw(**overrides))


def _models() -> Any:
    made: dict[str, Model] = {}

    def model(spec: ModelConfig) -> Model:
        key = f"{spec.model}{sorted(spec.options.items())}"
        if key not in made:
            made[key] = load(spec.model, **spec.options)
        return made[key]

    return model


def _conversation(cfg: ArenaConfig, *, own_agent: bool = True) -> tuple[Conversation, Opening]:
    """The config's one unit as a conversation (its opening prepared as the runner does)."""
    unit = planned_units(cfg)[0]
    task = tasks.get(unit.task)
    cast = Cast.from_config(
        cfg,
        task,
        unit.scenario,
        model=_models(),
        agent=unit.agent if own_agent else None,
        condition=unit.condition,
        roles=Roles(cfg),
    )
    opening = asyncio.run(cast.prepare(seed=derive_seed(cfg.seed, task.name, unit.scenario.id)))
    agent_seed, user_seed = unit.seeds(cfg)
    limits = Limits(max_rounds=cfg.max_rounds, intent_from_round=cfg.intent_from_round)
    return Conversation(cast, limits, seed=agent_seed, user_seed=user_seed), opening


def _play(conversation: Conversation, opening: Opening, replies: Sequence[str | None]) -> None:
    async def go() -> None:
        await conversation.start(opening)
        for reply in replies:
            await conversation.step(reply)

    asyncio.run(go())


def _rows(conversation: Conversation) -> list[tuple[int, str, str, str | None]]:
    """The turns as the store keeps them."""
    rows = []
    for t in conversation.turns:
        state = None if t.state is None else t.state.model_dump_json(exclude_none=True)
        rows.append((t.index, t.role.value, t.text, state))
    return rows


def test_the_cast_agent_speaks_round_by_round_until_the_limit(script: Script) -> None:
    conversation, opening = _conversation(_config(max_rounds=5, intent_from_round=4))

    async def go() -> list[RoundResult]:
        cold = await conversation.start(opening)
        assert cold[-1].state == opening.initial_state and conversation.round == 2
        return [await conversation.step() for _ in range(3)]

    rounds = asyncio.run(go())
    assert [r.round for r in rounds] == [3, 4, 5]
    assert all([t.role for t in r.turns] == [Role.AGENT, Role.USER] for r in rounds)
    assert all(r.turns[0].text.startswith("agent says") for r in rounds)
    # The detector is asked after round 4 only: never before its round, never at the last.
    assert [r.intent_asked for r in rounds] == [False, True, False]
    assert [r.termination for r in rounds] == [None, None, Termination.MAX_ROUNDS]
    assert rounds[-1].truncated and conversation.finished
    outcome = conversation.result()
    assert (outcome.termination, outcome.rounds) == (Termination.MAX_ROUNDS, 5)
    assert [t.index for t in outcome.turns] == list(range(len(outcome.turns)))
    with pytest.raises(InputError, match="has ended"):
        asyncio.run(conversation.step())


def test_replies_from_outside_are_played_as_the_agents_turns(script: Script) -> None:
    conversation, opening = _conversation(_config(), own_agent=False)
    with pytest.raises(InputError, match="not started"):
        asyncio.run(conversation.step("hello"))
    _play(conversation, opening, ["  I hear you.  "])
    agent, user = conversation.turns[-2:]
    assert (agent.role, agent.text, agent.round, agent.state) == (
        Role.AGENT,
        "I hear you.",
        3,
        None,
    )
    assert user.role is Role.USER and user.state is not None and user.call_id
    with pytest.raises(InputError, match="no agent of its own"):
        asyncio.run(conversation.step(None))
    with pytest.raises(InputError, match="reply is empty"):
        asyncio.run(conversation.step("   "))
    assert len(conversation.turns) == len(opening.scenario.opening) + 2


def test_the_user_leaving_ends_the_conversation() -> None:
    register(Script(leave_at=2))
    try:
        conversation, opening = _conversation(_config(max_rounds=10, intent_from_round=8))
        _play(conversation, opening, [None, None])
    finally:
        unregister_fake(FAKE_NAME)
    assert conversation.termination is Termination.USER_LEFT
    assert conversation.result().rounds == 4


def test_a_user_who_leaves_is_not_followed_by_the_detector() -> None:
    # Catches: the intent detector asked after a round in which the user left (its "not ended"
    # would keep the conversation going without the user).
    script = register(Script(leave_at=2))
    try:
        conversation, opening = _conversation(_config(max_rounds=10, intent_from_round=3))

        async def go() -> list[RoundResult]:
            await conversation.start(opening)
            return [await conversation.step(), await conversation.step()]

        stayed, left = asyncio.run(go())
    finally:
        unregister_fake(FAKE_NAME)
    assert (stayed.termination, stayed.intent_asked) == (None, True)
    assert (left.termination, left.intent_asked) == (Termination.USER_LEFT, False)
    assert script.calls["intent"] == 1 and conversation.result().rounds == 4


def test_the_detectors_verdict_ends_the_conversation_naturally() -> None:
    script = register(Script(detector_ends=True))
    try:
        conversation, opening = _conversation(_config(max_rounds=10, intent_from_round=4))

        async def go() -> list[RoundResult]:
            await conversation.start(opening)
            return [await conversation.step("one"), await conversation.step("two")]

        first, second = asyncio.run(go())
    finally:
        unregister_fake(FAKE_NAME)
    assert (first.termination, first.intent_asked) == (None, False)
    assert (second.termination, second.intent_asked) == (Termination.NATURAL_END, True)
    assert not second.truncated and script.calls["intent"] == 1


def test_a_failed_call_leaves_the_conversation_as_it_was_so_the_round_can_be_retried() -> None:
    script = register(Script(fail_when="please fail"))
    try:
        conversation, opening = _conversation(_config(), own_agent=False)
        _play(conversation, opening, [])
        before = list(conversation.turns)
        with pytest.raises(ModelCallError):
            asyncio.run(conversation.step("please fail now"))
        assert conversation.turns == before and conversation.round == 2
        assert not conversation.finished
        played = asyncio.run(conversation.step("something else"))
    finally:
        unregister_fake(FAKE_NAME)
    assert played.round == 3 and [t.index for t in played.turns] == [len(before), len(before) + 1]
    assert script.calls["simulator"] == 2


def test_run_ends_in_error_when_a_call_fails_for_good() -> None:
    register(Script(fail_when="agent says"))
    try:
        conversation, opening = _conversation(_config())
        outcome = asyncio.run(conversation.run(opening))
    finally:
        unregister_fake(FAKE_NAME)
    assert outcome.termination is Termination.ERROR and outcome.rounds == 3
    assert outcome.error and "500" in outcome.error
    # The user's call failed after the agent had spoken: the failed round is rolled back, as a
    # failed step leaves it (catches run() playing rounds without step's rollback).
    assert len(outcome.turns) == len(opening.scenario.opening) and conversation.round == 2


def test_the_same_transcript_as_the_runners_whoever_gives_the_agents_replies(
    tmp_path: Path, script: Script
) -> None:
    raw = _raw(max_rounds=7, intent_from_round=5)
    cfg = parse_config(raw)
    db = tmp_path / "runs.sqlite"
    run_recording(db, raw)
    with RunStore(db, read_only=True) as store:
        (stored,) = store.conversations()
        rows = [(t.idx, t.role, t.text, t.state_json) for t in store.turns(stored.id)]
    # The cast's own agent, as the runner plays it.
    own, opening = _conversation(cfg)
    asyncio.run(own.run(opening))
    assert _rows(own) == rows
    assert own.result().termination.value == stored.termination
    # The same agent replies given from outside (as the environment and the play page do).
    outside, opening = _conversation(cfg, own_agent=False)
    replies = [t.text for t in own.turns[len(opening.scenario.opening) :]][::2]
    _play(outside, opening, replies)
    assert _rows(outside) == rows and outside.termination is own.termination
