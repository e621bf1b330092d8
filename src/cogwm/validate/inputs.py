"""What the simulator is shown for each item, under an input switch (the paper's ablations), and
what it answers: shared by the model reader and the Python-simulator reader."""

from __future__ import annotations

from typing import NamedTuple

from cogwm.errors import InputError
from cogwm.schema import CognitiveState, Profile
from cogwm.simulator.format import Mode, WorldModelInput
from cogwm.validate.items import Item

#: Input switches: which parts of the input the simulator is not shown (paper Tables 5, 17, 19).
ABLATIONS: dict[str, str] = {
    "none": "the full input",
    "no_big_five": "without the Big Five",
    "no_styles": "without communication and decision style",
    "no_task_features": "without task features",
    "no_profile": "without the whole profile",
    "no_previous_state": "without the previous state",
    "no_anything": "without profile, context and the initial and previous states",
}


class Reading(NamedTuple):
    """The simulator's answer for one item; ``state`` is None when the call failed."""

    state: CognitiveState | None
    utterance: str | None
    error: str | None


def check_ablation(name: str) -> str:
    """``name`` if it is a known input switch.

    Raises:
        InputError: An unknown switch (the message lists the known ones).
    """
    if name not in ABLATIONS:
        raise InputError(f"unknown ablation {name!r}; choose from {', '.join(ABLATIONS)}")
    return name


def _ablated_profile(profile: Profile | None, ablation: str) -> Profile | None:
    if profile is None or ablation in ("no_profile", "no_anything"):
        return None
    if ablation == "no_big_five":
        return profile.model_copy(update={"big_five": None})
    if ablation == "no_styles":
        return profile.model_copy(update={"communication_style": "", "decision_style": ""})
    if ablation == "no_task_features":
        return profile.model_copy(update={"task_features": {}})
    return profile


def world_model_input(item: Item, mode: Mode, ablation: str = "none") -> WorldModelInput:
    """The simulator's input for ``item`` under an input switch; in ``understand`` mode the real
    turn ends the history."""
    inp = item.inp
    history = [*inp.history, ("user", item.utterance)] if mode == "understand" else inp.history
    update: dict[str, object] = {
        "history": history,
        "mode": mode,
        "profile": _ablated_profile(inp.profile, ablation),
    }
    if ablation == "no_anything":
        update.update(context="", initial_state=None, previous_state=None)
    elif ablation == "no_previous_state":
        update["previous_state"] = None
    return inp.model_copy(update=update)
