"""Scenarios: the opening rounds (cold start), the user's situation and profile.

Three sources: the built-in scenarios shipped in ``cogwm/data/scenarios/`` (original text, so the
arena runs with no corpus), real dialogues of the task's corpus (ESConv for ESC, P4G for PD,
INSPIRED for CR), whose first two rounds become the cold start, and a JSONL file of your own
dialogues (one ``cogwm.schema.Dialogue`` per line), used the same way.

Corpus cold starts come from one split (:class:`ScenarioSplit`, default ``test``): the corpus's
official split where it has one (ESConv, INSPIRED's test), else the seeded split the training
samples use (P4G), seeded with the config's ``scenario_split_seed``: ``cogwm samples build``'s
default, :data:`SPLIT_SEED`, unless the simulator's samples were built with another ``--seed``.
Validation and test cold starts are clean dialogues too (:mod:`cogwm.simulator.clean`), so a
trained simulator never starts from a conversation it was trained on, nor from one that shares
its long lines.
"""

from __future__ import annotations

import itertools
import json
import random
from enum import StrEnum
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from cogwm.corpora.dialogue_file import read_dialogues
from cogwm.corpora.profiles import profile_from_metadata
from cogwm.errors import ConfigError, InputError
from cogwm.schema import Dialogue, Profile, Record, Role, TaskSpec
from cogwm.schema.labels import P4GMeta

#: Rounds copied from a real dialogue before the simulation starts.
COLD_START_ROUNDS = 2
#: The seed of the samples' split that corpus cold starts follow (``cogwm samples build``'s
#: default), for corpora without an official split.
SPLIT_SEED = 0


class ScenarioSource(StrEnum):
    """Where a run takes its scenarios from."""

    BUILTIN = "builtin"
    CORPUS = "corpus"


class ScenarioSplit(StrEnum):
    """Which split of the task's corpus a ``corpus`` run takes its cold starts from."""

    TEST = "test"
    VAL = "val"
    TRAIN = "train"
    ALL = "all"


_SPLIT_WORDS = {
    ScenarioSplit.TEST: "test split",
    ScenarioSplit.VAL: "validation split",
    ScenarioSplit.TRAIN: "train split (dialogues a trained simulator has seen)",
    ScenarioSplit.ALL: "every split, train included",
}


def describe_scenarios(config: dict[str, Any]) -> str:
    """Where a stored run's cold starts came from, in one line."""
    source = config.get("scenarios", ScenarioSource.BUILTIN.value)
    if source == ScenarioSource.BUILTIN.value:
        return "Cold starts: the built-in scenarios."
    if source != ScenarioSource.CORPUS.value:
        return f"Cold starts: the dialogues of {source}."
    split = config.get("scenario_split")
    if split is None:
        return (
            "Cold starts: the task corpora's dialogues from every split, train included (the run "
            "was configured before corpus cold starts had a split)."
        )
    words = _SPLIT_WORDS[ScenarioSplit(split)]
    if split in (ScenarioSplit.TEST, ScenarioSplit.VAL):
        words += ", clean dialogues only"
    seed = config.get("scenario_split_seed", SPLIT_SEED)
    return (
        f"Cold starts: the task corpora's {words} (official splits where the corpus has them, "
        f"else the samples' seeded split, seed {seed})."
    )


class OpeningTurn(Record):
    """One turn of the cold start."""

    role: Role
    text: str = Field(min_length=1)


class Scenario(Record):
    """What one conversation starts from."""

    id: str = Field(description="Stable id: 'builtin:esc-01' or the corpus dialogue id.")
    task: str
    source: str = Field(description="'builtin' or the corpus name.")
    title: str = ""
    context: str = Field(description="The user's situation, shown to the simulator only.")
    opening: list[OpeningTurn]
    profile: Profile | None = Field(
        default=None, description="From the scenario or corpus metadata; None when unknown."
    )

    @model_validator(mode="after")
    def _opening_is_cold_start(self) -> Scenario:
        roles = [t.role for t in self.opening]
        if any(a is b for a, b in itertools.pairwise(roles)):
            raise ValueError(f"scenario {self.id}: opening turns must alternate speakers")
        if not roles or roles[-1] is not Role.USER:
            raise ValueError(f"scenario {self.id}: the opening must end with a user turn")
        if count_rounds(roles) != COLD_START_ROUNDS:
            raise ValueError(
                f"scenario {self.id}: the opening must hold {COLD_START_ROUNDS} rounds"
            )
        return self


