"""Running a simulator over a samples split: one prediction per sample, for ``cogwm score
fidelity``.

Each sample's prompt is the one the samples file holds (built by
:func:`cogwm.simulator.format.build_messages`, the training and arena format), sent through the
model interface's structured output with the task's output models, greedy and seeded. In
``predict`` mode the model gives the state and the next utterance; in ``understand`` mode (the
samples' ``:understand`` twins, whose history ends with the real turn) the state only.

Input switches edit the prompt before it is sent, exactly as the input would have been built
without the part:

- ``no_profile``: the profile line of the system message is left out;
- ``no_previous_state``: the user message shows no previous state (the start state is shown
  whenever one exists, as :func:`~cogwm.simulator.format.states_text` shows it without a
  previous state);
- ``states_hidden``: the states lines become ``STATES_HIDDEN_LINE``, as a prompt built with
  ``WorldModelInput(states_hidden=True)`` shows them (the training's state dropout).

One JSON line per prediction (the fidelity file's record plus the run's settings)::

    {"id", "state": CognitiveState | null, "utterance": str | null, "group": dialogue id,
     "dataset": corpus, "model", "mode", "ablation", "error": str | null}

A prediction whose output stays invalid after the model interface's repair is written with
``state`` null (a miss when scored); a call that fails for the infrastructure is not written,
so ``--resume`` asks it again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from cogwm.errors import InputError
from cogwm.models.model import Model
from cogwm.models.types import Message, ModelCallError, Sampling, StructuredOutputError
from cogwm.schema import CognitiveState
from cogwm.schema.lexicon import is_known
from cogwm.simulator.format import (
    PREVIOUS_STATE_PREFIX,
    PROFILE_PREFIX,
    START_STATE_PREFIX,
    STATES_HIDDEN_LINE,
    Mode,
    split_states,
    task_output_models,
    to_state,
)
from cogwm.simulator.samples import Sample, read_samples, target_emotion, task_for_corpus

#: Input switches of ``cogwm simulate`` (paper Table 19: the profile and previous-state rows).
SAMPLE_ABLATIONS: dict[str, str] = {
    "none": "the full input",
    "no_profile": "without the profile",
    "no_previous_state": "without the previous state",
    "states_hidden": "with the start and previous states withheld ('not shown')",
}
#: Output budget per call: a state and utterance stay under ~220 tokens in the format.
MAX_TOKENS = 300
#: The intensity a gold label without one is given (``intensity_known`` false: never scored).
PLACEHOLDER_INTENSITY = 2
#: Calls in flight at once by default.
DEFAULT_CONCURRENCY = 8


class RunSettings(NamedTuple):
    """What a predictions file was made with (every line carries it)."""

    model: str
    mode: Mode
    ablation: str


class Prediction(NamedTuple):
    """One sample's prediction; ``state`` None when the output stayed invalid."""

    sample: Sample
    state: CognitiveState | None
    utterance: str | None
    error: str | None


def check_sample_ablation(name: str) -> str:
    """``name`` if it is a known input switch of ``cogwm simulate``.

    Raises:
        InputError: An unknown switch (the message lists the known ones).
    """
    if name not in SAMPLE_ABLATIONS:
        raise InputError(f"unknown ablation {name!r}; choose from {', '.join(SAMPLE_ABLATIONS)}")
    return name


def _without_profile(system: str) -> str:
    return "\n".join(line for line in system.split("\n") if not line.startswith(PROFILE_PREFIX))


def _without_previous_state(user: str) -> str:
    """The user message as :func:`states_text` writes it with no previous state.

    The states lines sit just before the closing instruction. Without a previous state, the
    start state is shown whenever one exists; a prompt showing only the previous line had a
    start state equal to it (the samples know both or neither), so that line becomes the start.
    """
    lines = user.split("\n")
    end = len(lines) - 1
    start = end
    while start > 0 and lines[start - 1].startswith((START_STATE_PREFIX, PREVIOUS_STATE_PREFIX)):
        start -= 1
    states = lines[start:end]
    has_start = any(line.startswith(START_STATE_PREFIX) for line in states)
    kept = []
    for line in states:
        if not line.startswith(PREVIOUS_STATE_PREFIX):
            kept.append(line)
        elif not has_start:
            kept.append(START_STATE_PREFIX + line[len(PREVIOUS_STATE_PREFIX) :])
    return "\n".join([*lines[:start], *kept, *lines[end:]])


def ablated_messages(sample: Sample, ablation: str) -> list[Message]:
    """The sample's prompt under an input switch (see the module docstring)."""
    if ablation == "none":
        return list(sample.messages)
    out = []
    for message in sample.messages:
        content = message.content
        if ablation == "no_profile" and message.role == "system":
            content = _without_profile(content)
        elif ablation == "no_previous_state" and message.role == "user":
            content = _without_previous_state(content)
        elif ablation == "states_hidden" and message.role == "user":
            before, _, instruction = split_states(content)
            content = before + STATES_HIDDEN_LINE + instruction
        out.append(message.model_copy(update={"content": content}))
    return out


def select_samples(path: Path, mode: Mode, limit: int | None) -> list[Sample]:
    """The samples of ``mode`` in file order (the first ``limit`` of them).

    Raises:
        InputError: A bad samples file, or none of the asked mode (understanding samples are
            built with ``cogwm samples build --understand``).
    """
    chosen = [s for s in read_samples(path) if s.mode == mode]
    register_target_labels(chosen)
    if not chosen:
        hint = (
            " (build them with `cogwm samples build --understand`)" if mode == "understand" else ""
        )
        raise InputError(f"{path}: no samples in {mode!r} mode{hint}")
    return chosen[:limit] if limit is not None else chosen


