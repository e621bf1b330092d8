"""Annotation quality: the LLM annotator against people (paper Table 14).

Two yardsticks:

1. **The corpora's human labels** (:func:`cogwm.annotate.human.labelled_dialogues`), where they
   overlap with the annotated turns: emotion agreement (Cohen's kappa, accuracy, intensity
   Spearman) wherever a human emotion is known (DailyDialog's expert labels, ESConv's
   self-reports), score AUROC per dimension where human items or bounds put it high or low
   (PersuasionForGood commitment: agree/provide-amount/confirm turns, bound >= 1.5, against
   disagree turns, bound <= 0.5), and direction
   AUROC where the labels are directions (AnnoMI change +1 vs sustain -1, predicted by the mean
   B/D/I score of the turn).
2. **A sheet of human judgments** (:func:`judgment_sheet` writes it, a person fills it, see
   :data:`SHEET_COLUMNS`): global B/D/I recall and precision, emotion kappa, intensity and score
   Spearman, allocation F1.

Every figure comes with the number of items behind it, a 95% bootstrap CI (dialogues resampled,
1,000 times, seeded), the valid-output rate of those items, and majority and random baselines
(the majority answer scored the same way; a random rater's expected value). A failed output
is a **miss**, never skipped: it is a wrong label for kappa and accuracy, the worst possible
rank for AUROC and a "not allocated" for F1. Correlations cannot score a missing number; they
are computed over valid answers and say so. Intensity is scored only where the corpus grades
it (not DailyDialog).
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from cogwm.annotate.saa import global_items
from cogwm.annotate.store import StoredDialogue
from cogwm.errors import InputError
from cogwm.schema.lexicon import valence_table
from cogwm.schema.partial import FieldKind, PartialState
from cogwm.schema.state import BDI, Dimension
from cogwm.stats.bootstrap import ItemsStatistic, estimate_of_groups
from cogwm.stats.estimate import Estimate
from cogwm.stats.pairs import accuracy_of, auroc_of, f1_of, kappa_of, spearman_of

#: Bootstrap resamples and seed for every CI.
RESAMPLES = 1000
SEED = 0
#: The label a failed output gets in agreement figures (it never matches a human label).
FAILED = "<failed>"
#: The label of a human "no emotion" that the mapping left empty.
NONE = "<none>"
#: Human item scores at or above this are positives, at or below NEGATIVE_AT_MOST negatives.
POSITIVE_AT_LEAST = 1.5
NEGATIVE_AT_MOST = 0.5


class Figure(Estimate):
    """One quality figure with what is needed to read it (its interval resamples dialogues).

    Built positionally or by name: name, corpus, value, n, ci (``(low, high)`` or None),
    valid_rate, baselines, note; any other field of the estimate (``ci_low``, ``se``...) by
    name.
    """

    name: str
    corpus: str
    valid_rate: float | None
    baselines: dict[str, float | None] = Field(default_factory=dict)
    note: str = ""

    def __init__(
        self,
        name: str,
        corpus: str,
        value: float | None,
        n: int,
        ci: tuple[float, float] | None = None,
        valid_rate: float | None = None,
        baselines: dict[str, float | None] | None = None,
        note: str = "",
        **estimate: Any,
    ) -> None:
        if ci is not None:
            estimate.update(ci_low=ci[0], ci_high=ci[1])
        fields: dict[str, Any] = {
            "name": name,
            "corpus": corpus,
            "value": value,
            "n": n,
            "valid_rate": valid_rate,
            "baselines": baselines or {},
            "note": note,
            **estimate,
        }
        super().__init__(**fields)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "corpus": self.corpus,
            "value": self.value,
            "n": self.n,
            "ci": list(self.ci) if self.ci else None,
            "valid_rate": self.valid_rate,
            "baselines": self.baselines,
            "note": self.note,
        }


def _figure(
    name: str,
    corpus: str,
    groups: dict[str, list[Any]],
    statistic: ItemsStatistic,
    *,
    valid: int,
    baselines: dict[str, float | None] | None = None,
    note: str = "",
) -> Figure:
    estimate = estimate_of_groups(list(groups.values()), statistic, resamples=RESAMPLES, seed=SEED)
    return Figure(
        name,
        corpus,
        estimate.value,
        estimate.n,
        estimate.ci,
        valid / estimate.n if estimate.n else None,
        baselines or {},
        note=note,
    )


# ----------------------------------------------------------------------- against human labels


@dataclass
class _Turn:
    """One annotated user turn: the LLM's state (None when it failed) and the human one."""

    dialogue: str
    llm: PartialState | None
    human: PartialState


