"""The arena's tables: Table 6 per agent x condition, the per-task table (Table 20), per-task
discriminability, the agent typology, paired CTS differences and the metric correlations.

Confidence intervals are percentile bootstraps over scenarios, paired across arms (every replicate
draws the same scenarios for every agent x condition), from ``cogwm.stats.means``.
"""

from __future__ import annotations

import itertools
import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from cogwm.arena.run_data import ConversationData, RunData
from cogwm.arena.scenarios import describe_scenarios
from cogwm.arena.termination import Termination
from cogwm.arena.windows import Windows
from cogwm.metrics.aggregate import (
    CorrelationMatrix,
    CTSComponents,
    Discriminability,
    agent_typology,
    correlation_matrix,
    discriminability,
)
from cogwm.report.complementarity import Complementarity, complementarity
from cogwm.stats.means import (
    DifferenceEstimate,
    MeanEstimate,
    paired_difference,
    paired_means,
    scenario_table,
    shared_differences,
)
from cogwm.stats.power import paired_t_sample_size
from cogwm.validate.status import SimulatorStatus, simulator_status

#: Table 6 columns: (header, metric name, scale).
TABLE6_COLUMNS: tuple[tuple[str, str, float], ...] = (
    ("CTS", "cts", 1.0),
    ("AUC", "auc", 1.0),
    ("Δ", "delta", 1.0),
    ("PSR", "psr", 1.0),
    ("Mono", "mono", 1.0),
    ("E-Δ", "e_delta", 1.0),
    ("B-Δ", "b_delta", 1.0),
    ("D-Δ", "d_delta", 1.0),
    ("I-Δ", "i_delta", 1.0),
    ("nz%", "nz", 100.0),
)
#: Per-task columns (paper Table 20): composite Δ and the four dimension deltas.
TASK_COLUMNS: tuple[tuple[str, str, float], ...] = (
    ("C-Δ", "delta", 1.0),
    ("E-Δ", "e_delta", 1.0),
    ("B-Δ", "b_delta", 1.0),
    ("D-Δ", "d_delta", 1.0),
    ("I-Δ", "i_delta", 1.0),
)
#: Metrics in the correlation matrix.
CORRELATED = (
    "cts",
    "auc",
    "delta",
    "psr",
    "mono",
    "e_delta",
    "b_delta",
    "d_delta",
    "i_delta",
    "nz",
)

Cells = dict[str, MeanEstimate | None]


class PassK(NamedTuple):
    """pass^k of GoodOutcome: the share of scenarios where all k trials were judged good."""

    k: int
    value: float
    scenarios: int  # scenarios with all k trials judged


class PowerRow(NamedTuple):
    """How many scenarios a paired CTS contrast needs for 80% power (two-sided, 5%)."""

    agent_a: str
    agent_b: str
    n_shared: int
    difference: float  # observed mean paired difference a - b
    sd: float | None  # standard deviation of the per-scenario differences
    needed_observed: int | None  # to detect the observed difference (None: undefined)
    needed_detect: int | None  # to detect the --detect difference (None: not asked)


class ArmRow(NamedTuple):
    """One agent x condition row of Table 6."""

    arm: str
    n: int
    mean_length: float | None
    cells: Cells
    go: MeanEstimate | None
    go_by_task: Cells
    go_unjudged: int
    errors: int = 0  # infrastructure failures: excluded from the row, re-run by --resume
    agent_failures: int = 0  # agent failures: included in the row (scored), counted here
    go_pass_k: PassK | None = None  # consistency of GoodOutcome over k trials (k > 1)
    # How the scored conversations ended (termination -> count): the user leaving and the
    # detected natural end come before max_rounds.
    endings: dict[str, int] = {}  # noqa: RUF012 - a NamedTuple default, never mutated
    user_turns: int = 0  # the simulated user's turns in the scored conversations
    malformed_turns: int = 0  # of those, the ones no person could have said

    @property
    def left_early(self) -> int:
        """Conversations the simulated user left before ``max_rounds``."""
        return self.endings.get(Termination.USER_LEFT, 0)

    @property
    def ended_early(self) -> int:
        """Conversations the intent detector ended before ``max_rounds``."""
        return self.endings.get(Termination.NATURAL_END, 0)


