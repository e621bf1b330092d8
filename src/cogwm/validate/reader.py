"""Asking the simulator about each item, in the world-model format the arena and training use.

Every call is built with :func:`cogwm.simulator.format.build_messages` and answered through the
model interface's structured output with the format's output models (the arena's), so a card
measures exactly the simulator the arena would run. Input switches (the paper's ablations) edit
the :class:`~cogwm.simulator.format.WorldModelInput` before the messages are built.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from cogwm import tasks
from cogwm.errors import InputError
from cogwm.models.model import Model
from cogwm.models.types import ModelCallError, Sampling, StructuredOutputError
from cogwm.simulator.format import (
    UTTERANCE_CHARS,
    Mode,
    WorldModelInput,
    build_messages,
    describe_profile,
    describe_state,
    fit_text,
    render_history,
    task_output_models,
    to_state,
)
from cogwm.validate.inputs import Reading, world_model_input
from cogwm.validate.items import Item

if TYPE_CHECKING:
    from cogwm.arena.factories import PythonSimulator

#: How the simulator is called: ``joint`` (one structured call for state and utterance, the world
#: model), ``dual`` (a plain call writes the utterance, a second call reads the state from it in
#: understanding mode) or ``duet`` (DuetSim: ``dual`` plus its verifier, which checks the reply
#: against the state before the turn and has it written again once when it does not fit). All
#: are the same in understanding mode.
PIPELINES: tuple[str, ...] = ("joint", "dual", "duet")

#: The duet verifier's question (answered in JSON as ``{"fits": bool}``).
DUET_VERIFY = (
    "You check a simulated {user_role}'s next reply to a {agent_role}.\n"
    "Conversation so far:\n{history}\nTheir state before this reply: {state}\n"
    "Their reply: {utterance}\nDoes the reply fit the conversation and that state?"
)
#: What the generator is told when the verifier rejected its first reply.
DUET_RETRY = "\nYour first reply did not fit your state ({state}); write it again."

#: The dual baseline's generator instruction (plain text, no JSON).
DUAL_GENERATOR = (
    "You play a {user_role} talking with a {agent_role}. {scenario}\n{about}"
    "Conversation so far:\n{history}\nWrite only what you say next, in character, in one or "
    "two sentences."
)
#: The dual baseline's budget for the utterance (tokens).
DUAL_MAX_TOKENS = 80

#: Output budget per call: a state and utterance stay under ~220 tokens in the format.
MAX_TOKENS = 300
#: Calls in flight at once (the model interface applies its own per-endpoint limits on top).
CONCURRENCY = 8


async def _read_one(
    model: Model, item: Item, mode: Mode, ablation: str, sampling: Sampling
) -> Reading:
    task = tasks.get(item.inp.task)
    messages = build_messages(world_model_input(item, mode, ablation), task)
    state_model, turn_model = task_output_models(task)
    output_model = state_model if mode == "understand" else turn_model
    try:
        result = await model.generate_structured(
            messages, output_model, sampling, tag=f"validate.{mode}"
        )
    except StructuredOutputError as exc:
        return Reading(None, None, f"invalid output: {exc}")
    utterance = getattr(result.value, "utterance", None)
    return Reading(to_state(result.value), None if utterance is None else str(utterance), None)


class DuetVerdict(BaseModel):
    """The duet verifier's answer."""

    fits: bool


async def _verified(
    model: Model, inp: WorldModelInput, prompt: str, utterance: str, budget: Sampling
) -> str:
    """DuetSim's verify step: the reply if it fits the state before the turn, else one more
    written with the verifier's objection (kept whatever it says: one retry, as DuetSim)."""
    task = tasks.get(inp.task)
    state = describe_state(inp.previous_state)
    question = DUET_VERIFY.format(
        user_role=task.user_role,
        agent_role=task.agent_role,
        history=render_history(inp.history, task),
        state=state,
        utterance=utterance,
    )
    try:
        verdict = await model.generate_structured(
            question, DuetVerdict, budget, tag="validate.duet.verify"
        )
    except StructuredOutputError:
        return utterance  # no verdict: nothing says the reply fails
    if verdict.value.fits:
        return utterance
    again = await model.generate(
        prompt + DUET_RETRY.format(state=state), budget, tag="validate.duet.regenerate"
    )
    return fit_text(again.text, UTTERANCE_CHARS) or "..."


