"""Training the transition model on a samples directory's train split (CPU, deterministic).

The rows are the user turns of the samples' ``train.jsonl`` (so the samples' split rule decides
what is trained on: official test splits, the known-groups hold-outs and unclean dialogues never
are), rebuilt from the human labels in the corpora folder with the same inputs the card's items
show (:func:`cogwm.simulator.samples.turn_inputs`). A row whose agent turn is a line of the
card's counterfactual bank or of the arena's scripted agents is dropped and counted: the checks
that use those lines must meet them unseen.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cogwm import tasks
from cogwm.errors import InputError
from cogwm.schema import BDI
from cogwm.schema.lexicon import valence
from cogwm.schema.partial import STATE_FIELDS, FieldKind, LabelledDialogue
from cogwm.simulator.transition.features import (
    TEXT_FIELDS,
    TfidfTable,
    TurnView,
    normalised_score,
    numeric_features,
    numeric_names,
    text_of,
    view_of_history,
)
from cogwm.simulator.transition.model import SCHEMA, LinearHead, TransitionModel, file_digest

Progress = Callable[[str], None]

#: Feature sets: the numeric block alone, with each task's own VADER columns (``per-task``), or
#: with TF-IDF of the agent's and the user's turns (``text``).
FEATURE_SETS: tuple[str, ...] = ("numeric", "per-task", "text")
#: Fewest scored turns of a B/D/I dimension for it to get a head (else it is carried forward).
MIN_BDI_ROWS = 50


@dataclass(frozen=True)
class Settings:
    """How a model is fitted: feature set, inverse regularisation ``c`` of the label head and
    ridge ``alpha`` of the regressions, TF-IDF columns per text, the seed, and how much of the
    predicted valence comes from the label head's pleasant share (``pleasant_weight``, 0 to 1;
    see :meth:`cogwm.simulator.transition.model.TransitionModel.valence_value`)."""

    features: str = "per-task"
    c: float = 1.0
    alpha: float = 1.0
    max_features: int = 5000
    seed: int = 0
    pleasant_weight: float = 0.0

    def check(self) -> Settings:
        """These settings, if valid.

        Raises:
            InputError: An unknown feature set or a non-positive number.
        """
        if self.features not in FEATURE_SETS:
            raise InputError(
                f"features must be one of {', '.join(FEATURE_SETS)}, got {self.features!r}"
            )
        if not (self.c > 0 and self.alpha > 0 and self.max_features >= 1):
            raise InputError("c and alpha must be positive and max-features at least 1")
        if not 0.0 <= self.pleasant_weight <= 1.0:
            raise InputError(f"pleasant-weight must be 0 to 1, got {self.pleasant_weight:g}")
        return self


@dataclass(frozen=True)
class Row:
    """One training turn: what the model reads, and the gold next state's parts."""

    id: str
    corpus: str
    view: TurnView
    label: str | None
    value: float | None
    bdi: dict[str, float]


def excluded_lines() -> frozenset[str]:
    """The counterfactual bank's and the scripted agents' lines (never trained on)."""
    from cogwm.simulator.counterfactual_bank import load_bank
    from cogwm.tasks.scripts import SCRIPTS

    bank = load_bank()
    lines = {line for per_task in bank.lines.values() for ls in per_task.values() for line in ls}
    lines |= {line for per_task in SCRIPTS.values() for ls in per_task.values() for line in ls}
    return frozenset(line.strip() for line in lines)


def _manifest(samples: Path) -> dict[str, Any]:
    path = samples / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"--samples {samples}: no readable manifest.json ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("history_turns"), int):
        raise InputError(f"--samples {samples}: manifest.json is not a samples manifest")
    return data


