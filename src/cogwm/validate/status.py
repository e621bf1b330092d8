"""Whether a simulator's rankings can be trusted: its validity card, found by its identity.

A run records the backend identity of its simulated user (file hashes, adapter; see
``cogwm.arena.provenance.simulator_identity``). The card measured on that identity is looked up
in two places:

- a world model shipped with cogwm carries its card in its package folder
  (``cogwm/data/world_models/<name>/card.json``);
- ``cogwm validate --out card.json`` registers a copy of every card it writes in the cards
  folder (``$COGWM_CARDS_DIR``, else ``cards`` beside the model cache), one file per identity,
  input switch and pipeline.

Only a card of the simulator as the arena runs it counts: no input switch (ablation ``none``)
and the joint pipeline. Every such card of the identity is read and their checks merged: per
check name and task the check of the newest card wins (``cogwm arena sensitivity`` registers a
card of its own beside the one ``cogwm validate`` wrote). The status lists each responsiveness
check (arena sensitivity, counterfactual agent turns, known groups) as passed, failed,
undecided or never run, with its figure. Rankings are trusted only when the arena-sensitivity
check passed on every task of the run, over at least ``MIN_SEPARATION_SCENARIOS`` paired
scenarios and with no failed conversation: a simulated user that does not tell a supportive
agent from a dismissive one can rank either first.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple

from cogwm.errors import InputError
from cogwm.validate.card import Card, Check, read_card, write_card

log = logging.getLogger(__name__)

#: Environment variable naming the folder of registered cards.
CARDS_DIR_ENV = "COGWM_CARDS_DIR"

#: File name of a shipped world model's card in its package folder.
SHIPPED_CARD = "card.json"

#: The responsiveness checks a status reports, in the order shown.
CHECK_NAMES = ("arena_sensitivity", "counterfactual", "known_groups")

#: Fewer paired scenarios than this and a CTS difference is never called separated: with so
#: few, a bootstrap interval over scenarios is too narrow to trust.
MIN_SEPARATION_SCENARIOS = 20

#: What an unvalidated simulator's rankings risk, in one sentence.
NOT_VALIDATED = "Rankings from this simulator are not validated: a dismissive agent may rank first."


class CheckState(StrEnum):
    """The outcome of one responsiveness check."""

    PASSED = "passed"
    FAILED = "failed"
    UNDECIDED = "undecided"  # the check ran but its figure was undefined
    NEVER_RUN = "never run"


class CheckStatus(NamedTuple):
    """One responsiveness check of the simulator's card (``check`` None: never run)."""

    name: str
    state: CheckState
    check: Check | None = None

    def describe(self) -> str:
        """``failed (ESC 0.50 [0.47, 0.53], n 60)``, or just the state when it never ran."""
        if self.check is None:
            return self.state.value
        return f"{self.state.value} ({figure_text(self.check)})"

    def to_json(self) -> dict[str, Any]:
        """The check's state and figure as a JSON-ready dict."""
        found = self.check
        return {
            "name": self.name,
            "state": self.state.value,
            "task": None if found is None else found.task,
            "metric": None if found is None else found.metric,
            "value": None if found is None else found.value,
            "ci_low": None if found is None else found.ci_low,
            "ci_high": None if found is None else found.ci_high,
            "n": None if found is None else found.n,
            "rule": None if found is None else found.rule,
        }


