"""Every example arena config parses, and names the roles it means to name."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogwm.arena.config import load_config

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted(
    path
    for path in (ROOT / "examples").rglob("*.toml")
    if "[simulator]" in path.read_text(encoding="utf-8")
)


def test_the_examples_are_found() -> None:
    assert len(CONFIGS) >= 7, CONFIGS


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_example_config_loads(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples' paths are relative to the repository root
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "agent_service"))
    config = load_config(path)
    if config.simulator.model in ("llamacpp:smollm2-wm", "llamacpp:smollm2-wm-merged"):
        # With the world model as the user, the judges stay the base model: a role left
        # unnamed would silently become the world model too.
        assert config.intent_model.model == "llamacpp:smollm2"
        assert config.judge_model.model == "llamacpp:smollm2"
        assert config.annotator_model.model == "llamacpp:smollm2"
        assert config.simulator.history_turns == 8