async def _read_dual(
    model: Model, item: Item, ablation: str, sampling: Sampling, *, verify: bool = False
) -> Reading:
    """The dual baseline in prediction mode: generate the utterance (with ``verify``, checked
    and written again once as DuetSim does), then read the state."""
    task = tasks.get(item.inp.task)
    inp = world_model_input(item, "predict", ablation)
    about = f"Your situation: {inp.context}\n" if inp.context.strip() else ""
    if inp.profile is not None:
        about += f"Your profile: {describe_profile(inp.profile)}\n"
    prompt = DUAL_GENERATOR.format(
        user_role=task.user_role,
        agent_role=task.agent_role,
        scenario=task.scenario,
        about=about,
        history=render_history(inp.history, task),
    )
    budget = sampling.model_copy(update={"max_tokens": DUAL_MAX_TOKENS})
    written = await model.generate(prompt, budget, tag="validate.dual.generate")
    utterance = fit_text(written.text, UTTERANCE_CHARS) or "..."
    if verify:
        utterance = await _verified(model, inp, prompt, utterance, budget)
    verify_input = inp.model_copy(
        update={"history": [*inp.history, ("user", utterance)], "mode": "understand"}
    )
    state_model, _ = task_output_models(task)
    try:
        result = await model.generate_structured(
            build_messages(verify_input, task), state_model, sampling, tag="validate.dual.verify"
        )
    except StructuredOutputError as exc:
        return Reading(None, utterance, f"invalid output: {exc}")
    return Reading(to_state(result.value), utterance, None)


def check_pipeline(name: str) -> str:
    """``name`` if it is a known pipeline.

    Raises:
        InputError: An unknown pipeline.
    """
    if name not in PIPELINES:
        raise InputError(f"unknown pipeline {name!r}; choose from {', '.join(PIPELINES)}")
    return name


async def read_items(
    model: Model | PythonSimulator,
    items: Sequence[Item],
    mode: Mode,
    *,
    seed: int,
    ablation: str = "none",
    pipeline: str = "joint",
    on_done: Callable[[Reading], None] | None = None,
) -> list[Reading]:
    """Ask ``model`` about every item (greedy decoding, seeded), in item order.

    A call whose output stays invalid after the model interface's repair is a failed reading
    (``state`` None, ``error`` set). A call that fails for the infrastructure (server down,
    timeouts after retries) is too; when every call fails that way the run stops.

    A Python simulator (not a model) is read by
    :func:`~cogwm.validate.python_sim.read_python_items` instead.

    Raises:
        InputError: Every call failed with a model-call error (the first one is named).
    """
    if not isinstance(model, Model):
        from cogwm.validate.python_sim import read_python_items

        return read_python_items(model, items, mode, seed=seed, ablation=ablation, on_done=on_done)
    sampling = Sampling(temperature=0.0, max_tokens=MAX_TOKENS, seed=seed)
    gate = asyncio.Semaphore(CONCURRENCY)
    call_errors: list[str] = []

    async def one(item: Item) -> Reading:
        async with gate:
            try:
                if pipeline in ("dual", "duet") and mode == "predict":
                    verify = pipeline == "duet"
                    reading = await _read_dual(model, item, ablation, sampling, verify=verify)
                else:
                    reading = await _read_one(model, item, mode, ablation, sampling)
            except ModelCallError as exc:
                call_errors.append(str(exc))
                reading = Reading(None, None, f"call failed: {exc}")
        if on_done is not None:
            on_done(reading)
        return reading

    readings = list(await asyncio.gather(*(one(item) for item in items)))
    if items and len(call_errors) == len(items):
        raise InputError(f"every simulator call failed; the first: {call_errors[0]}")
    return readings