class TaskRow(NamedTuple):
    """One agent x condition x task row of the per-task table."""

    arm: str
    task: str
    n: int
    cells: Cells


#: The stored config kind of a play store (people playing the agent on ``cogwm serve``).
PLAY_KIND = "play"


class ArenaReport(NamedTuple):
    """Everything ``cogwm arena report`` shows."""

    run_name: str
    config_hash: str
    empty: str
    tasks: list[str]
    finished: int
    errors: int
    unfinished: int
    same_model_agents: list[str]
    arms: list[ArmRow]
    per_task: list[TaskRow]
    discriminability: dict[str, Discriminability]
    typology: dict[str, str] | None
    differences: list[DifferenceEstimate]
    correlations: CorrelationMatrix | None
    calls: int
    tokens: int
    cost_usd: float
    agent_failures: int = 0
    power: list[PowerRow] = []  # noqa: RUF012 - a NamedTuple default, never mutated
    detect: float | None = None
    windows: Windows | None = None  # the history the simulator and each agent were shown
    base_model_agents: list[str] = []  # noqa: RUF012 - a NamedTuple default, never mutated
    #: The simulated user and what its validity card says (None: not looked up).
    simulator: SimulatorStatus | None = None
    scenarios: str | None = None  # where the cold starts came from, in words
    #: People played the agent (``cogwm serve``'s play page): open dialogues were left, not
    #: interrupted.
    played: bool = False
    #: Mean CTS against GoodOutcome rate across arms, and GO against improvement per
    #: conversation: per task, then over all tasks.
    complementarity: list[Complementarity] = []  # noqa: RUF012 - a NamedTuple default, never mutated


def _arms(conversations: list[ConversationData]) -> list[str]:
    return sorted({c.arm for c in conversations})


def _bootstrap(
    conversations: list[ConversationData],
    value: Callable[[ConversationData], float | None],
    *,
    n_resamples: int,
    seed: int,
) -> Cells:
    """Per-arm means of ``value`` with CIs paired over scenarios (None where undefined)."""
    rows = [(c.arm, c.scenario_key, v) for c in conversations if (v := value(c)) is not None]
    return dict(paired_means(rows, n_resamples=n_resamples, seed=seed))


def _metric(name: str, scale: float) -> Callable[[ConversationData], float | None]:
    def value(c: ConversationData) -> float | None:
        v = c.metrics.get(name)
        return None if v is None else v * scale

    return value


def _go(c: ConversationData) -> float | None:
    return None if c.go is None else 100.0 * float(c.go)


def _columns(
    conversations: list[ConversationData],
    columns: Iterable[tuple[str, str, float]],
    *,
    n_resamples: int,
    seed: int,
) -> dict[str, Cells]:
    """Column name -> per-arm estimates."""
    return {
        name: _bootstrap(conversations, _metric(name, scale), n_resamples=n_resamples, seed=seed)
        for _, name, scale in columns
    }


def trials_of(data: RunData) -> int:
    """Trials per scenario and arm in the run's config (1 for runs before trials existed)."""
    config: dict[str, Any] = json.loads(data.run.config_json)
    return int(config.get("trials", 1))


def pass_k(conversations: list[ConversationData], k: int) -> PassK | None:
    """pass^k over one arm's conversations: of the scenarios with k judged trials, the share
    where every trial was a GoodOutcome (tau-bench's consistency measure); None when k < 2 or
    no scenario has all k trials judged."""
    if k < 2:
        return None
    verdicts: dict[str, list[bool]] = {}
    for c in conversations:
        if c.go is not None:
            verdicts.setdefault(c.scenario_key, []).append(c.go)
    complete = [all(v) for v in verdicts.values() if len(v) == k]
    if not complete:
        return None
    return PassK(k, sum(complete) / len(complete), len(complete))


