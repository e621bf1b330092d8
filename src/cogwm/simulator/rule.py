"""A rule simulator: a sentiment meter that plays the arena's simulated user without a model.

It is the yardstick beside a learned simulator: it reads nothing but the sentiment of the
agent's last turn (VADER's compound score ``c`` in [-1, 1]), so whatever it "achieves" in the
arena a simulator must beat before its states say more than a word count would. Run it as the
arena's simulator::

    [simulator]
    python = "cogwm.simulator.rule:SentimentMeter"
    options = {k = 1.0}

The rule, with ``k`` the meter's gain:

- **Opening.** The emotion is the lexicon point nearest to ``c * OPENING_SCALE`` where ``c`` is
  the compound of the user's opening turns; each of B, D and I holds one item (the task's
  meaning of the dimension) at the middle of the task's score range.
- **Each turn.** Every scored B/D/I item of the previous state moves by ``k * c`` (``c`` of the
  agent's last turn), clipped to the task's score range. The emotion's valence x intensity
  ``e`` moves by ``k * c`` on a continuous scale, clipped to the lexicon's range, and the state
  shows the (label, intensity) whose ``valence * intensity`` is nearest to it; ``e`` is
  recomputed from the opening state and the agent's turns since, so steps smaller than the gap
  between two lexicon points add up instead of being rounded away.
- The user always says ``UTTERANCE`` and never leaves. No randomness: the seed is ignored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cogwm.errors import ConfigError
from cogwm.metrics.sentiment import vader_compound, vader_version
from cogwm.schema import BDI, CognitiveState, Emotion, Role, StateItem, TaskSpec
from cogwm.schema.lexicon import INTENSITIES, valence_table

if TYPE_CHECKING:
    from cogwm.schema.transcript import ArenaTurn, TurnOutput, UserSetup

#: What the meter's user says every turn.
UTTERANCE = "I see."
#: The opening emotion's valence x intensity per unit of the opening's compound score.
OPENING_SCALE = 3.0


def emotion_points() -> list[tuple[float, str, int]]:
    """Every (valence x intensity, label, intensity) of the lexicon, sorted (ties by label)."""
    return sorted(
        (valence * intensity, label, intensity)
        for label, valence in valence_table().items()
        for intensity in INTENSITIES
    )


def nearest_emotion(value: float) -> Emotion:
    """The lexicon's (label, intensity) whose valence x intensity is nearest to ``value``
    (the first in ``emotion_points`` order on a tie)."""
    _, label, intensity = min(emotion_points(), key=lambda point: abs(point[0] - value))
    return Emotion(label=label, intensity=intensity)


class SentimentMeter:
    """The sentiment-meter user (see the module doc); one object serves every task and user.

    Args:
        k: The gain: how far one unit of VADER compound moves the scores and the emotion.
    """

    def __init__(self, k: float = 1.0):
        if isinstance(k, bool) or not isinstance(k, int | float) or not math.isfinite(k) or k <= 0:
            raise ConfigError(f"sentiment meter: k must be a positive number, got {k!r}")
        self.k = float(k)
        self._vader_version = vader_version()

    @property
    def identity(self) -> str:
        """What this meter is, for the config hash: rule, gain and VADER's version."""
        return f"rule:sentiment-meter k={self.k:g} vader-{self._vader_version}"

    def compound(self, text: str) -> float:
        """VADER's compound score of ``text`` (-1 most negative, +1 most positive)."""
        return vader_compound(text)

    def read_state(
        self, task: TaskSpec, setup: UserSetup, turns: Sequence[ArenaTurn]
    ) -> CognitiveState:
        """The opening state: the emotion from the user's opening turns, B/D/I at mid-range."""
        said = " ".join(t.text for t in turns if t.role is Role.USER)
        low, high = task.score_range
        middle = (low + high) / 2
        items = {dim: [StateItem(text=task.dimensions[dim].meaning, score=middle)] for dim in BDI}
        return CognitiveState(
            emotion=nearest_emotion(self.compound(said) * OPENING_SCALE),
            beliefs=items[BDI[0]],
            desires=items[BDI[1]],
            intentions=items[BDI[2]],
        )

    def respond(
        self, task: TaskSpec, setup: UserSetup, turns: Sequence[ArenaTurn], *, seed: int
    ) -> TurnOutput:
        """The next state after the agent's last turn, and ``UTTERANCE``."""
        from cogwm.schema.transcript import TurnOutput, latest_state

        previous = latest_state(turns)
        if previous is None:
            raise ValueError("the sentiment meter needs the opening state in the history")
        agent = [t for t in turns if t.role is Role.AGENT]
        if not agent:
            raise ValueError("the sentiment meter answers an agent turn; the history has none")
        step = self.k * self.compound(agent[-1].text)
        low, high = task.score_range
        moved = previous.model_copy(
            update={
                "emotion": nearest_emotion(self._emotion_value(turns)),
                **{
                    field: [_moved(item, step, low, high) for item in previous.items(dim)]
                    for field, dim in zip(("beliefs", "desires", "intentions"), BDI, strict=True)
                },
            }
        )
        return TurnOutput(text=UTTERANCE, state=moved)

    def _emotion_value(self, turns: Sequence[ArenaTurn]) -> float:
        """The continuous valence x intensity after the agent's turns since the opening state."""
        start = next((i for i, t in enumerate(turns) if t.state is not None), None)
        if start is None or turns[start].state is None:
            raise ValueError("the sentiment meter needs the opening state in the history")
        opening = turns[start].state
        assert opening is not None  # checked above; narrows the type
        if opening.emotion is None:
            raise ValueError("the opening state has no emotion")
        points = [point for point, _, _ in emotion_points()]
        value = opening.emotion.quantified
        for turn in turns[start + 1 :]:
            if turn.role is Role.AGENT:
                value = _clip(value + self.k * self.compound(turn.text), points[0], points[-1])
        return value


def _clip(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def _moved(item: StateItem, step: float, low: float, high: float) -> StateItem:
    if item.score is None:
        return item
    return item.model_copy(update={"score": _clip(item.score + step, low, high)})