def split_turns(samples: Path, split: str) -> set[tuple[str, int]]:
    """The (dialogue id, turn index) of every prediction sample of ``split``.jsonl.

    Raises:
        InputError: The file is missing or a line does not read as a sample.
    """
    path = samples / f"{split}.jsonl"
    found: set[tuple[str, int]] = set()
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    sample = json.loads(line)
                    if sample.get("mode", "predict") == "predict":
                        found.add((str(sample["dialogue_id"]), int(sample["turn_index"])))
                except (ValueError, KeyError, TypeError, AttributeError):
                    raise InputError(f"{path}:{number}: not a sample line") from None
    except OSError as exc:
        raise InputError(f"--samples {samples}: cannot read {split}.jsonl ({exc})") from None
    return found


def dialogue_rows(
    item: LabelledDialogue, turns: set[tuple[str, int]], history_turns: int, skip: frozenset[str]
) -> tuple[list[Row], int]:
    """The rows of one labelled dialogue's turns in ``turns``, and how many were dropped for
    an agent turn in ``skip``."""
    from cogwm.simulator.samples import task_for_corpus, turn_inputs

    task = task_for_corpus(item.dialogue.corpus)
    rows, dropped = [], 0
    for index, inp, partial in turn_inputs(item, history_turns=history_turns, task=task):
        if (item.dialogue.id, index) not in turns:
            continue
        if not any(partial.kind(f) is FieldKind.VALUE for f in STATE_FIELDS):
            continue
        view = view_of_history(task.name, inp.history, inp.previous_state)
        if view.agent.strip() in skip:
            dropped += 1
            continue
        state = partial.to_state()
        emotion = state.emotion if partial.kind("emotion") is FieldKind.VALUE else None
        bdi = {}
        for dim in BDI:
            score = state.dimension_value(dim)
            if score is not None:
                bdi[dim.value] = normalised_score(score, task.score_range)
        rows.append(
            Row(
                id=f"{item.dialogue.id}:{index}",
                corpus=item.dialogue.corpus,
                view=view,
                label=emotion.label if emotion is not None else None,
                value=emotion.quantified if emotion is not None else None,
                bdi=bdi,
            )
        )
    return rows, dropped


def training_rows(
    samples: Path, data_dir: Path, split: str = "train", progress: Progress | None = None
) -> tuple[list[Row], dict[str, Any]]:
    """The rows of the samples' ``split`` and a summary (rows per corpus, dropped lines).

    Raises:
        InputError: A bad samples directory, a manifest without human-label sources, or corpus
            files that cannot be read.
    """
    from cogwm.annotate.human import labelled_dialogues
    from cogwm.corpora.labels import extensions

    extensions.register()
    manifest = _manifest(samples)
    corpora = [s["name"] for s in manifest.get("sources", []) if s.get("kind") == "human"]
    if not corpora:
        raise InputError(f"--samples {samples}: its manifest names no human-label corpus")
    turns = split_turns(samples, split)
    dialogue_ids = {d for d, _ in turns}
    skip = excluded_lines()
    rows: list[Row] = []
    dropped = 0
    for corpus in corpora:
        if progress is not None:
            progress(f"reading {corpus}")
        for item in labelled_dialogues(corpus, data_dir):
            if item.dialogue.id in dialogue_ids:
                found, lost = dialogue_rows(item, turns, manifest["history_turns"], skip)
                rows.extend(found)
                dropped += lost
    if not rows:
        raise InputError(f"--samples {samples}: no {split} turn with a human label was found")
    summary = {
        "split": split,
        "rows": len(rows),
        "rows_by_corpus": dict(sorted(Counter(r.corpus for r in rows).items())),
        "dropped_bank_or_script_lines": dropped,
        "samples_seed": manifest.get("seed"),
        "samples_manifest_sha256": file_digest(samples / "manifest.json"),
    }
    return rows, summary


def _numeric_matrix(rows: Iterable[Row], names: list[str]) -> Any:
    return np.vstack([numeric_features(r.view, tasks.get(r.view.task), names) for r in rows])