class SimulatorStatus(NamedTuple):
    """The simulated user of a run and what its validity card says."""

    model: str
    identity: str | None
    card_path: str | None = None
    card_source: str | None = None  # 'shipped' or 'registered'
    checks: tuple[CheckStatus, ...] = ()
    tasks: tuple[str, ...] = ()  # the run's tasks (empty: not known)

    @property
    def has_card(self) -> bool:
        """Whether a card of this identity was found."""
        return self.card_path is not None

    @property
    def sensitivity(self) -> CheckState:
        """The arena-sensitivity verdict over the run's tasks (every task it ran on when they
        are not known): passed only if each passed."""
        return self.sensitivity_for(self.tasks)

    def sensitivity_for(self, tasks: Sequence[str]) -> CheckState:
        """The arena-sensitivity verdict for ``tasks``: never run when one of them has no
        check, else the worst state of their checks (empty: every task with a check)."""
        runs = [c for c in self.checks if c.name == "arena_sensitivity" and c.check is not None]
        if tasks:
            if any(all(c.check is None or c.check.task != t for c in runs) for t in tasks):
                return CheckState.NEVER_RUN
            runs = [c for c in runs if c.check is not None and c.check.task in tasks]
        states = {c.state for c in runs}
        for state in (CheckState.FAILED, CheckState.UNDECIDED):
            if state in states:
                return state
        return CheckState.PASSED if states else CheckState.NEVER_RUN

    @property
    def trusted(self) -> bool:
        """Whether rankings from this simulator may claim that two agents differ."""
        return self.trusted_for(self.tasks)

    def trusted_for(self, tasks: Sequence[str]) -> bool:
        """Whether differences pooled over ``tasks`` may carry a verdict: each task has a
        passing arena-sensitivity check."""
        return self.sensitivity_for(tasks) is CheckState.PASSED

    def line(self) -> str:
        """The status in one line: the simulator, each check, and what it means for rankings."""
        head = f"Simulated user: {self.model}"
        if self.identity is None:
            body = (
                "its identity was not recorded (a run made by an older cogwm), so no "
                "validity card can be matched."
            )
        elif not self.has_card:
            body = (
                f"no validity card for this model (`cogwm validate --model {self.model} "
                "--out card.json` makes one)."
            )
        else:
            body = "; ".join(_check_group(self.checks, name) for name in CHECK_NAMES) + "."
        if not self.trusted:
            return f"{head} — {body} {NOT_VALIDATED}"
        doubtful = {CheckState.FAILED, CheckState.UNDECIDED}
        if any(c.state in doubtful for c in self.checks):
            return (
                f"{head} — {body} Another check failed or was undecided: read rankings with care."
            )
        return f"{head} — {body}"

    def separation_note(self) -> str | None:
        """Why the paired differences carry no verdict (None: the simulator is trusted)."""
        if self.trusted:
            return None
        why = {
            CheckState.FAILED: "failed its arena-sensitivity check",
            CheckState.UNDECIDED: "has an undecided arena-sensitivity check",
        }.get(self.sensitivity, "never ran an arena-sensitivity check")
        return (
            f"Differences are shown without a verdict: the simulated user {why}, so an "
            "interval that excludes 0 may come from the simulator rather than the agents."
        )

    def to_json(self) -> dict[str, Any]:
        """The status as a JSON-ready dict (``line`` is the text the report prints)."""
        return {
            "model": self.model,
            "identity": self.identity,
            "card": self.card_path,
            "card_source": self.card_source,
            "trusted": self.trusted,
            "arena_sensitivity": self.sensitivity.value,
            "checks": [c.to_json() for c in self.checks],
            "line": self.line(),
        }


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def figure_text(check: Check) -> str:
    """``ESC 0.50 [0.47, 0.53], n 60`` (the interval left out when undefined)."""
    text = f"{check.task} {_number(check.value)}"
    if check.ci_low is not None and check.ci_high is not None:
        text += f" [{_number(check.ci_low)}, {_number(check.ci_high)}]"
    return f"{text}, n {check.n}"


def _check_group(checks: tuple[CheckStatus, ...], name: str) -> str:
    """``counterfactual: failed (ESC ...), passed (PD ...)``: every run of one check."""
    found = [c for c in checks if c.name == name]
    label = name.replace("_", " ")
    return f"{label}: " + ", ".join(c.describe() for c in found)


def check_statuses(card: Card | None) -> tuple[CheckStatus, ...]:
    """Each responsiveness check of ``card``, and the ones it never ran (every one without a
    card)."""
    found = [] if card is None else list(card.checks)
    statuses: list[CheckStatus] = []
    for name in CHECK_NAMES:
        runs = [c for c in found if c.name == name]
        if not runs:
            statuses.append(CheckStatus(name, CheckState.NEVER_RUN))
        statuses.extend(CheckStatus(name, _state(c), c) for c in runs)
    return tuple(statuses)


def _state(check: Check) -> CheckState:
    if check.passed is None:
        return CheckState.UNDECIDED
    if check.name == "arena_sensitivity" and (
        check.n < MIN_SEPARATION_SCENARIOS or check.n_failed > 0
    ):  # too few scenarios, or a sample the failures may have biased
        return CheckState.UNDECIDED
    return CheckState.PASSED if check.passed else CheckState.FAILED


# --------------------------------------------------------------------------- finding a card


def cards_dir() -> Path:
    """The folder of registered cards: ``$COGWM_CARDS_DIR``, else ``cards`` beside the model
    cache (``$COGWM_CACHE_DIR``, ``$XDG_CACHE_HOME/cogwm`` or ``~/.cache/cogwm``)."""
    env = os.environ.get(CARDS_DIR_ENV)
    if env:
        return Path(env).expanduser()
    from cogwm.models.cache import default_cache_path

    return default_cache_path().parent / "cards"


def shipped_cards_root() -> Path:
    """The folder holding the world models shipped with cogwm (one subfolder each)."""
    return Path(__file__).resolve().parents[1] / "data" / "world_models"


def registered_name(card: Card, part: str | None = None) -> str:
    """The file name a card is registered under: one per identity, input switch and
    pipeline, so a later card of the same simulator replaces the earlier one (``part``: a
    card of some checks only, kept beside that one, e.g. 'arena_sensitivity')."""
    key = "\n".join((card.model_identity, card.ablation, card.pipeline))
    stem = hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]
    return f"{stem}.json" if part is None else f"{stem}.{part}.json"


