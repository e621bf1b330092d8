"""The clean rule, corpus cold starts and the known-groups hold-outs (AnnoMI's quality,
FailedESConv's survey) on the real corpora.

Skipped when the corpora are not present (see the ``real_data_dir`` fixture).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cogwm import tasks
from cogwm.annotate.human import labelled_dialogues
from cogwm.arena.scenarios import ScenarioSource, corpus_scenarios, select_scenarios
from cogwm.schema import Dialogue, Role
from cogwm.simulator.clean import corpus_dialogues
from cogwm.simulator.splits import (
    annomi_quality_holdout,
    base_id,
    failed_esconv_holdout,
    plan_splits,
    survey_outcome,
)
from cogwm.validate.groups import esconv_groups
from cogwm.validate.items import (
    Heldout,
    annomi_population,
    clean_test,
    dailydialog_population,
    esconv_populations,
)

#: Held-out dialogues the rule removes from each official test split (measured, seed 0).
UNCLEAN_TEST = {"dailydialog": 304, "esconv": 0}
TEST_DIALOGUES = {"dailydialog": 1000, "esconv": 195}


def _words(text: str) -> str:
    """An independent normalisation: lower case, letters and digits only."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def _train_utterances(dialogues: list[Dialogue]) -> set[str]:
    return {_words(u.text) for d in dialogues if d.split == "train" for u in d.utterances}


@pytest.mark.parametrize("corpus", ["dailydialog", "esconv"])
def test_no_clean_test_user_utterance_of_eight_words_is_in_train(
    real_data_dir: Path, corpus: str
) -> None:
    train = _train_utterances(corpus_dialogues(corpus, real_data_dir))
    test = list(labelled_dialogues(corpus, real_data_dir, split="test"))
    kept, unclean = clean_test(corpus, test, real_data_dir, seed=0)
    assert unclean == UNCLEAN_TEST[corpus]
    kept_ids = {base_id(ld.dialogue.id) for ld in kept}
    assert len(kept_ids) == TEST_DIALOGUES[corpus] - UNCLEAN_TEST[corpus]
    every_speaker = corpus == "dailydialog"
    shared = [
        u.text
        for ld in kept
        for u in ld.dialogue.utterances
        if (every_speaker or u.role is Role.USER)
        and len(_words(u.text).split()) >= 8
        and _words(u.text) in train
    ]
    assert shared == []
    # The rule is what removed them: the unclean ones do share such utterances.
    removed = [ld for ld in test if ld not in kept]
    assert all(any(_words(u.text) in train for u in ld.dialogue.utterances) for ld in removed)


def test_the_card_states_how_many_dialogues_the_rule_left_out(real_data_dir: Path) -> None:
    dailydialog = dailydialog_population(real_data_dir)
    assert dailydialog.n_unclean == 304
    assert "clean: 696 of 1000 dialogues (304 left out" in dailydialog.split
    start, end = esconv_populations(real_data_dir, Heldout())
    assert start.n_unclean == 0 and "clean: 195 of 195" in start.split
    assert end.n_unclean == 0 and "FailedESConv" in end.split


def test_annomi_quality_holdout_is_in_the_cards_test_split(real_data_dir: Path) -> None:
    sessions = corpus_dialogues("annomi", real_data_dir)
    held = annomi_quality_holdout(sessions, seed=0)
    quality = {d.id: d.meta.mi_quality for d in sessions if d.meta is not None}  # type: ignore[union-attr]
    assert len(held) == 24
    assert sum(quality[b] == "low" for b in held) == 12  # half of 23, rounded up
    plan = plan_splits("annomi", sessions, seed=0)
    assert all(plan.split_of(b) == "test" for b in held)
    population = annomi_population(real_data_dir, Heldout())
    assert set(held) & {item.dialogue_id for item in population.items}
    assert population.n_unclean == 0


def test_failed_esconv_holdout_gives_the_known_groups_check_its_unimproved_dialogues(
    real_data_dir: Path,
) -> None:
    # Catches: FailedESConv split 80/10/10 alone, which left 7 unimproved dialogues as items.
    dialogues = corpus_dialogues("failed_esconv", real_data_dir)
    held = failed_esconv_holdout(dialogues, seed=0)
    outcome = {d.id: survey_outcome(d) for d in dialogues}
    assert len(dialogues) == 196 and len(held) == 99  # half of 31 + 111 + 54, each rounded up
    assert sum(outcome[b] == "not improved" for b in held) == 56  # half of 111, rounded up
    plan = plan_splits("failed_esconv", dialogues, seed=0)
    assert plan.held_out == held and all(plan.split_of(b) == "test" for b in held)
    groups = esconv_groups(real_data_dir, Heldout())
    unimproved = [d for d in groups.dialogues if not d.positive]
    assert len(unimproved) == 58 >= 50  # the hold-out's 56 and the seeded test split's, 2+ turns
    assert len({d.id for d in unimproved} & set(held)) == 55  # one has a single user turn
    assert "106 of 196 dialogues" in groups.split


@pytest.mark.parametrize("task", ["ESC", "PD"])
def test_default_corpus_cold_starts_never_come_from_train(real_data_dir: Path, task: str) -> None:
    spec = tasks.get(task)
    dialogues = corpus_dialogues(spec.corpus, real_data_dir)
    plan = plan_splits(spec.corpus, dialogues, seed=0)
    pool = corpus_scenarios(spec, real_data_dir, "test")
    assert pool and all(plan.split_of(s.id) == "test" for s in pool)
    chosen = select_scenarios(spec, 20, ScenarioSource.CORPUS, data_dir=real_data_dir, seed=3)
    assert {s.id for s in chosen} <= {s.id for s in pool}
    if task == "ESC":  # official split: the id names it
        assert all(s.id.startswith("esconv:test:") for s in chosen)
    everything = corpus_scenarios(spec, real_data_dir, "all")
    assert any(plan.split_of(s.id) == "train" for s in everything)
