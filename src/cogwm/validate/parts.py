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

Every state figure is a :class:`~cogwm.validate.baselines.StateRule`: how its items'
gold, the simulator's answer and the value the prompt shows are read. The card gives each on all
items, on change items and on items that show no previous value, with the trivial rules (carry
the shown state forward, a sentiment lexicon, a text classifier, their combination) beside it;
the rules are fitted on each corpus's train split and ranked on its validation split.
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
from cogwm.schema.partial import LabelledDialogue
from cogwm.simulator.clean import clean_heldout, corpus_train_lines
from cogwm.simulator.samples import task_for_corpus
from cogwm.simulator.splits import plan_splits
from cogwm.validate.baselines import Answer, StateRule, rule_figure
from cogwm.validate.card import Figure
from cogwm.validate.figures import Scope
from cogwm.validate.inputs import Reading
from cogwm.validate.items import (
    DD_LEXICON_LABELS,
    DD_VALENCE,
    Heldout,
    Item,
    Population,
    _annomi_gold,
    _dailydialog_gold,
    _esconv_end,
    _esconv_start,
    _items,
    _last_turn,
    _p4g_commitment_gold,
    annomi_population,
    dailydialog_population,
    esconv_populations,
    p4g_populations,
)

#: The intensities a simulator may answer, as numbers (the MAE's random baseline).
INTENSITIES_F: tuple[float, ...] = tuple(float(i) for i in INTENSITIES)
#: Named item sets of a part (one per group of figures), each sampled on its own.
ItemSets = dict[str, list[Item]]
Scorer = Callable[[Scope, ItemSets, Mapping[str, Reading]], list[Figure]]
#: The train and validation item sets of a part (``{"train": sets, "val": sets}``), which the
#: trivial rules are fitted and ranked on.
FitSets = Callable[[Path, Heldout], dict[str, ItemSets]]


@dataclass(frozen=True)
class PartSpec:
    """One part of the card.

    ``rules`` are its state figures (the trivial rules and change items apply to them);
    ``fit_sets`` reads its train and validation items; ``official_split`` says whether all its
    held-out items come from an official test split (else ``--heldout all`` makes them overlap
    the dialogues the trivial rules are fitted on).
    """

    name: str
    corpus: str
    description: str
    populations: Callable[[Path, Heldout], dict[str, Population]]
    score: Scorer
    rules: tuple[StateRule, ...] = ()
    fit_sets: FitSets | None = None
    official_split: bool = False


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


def _scorer(rules: Sequence[StateRule]) -> Scorer:
    """The simulator's figures of ``rules`` on all their items (no subsets, no trivial rules)."""

    def score(scope: Scope, sets: ItemSets, readings: Mapping[str, Reading]) -> list[Figure]:
        return [rule_figure(rule, scope, rule.items(sets), readings) for rule in rules]

    return score


def split_dialogues(corpus: str, data_dir: Path, seed: int) -> dict[str, list[LabelledDialogue]]:
    """The corpus's labelled dialogues of the train and validation splits, by the samples'
    split rule (official splits where the corpus has them, else seeded with ``seed``; text twins
    of a higher split dropped). Validation keeps only its clean dialogues, by the rule the test
    items follow (:mod:`cogwm.simulator.clean`: none of their long user lines in the corpus's
    full train split), so the best rule is not chosen on lines it recalls from train."""
    from cogwm.annotate.human import labelled_dialogues

    labelled = list(labelled_dialogues(corpus, data_dir))
    plan = plan_splits(corpus, [ld.dialogue for ld in labelled], seed)
    out: dict[str, list[LabelledDialogue]] = {"train": [], "val": []}
    for ld in labelled:
        split = plan.split_of(ld.dialogue.id)
        if split in out:
            out[split].append(ld)
    out["val"] = clean_heldout(
        out["val"], corpus_train_lines(corpus, data_dir, seed), lambda ld: ld.dialogue
    ).kept
    return out


