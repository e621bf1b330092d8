"""The built-in task specs (docs/architecture.md, "Tasks"); adding a task means adding a spec."""

from __future__ import annotations

from cogwm.schema import Dimension, DimensionSpec, TaskSpec, TaskWeights

#: ESC: emotion dominates (w_E = 1/2, the rest 1/6 each).
_ESC_WEIGHTS = TaskWeights(emotion=1 / 2, belief=1 / 6, desire=1 / 6, intention=1 / 6)
#: PD, CR and MI: w_E = 1/10, w_B = w_D = w_I = 3/10.
_INFLUENCE_WEIGHTS = TaskWeights(emotion=1 / 10, belief=3 / 10, desire=3 / 10, intention=3 / 10)


def _dims(
    belief: tuple[str, str], desire: tuple[str, str], intention: tuple[str, str]
) -> dict[Dimension, DimensionSpec]:
    return {
        Dimension.BELIEF: DimensionSpec(name=belief[0], meaning=belief[1]),
        Dimension.DESIRE: DimensionSpec(name=desire[0], meaning=desire[1]),
        Dimension.INTENTION: DimensionSpec(name=intention[0], meaning=intention[1]),
    }


ESC = TaskSpec(
    name="ESC",
    title="Emotional support",
    corpus="esconv",
    user_role="seeker",
    agent_role="supporter",
    initiator_role="supporter",
    scenario=("A person in emotional distress talks to a supporter about a problem in their life."),
    dimensions=_dims(
        ("reality", "how realistic and balanced the user's view of their situation is"),
        ("rationality", "how constructive and reasonable what the user wants is"),
        ("feasibility", "how concrete and achievable the user's plans to cope are"),
    ),
    weights=_ESC_WEIGHTS,
    good_outcome="the user's emotion improved or the user has an action plan",
)

PD = TaskSpec(
    name="PD",
    title="Persuasion to donate",
    corpus="persuasionforgood",
    user_role="persuadee",
    agent_role="persuader",
    initiator_role="persuader",
    scenario=(
        "The agent tries to persuade the user to donate part of their task payment to the "
        "charity Save the Children."
    ),
    dimensions=_dims(
        ("impact", "how much the user believes a donation makes a difference"),
        ("prosocial", "how much the user wants to help others"),
        ("commitment", "how committed the user is to donating"),
    ),
    weights=_INFLUENCE_WEIGHTS,
    good_outcome="the user decided to donate",
)

CR = TaskSpec(
    name="CR",
    title="Conversational recommendation",
    corpus="inspired",
    user_role="seeker",
    agent_role="recommender",
    initiator_role="recommender",
    scenario="The agent recommends a movie for the user to watch.",
    dimensions=_dims(
        ("alignment", "how well the user thinks the recommendation fits their taste"),
        ("satisfaction", "how much the user wants the recommended item"),
        ("acceptance", "how ready the user is to accept the recommendation"),
    ),
    weights=_INFLUENCE_WEIGHTS,
    good_outcome="the user accepted a recommendation",
)

DAILY = TaskSpec(
    name="DAILY",
    title="Open-domain chat",
    corpus="dailydialog",
    user_role="user",
    agent_role="partner",
    initiator_role="partner",
    scenario="Two people chat about everyday life.",
    dimensions=_dims(
        ("belief", "what the user holds true (generic)"),
        ("desire", "what the user wants (generic)"),
        ("intention", "what the user plans to do (generic)"),
    ),
    weights=None,
    good_outcome=None,
)

MI = TaskSpec(
    name="MI",
    title="Motivational interviewing",
    corpus="annomi",
    user_role="client",
    agent_role="therapist",
    initiator_role="therapist",
    scenario="A therapist helps the user resolve ambivalence about changing a behaviour.",
    dimensions=_dims(
        ("importance", "how important the user thinks the change is"),
        ("change desire", "how much the user wants to change"),
        ("change commitment", "how committed the user is to changing"),
    ),
    weights=_INFLUENCE_WEIGHTS,
    good_outcome="the client states a commitment to change",
)

BUILTIN: tuple[TaskSpec, ...] = (ESC, PD, CR, DAILY, MI)