def register_card(card: Card, folder: Path | None = None, *, part: str | None = None) -> Path:
    """Keep a copy of ``card`` in the cards folder, where reports look it up by identity
    (``part``: see :func:`registered_name`).

    Raises:
        InputError: The cards folder cannot be written.
    """
    path = (folder or cards_dir()) / registered_name(card, part)
    try:
        write_card(card, path)
    except OSError as exc:
        raise InputError(f"{path}: cannot register the card ({exc.strerror or exc})") from exc
    return path


def _candidates(folder: Path | None, shipped: Path | None) -> list[tuple[Path, str]]:
    places: list[tuple[Path, str]] = []
    root = shipped_cards_root() if shipped is None else shipped
    if root.is_dir():
        places.extend((p, "shipped") for p in sorted(root.glob(f"*/{SHIPPED_CARD}")))
    registered = cards_dir() if folder is None else folder
    if registered.is_dir():
        places.extend((p, "registered") for p in sorted(registered.glob("*.json")))
    return places


#: Cards already parsed, by (path, modification time, size): a page that polls a run's status
#: reads a card file again only when it changed.
_PARSED: dict[tuple[str, int, int], Card | None] = {}


def _read_cached(path: Path) -> Card | None:
    """The card in ``path`` (None: not a card), parsed once per version of the file."""
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _PARSED:
        for stale in [k for k in _PARSED if k[0] == key[0]]:  # an older version of the file
            del _PARSED[stale]
        try:
            _PARSED[key] = read_card(path)
        except InputError as exc:  # one broken file must not hide the others
            log.warning("skipping a card: %s", exc)
            _PARSED[key] = None
    return _PARSED[key]


def find_card(
    identity: str, *, folder: Path | None = None, shipped: Path | None = None
) -> tuple[Card, Path, str] | None:
    """The card of the simulator ``identity`` as the arena runs it (no input switch, joint
    pipeline): the newest such card, holding per check name and task the check of the newest
    card that has one; with the newest card's file and where it was found ('shipped' or
    'registered').

    Args:
        identity: The backend identity the run recorded.
        folder: The registered cards (default :func:`cards_dir`).
        shipped: The shipped world models' folder (default :func:`shipped_cards_root`).
    """
    matches: list[tuple[Card, Path, str]] = []
    for path, source in _candidates(folder, shipped):
        card = _read_cached(path)
        if card is None:
            continue
        if card.model_identity == identity and card.ablation == "none" and card.pipeline == "joint":
            matches.append((card, path, source))
    if not matches:
        return None
    matches.sort(key=lambda m: m[0].created)
    merged: dict[tuple[str, str], Check] = {}
    for card, _, _ in matches:  # oldest first: a newer card's check replaces an older one's
        merged.update({(c.name, c.task): c for c in card.checks})
    newest, path, source = matches[-1]
    return newest.model_copy(update={"checks": list(merged.values())}), path, source


def simulator_status(
    model: str,
    identity: str | None,
    *,
    tasks: Sequence[str] = (),
    folder: Path | None = None,
    shipped: Path | None = None,
) -> SimulatorStatus:
    """The status of the simulated user ``model`` whose backend identity is ``identity``
    (None: the run did not record it) in a run of ``tasks`` (empty: not known)."""
    found = None if identity is None else find_card(identity, folder=folder, shipped=shipped)
    if found is None:
        return SimulatorStatus(model, identity, checks=check_statuses(None), tasks=tuple(tasks))
    card, path, source = found
    return SimulatorStatus(model, identity, str(path), source, check_statuses(card), tuple(tasks))


def separation(
    ci_low: float | None,
    ci_high: float | None,
    n_shared: int,
    status: SimulatorStatus | None,
    tasks: Sequence[str] | None = None,
) -> tuple[bool | None, str | None]:
    """Whether a paired CTS difference separates two agents, or why it is not said.

    Args:
        tasks: The tasks the difference pools (default: the status's run tasks); each needs a
            passing arena-sensitivity check of its own.

    Returns:
        ``(True|False, None)`` when it may be said; ``(None, reason)`` otherwise: fewer than
        :data:`MIN_SEPARATION_SCENARIOS` paired scenarios, a simulator without a passing
        arena-sensitivity check on every task (or none known), or an undefined interval.
    """
    if n_shared < MIN_SEPARATION_SCENARIOS:
        return None, f"fewer than {MIN_SEPARATION_SCENARIOS} paired scenarios"
    if status is None or not status.trusted_for(status.tasks if tasks is None else tasks):
        where = "" if not tasks else f" on {', '.join(tasks)}"
        return None, f"the simulated user has no passing arena-sensitivity check{where}"
    if ci_low is None or ci_high is None:
        return None, "the interval is undefined"
    return ci_low > 0 or ci_high < 0, None
