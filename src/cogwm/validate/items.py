"""The items of each card part: held-out user turns with their human label.

An item is one user turn: the simulator's input exactly as the training samples build it
(:func:`cogwm.simulator.samples.turn_inputs`: the task's context, the profile, the first and
the latest human-known state before the turn, the last turns of the conversation) and the real
utterance, with the gold answer. The human labels come from
:func:`cogwm.annotate.human.labelled_dialogues`:

Every part scores *clean* held-out dialogues only (:mod:`cogwm.simulator.clean`): a test
dialogue with a user line of 8+ words that also occurs in the corpus's train split (or whose
whole text does) is left out, and the card's split text and ``n_unclean`` say how many were.

- **DailyDialog**, the official test split, each speaker as the user in turn; items are the
  turns labelled happiness, anger, sadness, fear or disgust (surprise has no valence sign; "no
  emotion" says nothing about valence).
- **AnnoMI** (no official split: see :class:`Heldout`), client turns labelled change or sustain
  (annotator ties left out by the mapping).
- **ESConv**, the official test split, and FailedESConv (see :class:`Heldout`): the seeker's
  state early in the chat (third seeker turn, no state shown, gold: the pre-chat emotion type and
  intensity) and at the last seeker turn (gold: the final intensity; improved for ESConv, failed
  for FailedESConv dialogues whose survey shows no improvement, :func:`unimproved`).
- **PersuasionForGood**, the 300 act-annotated dialogues (see :class:`Heldout`): persuadee turns
  that commit (agree, provide an amount, confirm) or refuse (disagree), and each dialogue's last
  persuadee turn with the actual donation (B6 > 0).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from cogwm.errors import InputError
from cogwm.schema import Dialogue
from cogwm.schema.labels import P4GMeta
from cogwm.schema.lexicon import valence
from cogwm.schema.partial import LabelledDialogue, PartialState
from cogwm.simulator.clean import clean_heldout, corpus_train_lines
from cogwm.simulator.format import WorldModelInput
from cogwm.simulator.samples import TurnInput, shown_text, turn_inputs
from cogwm.simulator.splits import (
    HOLDOUT_CORPORA,
    SplitPlan,
    base_id,
    forced_holdouts,
    survey_outcome,
    training_plan,
)

#: DailyDialog labels with a valence sign: +1 happiness, -1 the rest.
DD_VALENCE: dict[str, int] = {"happiness": 1, "anger": -1, "sadness": -1, "fear": -1, "disgust": -1}
#: DailyDialog labels that are labels of the paper's lexicon too (exact mapping, LABELS.md §2).
DD_LEXICON_LABELS: tuple[str, ...] = ("anger", "fear", "sadness")


@dataclass(frozen=True)
class Item:
    """One held-out user turn: the simulator's input before it, the real turn, the gold answer.

    ``inp`` is the prediction-mode input (history up to the agent's turn before this one).
    ``dialogue_id`` is the base dialogue (both DailyDialog readings share it), the unit that
    the bootstrap resamples. ``facts`` holds numbers a figure needs beside the gold label (e.g.
    ESConv's self-reported intensities).
    """

    id: str
    dialogue_id: str
    turn_index: int
    inp: WorldModelInput
    utterance: str
    gold: str
    facts: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Population:
    """All items of a part before ``--limit`` samples them, and how they were chosen."""

    corpus: str
    split: str
    selection: str
    items: list[Item]
    n_unclean: int | None = None
    """Held-out dialogues the clean rule left out (None: the rule did not apply)."""


# --- held-out dialogues of corpora without an official split --------------------------------------


@dataclass(frozen=True)
class Heldout:
    """Which dialogues of a corpus without an official split are items.

    ``test``: the test split of the simulator's own samples, the only fair choice for a trained
    simulator: seeded with ``seed`` (as given to ``cogwm samples build``), with the known-groups
    hold-out of each corpus in ``forced`` moved to test (samples built before the hold-outs
    existed forced none: :func:`heldout_from_manifest` reads which from their manifest).
    ``all``: every dialogue, for simulators that were trained on none of them (zero-shot
    models), with narrower intervals. ``source`` says where the split rule came from.
    ``trained_on``: the corpora the simulator's samples were built from (its manifest says); a
    corpus outside them is held out whole under either rule. None: every corpus counts as
    trained on.
    """

    rule: str = "test"
    seed: int = 0
    forced: frozenset[str] = HOLDOUT_CORPORA
    source: str = "the current split rule"
    trained_on: frozenset[str] | None = None

    def never_trained_on(self, corpus: str) -> bool:
        """Whether the simulator's samples held none of ``corpus``."""
        return self.trained_on is not None and corpus not in self.trained_on

    def plan(self, corpus: str, dialogues: Iterable[Dialogue]) -> SplitPlan:
        """The corpus's split as the simulator's samples were split."""
        return training_plan(corpus, dialogues, self.seed, self.forced)

    def split_words(self) -> str:
        """The training split in words: seed, forced hold-outs, and where they came from."""
        forced = ", ".join(sorted(self.forced)) or "none"
        return f"split seed {self.seed}, hold-outs forced into test: {forced}; {self.source}"

    def describe(self) -> str:
        """The card's words for the rule."""
        return f"{self.rule} ({self.split_words()})"


HELDOUT_RULES = ("test", "all")


def heldout_from_manifest(path: Path, rule: str = "test") -> Heldout:
    """The held-out rule of a simulator trained on the samples of a manifest (its split seed,
    and which hold-outs its split rule forced into test).

    Raises:
        InputError: The file is missing, does not read as JSON, or has no integer seed.
    """
    import json

    try:
        manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"samples manifest {path}: cannot read it ({exc})") from None
    seed = manifest.get("seed") if isinstance(manifest, dict) else None
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise InputError(f"samples manifest {path}: no integer 'seed'")
    forced = forced_holdouts(manifest)
    version = manifest.get("split_rule_version", "none written")
    corpora = manifest.get("corpora")
    return Heldout(
        rule,
        seed,
        forced,
        f"the simulator's samples manifest {shown_path(path)} (split rule {version})",
        trained_on=frozenset(corpora) if isinstance(corpora, dict) else None,
    )


def shown_path(path: Path) -> str:
    """``path`` as a card states it: a file of the cogwm package (a shipped world model's
    manifest) relative to the package, so that a shipped card names no folder of the machine
    that made it; any other path as given."""
    import cogwm

    package = Path(cogwm.__file__).resolve().parent
    try:
        return f"cogwm/{Path(path).resolve().relative_to(package).as_posix()}"
    except ValueError:
        return str(path)


def held_out(
    corpus: str, labelled: list[LabelledDialogue], heldout: Heldout
) -> tuple[list[LabelledDialogue], str]:
    """The labelled dialogues the rule keeps, and the card's words for them.

    Raises:
        InputError: An unknown rule.
    """
    if heldout.rule not in HELDOUT_RULES:
        raise InputError(f"unknown held-out rule {heldout.rule!r}; choose test or all")
    if heldout.rule == "all":
        return labelled, f"all {len(labelled)} dialogues (for simulators trained on none)"
    if heldout.never_trained_on(corpus):
        return labelled, (
            f"all {len(labelled)} dialogues (the simulator's samples hold none of {corpus})"
        )
    plan = heldout.plan(corpus, [ld.dialogue for ld in labelled])
    kept = [ld for ld in labelled if plan.split_of(ld.dialogue.id) == "test"]
    return kept, (
        f"seeded test split of the samples ({heldout.split_words()}): {len(kept)} of "
        f"{len(labelled)} dialogues"
    )


class HeldoutDialogues(NamedTuple):
    """The labelled dialogues a part scores, the card's words for them, and how many dialogues
    the clean rule left out (None where it does not apply)."""

    kept: list[LabelledDialogue]
    split: str
    n_unclean: int | None


def clean_held_out(
    corpus: str, labelled: list[LabelledDialogue], heldout: Heldout, data_dir: Path
) -> HeldoutDialogues:
    """:func:`held_out`, and under the ``test`` rule only the clean dialogues
    (:func:`clean_test`). The ``all`` rule is for simulators trained on none of the corpus,
    where no train split exists to be clean of.

    Raises:
        InputError: An unknown rule.
    """
    test, split = held_out(corpus, labelled, heldout)
    if heldout.rule == "all" or heldout.never_trained_on(corpus):
        return HeldoutDialogues(test, split, None)
    kept, unclean = clean_test(corpus, test, data_dir, heldout.seed, forced=heldout.forced)
    return HeldoutDialogues(
        kept, f"{split}, {len(kept)} of them clean ({unclean_words(unclean)})", unclean
    )


def clean_test(
    corpus: str,
    test: list[LabelledDialogue],
    data_dir: Path,
    seed: int,
    *,
    forced: Collection[str] = HOLDOUT_CORPORA,
) -> tuple[list[LabelledDialogue], int]:
    """The clean dialogues of ``test`` (:mod:`cogwm.simulator.clean`) against the corpus's full
    train split (official, else seeded with ``seed``, the hold-outs of ``forced`` in test), and
    how many base dialogues were left out."""
    train = corpus_train_lines(corpus, data_dir, seed, forced=forced)
    cleaned = clean_heldout(test, train, lambda ld: ld.dialogue)
    return cleaned.kept, cleaned.removed_from(corpus)


def unclean_words(n_unclean: int) -> str:
    """The card's words for the dialogues the clean rule left out."""
    return f"{n_unclean} left out: a user line of 8+ words in train, or a train dialogue's twin"


def _dialogues(labelled: Iterable[LabelledDialogue]) -> int:
    """Base dialogues (DailyDialog's two readings of one dialogue count once)."""
    return len({base_id(ld.dialogue.id) for ld in labelled})


#: Reads the gold answer of a turn from its partial state (None: the turn is not an item).
GoldOf = Callable[[PartialState], str | None]


def _items(labelled: LabelledDialogue, gold_of: GoldOf) -> Iterable[Item]:
    turns = labelled.dialogue.turns()
    for index, inp, partial in turn_inputs(labelled):
        gold = gold_of(partial)
        if gold is None:
            continue
        yield Item(
            id=f"{labelled.dialogue.id}:{index}",
            dialogue_id=base_id(labelled.dialogue.id),
            turn_index=index,
            inp=inp,
            utterance=shown_text(turns[index].text),
            gold=gold,
        )


# --- DailyDialog ----------------------------------------------------------------------------------


def _dailydialog_gold(partial: PartialState) -> str | None:
    emotion = partial.emotion.value
    return emotion.label if emotion is not None and emotion.label in DD_VALENCE else None


def dailydialog_population(data_dir: Path) -> Population:
    """The DailyDialog part's items (see the module docstring)."""
    from cogwm.annotate.human import labelled_dialogues

    test = list(labelled_dialogues("dailydialog", data_dir, split="test"))
    if not test:
        raise InputError(f"{data_dir}: DailyDialog has no test dialogues")
    readings, unclean = clean_test("dailydialog", test, data_dir, 0)
    return Population(
        corpus="dailydialog",
        split=f"official test, clean: {_dialogues(readings)} of {_dialogues(test)} dialogues "
        f"({unclean_words(unclean)})",
        selection="turns labelled happiness, anger, sadness, fear or disgust; each speaker is "
        "the user in turn",
        items=[item for r in readings for item in _items(r, _dailydialog_gold)],
        n_unclean=unclean,
    )


# --- AnnoMI --------------------------------------------------------------------------------------


def _annomi_gold(partial: PartialState) -> str | None:
    signs = {c.value > 0 for c in partial.constraints if c.relation == "direction"}
    return None if len(signs) != 1 else ("change" if signs.pop() else "sustain")


def annomi_population(data_dir: Path, heldout: Heldout) -> Population:
    """The AnnoMI part's items: client turns with a change or sustain direction."""
    from cogwm.annotate.human import labelled_dialogues

    kept, split, unclean = clean_held_out(
        "annomi", list(labelled_dialogues("annomi", data_dir)), heldout, data_dir
    )
    return Population(
        corpus="annomi",
        split=split,
        selection="client turns labelled change or sustain (annotator ties left out)",
        items=[item for ld in kept for item in _items(ld, _annomi_gold)],
        n_unclean=unclean,
    )


# --- PersuasionForGood ------------------------------------------------------------------------


def _p4g_commitment_gold(partial: PartialState) -> str | None:
    bounds = {c.relation for c in partial.constraints if c.target == "intention"}
    if bounds == {"at_least"}:
        return "commits"
    if bounds == {"at_most"}:
        return "refuses"
    return None  # no commitment label, or both in one turn


def p4g_populations(data_dir: Path, heldout: Heldout) -> tuple[Population, Population]:
    """The P4G part's two item sets: persuadee turns with a commitment label (agree,
    provide-amount, confirm vs disagree), and each dialogue's last persuadee turn with the actual
    donation (B6 > 0) as gold."""
    from cogwm.annotate.human import labelled_dialogues

    labelled = list(labelled_dialogues("persuasionforgood", data_dir))
    kept, split, unclean = clean_held_out("persuasionforgood", labelled, heldout, data_dir)
    commitment = Population(
        corpus="persuasionforgood",
        split=f"{split} (the 300 act-annotated dialogues)",
        selection="persuadee turns labelled agree-donation, provide-donation-amount or "
        "confirm-donation (commits) or disagree-donation (refuses)",
        items=[item for ld in kept for item in _items(ld, _p4g_commitment_gold)],
        n_unclean=unclean,
    )
    final = Population(
        corpus="persuasionforgood",
        split=commitment.split,
        selection="each dialogue's last persuadee turn; gold: donated after the task (B6 > 0)",
        items=[item for ld in kept for item in _last_turn(ld)],
        n_unclean=unclean,
    )
    return commitment, final


def _last_turn(labelled: LabelledDialogue) -> Iterable[Item]:
    meta = labelled.dialogue.meta
    if not isinstance(meta, P4GMeta):
        raise InputError(f"{labelled.dialogue.id}: not a PersuasionForGood dialogue")
    turns = labelled.dialogue.turns()
    inputs = list(turn_inputs(labelled))
    if not inputs:
        return
    index, inp, _ = inputs[-1]
    yield Item(
        id=f"{labelled.dialogue.id}:{index}",
        dialogue_id=base_id(labelled.dialogue.id),
        turn_index=index,
        inp=inp,
        utterance=shown_text(turns[index].text),
        gold="donated" if meta.persuadee.actual_donation > 0 else "none",
    )


# --- ESConv and FailedESConv -------------------------------------------------------------------

#: The seeker turn whose reading stands for the state at the start (turn 1 is often a greeting).
ESCONV_START_TURN = 3


def esconv_populations(data_dir: Path, heldout: Heldout) -> tuple[Population, Population]:
    """The ESConv part's item sets: ``start`` (ESConv test dialogues, the third seeker turn with
    no state shown, gold: the pre-chat emotion type, ``facts["initial"]``: its intensity) and
    ``end`` (the last seeker turn of ESConv test dialogues, gold ``improved``, and of FailedESConv
    dialogues without improvement (:func:`unimproved`), gold ``failed``; ``facts``: the initial
    emotion's valence x intensity and the final intensity where the survey has it)."""
    from cogwm.annotate.human import labelled_dialogues

    every_test = list(labelled_dialogues("esconv", data_dir, split="test"))
    test, unclean = clean_test("esconv", every_test, data_dir, heldout.seed)
    failed, failed_split, failed_unclean = clean_held_out(
        "failed_esconv", list(labelled_dialogues("failed_esconv", data_dir)), heldout, data_dir
    )
    official = (
        f"official test, clean: {len(test)} of {len(every_test)} dialogues "
        f"({unclean_words(unclean)})"
    )
    start = Population(
        corpus="esconv",
        split=official,
        selection=f"seeker turn {ESCONV_START_TURN} (or the last one), shown without any state; "
        "gold: the pre-chat emotion type and intensity (1-5 mapped to 1-3)",
        items=[item for ld in test for item in _esconv_start(ld)],
        n_unclean=unclean,
    )
    end = Population(
        corpus="esconv",
        split=f"{official} and FailedESConv: {failed_split}",
        selection="the last seeker turn of dialogues with at least two; improved: ESConv, "
        "failed: FailedESConv whose survey shows no improvement (improved or unknown left out)",
        items=[item for ld in test for item in _esconv_end(ld, "improved")]
        + [item for ld in failed for item in _esconv_end(ld, "failed")],
        n_unclean=unclean + (failed_unclean or 0),
    )
    return start, end


def _user_turns(labelled: LabelledDialogue) -> list[TurnInput]:
    return list(turn_inputs(labelled))


def _esconv_start(labelled: LabelledDialogue) -> Iterable[Item]:
    inputs = _user_turns(labelled)
    if not inputs:
        return
    emotion = inputs[0][2].emotion.value
    if emotion is None:  # an emotion type the mapping cannot express
        return
    index, inp, _ = inputs[min(ESCONV_START_TURN, len(inputs)) - 1]
    # The first turn's human state is the answer here: the input must not show it.
    bare = inp.model_copy(update={"initial_state": None, "previous_state": None})
    yield Item(
        id=f"{labelled.dialogue.id}:{index}",
        dialogue_id=base_id(labelled.dialogue.id),
        turn_index=index,
        inp=bare,
        utterance=shown_text(labelled.dialogue.turns()[index].text),
        gold=emotion.label,
        facts={"initial": float(emotion.intensity)},
    )


def unimproved(labelled: LabelledDialogue) -> bool:
    """The seeker's survey says the final intensity is not below the initial one: the one
    definition of a failed FailedESConv dialogue (improved or unknown ones are in no group)."""
    return survey_outcome(labelled.dialogue) == "not improved"


def _esconv_end(labelled: LabelledDialogue, group: str) -> Iterable[Item]:
    inputs = _user_turns(labelled)
    if len(inputs) < 2 or (group == "failed" and not unimproved(labelled)):
        return
    first = inputs[0][2].emotion.value
    if first is None:
        return
    index, inp, partial = inputs[-1]
    facts = {"initial_e": valence(first.label) * first.intensity}
    final = partial.emotion.value
    if final is not None:
        facts["final"] = float(final.intensity)
    yield Item(
        id=f"{labelled.dialogue.id}:{index}",
        dialogue_id=base_id(labelled.dialogue.id),
        turn_index=index,
        inp=inp,
        utterance=shown_text(labelled.dialogue.turns()[index].text),
        gold=group,
        facts=facts,
    )
