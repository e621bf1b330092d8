"""The card's held-out items follow the simulator's own training split: the samples manifest's
seed and which known-groups hold-outs its split rule forced into test (none before they existed),
read from --samples-manifest, the --train-samples folder or a shipped world model's manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogwm.annotate.human import labelled_dialogues
from cogwm.annotate.io import write_labelled
from cogwm.cli.validate import _heldout, _manifest_of
from cogwm.errors import InputError
from cogwm.simulator.build import Source, build_samples
from cogwm.simulator.splits import (
    ANNOMI,
    FAILED_ESCONV,
    HOLDOUT_CORPORA,
    SPLIT_RULE,
    SPLIT_RULE_VERSION,
    base_id,
    forced_holdouts,
    plan_splits,
)
from cogwm.validate.items import (
    Heldout,
    annomi_population,
    held_out,
    heldout_from_manifest,
)
from helpers_validate import LOW_QUALITY, write_corpora

#: The split rule text of samples built before the hold-outs existed (smollm2-wm's).
FIRST_RULE = (
    "by dialogue; official splits where the corpus has a train split (DailyDialog, ESConv), "
    "official test kept where it has no train split (INSPIRED: the rest 8:1 train/val, seeded), "
    "else seeded 80/10/10 by sha256(seed:corpus:base dialogue id); dialogues whose normalised "
    "text (lower case, letters and digits only) occurs in a higher split (test > val > train) "
    "are dropped from the lower one"
)
#: A split seed under which the fixtures' AnnoMI session 1 is train by the first rule and test
#: (the quality hold-out) by the current one.
SEED = 2
SHIPPED = (
    Path(__file__).resolve().parent.parent
    / "src/cogwm/data/world_models/smollm2-wm/samples_manifest.json"
)


def _manifest(path: Path, **fields: object) -> Path:
    path.write_text(json.dumps({"seed": SEED, **fields}), encoding="utf-8")
    return path


def test_which_hold_outs_a_manifest_forced() -> None:
    # Catches: an old manifest read as the current rule (its hold-out sessions were trained on).
    assert forced_holdouts({"split_rule": FIRST_RULE}) == frozenset()
    annomi_only = FIRST_RULE + "; AnnoMI's quality hold-out (half of ...) is test"
    assert forced_holdouts({"split_rule": annomi_only}) == {ANNOMI}
    assert forced_holdouts({"split_rule": SPLIT_RULE}) == {ANNOMI, FAILED_ESCONV}
    assert forced_holdouts({"split_rule_version": SPLIT_RULE_VERSION}) == HOLDOUT_CORPORA
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert forced_holdouts(shipped) == frozenset()


def test_a_session_the_old_split_trained_on_is_an_item_only_under_the_current_rule(
    tmp_path: Path,
) -> None:
    # Catches: the card ignoring the manifest and scoring sessions the simulator trained on.
    root = write_corpora(tmp_path / "data", LOW_QUALITY)
    sessions = [ld.dialogue for ld in labelled_dialogues("annomi", root)]
    assert plan_splits("annomi", sessions, SEED, held_out=[]).split_of("annomi:1") == "train"
    old = heldout_from_manifest(_manifest(tmp_path / "old.json", split_rule=FIRST_RULE))
    new = heldout_from_manifest(
        _manifest(tmp_path / "new.json", split_rule=SPLIT_RULE, split_rule_version=2)
    )
    assert new.forced == HOLDOUT_CORPORA and old.forced == frozenset()
    old_items = {i.dialogue_id for i in annomi_population(root, old).items}
    assert "annomi:1" not in old_items
    for current in (new, Heldout("test", SEED)):
        assert "annomi:1" in {i.dialogue_id for i in annomi_population(root, current).items}
    words = annomi_population(root, old).split
    assert "hold-outs forced into test: none" in words and "old.json" in words
    assert "0 of 3 dialogues" in words  # the first rule's test split holds no session here
    assert "old.json" in old.describe()


def test_the_manifest_is_found_and_a_different_split_seed_is_refused(tmp_path: Path) -> None:
    # Catches: the shipped world model's card falling back to the current rule, or a manifest
    # in the --train-samples folder or a contradicting --split-seed being ignored.
    assert _manifest_of("llamacpp:smollm2-wm", None, None) == SHIPPED
    assert _manifest_of("llamacpp:smollm2", None, None) is None
    samples = tmp_path / "samples"
    samples.mkdir()
    built = _manifest(samples / "manifest.json", split_rule_version=SPLIT_RULE_VERSION)
    assert _manifest_of("llamacpp:smollm2-wm", None, samples) == built
    given = _manifest(tmp_path / "given.json", split_rule=FIRST_RULE)
    assert _manifest_of("llamacpp:smollm2-wm", given, samples) == given
    with pytest.raises(InputError, match="--samples-manifest"):
        _manifest_of("fake:x", tmp_path / "missing.json", None)
    assert _heldout("test", None, given).seed == SEED
    assert _heldout("test", SEED, given).forced == frozenset()
    with pytest.raises(InputError, match="--split-seed 5 differs"):
        _heldout("test", 5, given)
    assert _heldout("test", None, None) == Heldout("test", 0)
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="no integer 'seed'"):
        heldout_from_manifest(tmp_path / "bad.json")


def test_the_smollm2_wm_card_has_no_annomi_item_its_split_trained_on(real_data_dir: Path) -> None:
    # Catches: the shipped world model scored on AnnoMI sessions of its own train split (22 of
    # the 24 quality hold-out sessions were in it).
    heldout = heldout_from_manifest(SHIPPED)
    sessions = [ld.dialogue for ld in labelled_dialogues("annomi", real_data_dir)]
    old = plan_splits("annomi", sessions, heldout.seed, held_out=[])
    items = {i.dialogue_id for i in annomi_population(real_data_dir, heldout).items}
    assert items and all(old.split_of(b) == "test" for b in items)
    current = {i.dialogue_id for i in annomi_population(real_data_dir, Heldout()).items}
    assert any(old.split_of(base_id(b)) == "train" for b in current)


def test_samples_build_writes_the_split_rule_version(tmp_path: Path) -> None:
    # Catches: new samples whose manifest cannot say that their hold-outs were kept from train.
    root = write_corpora(tmp_path / "data", LOW_QUALITY)
    path = tmp_path / "ann.jsonl"
    write_labelled(path, list(labelled_dialogues("annomi", root)))
    manifest = build_samples(
        tmp_path / "out", [Source("annotations", str(path))], count_tokens=lambda _: {"measured": 0}
    )
    assert manifest["split_rule_version"] == SPLIT_RULE_VERSION
    written = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert heldout_from_manifest(tmp_path / "out" / "manifest.json").forced == HOLDOUT_CORPORA
    assert written["split_rule_version"] == SPLIT_RULE_VERSION


def test_a_corpus_outside_the_simulators_samples_is_held_out_whole(tmp_path: Path) -> None:
    # Catches: the card scoring only the seeded test split of a corpus the simulator never saw
    # (smollm2-wm's samples hold no FailedESConv, so its known-groups check may use all of it).
    shipped = heldout_from_manifest(SHIPPED)
    assert shipped.never_trained_on(FAILED_ESCONV)
    assert not shipped.never_trained_on(ANNOMI)
    assert not Heldout().never_trained_on(FAILED_ESCONV)  # no manifest: every corpus counts
    root = write_corpora(tmp_path / "data", LOW_QUALITY)
    sessions = list(labelled_dialogues("annomi", root))
    elsewhere = heldout_from_manifest(
        _manifest(tmp_path / "m.json", split_rule=FIRST_RULE, corpora={"esconv": 1})
    )
    kept, words = held_out("annomi", sessions, elsewhere)
    assert kept == sessions and "samples hold none of annomi" in words
    trained = heldout_from_manifest(
        _manifest(tmp_path / "t.json", split_rule=FIRST_RULE, corpora={"annomi": 3})
    )
    assert len(held_out("annomi", sessions, trained)[0]) < len(sessions)


def test_the_smollm2_wm_known_groups_hold_no_annomi_session_it_trained_on(
    real_data_dir: Path,
) -> None:
    # Catches: the MI known-groups check taking the quality hold-out whole, 22 of whose 24
    # sessions were in the shipped model's train split.
    from cogwm.validate.groups import annomi_groups

    heldout = heldout_from_manifest(SHIPPED)
    sessions = [ld.dialogue for ld in labelled_dialogues("annomi", real_data_dir)]
    old = plan_splits("annomi", sessions, heldout.seed, held_out=[])
    shipped = annomi_groups(real_data_dir, heldout).dialogues
    assert all(old.split_of(base_id(d.id)) == "test" for d in shipped)
    assert len(annomi_groups(real_data_dir, Heldout()).dialogues) > len(shipped)


def test_a_shipped_manifest_is_named_without_the_machines_folders(tmp_path: Path) -> None:
    # Catches: a card of the shipped world model naming the folder cogwm is installed in.
    shipped = heldout_from_manifest(SHIPPED)
    assert "cogwm/data/world_models/smollm2-wm/samples_manifest.json" in shipped.source
    assert str(SHIPPED.parent) not in shipped.source
    elsewhere = _manifest(tmp_path / "m.json", split_rule=FIRST_RULE)
    assert str(elsewhere) in heldout_from_manifest(elsewhere).source
