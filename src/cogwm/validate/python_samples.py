"""Predicting a samples split with a Python simulator (``cogwm simulate --simulator``).

A samples file holds each sample's prompt, not the turns it was built from, so the input is read
back from the prompt: the history lines (``You: ...`` and the agent's ``Supporter: ...``; a line
starting neither continues the turn before it), the situation line, and the start and previous
states as :func:`~cogwm.simulator.format.describe_state` writes them. Input switches edit the
prompt first (:func:`~cogwm.simulator.simulate.ablated_messages`), so a switch means what it
means for a model. The profile is not read back (the user setup gets the neutral profile): the
simulators of the arena's protocol set the state from the turns and the states shown.

The simulator then answers the input exactly as the validity card has it answer an item
(:func:`~cogwm.validate.python_sim.read_input`). Only prediction mode: the protocol gives a
Python simulator no way to read the state from a user turn it is shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING

from cogwm.errors import InputError
from cogwm.models.types import Message
from cogwm.schema import CognitiveState, Emotion, StateItem
from cogwm.simulator.format import (
    PREVIOUS_STATE_PREFIX,
    START_STATE_PREFIX,
    SpeakerRole,
    WorldModelInput,
    split_states,
)
from cogwm.simulator.samples import Sample, task_for_corpus
from cogwm.simulator.simulate import (
    Prediction,
    RunResult,
    RunSettings,
    ablated_messages,
    prediction_line,
)
from cogwm.validate.python_sim import read_input

if TYPE_CHECKING:
    from cogwm.arena.factories import PythonSimulator

#: How the prompt's history starts (``SIMULATOR_TURN``) and says it is empty.
HISTORY_HEADER = "Conversation so far:\n"
NO_HISTORY = "(nothing said yet)"
SITUATION_PREFIX = "Your situation: "
#: One scored state item as ``describe_state`` writes it: ``text (score)``.
_SCORED_ITEM = re.compile(r"^(?P<text>.*\S) \((?P<score>-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)\)$")
_FIELDS = {"beliefs": "beliefs", "desires": "desires", "intentions": "intentions"}

UNDERSTAND_REFUSAL = (
    "a Python simulator predicts the state after an agent turn; it cannot read the state from "
    "a given user turn, so --mode understand needs --model"
)


def parse_state(description: str) -> CognitiveState | None:
    """A state as :func:`~cogwm.simulator.format.describe_state` wrote it (None for ``none``).

    Raises:
        InputError: A part that is not an emotion or a list of beliefs, desires or intentions.
    """
    if description.strip() == "none":
        return None
    fields: dict[str, object] = {}
    for part in description.split(" | "):
        if part.startswith("emotion "):
            label, _, intensity = part[len("emotion ") :].rpartition(" ")
            fields["emotion"] = Emotion(label=label, intensity=int(intensity))
            continue
        name, sep, listed = part.partition(": ")
        if not sep or name not in _FIELDS:
            raise InputError(f"not a state part of the prompt: {part!r}")
        fields[_FIELDS[name]] = [_item(text) for text in listed.split("; ")]
    return CognitiveState.model_validate(fields)


def _item(text: str) -> StateItem:
    scored = _SCORED_ITEM.match(text)
    if scored is None:
        return StateItem(text=text, score=None)
    return StateItem(text=scored["text"], score=float(scored["score"]))


def parse_history(text: str, agent_prefix: str) -> list[tuple[SpeakerRole, str]]:
    """The ``(role, text)`` turns of a rendered history (``render_history``'s lines)."""
    if text == NO_HISTORY:
        return []
    turns: list[tuple[SpeakerRole, str]] = []
    for line in text.split("\n"):
        if line.startswith("You: "):
            turns.append(("user", line[len("You: ") :]))
        elif line.startswith(agent_prefix):
            turns.append(("agent", line[len(agent_prefix) :]))
        elif turns:  # a turn spanning several lines
            role, said = turns[-1]
            turns[-1] = (role, f"{said}\n{line}")
        else:
            raise InputError(f"the prompt's history does not start with a turn: {line[:60]!r}")
    return turns


def sample_input(sample: Sample, ablation: str = "none") -> WorldModelInput:
    """The prediction-mode input a sample's prompt shows, under an input switch.

    Raises:
        InputError: A prompt not in the simulator's format.
    """
    task = task_for_corpus(sample.corpus)
    messages = ablated_messages(sample, ablation)
    user = _message(messages, "user").content
    before, states, _ = split_states(user)
    if not before.startswith(HISTORY_HEADER):
        raise InputError(f"sample {sample.id}: the prompt shows no conversation")
    history = parse_history(
        before[len(HISTORY_HEADER) :].removesuffix("\n"), f"{task.agent_role.capitalize()}: "
    )
    start = _shown_state(states, START_STATE_PREFIX)
    previous = _shown_state(states, PREVIOUS_STATE_PREFIX)
    system = _message(messages, "system").content
    situation = [x for x in system.split("\n") if x.startswith(SITUATION_PREFIX)]
    return WorldModelInput(
        task=task.name,
        context=situation[0][len(SITUATION_PREFIX) :] if situation else task.scenario,
        # The start state is left out of the prompt when it equals the previous one.
        initial_state=start if start is not None else previous,
        history=history,
        previous_state=previous,
    )


def _shown_state(states: str, prefix: str) -> CognitiveState | None:
    """The state on the states part's line starting with ``prefix`` (None if none is shown)."""
    for line in states.splitlines():
        if line.startswith(prefix):
            return parse_state(line[len(prefix) :])
    return None


def _message(messages: Sequence[Message], role: str) -> Message:
    found = [m for m in messages if m.role == role]
    if not found:
        raise InputError(f"the sample's prompt has no {role} message")
    return found[-1]


def run_python_predictions(
    simulator: PythonSimulator,
    samples: Sequence[Sample],
    settings: RunSettings,
    out: IO[str],
    *,
    seed: int = 0,
    on_done: Callable[[], None] | None = None,
) -> RunResult:
    """Predict every sample with a Python simulator, each line written (and flushed) at once.

    A sample the simulator refuses is written without a state (a miss when scored).

    Raises:
        InputError: Understanding mode, a prompt not in the simulator's format, or every
            sample refused (the first refusal is named).
    """
    if settings.mode != "predict":
        raise InputError(UNDERSTAND_REFUSAL)
    written = invalid = 0
    first_error = ""
    for sample in samples:
        reading = read_input(simulator, sample_input(sample, settings.ablation), seed)
        out.write(prediction_line(Prediction(sample, *reading), settings))
        out.flush()
        written += 1
        invalid += reading.state is None
        first_error = first_error or (reading.error or "")
        if on_done is not None:
            on_done()
    if samples and invalid == len(samples):
        raise InputError(f"the simulator refused every sample; the first: {first_error}")
    return RunResult(written, invalid, [])