# --- reading states --------------------------------------------------------------------------


def shown_state(item: Item) -> CognitiveState | None:
    """The state the item's prompt shows: the previous one, else the initial one."""
    return item.inp.previous_state or item.inp.initial_state


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def _label(state: CognitiveState | None) -> str | None:
    return state.emotion.label if state is not None and state.emotion is not None else None


def _answer_labels() -> list[str]:
    return sorted(valence_table())


def _middle(corpus: str) -> float:
    """The middle of the score range of the corpus's task: the B/D/I score that says neither
    way (the carry-forward value of an item that shows none)."""
    low, high = task_for_corpus(corpus).score_range
    return (low + high) / 2


def _direction_changed(middle: float, positive: str) -> Callable[[Item, Answer], bool]:
    """Change: the shown score's side of the middle differs from the gold's direction."""

    def changed(item: Item, shown: Answer) -> bool:
        return _sign(float(shown) - middle) != (1 if item.gold == positive else -1)

    return changed


def _positive(name: str) -> Callable[[Item], Answer]:
    def gold(item: Item) -> Answer:
        return 1.0 if item.gold == name else 0.0

    return gold


def _gold_label(item: Item) -> Answer:
    return item.gold


def _label_answer(_: Item, state: CognitiveState | None) -> Answer | None:
    return _label(state)


def _shown_label(item: Item) -> Answer | None:
    return _label(shown_state(item))


def _label_changed(item: Item, shown: Answer) -> bool:
    return shown != item.gold


# --- DailyDialog ---------------------------------------------------------------------------------


def _dailydialog_sets(data_dir: Path, heldout: Heldout) -> dict[str, Population]:
    everything = dailydialog_population(data_dir)
    emotion = [item for item in everything.items if item.gold in DD_LEXICON_LABELS]
    selection = "turns labelled anger, sadness or fear; each speaker is the user in turn"
    return {
        "emotion": replace(everything, selection=selection, items=emotion),
        "valence": everything,
    }


def _dailydialog_item_sets(items: list[Item]) -> ItemSets:
    return {"emotion": [i for i in items if i.gold in DD_LEXICON_LABELS], "valence": items}


def _dailydialog_fit(data_dir: Path, heldout: Heldout) -> dict[str, ItemSets]:
    return {
        split: _dailydialog_item_sets([i for r in lds for i in _items(r, _dailydialog_gold)])
        for split, lds in split_dialogues("dailydialog", data_dir, heldout.seed).items()
    }


def valence_score(state: CognitiveState | None) -> float | None:
    """Valence x intensity of the state's emotion; None without a state or an emotion."""
    if state is None or state.emotion is None:
        return None
    return valence(state.emotion.label) * state.emotion.intensity


def _valence_answer(_: Item, state: CognitiveState | None) -> Answer | None:
    return valence_score(state)


def _shown_valence(item: Item) -> Answer | None:
    return valence_score(shown_state(item))


def _valence_sign_changed(item: Item, shown: Answer) -> bool:
    # Neutral and surprise (valence 0) differ from both gold signs.
    return _sign(float(shown)) != DD_VALENCE[item.gold]


DAILYDIALOG_RULES: tuple[StateRule, ...] = (
    StateRule(
        metric="emotion_accuracy",
        kind="accuracy",
        item_set="emotion",
        gold=_gold_label,
        answer=_label_answer,
        shown=_shown_label,
        changed=_label_changed,
        answer_space=_answer_labels,
    ),
    StateRule(
        metric="emotion_macro_f1",
        kind="macro_f1",
        item_set="emotion",
        gold=_gold_label,
        answer=_label_answer,
        shown=_shown_label,
        changed=_label_changed,
        answer_space=_answer_labels,
    ),
    StateRule(
        metric="valence_auroc",
        kind="auroc",
        item_set="valence",
        gold=_positive("happiness"),
        answer=_valence_answer,
        shown=_shown_valence,
        changed=_valence_sign_changed,
        note="score: predicted valence x intensity; happiness positive",
    ),
)
_score_dailydialog = _scorer(DAILYDIALOG_RULES)


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


