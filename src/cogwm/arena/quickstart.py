"""The quickstart: three agents that differ on purpose, on ESC and PD, on the embedded model.

The agents are an empathetic supporter and a solution-first advisor played by the embedded
SmolLM2, and a dismissive, off-topic control that is scripted (``cogwm.arena.scripted``: fixed
lines that minimise the user's problem and change the subject, no model), because SmolLM2 told
to be dismissive writes sympathy in most of its replies and a control must behave as one. The
simulated user is the world model shipped with cogwm (``llamacpp:smollm2-wm-merged``, SmolLM2
with its trained LoRA folded into its weights), shown the 8-turn history window it was trained
on; ``--simulator`` names another. The intent detector and the GoodOutcome judge are the base
SmolLM2 at temperature 0. The leaderboard names the simulated
user and what its validity card says: a simulator that has not passed its arena-sensitivity
check can rank the dismissive control first, and its paired differences carry no verdict.
Presets:

- ``quick`` (default): 3 built-in scenarios per task, conversations of at most 5 rounds (2 cold
  start + 3 simulated), the intent detector from round 4: 18 conversations, all in flight
  (each model's batched engine decodes its calls together); ``bench/bench_embedded.py
  --end-to-end`` times it.
- ``full``: the paper's protocol (at most 20 rounds, detector from round 8), 5 scenarios per task.

Both run the same code path as ``cogwm arena run``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from cogwm.arena.config import ArenaConfig, parse_config

#: The embedded default model (SmolLM2-135M-Instruct in process).
EMBEDDED_MODEL = "llamacpp:smollm2"

#: The world model shipped with cogwm: the embedded model with its trained LoRA folded into its
#: weights, which the batched engine decodes in one call per step. Its validity card is its
#: own, and each of its figures lies within the 95 % CI of the adapter form's
#: (``llamacpp:smollm2-wm``, the LoRA applied at run time).
WORLD_MODEL = "llamacpp:smollm2-wm-merged"

#: The history window (turns) the shipped world model was trained on.
WORLD_MODEL_WINDOW = 8


class Preset(StrEnum):
    """How long the quickstart's conversations are."""

    QUICK = "quick"
    FULL = "full"


_PRESETS: dict[Preset, dict[str, Any]] = {
    Preset.QUICK: {"dialogues_per_task": 3, "max_rounds": 5, "intent_from_round": 4},
    Preset.FULL: {"dialogues_per_task": 5, "max_rounds": 20, "intent_from_round": 8},
}

#: The agents played by the model: name and built-in prompt.
_MODEL_AGENTS = (
    ("empathetic", "builtin:empathetic"),
    ("solution_first", "builtin:solution_first"),
)

#: The control: a scripted agent (no model), so that it is dismissive in every reply. The
#: embedded model told to be dismissive writes sympathy in most of its replies.
DISMISSIVE_CONTROL = "cogwm.arena.scripted:Dismissive"


def quickstart_config(
    preset: Preset = Preset.QUICK,
    *,
    dialogues: int | None = None,
    model: str = EMBEDDED_MODEL,
    simulator_model: str | None = None,
) -> ArenaConfig:
    """The quickstart's arena config.

    Args:
        preset: ``quick`` or ``full`` (see the module docstring).
        dialogues: Scenarios per task, overriding the preset's.
        model: The model of the agents, the intent detector and the judge; with the embedded
            model, the simulated user is the shipped world model, otherwise this model too.
        simulator_model: The simulated user instead (a shipped world model is shown the
            history window it was trained on).
    """
    settings = dict(_PRESETS[preset])
    if dialogues is not None:
        settings["dialogues_per_task"] = dialogues
    if simulator_model is None:
        simulator_model = WORLD_MODEL if model.strip().lower() == EMBEDDED_MODEL else model
    simulator: dict[str, Any] = {"model": simulator_model, "temperature": 0.3, "max_tokens": 300}
    if _is_shipped_world_model(simulator_model):
        simulator["history_turns"] = WORLD_MODEL_WINDOW
    raw: dict[str, Any] = {
        "name": f"quickstart-{preset.value}",
        "seed": 2024,
        "tasks": ["ESC", "PD"],
        "history_turns": 6,
        # Every conversation of the quick preset at once: the agents' engine and the simulated
        # user's each decode up to 8 calls together, and a conversation waits on one at a time.
        "concurrency": 24,
        **settings,
        "simulator": simulator,
        # Named, so that they stay the base model when the simulator is the world model.
        "intent_detector": {"model": model, "temperature": 0.0, "max_tokens": 16},
        "judge": {"model": model, "temperature": 0.0, "max_tokens": 300},
        "profile_annotator": {"model": model, "temperature": 0.0, "max_tokens": 160},
        "agents": [
            *(
                {
                    "name": name,
                    "model": model,
                    "prompt": prompt,
                    "conditions": ["no_cot"],
                    "temperature": 0.7,
                    "max_tokens": 80,
                }
                for name, prompt in _MODEL_AGENTS
            ),
            {"name": "dismissive", "python": DISMISSIVE_CONTROL, "max_tokens": 80},
        ],
    }
    return parse_config(raw, source=f"quickstart preset {preset.value}")


def _is_shipped_world_model(address: str) -> bool:
    """Whether ``address`` names a world model shipped with cogwm (run-time LoRA or merged)."""
    from cogwm.models.llamacpp import shipped_adapter_of

    provider, _, name = address.strip().partition(":")
    return provider.lower() == "llamacpp" and shipped_adapter_of(name) is not None
