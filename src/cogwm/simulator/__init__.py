"""The cognitive world model: the user simulator's prompt format and its training samples.

``cogwm.simulator.format`` is the one home of what the simulator sees and says (used by the
samples, the trainer, ``cogwm validate`` and the arena); ``cogwm.simulator.samples`` turns
labelled dialogues into training samples and splits them by dialogue.
"""

from cogwm.simulator.format import (
    SimulatorOutputError,
    WorldModelInput,
    WorldModelOutput,
    build_messages,
    format_version,
    parse_output,
    render_target,
)

__all__ = [
    "SimulatorOutputError",
    "WorldModelInput",
    "WorldModelOutput",
    "build_messages",
    "format_version",
    "parse_output",
    "render_target",
]