def _annomi_fit(data_dir: Path, heldout: Heldout) -> dict[str, ItemSets]:
    return {
        split: {"direction": [i for ld in lds for i in _items(ld, _annomi_gold)]}
        for split, lds in split_dialogues("annomi", data_dir, heldout.seed).items()
    }


def _bdi_answer(_: Item, state: CognitiveState | None) -> Answer | None:
    return mean_bdi(state)


def _shown_bdi(item: Item) -> Answer | None:
    return mean_bdi(shown_state(item))


ANNOMI_RULES: tuple[StateRule, ...] = (
    StateRule(
        metric="change_auroc",
        kind="auroc",
        item_set="direction",
        gold=_positive("change"),
        answer=_bdi_answer,
        shown=_shown_bdi,
        changed=_direction_changed(_middle("annomi"), "change"),
        neutral=_middle("annomi"),
        note="score: predicted mean(B, D, I); change positive; a state without scored items "
        "is unscored",
    ),
)
_score_annomi = _scorer(ANNOMI_RULES)


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


def _p4g_fit(data_dir: Path, heldout: Heldout) -> dict[str, ItemSets]:
    return {
        split: {
            "commitment": [i for ld in lds for i in _items(ld, _p4g_commitment_gold)],
            "final": [i for ld in lds for i in _last_turn(ld)],
        }
        for split, lds in split_dialogues("persuasionforgood", data_dir, heldout.seed).items()
    }


def _intention_answer(_: Item, state: CognitiveState | None) -> Answer | None:
    return intention_score(state)


def _shown_intention(item: Item) -> Answer | None:
    return intention_score(shown_state(item))


P4G_RULES: tuple[StateRule, ...] = (
    StateRule(
        metric="commitment_auroc",
        kind="auroc",
        item_set="commitment",
        gold=_positive("commits"),
        answer=_intention_answer,
        shown=_shown_intention,
        changed=_direction_changed(_middle("persuasionforgood"), "commits"),
        neutral=_middle("persuasionforgood"),
        note="score: predicted intention (mean item score); agree, provide-amount or "
        "confirm positive, disagree negative",
    ),
    StateRule(
        metric="donation_auroc",
        kind="auroc",
        item_set="final",
        gold=_positive("donated"),
        answer=_intention_answer,
        shown=_shown_intention,
        changed=_direction_changed(_middle("persuasionforgood"), "donated"),
        neutral=_middle("persuasionforgood"),
        note="score: predicted intention at the last persuadee turn; donated (B6 > 0) "
        "positive; people's stated intention predicts B6 at about 60 %",
    ),
)
_score_p4g = _scorer(P4G_RULES)


# --- ESConv and FailedESConv -----------------------------------------------------------------


def _esconv_sets(data_dir: Path, heldout: Heldout) -> dict[str, Population]:
    start, end = esconv_populations(data_dir, heldout)
    return {"start": start, "end": end}


def _esconv_fit(data_dir: Path, heldout: Heldout) -> dict[str, ItemSets]:
    esconv = split_dialogues("esconv", data_dir, heldout.seed)
    failed = split_dialogues("failed_esconv", data_dir, heldout.seed)
    return {
        split: {
            "start": [i for ld in esconv[split] for i in _esconv_start(ld)],
            "end": [i for ld in esconv[split] for i in _esconv_end(ld, "improved")]
            + [i for ld in failed[split] for i in _esconv_end(ld, "failed")],
        }
        for split in esconv
    }


def _intensity(state: CognitiveState | None) -> float | None:
    return None if state is None or state.emotion is None else float(state.emotion.intensity)


def _intensity_answer(_: Item, state: CognitiveState | None) -> Answer | None:
    return _intensity(state)


def _shown_intensity(item: Item) -> Answer | None:
    return _intensity(shown_state(item))


