"""Arena config: validation with one-line errors naming the key, and what the hash covers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cogwm.arena.config import config_hash, load_config, parse_config
from cogwm.errors import ConfigError


def _raw(**overrides: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "seed": 3,
        "tasks": ["ESC"],
        "dialogues_per_task": 2,
        "simulator": {"model": "fake:schema"},
        "agents": [{"name": "a", "model": "fake:schema"}],
    }
    raw.update(overrides)
    return raw


def test_defaults_follow_the_protocol() -> None:
    config = parse_config(_raw())
    assert config.max_rounds == 20
    assert config.intent_from_round == 8
    assert config.simulator.temperature == 0.3
    assert config.intent_model.model == "fake:schema"
    assert config.intent_model.temperature == 0.0
    assert [c.value for c in config.agents[0].conditions] == ["no_cot"]


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({k: v for k, v in _raw().items() if k != "simulator"}, "simulator"),
        (_raw(agents=[]), "agents"),
        (_raw(agents=[{"name": "a"}]), "agents.0.model"),
        (_raw(dialogues_per_task=0), "dialogues_per_task"),
        (_raw(tasks=["NOPE"]), "tasks"),
        (_raw(tasks=["DAILY"]), "tasks"),
        (_raw(colour="blue"), "colour"),
        (_raw(simulator={"model": "fake:schema", "temprature": 0.2}), "simulator.temprature"),
        (
            _raw(agents=[{"name": "a", "model": "fake:schema", "conditions": ["think"]}]),
            "agents.0.conditions.0",
        ),
        (
            _raw(agents=[{"name": "a", "model": "fake:schema", "prompt": "builtin:nope"}]),
            "agents.0.prompt",
        ),
        (
            _raw(agents=[{"name": "a", "model": "fake:schema", "options": {"api_key": "sk-1"}}]),
            "agents.0.options",
        ),
        (_raw(intent_from_round=2), "intent_from_round"),
        (_raw(max_rounds=6, intent_from_round=7), "intent_from_round"),
    ],
)
def test_bad_config_names_the_key(raw: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(raw, source="cfg.toml")
    message = str(info.value)
    assert message.startswith("cfg.toml: ")
    assert key in message
    assert "\n" not in message


def test_duplicate_agent_names_are_refused() -> None:
    agents = [{"name": "a", "model": "fake:schema"}, {"name": "a", "model": "fake:schema"}]
    with pytest.raises(ConfigError, match="names must be unique"):
        parse_config(_raw(agents=agents))


def test_toml_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("seed = = 3\n")
    with pytest.raises(ConfigError, match=r"bad\.toml: not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "missing.toml")


def test_hash_ignores_concurrency_paths_and_display() -> None:
    base = config_hash(parse_config(_raw()))
    assert config_hash(parse_config(_raw(concurrency=99))) == base
    assert config_hash(parse_config(_raw(data_dir="/elsewhere"))) == base
    assert config_hash(parse_config(_raw(name="renamed"))) == base
    assert config_hash(parse_config(_raw(cache=False))) == base
    options = {"base_url": "http://127.0.0.1:9/v1", "timeout_s": 5}
    moved = _raw(simulator={"model": "fake:schema", "options": options})
    assert config_hash(parse_config(moved)) == base


@pytest.mark.parametrize(
    "change",
    [
        {"seed": 4},
        {"dialogues_per_task": 3},
        {"max_rounds": 12},
        {"tasks": ["PD"]},
        {"simulator": {"model": "fake:schema", "temperature": 0.5}},
        {"simulator": {"model": "fake:other"}},
        {"judge": {"model": "fake:judge"}},
        {"agents": [{"name": "a", "model": "fake:schema", "prompt": "Be kind."}]},
        {"agents": [{"name": "a", "model": "fake:schema", "conditions": ["cot"]}]},
        {"agents": [{"name": "a", "model": "fake:schema", "max_tokens": 50}]},
    ],
)
def test_hash_covers_what_changes_results(change: dict[str, Any]) -> None:
    assert config_hash(parse_config(_raw(**change))) != config_hash(parse_config(_raw()))


def test_example_config_is_valid() -> None:
    example = Path(__file__).resolve().parents[1] / "examples" / "arena_esc.toml"
    config = load_config(example)
    assert config.tasks == ["ESC"]
    assert {a.name for a in config.agents} == {"empathetic", "solution_first", "dismissive"}


def test_cli_bad_config_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "arena.toml"
    bad.write_text('tasks = ["ESC"]\ndialogues_per_task = 1\n[simulator]\nmodel = "fake:schema"\n')
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cogwm.cli.main",
            "arena",
            "run",
            str(bad),
            "--db",
            str(tmp_path / "r.sqlite"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert result.stderr.startswith("error: ")
    assert "agents" in result.stderr


def test_the_endpoint_of_an_openai_model_enters_the_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    # Catches: base_url was left out of the hash, so a run resumed against another server
    # (other weights under the same model name) counted as the same config.
    from cogwm.arena.config import config_hash, parse_config

    def raw(url: str) -> dict[str, Any]:
        model = {"model": "openai:m", "options": {"base_url": url, "timeout_s": 5}}
        return {
            "tasks": ["ESC"],
            "dialogues_per_task": 1,
            "simulator": model,
            "agents": [{"name": "a", **model}],
        }

    here = config_hash(parse_config(raw("http://127.0.0.1:8000/v1")))
    there = config_hash(parse_config(raw("http://10.0.0.2:8000/v1")))
    assert here != there
    assert here == config_hash(parse_config(raw("http://127.0.0.1:8000/v1/")))  # same endpoint
    monkeypatch.setenv("COGWM_BASE_URL", "http://10.0.0.3:8000/v1")
    bare = {
        "tasks": ["ESC"],
        "dialogues_per_task": 1,
        "simulator": {"model": "openai:m"},
        "agents": [{"name": "a", "model": "openai:m"}],
    }
    first = config_hash(parse_config(bare))
    monkeypatch.setenv("COGWM_BASE_URL", "http://10.0.0.4:8000/v1")
    assert config_hash(parse_config(bare)) != first