def count_rounds(roles: list[Role]) -> int:
    """Rounds in a sequence of turn roles: agent turns immediately followed by a user turn."""
    return sum(1 for a, b in itertools.pairwise(roles) if a is Role.AGENT and b is Role.USER)


@cache
def builtin_scenarios(task: str) -> tuple[Scenario, ...]:
    """The built-in scenarios of ``task`` (empty when the package ships none for it)."""
    name = f"{task.lower()}.json"
    folder = resources.files("cogwm") / "data" / "scenarios"
    entry = folder / name
    if not entry.is_file():
        return ()
    raw = json.loads(entry.read_text(encoding="utf-8"))
    return tuple(
        Scenario.model_validate(
            {**item, "id": f"builtin:{item['id']}", "task": raw["task"], "source": "builtin"},
            strict=False,
        )
        for item in raw["scenarios"]
    )


def cold_start(dialogue: Dialogue) -> list[OpeningTurn] | None:
    """The turns up to the user turn that closes round 2; None if the dialogue is too short.

    A leading user turn (a greeting before the agent's first turn) is kept. The dialogue must go on
    after the cold start, with at least one more agent turn, or it is not a usable opening.
    """
    turns = dialogue.turns()
    opening: list[OpeningTurn] = []
    rounds = 0
    for position, turn in enumerate(turns):
        opening.append(OpeningTurn(role=turn.role, text=turn.text.strip() or "..."))
        previous = turns[position - 1].role if position else None
        if turn.role is Role.USER and previous is Role.AGENT:
            rounds += 1
        if rounds == COLD_START_ROUNDS:
            rest = turns[position + 1 :]
            return opening if any(t.role is Role.AGENT for t in rest) else None
    return None


def context_from_metadata(dialogue: Dialogue, task: TaskSpec) -> str:
    """The user's situation, exactly as the world model's training samples show it.

    ESConv's self-reported emotion type is not part of it: it is the first seeker turn's human
    label, so a simulator shown it would be handed its own target (and a trained simulator would
    meet a prompt it never saw).
    """
    from cogwm.simulator.samples import sample_context

    return sample_context(dialogue, task)


def scenario_from_dialogue(dialogue: Dialogue, task: TaskSpec) -> Scenario | None:
    """A scenario whose cold start is the dialogue's first two rounds; None if too short."""
    opening = cold_start(dialogue)
    if opening is None:
        return None
    return Scenario(
        id=dialogue.id,
        task=task.name,
        source=dialogue.corpus,
        context=context_from_metadata(dialogue, task),
        opening=opening,
        profile=profile_from_metadata(dialogue),
    )


def corpus_scenarios(
    task: TaskSpec,
    data_dir: Path,
    split: ScenarioSplit | str = ScenarioSplit.ALL,
    *,
    split_seed: int = SPLIT_SEED,
) -> list[Scenario]:
    """Every usable scenario from one split of the task's corpus, in corpus order
    (``split_seed`` seeds the split of a corpus without an official one).

    Raises:
        InputError: The corpus files are missing or do not read; an unknown split.
    """
    from cogwm import corpora

    dialogues = split_dialogues(
        task.corpus, corpora.load(task.corpus, data_dir), split, split_seed=split_seed
    )
    # The P4G release marks some dialogues as bad ('BAD_' ids); they make no cold start.
    usable = (d for d in dialogues if not (isinstance(d.meta, P4GMeta) and d.meta.marked_bad))
    found = (scenario_from_dialogue(d, task) for d in usable)
    return [s for s in found if s is not None]