def _human_key(dialogue_id: str) -> str:
    # DailyDialog's human states come once per speaker (<id>#A, <id>#B); turn indices are shared.
    return dialogue_id.split("#", 1)[0]


def overlap(
    stored: Iterable[StoredDialogue],
    human: Iterable[Any],
) -> dict[str, list[_Turn]]:
    """Annotated user turns that also have a human state, per corpus."""
    from cogwm.annotate.export import labelled

    llm: dict[tuple[str, int], tuple[str, PartialState | None]] = {}
    for item in stored:
        states = labelled(item.annotation, item.dialogue).states
        for turn in item.annotation.turns:
            llm[(item.dialogue.id, turn.turn_index)] = (
                item.dialogue.corpus,
                states.get(turn.turn_index),
            )
    out: dict[str, list[_Turn]] = {}
    for labelled_dialogue in human:
        key = _human_key(labelled_dialogue.dialogue.id)
        for index, state in labelled_dialogue.states.items():
            found = llm.get((key, index))
            if found is None or state.is_unknown():
                continue
            corpus, predicted = found
            out.setdefault(corpus, []).append(_Turn(key, predicted, state))
    return out


def _grouped(items: Iterable[tuple[str, Any]]) -> dict[str, list[Any]]:
    groups: dict[str, list[Any]] = {}
    for dialogue, item in items:
        groups.setdefault(dialogue, []).append(item)
    return groups


def emotion_figures(corpus: str, turns: Sequence[_Turn]) -> list[Figure]:
    """Emotion kappa, accuracy and intensity rho where the human emotion is known."""
    known = [t for t in turns if t.human.emotion.kind is not FieldKind.UNKNOWN]
    if not known:
        return []
    pairs = _grouped((t.dialogue, (_human_label(t.human), _llm_label(t.llm))) for t in known)
    valid = sum(1 for t in known if t.llm is not None)
    human_labels = [h for group in pairs.values() for h, _ in group]
    majority = Counter(human_labels).most_common(1)[0][0]
    offered = sorted(valence_table())
    # The random rater's expected figures (uniform over the offered labels, independent of the
    # person): kappa 0, accuracy the share it can hit. One seeded draw strays with few items.
    random_accuracy = sum(h in offered for h in human_labels) / len(offered) / len(human_labels)
    majority_pairs = [(h, majority) for h in human_labels]
    figures = [
        _figure(
            "emotion kappa",
            corpus,
            pairs,
            kappa_of,
            valid=valid,
            baselines={"majority": kappa_of(majority_pairs), "random": 0.0},
        ),
        _figure(
            "emotion accuracy",
            corpus,
            pairs,
            accuracy_of,
            valid=valid,
            baselines={
                "majority": accuracy_of(majority_pairs),
                "random": random_accuracy,
            },
        ),
    ]
    intensity = _intensity_figure(corpus, known)
    return figures if intensity is None else [*figures, intensity]


def _intensity_figure(corpus: str, known: list[_Turn]) -> Figure | None:
    """Intensity rho over the turns whose human intensity is graded (None: no pair to rank).

    Only where the corpus grades intensity: DailyDialog gives the label alone, and its
    intensity is a convention that would make rho undefined or meaningless.
    """
    graded = [
        t for t in known if t.human.emotion.value is not None and t.human.emotion.intensity_known
    ]
    intensity = _grouped(
        (t.dialogue, (float(t.human.emotion.value.intensity), float(t.llm.emotion.value.intensity)))
        for t in graded
        if t.human.emotion.value is not None
        and t.llm is not None
        and t.llm.emotion.value is not None
    )
    if not intensity:
        return None
    n_human = len(graded)
    return _figure(
        "intensity rho",
        corpus,
        intensity,
        spearman_of,
        valid=sum(len(g) for g in intensity.values()),
        note=f"over valid answers only: {n_human} human intensities, "
        f"{n_human - sum(len(g) for g in intensity.values())} without an LLM intensity",
    )


