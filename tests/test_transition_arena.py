"""The transition model as the arena's simulated user: one Python simulator, one identity, whose
states follow the scripted agents (fitted on kind and rude turns, it ranks supportive first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogwm.errors import ConfigError
from cogwm.simulator.transition.fit import Settings, fit_model
from cogwm.simulator.transition.model import save_model
from cogwm.simulator.transition.simulator import TransitionSimulator
from cogwm.validate import sensitivity as check
from test_transition_model import _rows

FACTORY = "python:cogwm.simulator.transition.simulator:TransitionSimulator"


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("transition") / "esc.json"
    save_model(fit_model(_rows(), Settings(features="per-task"), {"rows": 120}), path)
    return path


def test_arena_conversations_rank_the_scripted_agents(model_file: Path, tmp_path: Path) -> None:
    (result,) = check.run_sensitivity(
        check.Plan(
            simulator=FACTORY, folder=tmp_path / "runs", tasks=("ESC",), scenarios=6, rounds=4,
            seed=1, simulator_options={"path": str(model_file)},
        ),
        show_progress=False,
        n_resamples=200,
    )  # fmt: skip
    assert result.n_failed == 0
    means = result.means
    assert means["supportive"] is not None and means["hostile"] is not None
    assert means["supportive"] > means["hostile"]


def test_identity_names_the_file_by_content(model_file: Path, tmp_path: Path) -> None:
    simulator = TransitionSimulator(str(model_file))
    assert simulator.identity.startswith("transition:esc.json@")
    copy = tmp_path / "esc.json"
    copy.write_bytes(model_file.read_bytes())
    assert TransitionSimulator(str(copy)).identity == simulator.identity
    with pytest.raises(ConfigError, match="transition simulator"):
        TransitionSimulator(str(tmp_path / "missing.json"))