def arm_rows(data: RunData, *, n_resamples: int = 2000, seed: int = 0) -> list[ArmRow]:
    """Table 6: one row per agent x condition over all tasks."""
    convs = data.conversations
    columns = _columns(convs, TABLE6_COLUMNS, n_resamples=n_resamples, seed=seed)
    go = _bootstrap(convs, _go, n_resamples=n_resamples, seed=seed)
    tasks = sorted({c.task for c in convs})
    k = trials_of(data)
    go_by_task = {
        t: _bootstrap([c for c in convs if c.task == t], _go, n_resamples=n_resamples, seed=seed)
        for t in tasks
    }
    rows = []
    for arm in _arms(convs):
        mine = [c for c in convs if c.arm == arm]
        lengths = [c.metrics["n"] for c in mine if c.metrics.get("n") is not None]
        rows.append(
            ArmRow(
                arm=arm,
                n=len(mine),
                mean_length=sum(v for v in lengths if v is not None) / len(lengths)
                if lengths
                else None,
                cells={name: columns[name].get(arm) for _, name, _ in TABLE6_COLUMNS},
                go=go.get(arm),
                go_by_task={t: go_by_task[t].get(arm) for t in tasks},
                go_unjudged=sum(1 for c in mine if c.go is None),
                errors=data.errors.get(arm, 0),
                agent_failures=data.agent_failures.get(arm, 0),
                go_pass_k=pass_k(mine, k),
                endings=dict(Counter(c.termination for c in mine)),
                user_turns=sum(c.user_turns for c in mine),
                malformed_turns=sum(c.malformed_turns for c in mine),
            )
        )
    return rows


def ranked_arms(arms: list[ArmRow]) -> list[ArmRow]:
    """Arms by mean CTS, best first; arms whose CTS is undefined (no scored conversation has
    one) come last, by name, never ahead of a measured arm."""

    def key(row: ArmRow) -> tuple[bool, float, str]:
        cts = row.cells.get("cts")
        return (cts is None, 0.0 if cts is None else -cts.mean, row.arm)

    return sorted(arms, key=key)


def task_rows(data: RunData, *, n_resamples: int = 2000, seed: int = 0) -> list[TaskRow]:
    """The per-task table: composite and dimension deltas per agent x condition x task."""
    rows: list[TaskRow] = []
    for task in sorted({c.task for c in data.conversations}):
        convs = [c for c in data.conversations if c.task == task]
        columns = _columns(convs, TASK_COLUMNS, n_resamples=n_resamples, seed=seed)
        for arm in _arms(convs):
            rows.append(
                TaskRow(
                    arm=arm,
                    task=task,
                    n=sum(1 for c in convs if c.arm == arm),
                    cells={name: columns[name].get(arm) for _, name, _ in TASK_COLUMNS},
                )
            )
    return rows


def task_discriminability(data: RunData) -> dict[str, Discriminability]:
    """Per task: mean over E/B/D/I of the across-arm standard deviation of mean Δ."""
    found: dict[str, Discriminability] = {}
    for task in sorted({c.task for c in data.conversations}):
        deltas: dict[str, list[tuple[float | None, ...]]] = {}
        for c in data.conversations:
            if c.task == task:
                row = tuple(c.metrics.get(k) for k in ("e_delta", "b_delta", "d_delta", "i_delta"))
                deltas.setdefault(c.arm, []).append(row)
        found[task] = discriminability(deltas)
    return found


def typology(rows: list[ArmRow]) -> dict[str, str] | None:
    """Agent typology from the arms' mean AUC, Δ and PSR; None with fewer than 3 arms."""
    components: dict[str, CTSComponents] = {}
    for row in rows:
        auc, delta, psr = (row.cells.get(k) for k in ("auc", "delta", "psr"))
        if auc is not None and delta is not None and psr is not None:
            components[row.arm] = CTSComponents(auc.mean, delta.mean, psr.mean)
    if len(components) < 3:
        return None
    return {arm: kind.value for arm, kind in agent_typology(components).items()}


def cts_differences(
    data: RunData, *, n_resamples: int = 2000, seed: int = 0
) -> list[DifferenceEstimate]:
    """Paired CTS differences between every two arms, over the scenarios both have."""
    rows = [
        (c.arm, c.scenario_key, v)
        for c in data.conversations
        if (v := c.metrics.get("cts")) is not None
    ]
    if not rows:
        return []
    table = scenario_table(rows)
    return [
        paired_difference(table, a, b, n_resamples=n_resamples, seed=seed)
        for a, b in itertools.combinations(table.agents, 2)
    ]