def _human_label(state: PartialState) -> str:
    return state.emotion.value.label if state.emotion.value is not None else NONE


def _llm_label(state: PartialState | None) -> str:
    if state is None:
        return FAILED
    return state.emotion.value.label if state.emotion.value is not None else NONE


def _level(state: PartialState, dimension: Dimension) -> float | None:
    return state.to_state().dimension_value(dimension)


def _ranked_with_misses(
    pairs: list[tuple[bool, float | None]],
) -> list[tuple[bool, float]]:
    """Misses (no prediction) get the worst rank for their class: below every score for a
    positive, above every score for a negative."""
    scores = [s for _, s in pairs if s is not None]
    low, high = (min(scores), max(scores)) if scores else (0.0, 0.0)
    return [(y, s if s is not None else (low - 1 if y else high + 1)) for y, s in pairs]


def human_class(state: PartialState, dimension: Dimension) -> bool | None:
    """Whether the human state puts a dimension high (True), low (False) or says neither.

    High: an item score or an ``at_least`` bound of 1.5 or more (P4G agree/provide-amount);
    low: a score or an ``at_most`` bound of 0.5 or less (P4G disagree).
    """
    for constraint in state.constraints:
        if constraint.target != dimension.value:
            continue
        if constraint.relation == "at_least" and constraint.value >= POSITIVE_AT_LEAST:
            return True
        if constraint.relation == "at_most" and constraint.value <= NEGATIVE_AT_MOST:
            return False
    level = _level(state, dimension)
    if level is None or NEGATIVE_AT_MOST < level < POSITIVE_AT_LEAST:
        return None
    return level >= POSITIVE_AT_LEAST


def score_figures(corpus: str, turns: Sequence[_Turn]) -> list[Figure]:
    """Per dimension: AUROC of the LLM's score at turns a human puts high or low."""
    figures = []
    for dimension in BDI:
        rows: list[tuple[str, bool, float | None, bool]] = []
        for t in turns:
            positive = human_class(t.human, dimension)
            if positive is None:
                continue
            predicted = _level(t.llm, dimension) if t.llm is not None else None
            rows.append((t.dialogue, positive, predicted, t.llm is not None))
        if rows:
            figures.append(_auroc_figure(f"{dimension.value} AUROC", corpus, rows))
    return figures


def direction_figures(corpus: str, turns: Sequence[_Turn]) -> list[Figure]:
    """AUROC of the mean B/D/I score for direction labels (+1 against -1)."""
    rows: list[tuple[str, bool, float | None, bool]] = []
    for t in turns:
        directions = [c.value for c in t.human.constraints if c.relation == "direction"]
        if not directions or len(set(directions)) != 1:
            continue
        levels = [] if t.llm is None else [_level(t.llm, d) for d in BDI]
        known = [v for v in levels if v is not None]
        predicted = sum(known) / len(known) if known else None
        rows.append((t.dialogue, directions[0] > 0, predicted, t.llm is not None))
    return [_auroc_figure("direction AUROC (mean B/D/I)", corpus, rows)] if rows else []


def _auroc_figure(
    name: str, corpus: str, rows: list[tuple[str, bool, float | None, bool]]
) -> Figure:
    ranked = _ranked_with_misses([(y, s) for _, y, s, _ in rows])
    groups = _grouped((d, pair) for (d, _, _, _), pair in zip(rows, ranked, strict=True))
    no_score = sum(1 for _, _, s, ok in rows if ok and s is None)
    return _figure(
        name,
        corpus,
        groups,
        auroc_of,
        valid=sum(1 for *_, ok in rows if ok),
        # A constant score and a random one both rank at chance: 0.5 is the random scorer's
        # expected AUROC (one seeded draw of it strayed far from 0.5 with few negatives).
        baselines={"majority": 0.5, "random": 0.5},
        note=f"{sum(y for _, y, _, _ in rows)} positive; misses ranked worst: "
        f"{sum(1 for *_, ok in rows if not ok)} failed, {no_score} with no score",
    )