def register_target_labels(samples: Iterable[Sample]) -> None:
    """Register the lexicon extensions the targets use (DailyDialog's happiness, neutral, ...),
    so that the output grammar offers them to the simulator and the gold states validate."""
    from cogwm.corpora.labels.extensions import LABELS, register

    used = {target_emotion(s) for s in samples}
    missing = sorted(label for label in used if label in LABELS and not is_known(label))
    if missing:  # register() with no label registers them all
        register(*missing)


def gold_record(sample: Sample) -> dict[str, Any]:
    """A sample's target as a fidelity record: the labelled state (unknown fields empty), the
    real utterance (prediction mode), the dialogue as the bootstrap's unit and the corpus; an
    emotion label without an intensity is marked so that E-MAE leaves it out."""
    register_target_labels([sample])
    target = json.loads(sample.target)
    emotion = target.get("emotion")
    intensity_known = not (isinstance(emotion, dict) and emotion.get("intensity") is None)
    if not intensity_known:
        # A label without an intensity (DailyDialog): the state needs one, E-MAE skips it.
        emotion = {**emotion, "intensity": PLACEHOLDER_INTENSITY}
    state = CognitiveState.model_validate(
        {
            "emotion": emotion,
            "beliefs": target.get("beliefs") or [],
            "desires": target.get("desires") or [],
            "intentions": target.get("intentions") or [],
        },
        strict=False,
    )
    return {
        "id": sample.id,
        "state": state.model_dump(mode="json"),
        "utterance": target.get("utterance"),
        "group": sample.dialogue_id,
        "dataset": sample.corpus,
        "mode": sample.mode,
        "intensity_known": intensity_known,
    }


# --------------------------------------------------------------------------------------------
# The predictions file: resuming and writing
# --------------------------------------------------------------------------------------------


def _complete_lines(path: Path) -> list[bytes]:
    """The file's complete lines; a partly written last line (a run stopped mid-write) is cut."""
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with path.open("r+b") as handle:
            handle.truncate(end)
    return [line for line in data[:end].split(b"\n") if line.strip()]


def done_ids(path: Path, settings: RunSettings) -> set[str]:
    """Ids already predicted in ``path`` (made with the same settings).

    Raises:
        InputError: A line that is not a prediction, or one made with other settings.
    """
    done: set[str] = set()
    for number, raw in enumerate(_complete_lines(path), start=1):
        try:
            obj = json.loads(raw)
            found = RunSettings(obj["model"], obj["mode"], obj["ablation"])
            done.add(str(obj["id"]))
        except (ValueError, KeyError, TypeError):
            raise InputError(f"{path}, line {number}: not a prediction of cogwm simulate") from None
        if found != settings:
            raise InputError(
                f"{path} was written with model {found.model}, mode {found.mode}, ablation "
                f"{found.ablation}; resume it with those or write another file"
            )
    return done


def prediction_line(prediction: Prediction, settings: RunSettings) -> str:
    """One prediction as a JSON line (with its newline)."""
    sample = prediction.sample
    record = {
        "id": sample.id,
        "state": None if prediction.state is None else prediction.state.model_dump(mode="json"),
        "utterance": prediction.utterance,
        "group": sample.dialogue_id,
        "dataset": sample.corpus,
        "model": settings.model,
        "mode": settings.mode,
        "ablation": settings.ablation,
        "error": prediction.error,
    }
    return json.dumps(record, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------------------------
# Asking the model
# --------------------------------------------------------------------------------------------


async def predict_one(
    model: Model, sample: Sample, settings: RunSettings, sampling: Sampling
) -> Prediction:
    """One sample's prediction; an output that stays invalid is a prediction without a state.

    Raises:
        ModelCallError: The call failed for the infrastructure (not an invalid output).
    """
    state_model, turn_model = task_output_models(task_for_corpus(sample.corpus))
    output_model = state_model if settings.mode == "understand" else turn_model
    messages = ablated_messages(sample, settings.ablation)
    try:
        result = await model.generate_structured(
            messages, output_model, sampling, tag=f"simulate.{settings.mode}"
        )
    except StructuredOutputError as exc:
        return Prediction(sample, None, None, f"invalid output: {exc}")
    utterance = getattr(result.value, "utterance", None)
    return Prediction(
        sample, to_state(result.value), None if utterance is None else str(utterance), None
    )


class RunResult(NamedTuple):
    """How a run went: predictions written, invalid outputs among them, failed calls."""

    written: int
    invalid: int
    call_errors: list[str]


async def run_predictions(
    model: Model,
    samples: Sequence[Sample],
    settings: RunSettings,
    out: IO[str],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    seed: int = 0,
    on_done: Callable[[], None] | None = None,
) -> RunResult:
    """Predict every sample, ``concurrency`` calls at a time, each line written (and flushed)
    as soon as it is known, so a stopped run keeps all it finished."""
    sampling = Sampling(temperature=0.0, max_tokens=MAX_TOKENS, seed=seed)
    gate = asyncio.Semaphore(concurrency)
    written = invalid = 0
    call_errors: list[str] = []

    async def one(sample: Sample) -> None:
        nonlocal written, invalid
        async with gate:
            try:
                prediction = await predict_one(model, sample, settings, sampling)
            except ModelCallError as exc:
                call_errors.append(f"{sample.id}: {exc}")
            else:
                out.write(prediction_line(prediction, settings))
                out.flush()
                written += 1
                invalid += prediction.state is None
        if on_done is not None:
            on_done()

    await asyncio.gather(*(one(s) for s in samples))
    return RunResult(written, invalid, call_errors)


def pending(samples: Iterable[Sample], done: set[str]) -> list[Sample]:
    """The samples not predicted yet."""
    return [s for s in samples if s.id not in done]