def fit_model(
    rows: list[Row], settings: Settings, summary: dict[str, Any], progress: Progress | None = None
) -> TransitionModel:
    """Fit the model's heads on ``rows`` (scikit-learn; deterministic for given rows).

    Raises:
        InputError: Fewer than two emotion labels, or no row with a valence, among the rows.
    """
    from scipy import sparse
    from sklearn.feature_extraction.text import TfidfVectorizer

    settings.check()
    say = progress or (lambda _: None)
    tasks_seen = sorted({r.view.task for r in rows})
    labels = sorted({r.label for r in rows if r.label is not None})
    if len(labels) < 2:
        raise InputError("the training rows hold fewer than two emotion labels")
    say(f"features of {len(rows):,} rows")
    names = numeric_names(tasks_seen, labels, per_task=settings.features == "per-task")
    blocks = [sparse.csr_matrix(_numeric_matrix(rows, names))]
    tables: dict[str, TfidfTable] = {}
    if settings.features == "text":
        for field in TEXT_FIELDS:
            vectorizer = TfidfVectorizer(
                ngram_range=(1, 2), min_df=2, max_features=settings.max_features, sublinear_tf=True
            )
            try:
                blocks.append(vectorizer.fit_transform([text_of(r.view, field) for r in rows]))
            except ValueError:  # no word in two rows: the field gets no block
                say(f"no {field} words in two rows or more: no TF-IDF of the {field} turn")
                continue
            vocabulary = {str(t): int(i) for t, i in vectorizer.vocabulary_.items()}
            tables[field] = TfidfTable(vocabulary, np.asarray(vectorizer.idf_), ngram_max=2)
    x = sparse.hstack(blocks, format="csr")
    heads = _fit_heads(x, rows, labels, settings, say)
    return TransitionModel(
        tasks=tasks_seen,
        labels=labels,
        label_valences={label: valence(label) for label in labels},
        numeric=names,
        text=tables,
        label_head=heads.label,
        valence_head=heads.value,
        bdi_heads=heads.bdi,
        settings=vars(settings),
        training={**summary, "head_rows": heads.counts},
    )


@dataclass(frozen=True)
class _Heads:
    label: LinearHead
    value: LinearHead
    bdi: dict[str, LinearHead | None]
    counts: dict[str, int]


def _fit_heads(
    x: Any, rows: list[Row], labels: list[str], settings: Settings, say: Progress
) -> _Heads:
    from sklearn.linear_model import LogisticRegression, Ridge

    with_label = [i for i, r in enumerate(rows) if r.label is not None]
    say(f"label head on {len(with_label):,} rows")
    classifier = LogisticRegression(C=settings.c, max_iter=500, random_state=settings.seed)
    classifier.fit(x[with_label], [rows[i].label for i in with_label])
    if list(classifier.classes_) != labels:
        raise InputError("the label head's classes differ from the rows' labels")
    with_value = [i for i, r in enumerate(rows) if r.value is not None]
    say(f"valence head on {len(with_value):,} rows")
    value = Ridge(alpha=settings.alpha).fit(x[with_value], [rows[i].value for i in with_value])
    bdi: dict[str, LinearHead | None] = {}
    counts = {"label": len(with_label), "valence": len(with_value)}
    for dim in BDI:
        scored = [i for i, r in enumerate(rows) if dim.value in r.bdi]
        counts[dim.value] = len(scored)
        if len(scored) < MIN_BDI_ROWS:
            bdi[dim.value] = None
            continue
        say(f"{dim.value} head on {len(scored):,} rows")
        ridge = Ridge(alpha=settings.alpha).fit(x[scored], [rows[i].bdi[dim.value] for i in scored])
        bdi[dim.value] = _head(ridge.coef_, ridge.intercept_)
    return _Heads(
        label=_head(classifier.coef_, classifier.intercept_),
        value=_head(value.coef_, value.intercept_),
        bdi=bdi,
        counts=counts,
    )


def _head(coef: Any, intercept: Any) -> LinearHead:
    return LinearHead(
        coef=np.atleast_2d(np.asarray(coef, dtype=np.float64)),
        intercept=np.atleast_1d(np.asarray(intercept, dtype=np.float64)),
    )


__all__ = ["SCHEMA", "Row", "Settings", "fit_model", "training_rows"]