def against_human_labels(
    stored: Sequence[StoredDialogue], data_dir: Path | None
) -> tuple[list[Figure], dict[str, str]]:
    """All figures against the human-label states of the annotated corpora.

    Returns the figures and, per annotated corpus without figures, why (no mapping, or its
    human labels could not be read from ``data_dir``).
    """
    from cogwm.annotate import human

    figures: list[Figure] = []
    skipped: dict[str, str] = {}
    for corpus in sorted({s.dialogue.corpus for s in stored}):
        if corpus not in human.names():
            skipped[corpus] = "no human-label mapping"
            continue
        mine = [s for s in stored if s.dialogue.corpus == corpus]
        wanted = {s.dialogue.id for s in mine}
        try:
            labelled = [
                ld
                for ld in human.labelled_dialogues(corpus, data_dir)
                if _human_key(ld.dialogue.id) in wanted
            ]
        except InputError as exc:
            skipped[corpus] = f"human labels not readable: {exc}"
            continue
        turns = overlap(mine, labelled).get(corpus, [])
        found = emotion_figures(corpus, turns)
        found += score_figures(corpus, turns)
        found += direction_figures(corpus, turns)
        if not found:
            skipped[corpus] = f"no overlap with human labels ({len(turns)} labelled turns)"
        figures += found
    return figures, skipped


# ---------------------------------------------------------------------- the judgment sheet

#: Columns of the judgment sheet. ``kind`` is one of ``global`` (a stage-1 item: judge
#: ``human_ok`` 1/0 and, if 1, give ``human_score``), ``missed`` (a row the judge ADDS for an item
#: the annotator missed: ``dialogue_id``, ``dimension``, ``text``), ``emotion`` (one per user
#: turn: give ``human_label`` from the lexicon and ``human_score`` = intensity 1-3) and
#: ``allocation`` (one per user turn and stage-1 item: ``human_label`` 1 if the turn expresses the
#: item, else 0). ``llm_label`` is ``<failed>`` where the annotator failed. Rows left blank in
#: the human columns are not judged and not counted.
SHEET_COLUMNS: tuple[str, ...] = (
    "dialogue_id",
    "turn_index",
    "kind",
    "dimension",
    "ref",
    "text",
    "llm_label",
    "llm_score",
    "human_ok",
    "human_label",
    "human_score",
)


def judgment_sheet(stored: Iterable[StoredDialogue]) -> Iterable[dict[str, str]]:
    """The rows a person judges, dialogue by dialogue."""
    for item in stored:
        did = item.dialogue.id
        items = global_items(item.annotation.summary)
        for dimension in BDI:
            for ref, text, score in items[dimension]:
                yield _row(did, "", "global", dimension.value, ref, text, "", f"{score:g}")
        turns = item.dialogue.turns()
        for turn in item.annotation.turns:
            text = turns[turn.turn_index].text
            index = str(turn.turn_index)
            allocation = turn.allocation
            if allocation is None:
                yield _row(did, index, "emotion", "", "", text, FAILED, "")
            else:
                emotion = allocation.emotion
                yield _row(
                    did, index, "emotion", "", "", text, emotion.label, str(emotion.intensity)
                )
            for dimension in BDI:
                chosen = (
                    {a.global_ref for a in allocation.items(dimension)} if allocation else set()
                )
                for ref, _, _ in items[dimension]:
                    label = FAILED if allocation is None else str(int(ref in chosen))
                    yield _row(did, index, "allocation", dimension.value, ref, text, label, "")


def _row(*values: str) -> dict[str, str]:
    row = dict(zip(SHEET_COLUMNS[:8], values, strict=True))
    return {**row, "human_ok": "", "human_label": "", "human_score": ""}


