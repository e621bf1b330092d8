"""JSON Lines inputs of the scoring commands, and how they become metric inputs.

**Fidelity files** (``cogwm score fidelity PRED GOLD``): one record per line,
``{"id": str, "state": CognitiveState | null, "utterance": str | null, "group": str | null}``
(``group``, e.g. the dialogue id, makes the bootstrap resample dialogues; ``dataset`` names the
corpus for the per-dataset rows; ``cogwm simulate`` also writes ``model``, ``mode``, ``ablation``
and ``error``). A samples line (``cogwm samples build``) is a gold record: its target's state
and utterance, its dialogue as group and its corpus as dataset. A line holding a
whole ``Dialogue`` (as ``cogwm data export`` writes) stands for one record per user turn, with
id ``<dialogue id>/turn<turn index>``, the turn's text as utterance, the last annotated state
of the turn's utterances as state and the dialogue id as group. Gold and predictions are
paired by id; every gold id needs a prediction and every prediction a gold record.

**Trajectory files** (``cogwm score trajectories``): one conversation per line,
``{"id", "states": [CognitiveState, ...]}`` or ``{"id", "scores": [float, ...]}``, optionally
with ``"agent"``, ``"scenario"`` (conversations of different agents on one scenario are
paired), ``"good_outcome"`` (a stored verdict) and ``"transcript"``
(``[{"role": "user"|"agent", "text"}]``, for the GoodOutcome judge). A ``Dialogue`` line gives
the annotated states of its user turns (turns without a state are skipped) and its transcript.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from cogwm.errors import InputError
from cogwm.metrics.turn import FidelitySample
from cogwm.schema import CognitiveState, Dialogue, Record, Role, Turn
from cogwm.simulator.samples import parse_sample
from cogwm.simulator.simulate import gold_record


class FidelityRecord(Record):
    """One gold or predicted turn."""

    id: str = Field(min_length=1)
    state: CognitiveState | None = None
    utterance: str | None = None
    group: str | None = None
    dataset: str | None = None
    intensity_known: bool = True
    model: str | None = None
    mode: str | None = None
    ablation: str | None = None
    error: str | None = None


class TranscriptLine(Record):
    """One turn of a transcript."""

    role: Role
    text: str


class TrajectoryRecord(Record):
    """One conversation: its states (or precomputed composite scores) and optional context."""

    id: str = Field(min_length=1)
    states: list[CognitiveState] | None = None
    scores: list[float] | None = None
    agent: str | None = None
    scenario: str | None = None
    good_outcome: bool | None = None
    transcript: list[TranscriptLine] | None = None

    @model_validator(mode="after")
    def _one_series(self) -> TrajectoryRecord:
        if (self.states is None) == (self.scores is None):
            raise ValueError("give exactly one of 'states' and 'scores'")
        return self


def _describe(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any], str]]:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{path}, line {number}: not UTF-8 text") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}, line {number}: not JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}, line {number}: expected a JSON object")
            yield number, obj, line


def _parse(model: type[Record], path: Path, number: int, line: str) -> Any:
    try:
        return model.model_validate_json(line)
    except ValidationError as exc:
        raise InputError(
            f"{path}, line {number}: not a valid {model.__name__}: {_describe(exc)}"
        ) from None


def _turn_state(turn: Turn) -> CognitiveState | None:
    states = [u.state for u in turn.utterances if u.state is not None]
    return states[-1] if states else None


def _dialogue_records(dialogue: Dialogue) -> list[FidelityRecord]:
    return [
        FidelityRecord(
            id=f"{dialogue.id}/turn{turn.index}",
            state=_turn_state(turn),
            utterance=turn.text,
            group=dialogue.id,
        )
        for turn in dialogue.user_turns()
    ]


def _sample_record(line: str, where: str) -> FidelityRecord:
    return FidelityRecord.model_validate(gold_record(parse_sample(line, where)), strict=False)


def read_fidelity_file(path: Path) -> dict[str, FidelityRecord]:
    """The records of a fidelity file by id (exported dialogues expanded to user turns).

    Raises:
        InputError: A missing file, a line that is not JSON or not a valid record (naming the
            file and line), or a duplicate id.
    """
    records: dict[str, FidelityRecord] = {}
    for number, obj, line in _lines(path):
        if "utterances" in obj:
            found = _dialogue_records(_parse(Dialogue, path, number, line))
        elif "schema" in obj:
            found = [_sample_record(line, f"{path}, line {number}")]
        else:
            found = [_parse(FidelityRecord, path, number, line)]
        for record in found:
            if record.id in records:
                raise InputError(f"{path}, line {number}: duplicate id {record.id!r}")
            records[record.id] = record
    if not records:
        raise InputError(f"{path}: no records")
    return records


def pair_fidelity(
    gold: dict[str, FidelityRecord], predicted: dict[str, FidelityRecord]
) -> list[FidelitySample]:
    """Pair gold and predicted records by id into ``FidelitySample`` (gold order).

    A gold record without a state has nothing to compare states with (state metrics do not
    apply); a prediction without a state is a miss wherever the gold has something.

    Raises:
        InputError: Gold ids without a prediction or predictions without gold (with examples).
    """
    missing = [k for k in gold if k not in predicted]
    if missing:
        raise InputError(
            f"{len(missing)} gold records have no prediction, e.g. {', '.join(missing[:3])}"
        )
    extra = [k for k in predicted if k not in gold]
    if extra:
        raise InputError(
            f"{len(extra)} predictions have no gold record, e.g. {', '.join(extra[:3])}"
        )
    return [
        FidelitySample(
            id=key,
            gold=record.state if record.state is not None else CognitiveState(),
            prediction=predicted[key].state,
            gold_utterance=record.utterance,
            predicted_utterance=predicted[key].utterance,
            group=record.group,
            gold_intensity_known=record.intensity_known,
        )
        for key, record in gold.items()
    ]


def _dialogue_trajectory(dialogue: Dialogue, path: Path, number: int) -> TrajectoryRecord:
    turn_states = [_turn_state(t) for t in dialogue.user_turns()]
    states = [s for s in turn_states if s is not None]
    if states and len(states) < len(turn_states):
        # Skipping the unannotated turns would shorten N and shift AUC and PSR without a word.
        raise InputError(
            f"{path}, line {number}: dialogue {dialogue.id!r} has a state on "
            f"{len(states)} of {len(turn_states)} user turns; a trajectory needs all of them"
        )
    return TrajectoryRecord(
        id=dialogue.id,
        states=states,
        transcript=[TranscriptLine(role=t.role, text=t.text) for t in dialogue.turns()],
    )


def read_trajectory_file(path: Path) -> list[tuple[int, TrajectoryRecord]]:
    """The conversations of a trajectory file with their line numbers.

    Raises:
        InputError: A missing file, a bad line (naming file and line), a duplicate id, no lines.
    """
    out: list[tuple[int, TrajectoryRecord]] = []
    seen: set[str] = set()
    for number, obj, line in _lines(path):
        if "utterances" in obj:
            record = _dialogue_trajectory(_parse(Dialogue, path, number, line), path, number)
        else:
            record = _parse(TrajectoryRecord, path, number, line)
        if record.id in seen:
            raise InputError(f"{path}, line {number}: duplicate id {record.id!r}")
        seen.add(record.id)
        out.append((number, record))
    if not out:
        raise InputError(f"{path}: no conversations")
    return out
