"""The annotation store: a dialogue round-trips whole; counts per reason and per dialogue."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogwm.annotate.outputs import Allocation
from cogwm.annotate.saa import DialogueAnnotation, Failure, TurnAnnotation
from cogwm.annotate.store import AnnotationStore, Usage
from cogwm.errors import InputError
from cogwm.schema import Dialogue, Role, Utterance

USAGE = Usage(1.5, 3, 100, 20, 0.0)


def _dialogue(did: str) -> Dialogue:
    rows = [("a", Role.AGENT, "Hi."), ("u", Role.USER, "Hello."), ("a", Role.AGENT, "So?")]
    rows.append(("u", Role.USER, "Fine."))
    utterances = [Utterance(index=i, speaker=s, role=r, text=t) for i, (s, r, t) in enumerate(rows)]
    return Dialogue(id=did, corpus="esconv", task="ESC", utterances=utterances)


def _annotation(did: str) -> DialogueAnnotation:
    allocation = Allocation.model_validate(
        {"emotion": {"label": "hope", "intensity": 1, "evidence": "Hello."}}
    )
    return DialogueAnnotation(
        dialogue_id=did,
        task="ESC",
        turns=[TurnAnnotation(turn_index=1, allocation=allocation), TurnAnnotation(turn_index=3)],
        failures=[
            Failure(stage="summary", reason="schema", message="bad"),
            Failure(stage="allocation", turn_index=3, reason="evidence", message="x", raw="{}"),
        ],
    )


def test_round_trip_counts_and_refusals(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite"
    with AnnotationStore(path) as store:
        for did in ("d1", "d2"):
            store.add(
                _dialogue(did), _annotation(did), model="m", prompt_version="v", seed=0, usage=USAGE
            )
        with pytest.raises(InputError, match="already stored"):
            store.add(
                _dialogue("d1"),
                _annotation("d1"),
                model="m",
                prompt_version="v",
                seed=0,
                usage=USAGE,
            )
        stored = list(store.dialogues())
        assert [s.dialogue.id for s in stored] == ["d1", "d2"]
        assert stored[0].annotation == _annotation("d1")
        assert stored[0].usage == USAGE and stored[0].model == "m"
        totals = store.totals()
        assert (totals.dialogues, totals.user_turns, totals.failed_turns) == (2, 4, 2)
        assert totals.failures == {"schema": 2, "evidence": 2} and totals.summary_failed == 2
        assert store.failures_by_dialogue()["d2"] == {"schema": 1, "evidence": 1}
        assert store.models() == {("m", "v")}
    with pytest.raises(InputError, match="no such annotation store"):
        AnnotationStore(tmp_path / "none.sqlite", create=False)
    other = tmp_path / "other.sqlite"
    other.write_text("not sqlite at all, just text that is long enough to be a header....")
    with pytest.raises(InputError, match="not a cogwm annotation store"):
        AnnotationStore(other)