def write_sheet(path: Path, rows: Iterable[dict[str, str]]) -> int:
    """Write the judgment sheet as CSV; returns the number of rows."""
    if not path.parent.is_dir():
        raise InputError(f"{path}: directory {path.parent} does not exist")
    count = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(SHEET_COLUMNS))
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
            count += 1
    return count


def read_sheet(path: Path) -> list[dict[str, str]]:
    """Read a filled sheet; raises InputError for a missing file or column."""
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in SHEET_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path}: missing columns {', '.join(missing)}")
        return list(reader)


def _number(value: str, path: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise InputError(f"{path}: not a number: {value!r}") from None


def against_sheet(rows: Sequence[dict[str, str]], where: str = "sheet") -> list[Figure]:
    """The paper's Table 14 figures from a filled judgment sheet."""
    judged = [r for r in rows if r["human_ok"].strip() or r["human_label"].strip()]
    missed = [r for r in rows if r["kind"] == "missed"]
    globals_ = [r for r in judged if r["kind"] == "global"]
    figures = _sheet_global_figures(globals_, missed, where) if globals_ or missed else []
    emotions = [r for r in judged if r["kind"] == "emotion" and r["human_label"].strip()]
    if emotions:
        figures += _sheet_emotion_figures(emotions, where)
    allocations = [r for r in judged if r["kind"] == "allocation"]
    if allocations:
        pairs_f1 = _grouped(
            (r["dialogue_id"], (r["human_label"].strip() == "1", r["llm_label"] == "1"))
            for r in allocations
        )
        valid = sum(1 for r in allocations if r["llm_label"] != FAILED)
        figures.append(_figure("allocation F1", "sheet", pairs_f1, f1_of, valid=valid))
    return figures


def _sheet_global_figures(
    globals_: list[dict[str, str]], missed: list[dict[str, str]], where: str
) -> list[Figure]:
    """Global B/D/I precision and recall (items the judge added count as missed), score rho."""
    ok = [(r["dialogue_id"], r["human_ok"].strip() == "1") for r in globals_]
    figures = [_figure("global B/D/I precision", "sheet", _grouped(ok), _share, valid=len(ok))]
    recall_items = ok + [(r["dialogue_id"], None) for r in missed]
    figures.append(
        _figure(
            "global B/D/I recall",
            "sheet",
            _grouped(recall_items),
            _recall,
            valid=len(ok),
            note=f"{len(missed)} items added by the judge",
        )
    )
    scores = _grouped(
        (
            r["dialogue_id"],
            (_number(r["llm_score"], where), _number(r["human_score"], where)),
        )
        for r in globals_
        if r["human_ok"].strip() == "1" and r["human_score"].strip()
    )
    if scores:
        figures.append(
            _figure(
                "B/D/I score rho",
                "sheet",
                scores,
                spearman_of,
                valid=sum(len(g) for g in scores.values()),
            )
        )
    return figures


def _sheet_emotion_figures(emotions: list[dict[str, str]], where: str) -> list[Figure]:
    """Emotion kappa and intensity rho of the judged emotion rows (valid answers only)."""
    pairs = _grouped(
        (r["dialogue_id"], (r["human_label"].strip().lower(), r["llm_label"])) for r in emotions
    )
    valid = sum(1 for r in emotions if r["llm_label"] != FAILED)
    figures = [_figure("emotion kappa", "sheet", pairs, kappa_of, valid=valid)]
    intensity = _grouped(
        (r["dialogue_id"], (_number(r["human_score"], where), _number(r["llm_score"], where)))
        for r in emotions
        if r["human_score"].strip() and r["llm_label"] != FAILED
    )
    if intensity:
        figures.append(
            _figure(
                "intensity rho",
                "sheet",
                intensity,
                spearman_of,
                valid=valid,
                note="over valid answers only",
            )
        )
    return figures


def _share(items: list[bool]) -> float | None:
    return sum(items) / len(items) if items else None


def _recall(items: list[bool | None]) -> float | None:
    found = sum(1 for i in items if i is True)
    relevant = found + sum(1 for i in items if i is None)
    return found / relevant if relevant else None