def split_dialogues(
    corpus: str,
    dialogues: list[Dialogue],
    split: ScenarioSplit | str,
    *,
    split_seed: int = SPLIT_SEED,
) -> list[Dialogue]:
    """The dialogues of one split (see the module docstring); val and test keep clean ones.
    ``split_seed`` seeds the split where the corpus has no official one (the simulator's
    ``cogwm samples build --seed``).

    Raises:
        InputError: An unknown split.
    """
    from cogwm.simulator.clean import clean_dialogues, train_of
    from cogwm.simulator.splits import plan_splits

    try:
        wanted = ScenarioSplit(split)
    except ValueError:
        known = ", ".join(s.value for s in ScenarioSplit)
        raise InputError(f"unknown scenario split {split!r}; choose {known}") from None
    if wanted is ScenarioSplit.ALL:
        return dialogues
    plan = plan_splits(corpus, dialogues, split_seed)
    kept = [d for d in dialogues if plan.split_of(d.id) == wanted.value]
    if wanted is ScenarioSplit.TRAIN:
        return kept
    return clean_dialogues(kept, train_of(corpus, dialogues, split_seed)).kept


def file_scenarios(task: TaskSpec, path: Path) -> list[Scenario]:
    """Scenarios from a dialogue file: those for ``task`` (or with no task) long enough."""
    dialogues = read_dialogues(path)
    mine = (d for d in dialogues if d.task is None or d.task.upper() == task.name)
    found = (scenario_from_dialogue(d, task) for d in mine)
    return [s for s in found if s is not None]


def select_scenarios(
    task: TaskSpec,
    count: int,
    source: ScenarioSource | str,
    *,
    data_dir: Path | None,
    seed: int,
    split: ScenarioSplit | str = ScenarioSplit.TEST,
    split_seed: int = SPLIT_SEED,
) -> list[Scenario]:
    """``count`` scenarios for ``task``: the first built-in ones, or a seeded sample of a corpus
    (of its ``split``, seeded with ``split_seed`` where the corpus has no official split) or of
    a dialogue file (``source`` is then its path).

    Raises:
        ConfigError: Fewer scenarios exist than asked for, or a corpus run lacks a data dir.
    """
    if source is ScenarioSource.BUILTIN:
        pool = list(builtin_scenarios(task.name))
        if len(pool) < count:
            raise ConfigError(
                f"dialogues_per_task: {count} asked for {task.name} but {len(pool)} built-in "
                'scenarios exist; use scenarios = "corpus" with a data_dir for more'
            )
        return pool[:count]
    if not isinstance(source, ScenarioSource):
        return _sample(task, count, _file_pool(task, Path(source)), str(source), seed)
    if data_dir is None:
        raise ConfigError('data_dir: scenarios = "corpus" needs a data directory')
    try:
        pool = corpus_scenarios(task, data_dir, split, split_seed=split_seed)
    except (OSError, InputError) as exc:
        raise ConfigError(f"data_dir: cannot read the {task.corpus} corpus: {exc}") from exc
    where = task.corpus if split == ScenarioSplit.ALL else f"{task.corpus}'s {split} split"
    return _sample(task, count, pool, where, seed)


def _file_pool(task: TaskSpec, path: Path) -> list[Scenario]:
    try:
        return file_scenarios(task, path)
    except (OSError, InputError) as exc:
        raise ConfigError(f"scenarios: {exc}") from exc


def _sample(
    task: TaskSpec, count: int, pool: list[Scenario], where: str, seed: int
) -> list[Scenario]:
    if len(pool) < count:
        raise ConfigError(
            f"dialogues_per_task: {count} asked for {task.name} but {where} has "
            f"{len(pool)} usable dialogues"
        )
    # Sorting by id first makes the sample independent of the loader's order.
    pool.sort(key=lambda s: s.id)
    return random.Random(f"{seed}:{task.name}").sample(pool, count)
