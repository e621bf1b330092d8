"""``cogwm score fidelity`` and ``cogwm score trajectories`` on small hand-made files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from typer.testing import CliRunner

from cogwm.cli.score import app
from cogwm.metrics import embeddings
from cogwm.schema import CognitiveState, Dialogue, Emotion, Role, StateItem, Utterance

SRC = Path(__file__).resolve().parents[1] / "src"
runner = CliRunner()


class IdentityTextEmbedder:
    """Equal texts get equal vectors and different texts orthogonal ones (cosine 1 or 0)."""

    model_id = "test-identity"

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, self.index.setdefault(text, len(self.index))] = 1.0
        return out


@pytest.fixture(autouse=True)
def _test_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    cached = embeddings.CachedEmbedder(IdentityTextEmbedder())
    monkeypatch.setattr(embeddings, "default_embedder", lambda: cached)


def _write(path: Path, rows: Sequence[dict[str, Any] | str]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _state(
    label: str, intensity: int, beliefs: list[tuple[str, float]] | None = None
) -> dict[str, Any]:
    return CognitiveState(
        emotion=Emotion(label=label, intensity=intensity),
        beliefs=[StateItem(text=t, score=s) for t, s in beliefs or []],
    ).model_dump(mode="json")


def _run_main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from cogwm.cli.main import main; main()", *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )


# --- fidelity -----------------------------------------------------------------------------------


def test_fidelity_json_by_hand(tmp_path: Path) -> None:
    gold = _write(
        tmp_path / "gold.jsonl",
        [
            {
                "id": "a",
                "state": _state("sadness", 2, [("job lost", 1.0)]),
                "utterance": "I lost my job",
            },
            {"id": "b", "state": _state("hope", 1, [("it will pass", 2.0)]), "utterance": "ok"},
        ],
    )
    pred = _write(
        tmp_path / "pred.jsonl",
        [
            {"id": "b", "state": _state("hope", 3), "utterance": "ok ok"},
            {
                "id": "a",
                "state": _state("anxiety", 2, [("job lost", 2.0)]),
                "utterance": "I lost my job",
            },
        ],
    )
    result = runner.invoke(app, ["fidelity", str(pred), str(gold), "--json", "--resamples", "50"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    m = report["metrics"]
    # E: a wrong label (anxiety vs sadness), b right -> 0.5; intensity errors 0 and 2 -> 1.0
    assert (m["E-Acc"]["mean"], m["E-Acc"]["n"]) == (0.5, 2)
    assert m["E-MAE"]["mean"] == 1.0
    # B: a same text -> cosine 1, |2 - 1| = 1; b predicted nothing -> miss, Sim 0
    assert (m["B-Sim"]["mean"], m["B-Sim"]["n"], m["B-Sim"]["misses"]) == (0.5, 2, 1)
    assert (m["B-MAE"]["mean"], m["B-MAE"]["n"]) == (1.0, 1)
    assert m["D-Sim"]["n"] == 0 and m["D-Sim"]["mean"] is None
    # LenR: 4/4 and 2/1 -> 1.5
    assert m["LenR"]["mean"] == 1.5
    assert report["embedding_model"] == "test-identity"


def test_fidelity_accepts_exported_dialogues_as_gold(tmp_path: Path) -> None:
    dialogue = Dialogue(
        id="d1",
        corpus="esconv",
        utterances=[
            Utterance(index=0, speaker="sys", role=Role.AGENT, text="Hi, how are you?"),
            Utterance(index=1, speaker="usr", role=Role.USER, text="Not great."),
            Utterance(
                index=2,
                speaker="usr",
                role=Role.USER,
                text="I failed my exam.",
                state=CognitiveState(emotion=Emotion(label="shame", intensity=2)),
            ),
            Utterance(index=3, speaker="sys", role=Role.AGENT, text="I am sorry."),
            Utterance(index=4, speaker="usr", role=Role.USER, text="Thanks."),
        ],
    )
    gold = _write(tmp_path / "gold.jsonl", [dialogue.model_dump_json()])
    pred = _write(
        tmp_path / "pred.jsonl",
        [
            {
                "id": "d1/turn1",
                "state": _state("shame", 2),
                "utterance": "Not great. I failed my exam.",
            },
            {"id": "d1/turn3", "state": None, "utterance": "Thanks a lot."},
        ],
    )
    result = runner.invoke(app, ["fidelity", str(pred), str(gold), "--json", "--resamples", "20"])
    assert result.exit_code == 0, result.output
    m = json.loads(result.stdout)["metrics"]
    # turn1 (utterances 1-2) carries the shame state: one emotion sample, correct.
    assert (m["E-Acc"]["mean"], m["E-Acc"]["n"]) == (1.0, 1)
    assert m["ROUGE-L"]["n"] == 2
    assert m["LenR"]["mean"] == pytest.approx((8 / 8 + 4 / 2) / 2)  # 13a tokens incl. punctuation


def test_fidelity_table_output(tmp_path: Path) -> None:
    rows = [{"id": "a", "state": _state("fear", 1), "utterance": "hi"}]
    path = _write(tmp_path / "x.jsonl", rows)
    result = runner.invoke(app, ["fidelity", str(path), str(path), "--resamples", "10"])
    assert result.exit_code == 0, result.output
    assert "E-Acc" in result.stdout and "ROUGE-L" in result.stdout


def test_fidelity_with_the_fake_judge(tmp_path: Path) -> None:
    rows = [{"id": "a", "state": _state("fear", 1, [("x", 1.0)]), "utterance": "hi there"}]
    path = _write(tmp_path / "x.jsonl", rows)
    result = runner.invoke(
        app, ["fidelity", str(path), str(path), "--json", "--judge", "fake:schema", "--task", "ESC"]
    )
    assert result.exit_code == 0, result.output
    judge = json.loads(result.stdout)["judge"]
    assert judge["model"] == "fake:schema"
    assert set(judge["metrics"]) == {"Emo", "Bel", "Utt", "Coh"}
    assert judge["metrics"]["Emo"]["prompt_id"] == "judge.turn.emotion"
    assert judge["metrics"]["Emo"]["n_failed"] == 0


def test_fidelity_errors_are_one_line_and_name_the_problem(tmp_path: Path) -> None:
    gold = _write(
        tmp_path / "gold.jsonl", [{"id": "a", "utterance": "x"}, {"id": "b", "utterance": "y"}]
    )
    pred = _write(tmp_path / "pred.jsonl", [{"id": "a", "utterance": "x"}])
    done = _run_main("score", "fidelity", str(pred), str(gold))
    assert done.returncode == 2
    assert done.stderr.strip() == "error: 1 gold records have no prediction, e.g. b"
    bad = _write(tmp_path / "bad.jsonl", [{"id": "a", "utterance": "x"}, "{oops"])
    done = _run_main("score", "fidelity", str(bad), str(gold))
    assert done.returncode == 2
    assert "bad.jsonl, line 2: not JSON" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_non_utf8_line_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"id": "a", "scores": [1.0, 2.0]}\n{"id": "caf\xe9", "scores": [1.0]}\n')
    done = _run_main("score", "trajectories", str(path), "--task", "ESC")
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {path}, line 2: not UTF-8 text"


def test_fidelity_rejects_invalid_record(tmp_path: Path) -> None:
    bad = _write(
        tmp_path / "bad.jsonl",
        [{"id": "a", "state": {"emotion": {"label": "joy", "intensity": 2}}}],
    )
    result = runner.invoke(app, ["fidelity", str(bad), str(bad)])
    assert result.exit_code != 0
    assert "line 1: not a valid FidelityRecord" in str(result.exception)
    assert "lexicon" in str(result.exception)


# --- trajectories -------------------------------------------------------------------------------


def _trajectory_rows() -> list[dict[str, Any]]:
    return [
        {
            "id": "c1",
            "agent": "A",
            "scenario": "s1",
            "scores": [0.0, 1.0, 1.0, 0.5],
            "good_outcome": True,
        },
        {
            "id": "c2",
            "agent": "A",
            "scenario": "s2",
            "scores": [1.0, 2.0, 2.0, 1.0],
            "good_outcome": False,
        },
        {"id": "c3", "agent": "B", "scenario": "s1", "scores": [0.0, 0.0], "good_outcome": False},
        {"id": "c4", "agent": "B", "scenario": "s2", "scores": [0.0]},
        {
            "id": "c5",
            "agent": "C",
            "scenario": "s1",
            "states": [_state("sadness", 3, [("x", 1.0)]), _state("hope", 2)],
        },
    ]


def test_trajectories_json_by_hand(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", _trajectory_rows())
    result = runner.invoke(
        app, ["trajectories", str(path), "--task", "ESC", "--json", "--resamples", "50"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    by_id = {c["id"]: c for c in summary["conversations"]}
    # c1: AUC 0.5625, Δ 0.5, PSR 1/3, Mono 1/3, CTS 0.475 (see test_metrics_trajectory)
    assert by_id["c1"]["cts"] == pytest.approx(0.475)
    assert by_id["c2"]["mono"] == pytest.approx(1 / 3)
    assert by_id["c4"]["n"] == 1 and by_id["c4"]["cts"] is None
    # c5 (ESC): s1 = 0.5 * -2 + 1/6 * 1 = -0.8333, s2 = 0.5 * 2 = 1; Δ = 1.8333;
    # E-Δ = 2 * 2 - (-2 * 3) = 10; B-Δ = 0 - 1 = -1 (empty counts 0); nz = 1/2
    assert by_id["c5"]["delta"] == pytest.approx(1 + 5 / 6)
    assert by_id["c5"]["deltas"]["E-Δ"] == pytest.approx(10.0)
    assert by_id["c5"]["deltas"]["B-Δ"] == pytest.approx(-1.0)
    assert by_id["c5"]["nz"] == 0.5
    overall = summary["overall"]
    assert overall["conversations"] == 5
    assert overall["undefined"] == 1
    assert overall["mean_length"] == pytest.approx((4 + 4 + 2 + 1 + 2) / 5)
    # Mean Δ over the four defined trajectories: (0.5 + 0 + 0 + 1.8333) / 4
    assert overall["metrics"]["delta"]["mean"] == pytest.approx((0.5 + 1 + 5 / 6) / 4)
    assert overall["metrics"]["delta"]["n"] == 4
    # GO: True, False, False judged -> 1/3
    assert overall["good_outcome"]["mean"] == pytest.approx(1 / 3)
    agents = summary["agents"]
    # A: c1 CTS 0.475; c2 CTS = 0.4 * 1.25 + 0.3 * 1/3 + 0.3 * 0 = 0.6 -> mean 0.5375
    assert agents["A"]["metrics"]["cts"]["mean"] == pytest.approx((0.475 + 0.6) / 2)
    assert set(agents) == {"A", "B", "C"}
    assert agents["A"]["typology"] in {"all-round", "sprint", "steady", "hollow", "mixed"}
    assert summary["correlation_n"] == 4


def test_trajectories_table_output(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", _trajectory_rows())
    result = runner.invoke(app, ["trajectories", str(path), "--task", "ESC", "--resamples", "20"])
    assert result.exit_code == 0, result.output
    for word in ("CTS", "PSR", "agents", "Pearson r"):
        assert word in result.stdout


def test_trajectories_carry_policy(tmp_path: Path) -> None:
    rows = [{"id": "c", "states": [_state("hope", 1, [("x", 2.0)]), _state("hope", 1)]}]
    path = _write(tmp_path / "t.jsonl", rows)
    zero = runner.invoke(app, ["trajectories", str(path), "--task", "PD", "--json"])
    carry = runner.invoke(
        app, ["trajectories", str(path), "--task", "PD", "--json", "--empty", "carry"]
    )
    # PD: s1 = 0.1 * 2 + 0.3 * 2 = 0.8; s2 = 0.2 (zero) or 0.8 (carry)
    assert json.loads(zero.stdout)["conversations"][0]["delta"] == pytest.approx(-0.6)
    assert json.loads(carry.stdout)["conversations"][0]["delta"] == pytest.approx(0.0)


def test_trajectories_with_judged_good_outcome(tmp_path: Path) -> None:
    rows = [
        {
            "id": "c",
            "scores": [0.0, 1.0],
            "transcript": [{"role": "agent", "text": "Hello"}, {"role": "user", "text": "Hi"}],
        }
    ]
    path = _write(tmp_path / "t.jsonl", rows)
    result = runner.invoke(
        app, ["trajectories", str(path), "--task", "ESC", "--json", "--judge", "fake:schema"]
    )
    assert result.exit_code == 0, result.output
    go = json.loads(result.stdout)["conversations"][0]["good_outcome"]
    assert isinstance(go, bool)


def test_trajectories_bad_input_names_the_line(tmp_path: Path) -> None:
    no_emotion = CognitiveState().model_dump(mode="json")
    path = _write(
        tmp_path / "t.jsonl", [{"id": "ok", "scores": [1.0]}, {"id": "x", "states": [no_emotion]}]
    )
    done = _run_main("score", "trajectories", str(path), "--task", "ESC")
    assert done.returncode == 2
    assert "t.jsonl, line 2 (x): state 0 has no emotion" in done.stderr
    both = _write(tmp_path / "b.jsonl", [{"id": "x", "states": [], "scores": []}])
    result = runner.invoke(app, ["trajectories", str(both), "--task", "ESC"])
    assert "exactly one of 'states' and 'scores'" in str(result.exception)
    daily = runner.invoke(app, ["trajectories", str(both), "--task", "DAILY"])
    assert "no composite weights" in str(daily.exception)


def test_trajectories_refuse_a_partly_annotated_dialogue(tmp_path: Path) -> None:
    # Two user turns, only the first with a state: scoring the one state would silently make
    # N = 1 instead of 2, so the line is refused.
    annotated = CognitiveState(emotion=Emotion(label="hope", intensity=2))
    dialogue = Dialogue(
        id="d1",
        corpus="test",
        utterances=[
            Utterance(index=0, speaker="a", role=Role.AGENT, text="hello"),
            Utterance(index=1, speaker="u", role=Role.USER, text="hi", state=annotated),
            Utterance(index=2, speaker="a", role=Role.AGENT, text="how are you"),
            Utterance(index=3, speaker="u", role=Role.USER, text="fine"),
        ],
    )
    path = _write(tmp_path / "d.jsonl", [dialogue.model_dump_json()])
    done = _run_main("score", "trajectories", str(path), "--task", "ESC")
    assert done.returncode == 2
    assert "d.jsonl, line 1: dialogue 'd1' has a state on 1 of 2 user turns" in done.stderr
