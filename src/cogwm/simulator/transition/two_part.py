"""The two-part simulated user: the transition model sets the state, a world model says the rest.

Each user turn the transition model (:class:`~.simulator.TransitionSimulator`) predicts the next
state; the world model (by default ``llamacpp:smollm2-wm``) is then asked for its usual JSON
answer under an output model whose state part is fixed to that prediction (every emotion field
and item score a one-value ``Literal``, so grammar-constrained decoding writes exactly those
values), and writes only what is left free: the ``utterance``, ``leave`` and, with
``write_items``, the text of each belief, desire and intention (the transition model only scores
items; its own texts are the task's dimension meanings or the previous turn's texts).
So the utterance is conditioned on the state as the world model was trained: state first, in
the same keys and order. Run it as the arena's simulator::

    [simulator]
    python = "cogwm.simulator.transition.two_part:TwoPartSimulator"
    options = {path = "transition.json", model = "llamacpp:smollm2-wm"}

or card it with ``cogwm validate --simulator two-part:transition.json`` (or
``two-part:FILE@MODEL``). On the card its states are the transition model's (emotion and
scores; item texts are not scored), its utterances the world model's.

The world model must enforce a JSON schema (a grammar, or a server's ``json_schema``): with a
backend that is only asked for JSON in the prompt the state could not be fixed, and the first
turn fails with a one-line ``ConfigError``. The opening state is the transition model's reading
alone (no world-model call). Sampling uses the turn's seed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from cogwm.errors import ConfigError, InputError
from cogwm.schema import CognitiveState, StateItem, TaskSpec
from cogwm.simulator.format import (
    ITEM_CHARS,
    UTTERANCE_CHARS,
    fit_text,
    plain_text,
    states_text,
    system_message,
    user_message,
)
from cogwm.simulator.transition.simulator import TransitionSimulator

if TYPE_CHECKING:
    from cogwm.models.model import Model
    from cogwm.models.types import Message
    from cogwm.schema.transcript import ArenaTurn, TurnOutput, UserSetup

T = TypeVar("T")

#: The world model the two-part simulator uses unless told otherwise.
DEFAULT_WORLD_MODEL = "llamacpp:smollm2-wm"
#: Decimals of an item score shown to the world model (the state returned keeps all of them).
SHOWN_DECIMALS = 2
_ITEM_FIELDS = ("beliefs", "desires", "intentions")
_STRICT = ConfigDict(extra="forbid")


class TwoPartSimulator:
    """A simulated user whose state a transition model sets and whose words a world model
    writes, conditioned on that state (see the module doc).

    Args:
        path: The transition model file ``cogwm train transition`` wrote.
        model: The world model's address.
        write_items: Whether the world model writes the item texts (default: they are fixed
            too; smollm2-wm, shown the previous state, mostly copies its item text cut at the
            60-character limit, score and all, so its texts add nothing).
        temperature: The world model's sampling temperature.
        max_tokens: The world model's token budget per turn.
        history_turns: Turns of the conversation the world model sees.

    Raises:
        ConfigError: The transition file cannot be read, or the model cannot be loaded.
    """

    def __init__(
        self,
        path: str,
        model: str = DEFAULT_WORLD_MODEL,
        *,
        write_items: bool = False,
        temperature: float = 0.3,
        max_tokens: int = 300,
        history_turns: int = 8,
    ):
        from cogwm.models import load

        self.transition = TransitionSimulator(path)
        self._loop = _LoopThread()
        try:
            # Built on the loop that runs its calls (a model's async state belongs to one loop).
            self.model: Model = self._loop.run(_built(load, model))
        except InputError as exc:
            raise ConfigError(f"two-part simulator: {exc}") from None
        self.write_items = write_items
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.history_turns = history_turns
        items = "items" if write_items else "fixed-items"
        self.identity = f"two-part:{self.transition.identity}+{self.model.identity}+{items}"
        self._checked = False

    def read_state(
        self, task: TaskSpec, setup: UserSetup, turns: Sequence[ArenaTurn]
    ) -> CognitiveState:
        """The opening state: the transition model's reading of the cold-start turns."""
        return self.transition.read_state(task, setup, turns)

    def respond(
        self, task: TaskSpec, setup: UserSetup, turns: Sequence[ArenaTurn], *, seed: int
    ) -> TurnOutput:
        """The transition model's next state, and the world model's utterance and ``leave``
        (and item texts) written after that state.

        Raises:
            ConfigError: The world model cannot enforce a JSON schema, or the task is not one
                the transition model was trained on.
            ModelCallError: The world model's call failed.
        """
        from cogwm.models.types import Sampling
        from cogwm.schema.transcript import TurnOutput

        predicted = self.transition.respond(task, setup, turns, seed=seed).state
        if predicted is None:
            raise ValueError("the transition model gave no state")
        output = conditioned_output_model(task, predicted, write_items=self.write_items)
        sampling = Sampling(temperature=self.temperature, max_tokens=self.max_tokens, seed=seed)
        messages = self.messages(task, setup, turns)
        value = self._loop.run(self._generate(messages, output, sampling))
        return TurnOutput(
            text=str(getattr(value, "utterance", "")).strip(),
            state=self._state(predicted, value),
            leave=bool(getattr(value, "leave", False)),
        )

    def messages(
        self, task: TaskSpec, setup: UserSetup, turns: Sequence[ArenaTurn]
    ) -> list[Message]:
        """The world model's prompt: the world-model format over the history window."""
        from cogwm.schema.transcript import latest_state

        shown = turns[-self.history_turns :]
        first = next((t.state for t in turns if t.state is not None), None)
        return [
            system_message(task, context=setup.context, profile=setup.profile),
            user_message(
                task,
                history=[(str(t.role), t.text) for t in shown],
                mode="predict",
                states=states_text(first, latest_state(turns)),
            ),
        ]

    async def _generate(
        self, messages: list[Message], output: type[BaseModel], sampling: Any
    ) -> BaseModel:
        if not self._checked:
            await self._check_enforced()
        result = await self.model.generate_structured(messages, output, sampling, tag="simulator")
        return result.value

    async def _check_enforced(self) -> None:
        from cogwm.models.types import StructuredMode

        enforced = {
            StructuredMode.GRAMMAR,
            StructuredMode.JSON_SCHEMA,
            StructuredMode.JSON_OBJECT_SCHEMA,
        }
        modes = (await self.model.capabilities()).modes
        if not modes or modes[0] not in enforced:
            raise ConfigError(
                f"two-part simulator: {self.model.spec} cannot enforce a JSON schema, so the "
                "transition model's state cannot be fixed in its answer; use a llamacpp: model "
                "or a server with json_schema output"
            )
        self._checked = True

    def _state(self, predicted: CognitiveState, value: BaseModel) -> CognitiveState:
        """The predicted state, with the world model's item texts where it wrote them."""
        if not self.write_items:
            return predicted
        update: dict[str, list[StateItem]] = {}
        for field in _ITEM_FIELDS:
            written = getattr(value, field)
            update[field] = [
                item.model_copy(update={"text": str(said.text).strip() or "-"})
                for item, said in zip(getattr(predicted, field), written, strict=True)
            ]
        return predicted.model_copy(update=update)


