"""The release gate: what a simulated user must pass on held-out items to become the default.

The criteria are fixed before any candidate's test figures are read, and read only the
simulator's validity card (its figures and checks, the arena-sensitivity checks included):

- **DailyDialog valence**: on all items and on the change items (the gold differs from the
  state shown), in every mode the card measured, the simulator's AUROC is above every trivial
  baseline's on the same items (majority, carry-forward, VADER, TF-IDF, combined), and the
  paired bootstrap over dialogues of (simulator - the best trivial rule chosen on validation)
  has its 95 % lower bound above 0.
- **Counterfactual ordering**: on ESC, PD and MI, in valence x intensity and in Comp_t, the
  ordering is at least :data:`MIN_ORDERING` with its lower bound above :data:`ORDERING_FLOOR`.
- **Known groups** (ESConv against the held-out FailedESConv): in Comp_t and in valence x
  intensity, AUROC at least :data:`MIN_GROUPS_AUROC` with its lower bound above
  :data:`GROUPS_FLOOR`.
- **Arena sensitivity** on ESC and PD: at least :data:`MIN_SCENARIOS` paired scenarios, no
  failed conversation, mean CTS supportive > dismissive > hostile (the check's ordering), and
  the lower bound of supportive - dismissive above 0.

AnnoMI's known groups (high against low quality) are reported beside the gate, not gating. A
figure that is missing or undefined fails its criterion: undefined is never a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cogwm.errors import InputError
from cogwm.stats.estimate import Estimate
from cogwm.validate.card import Card, Check, Figure

#: DailyDialog valence: the part, metric and item subsets gated.
VALENCE_PART = "dailydialog"
VALENCE_METRIC = "valence_auroc"
VALENCE_SUBSETS: tuple[str, ...] = ("all", "change")
#: The trivial baselines the valence AUROC must exceed on the same items.
TRIVIAL_BASELINES: tuple[str, ...] = (
    "majority",
    "carry_forward",
    "lexicon",
    "text_classifier",
    "combined",
)
#: Counterfactual ordering: tasks, readings and the thresholds.
ORDERING_TASKS: tuple[str, ...] = ("ESC", "PD", "MI")
ORDERING_METRICS: tuple[str, ...] = ("valence_ordering", "composite_ordering")
MIN_ORDERING = 0.80
ORDERING_FLOOR = 0.5
#: Known groups, ESConv against FailedESConv: task, readings and thresholds.
GROUPS_TASK = "ESC"
GROUPS_METRICS: tuple[str, ...] = ("composite_delta_auroc", "valence_delta_auroc")
MIN_GROUPS_AUROC = 0.65
GROUPS_FLOOR = 0.5
#: Reported beside the gate, not gating: AnnoMI high against low quality.
REPORTED_GROUPS_TASK = "MI"
#: Arena sensitivity: tasks, the fewest paired scenarios, and the lower bound's floor.
SENSITIVITY_TASKS: tuple[str, ...] = ("ESC", "PD")
SENSITIVITY_METRIC = "cts_supportive_minus_dismissive"
MIN_SCENARIOS = 20
SENSITIVITY_FLOOR = 0.0


class Criterion(Estimate):
    """One criterion of the gate on one figure: the figure's estimate and the verdict on it.

    Built positionally, in the order of the attributes below (other fields of the estimate,
    e.g. ``se``, by name).

    Attributes:
        name: What is gated, e.g. ``counterfactual.ESC.composite_ordering``.
        value: The figure (None: undefined or missing).
        ci_low: Lower bound of the figure's 95 % interval.
        ci_high: Upper bound of the figure's 95 % interval.
        n: Units behind the figure (items, histories, dialogues or scenarios).
        passed: Whether the criterion holds (never for an undefined figure).
        gating: False for a figure reported beside the gate.
        reason: The rule, and why it failed where it did.
    """

    json_fields = ("name", "value", "ci_low", "ci_high", "n")
    json_omitted = frozenset({"se", "confidence"})

    name: str
    passed: bool
    gating: bool = True
    reason: str = ""

    def __init__(
        self,
        name: str,
        value: float | None,
        ci_low: float | None,
        ci_high: float | None,
        n: int,
        passed: bool,
        gating: bool = True,
        reason: str = "",
        **estimate: Any,
    ) -> None:
        fields: dict[str, Any] = {
            "name": name,
            "value": value,
            "ci_low": ci_low,
            "ci_high": ci_high,
            "n": n,
            "passed": passed,
            "gating": gating,
            "reason": reason,
            **estimate,
        }
        super().__init__(**fields)


@dataclass(frozen=True)
class Verdict:
    """The gate's verdict on one simulator: every criterion, and whether all gating ones hold."""

    label: str
    criteria: list[Criterion]

    @property
    def passed(self) -> bool:
        """True only when there are gating criteria and every one of them passed."""
        gating = [c for c in self.criteria if c.gating]
        return bool(gating) and all(c.passed for c in gating)


def release_gate(card: Card, extra_checks: Sequence[Check] = ()) -> Verdict:
    """The gate's verdict on ``card``.

    Args:
        card: The simulator's validity card.
        extra_checks: Checks measured apart (e.g. an arena-sensitivity card's); they replace
            the card's own check of the same name, task and metric.

    Returns:
        Every criterion with its figure, interval, n and pass/fail.
    """
    checks = {c.key: c for c in card.checks}
    checks.update({c.key: c for c in extra_checks})
    criteria = [
        *_valence_criteria(card),
        *(
            _ordering_criterion(checks.get(f"counterfactual.{task}.{metric}"), task, metric)
            for task in ORDERING_TASKS
            for metric in ORDERING_METRICS
        ),
        *(
            _groups_criterion(checks.get(f"known_groups.{GROUPS_TASK}.{m}"), GROUPS_TASK, m)
            for m in GROUPS_METRICS
        ),
        *(
            _sensitivity_criterion(
                checks.get(f"arena_sensitivity.{task}.{SENSITIVITY_METRIC}"), task
            )
            for task in SENSITIVITY_TASKS
        ),
        *(
            _groups_criterion(check, REPORTED_GROUPS_TASK, check.metric, gating=False)
            for check in checks.values()
            if check.name == "known_groups" and check.task == REPORTED_GROUPS_TASK
        ),
    ]
    return Verdict(label=card.label, criteria=criteria)