def _initial(item: Item) -> Answer:
    return item.facts["initial"]


def _final(item: Item) -> Answer:
    return item.facts["final"]


def _initial_changed(item: Item, shown: Answer) -> bool:
    return float(shown) != item.facts["initial"]


def _final_changed(item: Item, shown: Answer) -> bool:
    return float(shown) != item.facts["final"]


def _has_final(item: Item) -> bool:
    return item.gold == "improved" and "final" in item.facts


def _delta_answer(item: Item, state: CognitiveState | None) -> Answer | None:
    value = valence_score(state)
    return None if value is None else value - item.facts["initial_e"]


def _shown_delta(item: Item) -> Answer | None:
    value = valence_score(shown_state(item))
    return None if value is None else value - item.facts["initial_e"]


def _delta_changed(item: Item, shown: Answer) -> bool:
    # Copying says "improved" exactly when the shown state is better than the pre-chat one.
    return (float(shown) > 0) != (item.gold == "improved")


ESCONV_RULES: tuple[StateRule, ...] = (
    StateRule(
        metric="emotion_accuracy",
        kind="accuracy",
        item_set="start",
        gold=_gold_label,
        answer=_label_answer,
        shown=_shown_label,
        changed=_label_changed,
        answer_space=_answer_labels,
    ),
    StateRule(
        metric="initial_intensity_mae",
        kind="mae",
        item_set="start",
        gold=_initial,
        answer=_intensity_answer,
        shown=_shown_intensity,
        changed=_initial_changed,
        answer_space=lambda: INTENSITIES_F,
    ),
    StateRule(
        metric="final_intensity_mae",
        kind="mae",
        item_set="end",
        gold=_final,
        answer=_intensity_answer,
        shown=_shown_intensity,
        changed=_final_changed,
        answer_space=lambda: INTENSITIES_F,
        keep=_has_final,
    ),
    StateRule(
        metric="known_groups_auroc",
        kind="auroc",
        item_set="end",
        gold=_positive("improved"),
        answer=_delta_answer,
        shown=_shown_delta,
        changed=_delta_changed,
        note="score: predicted valence x intensity at the last seeker turn minus the "
        "self-reported one before the chat; ESConv (improved) positive, FailedESConv without "
        "improvement negative",
    ),
)
_score_esconv = _scorer(ESCONV_RULES)


PARTS: dict[str, PartSpec] = {
    "dailydialog": PartSpec(
        name="dailydialog",
        corpus="dailydialog",
        description="emotion accuracy and macro-F1 (anger/sadness/fear), valence AUROC",
        populations=_dailydialog_sets,
        score=_score_dailydialog,
        rules=DAILYDIALOG_RULES,
        fit_sets=_dailydialog_fit,
        official_split=True,
    ),
    "annomi": PartSpec(
        name="annomi",
        corpus="annomi",
        description="change vs sustain AUROC of mean(B, D, I)",
        populations=_annomi_sets,
        score=_score_annomi,
        rules=ANNOMI_RULES,
        fit_sets=_annomi_fit,
    ),
    "persuasionforgood": PartSpec(
        name="persuasionforgood",
        corpus="persuasionforgood",
        description="commitment vs refusal AUROC, final intention vs donation AUROC",
        populations=_p4g_sets,
        score=_score_p4g,
        rules=P4G_RULES,
        fit_sets=_p4g_fit,
    ),
    "esconv": PartSpec(
        name="esconv",
        corpus="esconv",
        description="emotion type, initial and final intensity MAE, known groups vs FailedESConv",
        populations=_esconv_sets,
        score=_score_esconv,
        rules=ESCONV_RULES,
        fit_sets=_esconv_fit,
    ),
}

#: Parts of the full card not measured by this version, with the reason (stated on every card
#: that asks for them, never silently dropped).
NOT_YET: dict[str, str] = {}
#: The part that measures the model as the arena's judge rather than as the simulator.
JUDGES = "judges"