def power_rows(data: RunData, detect: float | None = None) -> list[PowerRow]:
    """Per pair of arms: scenarios needed for the observed paired CTS difference and for
    ``detect``, from the spread of the per-scenario differences (trials averaged)."""
    rows = [
        (c.arm, c.scenario_key, v)
        for c in data.conversations
        if (v := c.metrics.get("cts")) is not None
    ]
    if not rows:
        return []
    table = scenario_table(rows)
    found: list[PowerRow] = []
    for a, b in itertools.combinations(table.agents, 2):
        diffs = shared_differences(table, a, b).tolist()
        if not diffs:
            continue
        mean = sum(diffs) / len(diffs)
        sd = statistics.stdev(diffs) if len(diffs) > 1 else None
        found.append(
            PowerRow(
                a,
                b,
                len(diffs),
                mean,
                sd,
                None if sd is None else paired_t_sample_size(sd, mean),
                None if sd is None or detect is None else paired_t_sample_size(sd, detect),
            )
        )
    return found


def correlations(data: RunData) -> CorrelationMatrix | None:
    """Pearson correlations of the trajectory metrics over all finished conversations."""
    if len(data.conversations) < 3:
        return None
    columns = {name: [c.metrics.get(name) for c in data.conversations] for name in CORRELATED}
    return correlation_matrix(columns)


def build_report(
    data: RunData,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    detect: float | None = None,
    with_complementarity: bool = True,
) -> ArenaReport:
    """All tables of a run (``detect``: a CTS difference to size the scenario counts for;
    ``with_complementarity=False`` skips the CTS-GoodOutcome figures, for pages that do not
    show them: their bootstrap is the costliest table)."""
    with data.catalog.active():  # the run's own tasks, looked up by name in the tables
        return _build_report(
            data,
            n_resamples=n_resamples,
            seed=seed,
            detect=detect,
            with_complementarity=with_complementarity,
        )


def _build_report(
    data: RunData,
    *,
    n_resamples: int,
    seed: int,
    detect: float | None,
    with_complementarity: bool,
) -> ArenaReport:
    arms = arm_rows(data, n_resamples=n_resamples, seed=seed)
    config: dict[str, Any] = json.loads(data.run.config_json)
    return ArenaReport(
        run_name=data.run.name,
        config_hash=data.run.config_hash,
        empty=data.empty.value,
        tasks=list(config.get("tasks", [])),
        finished=len(data.conversations),
        errors=sum(data.errors.values()),
        unfinished=sum(data.unfinished.values()),
        same_model_agents=data.same_model_agents,
        arms=arms,
        per_task=task_rows(data, n_resamples=n_resamples, seed=seed),
        discriminability=task_discriminability(data),
        typology=typology(arms),
        differences=cts_differences(data, n_resamples=n_resamples, seed=seed),
        correlations=correlations(data),
        calls=data.calls.calls,
        tokens=data.calls.prompt_tokens + data.calls.completion_tokens,
        cost_usd=data.calls.cost_usd,
        agent_failures=sum(data.agent_failures.values()),
        power=power_rows(data, detect),
        detect=detect,
        windows=Windows.from_stored(config),
        base_model_agents=data.base_model_agents,
        simulator=run_simulator_status(config),
        scenarios=describe_scenarios(config),
        played=config.get("kind") == PLAY_KIND,
        complementarity=(
            complementarity(data.conversations, n_resamples=n_resamples, seed=seed)
            if with_complementarity
            else []
        ),
    )


def run_simulator_status(config: dict[str, Any]) -> SimulatorStatus:
    """The status of a stored run's simulated user, found by the identity the run recorded."""
    identity = config.get("simulator_identity")
    found = config.get("tasks")
    run_tasks = tuple(str(t) for t in found) if isinstance(found, list) else ()
    return simulator_status(
        simulator_label(config), identity if isinstance(identity, str) else None, tasks=run_tasks
    )


def simulator_label(config: dict[str, Any]) -> str:
    """A stored run's simulated user: its model address, or ``python:<module:factory>``."""
    simulator = config.get("simulator")
    if not isinstance(simulator, dict):
        return "unknown"
    if simulator.get("python"):
        return f"python:{simulator['python']}"
    return str(simulator.get("model") or "unknown")