# --- DailyDialog valence ---------------------------------------------------------------------


def _valence_criteria(card: Card) -> list[Criterion]:
    """One criterion per subset and mode the card has; a missing subset fails."""
    modes = sorted({f.mode for f in card.figures if _is_valence(f, "all")}) or ["any mode"]
    criteria = []
    for mode in modes:
        for subset in VALENCE_SUBSETS:
            figure = next(
                (f for f in card.figures if _is_valence(f, subset) and f.mode == mode), None
            )
            name = f"{VALENCE_PART}.{VALENCE_METRIC}:{subset}[{mode}]"
            criteria.append(_valence_criterion(name, figure))
    return criteria


def _is_valence(figure: Figure, subset: str) -> bool:
    return (
        figure.part == VALENCE_PART and figure.metric == VALENCE_METRIC and figure.subset == subset
    )


def _valence_criterion(name: str, figure: Figure | None) -> Criterion:
    if figure is None:
        return Criterion(name, None, None, None, 0, False, reason="missing from the card")
    rule = "above every trivial baseline, paired lower bound vs the best above 0"
    fail = _valence_failure(figure)
    return Criterion(
        name,
        figure.value,
        figure.ci_low,
        figure.ci_high,
        figure.n,
        passed=fail is None,
        reason=rule if fail is None else f"{rule}: {fail}",
    )


def _valence_failure(figure: Figure) -> str | None:
    """Why the valence figure fails (None: it passes)."""
    if figure.value is None:
        return "undefined"
    values = {name: getattr(figure.baselines, name) for name in TRIVIAL_BASELINES}
    defined = {name: v for name, v in values.items() if v is not None}
    if not defined:
        return "no trivial baseline on these items"
    best_name, best = max(defined.items(), key=lambda kv: kv[1])
    if figure.value <= best:
        return f"not above {best_name} {best:.3f}"
    gate = figure.gate
    if gate is None or gate.difference is None or gate.ci_low is None:
        return "paired difference undefined"
    if gate.ci_low <= 0:
        return (
            f"paired difference vs {gate.baseline} {gate.difference:+.3f}, lower bound "
            f"{gate.ci_low:+.3f}"
        )
    return None


# --- the checks -----------------------------------------------------------------------------


def _from_check(
    name: str, check: Check | None, minimum: float, floor: float, *, gating: bool = True
) -> Criterion:
    """Passed when the check's value is at least ``minimum`` and its lower bound above
    ``floor``."""
    rule = f">= {minimum:.2f}, lower bound above {floor:g}"
    if check is None:
        return Criterion(name, None, None, None, 0, False, gating, reason="missing from the card")
    value, low = check.value, check.ci_low
    if value is None or low is None:
        return Criterion(
            name, value, low, check.ci_high, check.n, False, gating, reason=f"{rule}: undefined"
        )
    passed = value >= minimum and low > floor
    return Criterion(name, value, low, check.ci_high, check.n, passed, gating, reason=rule)


def _ordering_criterion(check: Check | None, task: str, metric: str) -> Criterion:
    return _from_check(f"counterfactual.{task}.{metric}", check, MIN_ORDERING, ORDERING_FLOOR)


def _groups_criterion(
    check: Check | None, task: str, metric: str, *, gating: bool = True
) -> Criterion:
    name = f"known_groups.{task}.{metric}"
    return _from_check(name, check, MIN_GROUPS_AUROC, GROUPS_FLOOR, gating=gating)


def _sensitivity_criterion(check: Check | None, task: str) -> Criterion:
    name = f"arena_sensitivity.{task}.{SENSITIVITY_METRIC}"
    rule = (
        f"supportive > dismissive > hostile, lower bound above {SENSITIVITY_FLOOR:g}, "
        f"n >= {MIN_SCENARIOS}, no failed conversation"
    )
    if check is None:
        return Criterion(name, None, None, None, 0, False, reason="missing from the card")
    fail = None
    if check.value is None or check.ci_low is None:
        fail = "undefined"
    elif check.n < MIN_SCENARIOS:
        fail = f"{check.n} paired scenarios"
    elif check.n_failed:
        fail = f"{check.n_failed} failed conversations"
    elif check.ci_low <= SENSITIVITY_FLOOR:
        fail = f"lower bound {check.ci_low:+.3f}"
    elif check.passed is not True:
        fail = "mean CTS not ordered supportive > dismissive > hostile"
    return Criterion(
        name,
        check.value,
        check.ci_low,
        check.ci_high,
        check.n,
        passed=fail is None,
        reason=rule if fail is None else f"{rule}: {fail}",
    )


# --- reading several cards --------------------------------------------------------------------


def merged_checks(card: Card, others: Sequence[Card]) -> list[Check]:
    """The checks of ``others`` (e.g. an arena-sensitivity card), which must be cards of the
    same simulator as ``card``.

    Raises:
        InputError: A card of another simulator (another model identity).
    """
    for other in others:
        if other.model_identity != card.model_identity:
            raise InputError(
                f"the gate reads one simulator's cards: {other.label!r} is "
                f"{other.model_identity}, not {card.model_identity}"
            )
    return [check for other in others for check in other.checks]