def conditioned_output_model(
    task: TaskSpec, state: CognitiveState, *, write_items: bool = True
) -> type[BaseModel]:
    """The world model's output model with the state part fixed to ``state``.

    The keys and their order are the world model's (emotion, beliefs, desires, intentions,
    utterance, leave); the emotion and every item score are one-value ``Literal`` fields (a
    JSON-schema ``const``, which grammar-constrained decoding writes as it is), each list holds
    exactly ``state``'s items, and item texts are free (``write_items``) or fixed as well.

    Raises:
        ValueError: ``state`` has no emotion (the world model's answer always has one).
    """
    if state.emotion is None:
        raise ValueError("the two-part simulator needs a state with an emotion")
    label: Any = Literal[state.emotion.label]
    intensity: Any = Literal[state.emotion.intensity]
    emotion = create_model(
        f"FixedEmotion{task.name}",
        __config__=_STRICT,
        label=(label, ...),
        intensity=(intensity, ...),
    )
    fields: dict[str, Any] = {"emotion": (emotion, ...)}
    for field in _ITEM_FIELDS:
        fields[field] = _items_field(field, getattr(state, field), write_items)
    return create_model(
        f"ConditionedTurn{task.name}",
        __config__=_STRICT,
        **fields,
        utterance=(str, plain_text(UTTERANCE_CHARS)),
        leave=(bool, Field(description="True only if you want to end the conversation now.")),
    )


def _items_field(field: str, items: list[StateItem], write_items: bool) -> Any:
    """A B/D/I list of exactly these items, each fixed at its position (a JSON-schema
    ``prefixItems``)."""
    name = field.capitalize()
    if not items:
        # A list of at most no items: llama.cpp's grammar ignores the bound of an array schema
        # without ``items`` (which an empty tuple gives) and lets items in.
        free = _item_model(f"{name}None", StateItem(text="-"), True)
        return (list.__class_getitem__(free), Field(max_length=0))
    models = tuple(_item_model(f"{name}{i}", item, write_items) for i, item in enumerate(items))
    return (tuple.__class_getitem__(models), ...)


def _item_model(name: str, item: StateItem, write_items: bool) -> type[BaseModel]:
    score: Any = Literal[None if item.score is None else round(item.score, SHOWN_DECIMALS)]
    text: Any = (
        (str, plain_text(ITEM_CHARS))
        if write_items
        else (Literal[fit_text(item.text, ITEM_CHARS) or "-"], ...)
    )
    return create_model(name, __config__=_STRICT, text=text, score=(score, ...))


async def _built(load: Any, address: str) -> Model:
    model: Model = load(address)
    return model


class _LoopThread:
    """An event loop of its own in a daemon thread, so that the synchronous simulator protocol
    can await model calls, also from inside the arena's running loop (which it then blocks
    for the call, as any Python simulator's work does)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="two-part-sim", daemon=True).start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """The coroutine's result (its exception re-raised here)."""
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result()
