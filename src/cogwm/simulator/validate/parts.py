"""The parts of the card: which items each reads, how ``--limit`` samples them, which figures
they give.

- ``dailydialog`` (state understanding): emotion accuracy and macro-F1 on turns labelled anger,
  sadness or fear (the DailyDialog labels that are lexicon labels too), and the AUROC of the
  predicted valence x intensity for happiness (+) against anger, sadness, fear, disgust (-) turns.
  AUROC, because answering "positive" always is right on most turns while a constant scores 0.5.
- ``annomi`` (state understanding): AUROC of the predicted mean(B, D, I) for change against
  sustain talk (AnnoMI gives a direction, never a score).
- ``esconv``: the pre-chat emotion type (accuracy) and intensity (MAE) read early in the chat,
  the final intensity (MAE) read at the last seeker turn, and known groups: the AUROC of the
  read change of valence x intensity for ESConv dialogues (all improved) against FailedESConv.
- ``persuasionforgood`` (state understanding): AUROC of the predicted intention for turns that
  commit to donating against turns that refuse, and of the intention at each dialogue's last
  persuadee turn for people who then donated (B6 > 0) against those who did not.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import zip_longest
from pathlib import Path
from typing import TypeVar

from cogwm.schema import CognitiveState
from cogwm.schema.lexicon import INTENSITIES, valence, valence_table
from cogwm.simulator.validate.card import Figure
from cogwm.simulator.validate.figures import (
    Scope,
    accuracy_figure,
    auroc_figure,
    macro_f1_figure,
    mae_figure,
)
from cogwm.simulator.validate.items import (
    DD_LEXICON_LABELS,
    Heldout,
    Item,
    Population,
    annomi_population,
    dailydialog_population,
    esconv_populations,
    p4g_populations,
)
from cogwm.simulator.validate.reader import Reading

#: The intensities a simulator may answer, as numbers (the MAE's random baseline).
INTENSITIES_F: tuple[float, ...] = tuple(float(i) for i in INTENSITIES)
#: Named item sets of a part (one per group of figures), each sampled on its own.
ItemSets = dict[str, list[Item]]
Scorer = Callable[[Scope, ItemSets, Mapping[str, Reading]], list[Figure]]


@dataclass(frozen=True)
class PartSpec:
    """One part of the card."""

    name: str
    corpus: str
    description: str
    populations: Callable[[Path, Heldout], dict[str, Population]]
    score: Scorer


T = TypeVar("T")


def sample_items(items: Sequence[T], limit: int | None, seed: int) -> list[T]:
    """Up to ``limit`` items drawn without replacement with ``seed``.

    A sample is kept in the order drawn, so with the same seed a smaller limit gives a prefix of a
    larger one (CPython's ``random.sample`` draws one item at a time): an interrupted card's
    finished calls make a smaller card from the model cache.
    """
    if limit is None or limit >= len(items):
        return list(items)
    return [items[i] for i in random.Random(seed).sample(range(len(items)), limit)]


def union(sets: ItemSets) -> list[Item]:
    """Every item of the sets once, taking one from each set in turn (so that the calls made
    first cover every set alike)."""
    seen: dict[str, Item] = {}
    for row in zip_longest(*sets.values()):
        for item in row:
            if item is not None:
                seen.setdefault(item.id, item)
    return list(seen.values())


def choose(populations: Mapping[str, Population], limit: int | None, seed: int) -> ItemSets:
    """Each item set sampled on its own (``limit`` items, seed offset by the set's position).

    Apart, because sets differ in size: DailyDialog's emotion items are a fifth of its valence
    items, and one sample of ``limit`` turns would leave the emotion figures with a handful.
    An item in two sets is read once.
    """
    return {
        name: sample_items(population.items, limit, seed + k)
        for k, (name, population) in enumerate(populations.items())
    }


def _dailydialog_sets(data_dir: Path, heldout: Heldout) -> dict[str, Population]:
    everything = dailydialog_population(data_dir)
    emotion = [item for item in everything.items if item.gold in DD_LEXICON_LABELS]
    selection = "turns labelled anger, sadness or fear; each speaker is the user in turn"
    return {
        "emotion": replace(everything, selection=selection, items=emotion),
        "valence": everything,
    }


def _groups(items: Sequence[Item]) -> list[str]:
    return [item.dialogue_id for item in items]


def _ids(items: Sequence[Item]) -> list[str]:
    return [item.id for item in items]


def valence_score(state: CognitiveState | None) -> float | None:
    """Valence x intensity of the state's emotion; None without a state or an emotion."""
    if state is None or state.emotion is None:
        return None
    return valence(state.emotion.label) * state.emotion.intensity


def _score_dailydialog(
    scope: Scope, sets: ItemSets, readings: Mapping[str, Reading]
) -> list[Figure]:
    emotion, valence_items = sets["emotion"], sets["valence"]
    predicted = [_label(readings[i.id].state) for i in emotion]
    labels = sorted(valence_table())
    return [
        accuracy_figure(
            scope,
            [i.gold for i in emotion],
            predicted,
            _groups(emotion),
            len(labels),
            ids=_ids(emotion),
        ),
        macro_f1_figure(scope, [i.gold for i in emotion], predicted, _groups(emotion), labels),
        auroc_figure(
            scope,
            "valence_auroc",
            [i.gold == "happiness" for i in valence_items],
            [valence_score(readings[i.id].state) for i in valence_items],
            _groups(valence_items),
            ids=_ids(valence_items),
            note="score: predicted valence x intensity; happiness positive",
        ),
    ]


def _label(state: CognitiveState | None) -> str | None:
    return state.emotion.label if state is not None and state.emotion is not None else None


# --- AnnoMI --------------------------------------------------------------------------------------


def mean_bdi(state: CognitiveState | None) -> float | None:
    """Mean over the non-empty B, D, I dimensions of each one's mean item score; None if none."""
    if state is None:
        return None
    means = []
    for items in (state.beliefs, state.desires, state.intentions):
        scores = [i.score for i in items if i.score is not None]
        if scores:
            means.append(sum(scores) / len(scores))
    return sum(means) / len(means) if means else None


def _annomi_sets(data_dir: Path, heldout: Heldout) -> dict[str, Population]:
    return {"direction": annomi_population(data_dir, heldout)}


def _score_annomi(scope: Scope, sets: ItemSets, readings: Mapping[str, Reading]) -> list[Figure]:
    items = sets["direction"]
    return [
        auroc_figure(
            scope,
            "change_auroc",
            [i.gold == "change" for i in items],
            [mean_bdi(readings[i.id].state) for i in items],
            _groups(items),
            ids=_ids(items),
            note="score: predicted mean(B, D, I); change positive; a state without scored "
            "items is unscored",
        )
    ]


# --- PersuasionForGood --------------------------------------------------------------------------


def intention_score(state: CognitiveState | None) -> float | None:
    """Mean score of the state's intention items; None without a state or a scored item."""
    if state is None:
        return None
    scores = [i.score for i in state.intentions if i.score is not None]
    return sum(scores) / len(scores) if scores else None


def _p4g_sets(data_dir: Path, heldout: Heldout) -> dict[str, Population]:
    commitment, final = p4g_populations(data_dir, heldout)
    return {"commitment": commitment, "final": final}


def _score_p4g(scope: Scope, sets: ItemSets, readings: Mapping[str, Reading]) -> list[Figure]:
    commitment, final = sets["commitment"], sets["final"]
    return [
        auroc_figure(
            scope,
            "commitment_auroc",
            [i.gold == "commits" for i in commitment],
            [intention_score(readings[i.id].state) for i in commitment],
            _groups(commitment),
            ids=_ids(commitment),
            note="score: predicted intention (mean item score); agree, provide-amount or "
            "confirm positive, disagree negative",
        ),
        auroc_figure(
            scope,
            "donation_auroc",
            [i.gold == "donated" for i in final],
            [intention_score(readings[i.id].state) for i in final],
            _groups(final),
            ids=_ids(final),
            note="score: predicted intention at the last persuadee turn; donated (B6 > 0) "
            "positive; people's stated intention predicts B6 at about 60 %",
        ),
    ]


# --- ESConv and FailedESConv -----------------------------------------------------------------


def _esconv_sets(data_dir: Path, heldout: Heldout) -> dict[str, Population]:
    start, end = esconv_populations(data_dir, heldout)
    return {"start": start, "end": end}


def _intensity(state: CognitiveState | None) -> float | None:
    return None if state is None or state.emotion is None else float(state.emotion.intensity)


def _score_esconv(scope: Scope, sets: ItemSets, readings: Mapping[str, Reading]) -> list[Figure]:
    start, end = sets["start"], sets["end"]
    labels = sorted(valence_table())
    with_final = [i for i in end if i.gold == "improved" and "final" in i.facts]
    deltas = [
        None if (v := valence_score(readings[i.id].state)) is None else v - i.facts["initial_e"]
        for i in end
    ]
    return [
        accuracy_figure(
            scope,
            [i.gold for i in start],
            [_label(readings[i.id].state) for i in start],
            _groups(start),
            len(labels),
            ids=_ids(start),
        ),
        mae_figure(
            scope,
            "initial_intensity_mae",
            [i.facts["initial"] for i in start],
            [_intensity(readings[i.id].state) for i in start],
            _groups(start),
            INTENSITIES_F,
        ),
        mae_figure(
            scope,
            "final_intensity_mae",
            [i.facts["final"] for i in with_final],
            [_intensity(readings[i.id].state) for i in with_final],
            _groups(with_final),
            INTENSITIES_F,
        ),
        auroc_figure(
            scope,
            "known_groups_auroc",
            [i.gold == "improved" for i in end],
            deltas,
            _groups(end),
            ids=_ids(end),
            note="score: predicted valence x intensity at the last seeker turn minus the "
            "self-reported one before the chat; ESConv (improved) positive, FailedESConv negative",
        ),
    ]


PARTS: dict[str, PartSpec] = {
    "dailydialog": PartSpec(
        name="dailydialog",
        corpus="dailydialog",
        description="emotion accuracy and macro-F1 (anger/sadness/fear), valence AUROC",
        populations=_dailydialog_sets,
        score=_score_dailydialog,
    ),
    "annomi": PartSpec(
        name="annomi",
        corpus="annomi",
        description="change vs sustain AUROC of mean(B, D, I)",
        populations=_annomi_sets,
        score=_score_annomi,
    ),
    "persuasionforgood": PartSpec(
        name="persuasionforgood",
        corpus="persuasionforgood",
        description="commitment vs refusal AUROC, final intention vs donation AUROC",
        populations=_p4g_sets,
        score=_score_p4g,
    ),
    "esconv": PartSpec(
        name="esconv",
        corpus="esconv",
        description="emotion type, initial and final intensity MAE, known groups vs FailedESConv",
        populations=_esconv_sets,
        score=_score_esconv,
    ),
}

#: Parts of the full card not measured by this version, with the reason (stated on every card
#: that asks for them, never silently dropped).
NOT_YET: dict[str, str] = {}
#: The part that measures the model as the arena's judge rather than as the simulator.
JUDGES = "judges"
