"""Samples: one per user turn in the world-model format, split by dialogue, files and manifest."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cogwm import tasks
from cogwm.annotate.io import write_labelled
from cogwm.arena.config import ModelConfig
from cogwm.arena.participants import SimulatorParticipant
from cogwm.arena.termination import Phase
from cogwm.arena.transcript import ArenaTurn, UserSetup
from cogwm.cli.main import _register, app
from cogwm.errors import InputError
from cogwm.models import load
from cogwm.models.types import Message
from cogwm.schema import (
    BigFive,
    CognitiveState,
    Dialogue,
    Emotion,
    Profile,
    Role,
    StateItem,
    Utterance,
)
from cogwm.schema.labels import (
    ESConvMeta,
    ESConvSurvey,
    P4GMeta,
    P4GParticipant,
    P4GSentence,
    P4GUtteranceLabels,
)
from cogwm.schema.partial import (
    Constraint,
    EmotionField,
    FieldKind,
    ItemsField,
    LabelledDialogue,
    Origin,
    PartialState,
    Source,
)
from cogwm.simulator import build as build_module
from cogwm.simulator.build import Source as SampleSource
from cogwm.simulator.build import build_samples, merge_sources
from cogwm.simulator.format import WorldModelOutput, build_messages, render_target
from cogwm.simulator.samples import (
    EMPTY_EMOTION,
    Sample,
    dialogue_samples,
    dump_sample,
    read_samples,
    target_emotion,
    task_for_corpus,
    turn_inputs,
    write_samples,
)
from cogwm.simulator.splits import base_id, normalised_text, plan_splits

HUMAN = Origin(source=Source.HUMAN, rule="t.1", exact=True)
LLM = Origin(source=Source.LLM)
runner = CliRunner()


def _dialogue(
    did: str, texts: list[str], *, corpus: str = "annomi", split: str | None = None
) -> Dialogue:
    """Alternating agent/user utterances, agent first."""
    utterances = [
        Utterance(
            index=i,
            speaker="agent" if i % 2 == 0 else "user",
            role=Role.AGENT if i % 2 == 0 else Role.USER,
            text=text,
        )
        for i, text in enumerate(texts)
    ]
    return Dialogue(id=did, corpus=corpus, split=split, utterances=utterances)


def _emotion(label: str, intensity: int = 2, origin: Origin = HUMAN) -> PartialState:
    return PartialState(
        emotion=EmotionField(
            kind=FieldKind.VALUE, value=Emotion(label=label, intensity=intensity), origin=origin
        )
    )


def _labelled(did: str = "annomi:7", tag: str = "", **kwargs: object) -> LabelledDialogue:
    texts = [f"{t}{tag}" for t in ("a0", "u1", "a2", "u3", "a4", "u5")]
    dialogue = _dialogue(did, texts, **kwargs)  # type: ignore[arg-type]
    states = {
        1: _emotion("anxiety", 3),
        3: PartialState(
            intentions=ItemsField(
                kind=FieldKind.VALUE, items=[StateItem(text="cut down", score=1.0)], origin=HUMAN
            ),
            constraints=[
                Constraint(target="intention", relation="direction", value=1.0, origin=HUMAN)
            ],
        ),
    }
    return LabelledDialogue(dialogue=dialogue, states=states)


def _samples(item: LabelledDialogue, history_turns: int = 8) -> list[Sample]:
    return [b.sample for b in dialogue_samples(item, "train", history_turns=history_turns)]


# ------------------------------------------------------------------------------ per dialogue


@pytest.mark.parametrize(
    ("corpus", "last_leave"),
    [("esconv", True), ("persuasionforgood", True), ("inspired", True), ("dailydialog", None)],
)
def test_the_last_turn_teaches_leaving_only_where_the_users_ended_the_conversation(
    corpus: str, last_leave: bool | None
) -> None:
    """Live chats end where their participants chose to; DailyDialog's written dialogues end
    where their writer stopped, so their last turn is no example of a user leaving."""
    item = _labelled(f"{corpus}:7", corpus=corpus)
    samples = _samples(item)
    leaves = [json.loads(s.target)["leave"] for s in samples]
    assert leaves == [False, False, last_leave]
    *_, (start, end, kind), _closing = samples[-1].target_spans  # the leave value, then "}"
    assert samples[-1].target[start:end] == json.dumps(last_leave)
    assert kind == ("unknown" if last_leave is None else "utterance")  # unknown: never a target


def test_one_sample_per_user_turn_with_ids_and_targets() -> None:
    samples = _samples(_labelled())
    assert [s.id for s in samples] == ["annomi:7:1", "annomi:7:3", "annomi:7:5"]
    assert [s.turn_index for s in samples] == [1, 3, 5]
    first, second, last = (json.loads(s.target) for s in samples)
    assert first["emotion"] == {"label": "anxiety", "intensity": 3}
    assert first["beliefs"] is None and first["utterance"] == "u1" and first["leave"] is False
    assert second["emotion"] is None and second["intentions"] == [{"text": "cut down", "score": 1}]
    # AnnoMI's transcripts end where the recorded demonstration does: not the user's choice.
    assert last["leave"] is None
    assert all(v is None for k, v in last.items() if k != "utterance")
    assert samples[1].provenance == {
        "emotion": "unknown",
        "beliefs": "unknown",
        "desires": "unknown",
        "intentions": "human",
    }
    assert samples[1].constraints[0].relation == "direction"
    assert samples[0].constraints == []


def test_history_is_windowed_and_states_come_from_earlier_turns_only() -> None:
    samples = _samples(_labelled(), history_turns=2)
    prompts = [s.messages[1].content for s in samples]
    assert "Therapist: a0" in prompts[0] and "Your state" not in prompts[0]
    assert "Therapist: a0" not in prompts[1] and "You: u1\nTherapist: a2" in prompts[1]
    assert "Your state before this: emotion anxiety 3" in prompts[1]
    # At the last turn the previous state is turn 3's; the start state is turn 1's.
    assert "Your state at the start: emotion anxiety 3" in prompts[2]
    assert "Your state before this: intentions: cut down (1)" in prompts[2]
    # Earlier states are shown as the simulator could have said them (scores on its grid).
    half = _labelled()
    half.states[3].intentions.items[0].score = 1.5
    assert "cut down (2)" in _samples(half)[2].messages[1].content
    # The target of a turn never leaks into its own prompt.
    assert "cut down" not in prompts[1]


def test_sample_messages_are_what_the_arena_simulator_sends() -> None:
    """A model trained on samples plays the arena's user without translation."""
    item = _labelled()
    profile = Profile(communication_style="guarded", confidence=2, source="annotator")
    with_profile = item.dialogue.model_copy(update={"profile": profile})
    item = item.model_copy(update={"dialogue": with_profile})
    task = tasks.get("MI")
    sample = _samples(item, history_turns=3)[2]
    assert "talks: guarded" in sample.messages[0].content
    turns = item.dialogue.turns()
    states = {i: item.states[i].to_state() for i in (1, 3)}
    arena_turns = [
        ArenaTurn(
            index=t.index,
            round=t.index,
            role=t.role,
            phase=Phase.SIMULATED,
            text=t.text,
            state=states.get(t.index),
        )
        for t in turns[:5]
    ]
    simulator = SimulatorParticipant(
        load("fake:schema"), ModelConfig(model="fake:schema"), task, history_turns=3
    )
    setup = UserSetup(context=task.scenario, profile=profile)
    assert simulator._messages(setup, arena_turns, "predict") == sample.messages


def _arena_and_sample_prompts(dialogue: Dialogue) -> tuple[list[Message], list[Message]]:
    """The same situation both ways: the arena's simulator after the dialogue's cold start and
    the corpus's next agent turn, and the sample at the user turn that follows."""
    from cogwm.arena.orchestrator import cold_start_turns
    from cogwm.arena.scenarios import scenario_from_dialogue

    task = task_for_corpus(dialogue.corpus)
    state = CognitiveState(
        emotion=Emotion(label="anxiety", intensity=2),
        intentions=[StateItem(text="think it over", score=1.0)],
    )
    scenario = scenario_from_dialogue(dialogue, task)
    assert scenario is not None and scenario.profile is not None
    opening = cold_start_turns(scenario, state)
    n = len(opening)
    agent = dialogue.turns()[n]
    turns = [
        *opening,
        ArenaTurn(index=n, round=3, role=agent.role, phase=Phase.SIMULATED, text=agent.text),
    ]
    simulator = SimulatorParticipant(
        load("fake:schema"), ModelConfig(model="fake:schema"), task, history_turns=8
    )
    setup = UserSetup(context=scenario.context, profile=scenario.profile)
    arena = simulator._messages(setup, turns, "predict")
    item = LabelledDialogue(dialogue=dialogue, states={n - 1: PartialState.from_state(state, LLM)})
    (sample,) = [s for s in _samples(item) if s.turn_index == n + 1]
    return arena, sample.messages


def _three_rounds(corpus: str, texts: list[str], **fields: object) -> Dialogue:
    traits = BigFive(
        openness=4, conscientiousness=2, extraversion=3, agreeableness=5, neuroticism=1
    )
    dialogue = _dialogue(f"{corpus}:0", texts, corpus=corpus)
    profile = Profile(big_five=traits, communication_style="terse", confidence=2, source="llm")
    return dialogue.model_copy(update={"profile": profile, **fields})


def test_arena_and_sample_prompts_are_byte_identical_for_the_same_situation() -> None:
    # Catches: the two building the simulator's input differently (history text, window,
    # states, profile or context), so a trained model would meet prompts it never saw.
    texts = ["Hi there.", " Hello!  ", "Would you give?", "Maybe.\n", "It helps kids.", "Ok."]
    texts += ["Great.", "Bye."]
    arena, sample = _arena_and_sample_prompts(_three_rounds("persuasionforgood", texts))
    assert "You: Hello!\n" in arena[1].content  # the cold start is stripped
    assert arena == sample


def test_arena_and_sample_prompts_are_byte_identical_for_an_esconv_situation() -> None:
    meta = ESConvMeta(
        experience_type="Current Experience",
        emotion_type="shame",
        problem_type="job crisis",
        situation="I may lose my job.",
        survey=ESConvSurvey(initial_emotion_intensity=4),
    )
    texts = ["Hi.", "Hello.", "What is wrong?", "My boss.", "I see.", "Yes.", "Go on.", "Ok."]
    arena, sample = _arena_and_sample_prompts(_three_rounds("esconv", texts, meta=meta))
    assert arena == sample


def test_esconv_prompt_shows_the_situation_but_never_the_emotion_type() -> None:
    # Catches: the seeker's self-reported emotion type (the first seeker turn's gold emotion)
    # leaking into the prompt through the context.
    from cogwm.corpora.esconv import mapping as esconv

    dialogue = _dialogue("esconv:test:0", ["Hi.", "Hello.", "What is wrong?", "My boss."])
    meta = ESConvMeta(
        experience_type="Current Experience",
        emotion_type="shame",
        problem_type="job crisis",
        situation="I may lose my job.",
        survey=ESConvSurvey(initial_emotion_intensity=4, final_emotion_intensity=2),
    )
    item = esconv.label(dialogue.model_copy(update={"corpus": "esconv", "meta": meta}))
    samples = _samples(item)
    assert json.loads(samples[0].target)["emotion"]["label"] == "shame"
    for sample in samples:
        assert "I may lose my job. (problem: job crisis)" in sample.messages[0].content
        prompt = " ".join(m.content for m in sample.messages[:1])
        prompt += sample.messages[1].content.split("Your state")[0]
        assert "shame" not in prompt


def test_an_unknown_field_has_unknown_provenance_even_with_an_origin() -> None:
    # Catches: provenance read from the origin alone, so an unknown field that names its
    # source (e.g. a failed LLM stage) would be reported as labelled.
    item = _labelled()
    item.states[3].beliefs = ItemsField(kind=FieldKind.UNKNOWN, origin=LLM)
    sample = _samples(item)[1]
    assert sample.provenance["beliefs"] == "unknown"
    assert json.loads(sample.target)["beliefs"] is None


def test_p4g_reaction_levels_stay_apart_on_the_whole_score_grid() -> None:
    # Catches: halves rounded all one way onto the grammar's whole scores, which gave a
    # negative reaction to donating (desire 0.5) the neutral reaction's target (1.0).
    from cogwm.corpora.persuasionforgood import mapping as p4g

    acts = ("negative", "neutral", "positive")
    utterances = []
    for n, act in enumerate(acts):
        utterances.append(Utterance(index=2 * n, speaker="er", role=Role.AGENT, text="Donate?"))
        sentence = P4GSentence(text=f"{act}.", ee_label_1=f"{act}-reaction-to-donation")
        labels = P4GUtteranceLabels(turn=n, sentences=[sentence])
        utterances.append(
            Utterance(index=2 * n + 1, speaker="ee", role=Role.USER, text=f"{act}.", labels=labels)
        )
    who = P4GParticipant(user_id="u", actual_donation=0.0, num_turns=3)
    dialogue = Dialogue(
        id="persuasionforgood:x",
        corpus="persuasionforgood",
        utterances=utterances,
        meta=P4GMeta(annotated=True, persuader=who, persuadee=who),
    )
    targets = [json.loads(s.target) for s in _samples(p4g.label(dialogue))]
    assert [t["desires"][0]["score"] for t in targets] == [0, 1, 2]


def test_turn_inputs_are_the_sample_prompts() -> None:
    # Catches: a second copy of the input logic drifting from the samples' (what validate asks
    # a model must be what the model was trained on).
    item = _labelled()
    item.states[3].intentions.items[0].score = 1.5
    task = tasks.get("MI")
    asked = [build_messages(t.input, task) for t in turn_inputs(item, history_turns=3)]
    assert asked == [s.messages for s in _samples(item, history_turns=3)]
    assert [t.turn_index for t in turn_inputs(item)] == [1, 3, 5]


def test_understand_samples_are_what_validate_asks_in_understanding_mode() -> None:
    # Catches: understanding-mode training prompts drifting from the ones `cogwm validate` asks
    # (a model would be trained on one prompt and scored on another), a target that still holds
    # the utterance, and an understanding sample for a turn with nothing known.
    from cogwm.validate.items import Item
    from cogwm.validate.reader import world_model_input

    item = _labelled()
    built = [b.sample for b in dialogue_samples(item, "train", understand=True)]
    assert [s.id for s in built] == [
        "annomi:7:1",
        "annomi:7:1:understand",
        "annomi:7:3",
        "annomi:7:3:understand",
        "annomi:7:5",
    ]
    task = tasks.get("MI")
    turns = {t.turn_index: t for t in turn_inputs(item)}
    for sample in (s for s in built if s.mode == "understand"):
        real = item.dialogue.turns()[sample.turn_index].text
        asked = Item(
            id=sample.id,
            dialogue_id=sample.dialogue_id,
            turn_index=sample.turn_index,
            inp=turns[sample.turn_index].input,
            utterance=real,
            gold="x",
        )
        assert sample.messages == build_messages(world_model_input(asked, "understand"), task)
        assert "utterance" not in json.loads(sample.target)
        assert all(tag != "utterance" for _, _, tag in sample.target_spans)
    assert json.loads(built[1].target)["emotion"]["label"] == "anxiety"


def test_spans_cover_each_target_and_unknown_is_never_state() -> None:
    for sample in _samples(_labelled()):
        assert sample.target_spans[0][0] == 0 and sample.target_spans[-1][1] == len(sample.target)
        for (_, end, _), (start, _, _) in itertools.pairwise(sample.target_spans):
            assert end == start
        for start, end, tag in sample.target_spans:
            if tag == "state":
                assert sample.target[start:end] != "null"


def test_long_utterances_are_fitted_and_reported() -> None:
    item = _labelled()
    long = item.dialogue.model_copy(deep=True)
    long.utterances[1].text = 'He said "stop".\n' + "word " * 80
    built = list(dialogue_samples(LabelledDialogue(dialogue=long, states=item.states), "train"))
    assert "utterance_fitted" in built[0].fitted
    assert json.loads(built[0].sample.target)["utterance"].startswith("He said 'stop'.")


def test_corpora_map_to_their_tasks() -> None:
    assert task_for_corpus("dailydialog").name == "DAILY"
    assert task_for_corpus("failed_esconv").name == "ESC"
    assert task_for_corpus("persuasionforgood").name == "PD"
    with pytest.raises(InputError):
        task_for_corpus("nope")


# ------------------------------------------------------------------------------ files


def test_samples_files_round_trip(tmp_path: Path) -> None:
    samples = _samples(_labelled())
    path = tmp_path / "s.jsonl"
    assert write_samples(path, samples) == 3
    assert list(read_samples(path)) == samples
    assert json.loads(path.read_text().splitlines()[0])["schema"] == "cogwm.samples/1"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{oops", "not valid JSON"),
        ('{"schema": "cogwm.labels/1"}', 'expected "schema"'),
        ('{"schema": "cogwm.samples/1", "id": "x"}', "invalid sample"),
    ],
)
def test_bad_lines_name_the_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(dump_sample(_samples(_labelled())[0]) + "\n" + line + "\n")
    with pytest.raises(InputError, match=problem) as caught:
        list(read_samples(path))
    assert "line 2" in str(caught.value)


# ------------------------------------------------------------------------------ splits


def test_official_splits_are_kept_and_readings_stay_together() -> None:
    dialogues = [
        _dialogue(f"dailydialog:{s}:{i}#{r}", [f"{s}{i}", "x"], corpus="dailydialog", split=s)
        for s in ("train", "validation", "test")
        for i in range(20)
        for r in "AB"
    ]
    plan = plan_splits("dailydialog", dialogues, seed=1)
    assert plan.rule == "official"
    for d in dialogues:
        expected = {"train": "train", "validation": "val", "test": "test"}[d.split or ""]
        assert plan.split_of(d.id) == expected


def test_twins_are_dropped_from_the_lower_split_and_counted() -> None:
    same = ["Hi , how are you ?", "Fine."]
    dialogues = [
        _dialogue("dd:test:0#A", same, corpus="dailydialog", split="test"),
        _dialogue("dd:test:0#B", same, corpus="dailydialog", split="test"),
        _dialogue(
            "dd:train:5#A", ["hi, how ARE you?", "fine"], corpus="dailydialog", split="train"
        ),
        _dialogue("dd:validation:2#A", same, corpus="dailydialog", split="validation"),
        _dialogue("dd:train:6#A", ["other"], corpus="dailydialog", split="train"),
    ]
    plan = plan_splits("dailydialog", dialogues, seed=0)
    assert plan.split_of("dd:test:0#B") == "test"
    assert plan.split_of("dd:train:5#A") is None and plan.split_of("dd:validation:2#A") is None
    assert plan.split_of("dd:train:6#A") == "train"
    assert plan.dropped == {"dd:train:5": "train", "dd:validation:2": "val"}
    assert plan.twins == {"test~train": 1, "test~val": 1}
    assert normalised_text(dialogues[0]) == normalised_text(dialogues[2])


def test_seeded_split_is_stable_by_dialogue_and_changes_with_the_seed() -> None:
    dialogues = [_dialogue(f"annomi:{i}", [f"t{i}", "u"]) for i in range(400)]
    plan = plan_splits("annomi", dialogues, seed=3)
    assert plan.rule == "seeded"
    shares = [
        sum(1 for s in plan.splits.values() if s == k) / 400 for k in ("train", "val", "test")
    ]
    assert 0.74 < shares[0] < 0.86 and 0.05 < shares[1] < 0.15 and 0.05 < shares[2] < 0.15
    # A dialogue's split does not depend on which other dialogues are present.
    subset = plan_splits("annomi", dialogues[::7], seed=3)
    assert all(subset.splits[b] == plan.splits[b] for b in subset.splits)
    assert plan_splits("annomi", dialogues, seed=3) == plan
    other = plan_splits("annomi", dialogues, seed=4)
    assert other.splits != plan.splits


def test_seeded_split_keeps_the_readings_of_a_dialogue_together() -> None:
    # Catches: a seeded split hashed on the reading id, which would put the two sides of one
    # dialogue (``#A`` / ``#B``) in different splits.
    dialogues = [
        _dialogue(f"failed_esconv:{i}#{r}", [f"t{i}", "u"], corpus="failed_esconv")
        for i in range(60)
        for r in "AB"
    ]
    plan = plan_splits("failed_esconv", dialogues, seed=5)
    assert plan.rule == "seeded"
    for i in range(60):
        assert plan.split_of(f"failed_esconv:{i}#A") == plan.split_of(f"failed_esconv:{i}#B")
    assert len({plan.split_of(d.id) for d in dialogues}) == 3


def test_official_test_without_train_stays_test() -> None:
    dialogues = [
        _dialogue(f"inspired:{s}:{i}", [f"{s}{i}", "u"], corpus="inspired", split=s)
        for s in ("dev", "test")
        for i in range(50)
    ]
    plan = plan_splits("inspired", dialogues, seed=0)
    assert plan.rule == "official test + seeded"
    for d in dialogues:
        split = plan.split_of(d.id)
        assert (split == "test") == (d.split == "test")
    assert {plan.split_of(d.id) for d in dialogues if d.split == "dev"} == {"train", "val"}


def test_base_id() -> None:
    assert base_id("dailydialog:train:3#A") == "dailydialog:train:3"
    assert base_id("esconv:test:1") == "esconv:test:1"


# ------------------------------------------------------------------------------ sources


def test_sources_merge_field_by_field_with_their_provenance() -> None:
    human = _labelled()
    llm_states = {
        1: PartialState(
            emotion=EmotionField(
                kind=FieldKind.VALUE, value=Emotion(label="fear", intensity=1), origin=LLM
            ),
            beliefs=ItemsField(kind=FieldKind.EMPTY, origin=LLM),
        )
    }
    llm = LabelledDialogue(dialogue=human.dialogue, states=llm_states)
    (merged,) = merge_sources([[human], [llm]])
    assert merged.states[1].emotion.value == Emotion(label="anxiety", intensity=3)  # human first
    assert merged.states[1].beliefs.kind is FieldKind.EMPTY  # filled in by the LLM
    provenance = _samples(merged)[0].provenance
    assert provenance["emotion"] == "human" and provenance["beliefs"] == "llm"
    other = human.dialogue.model_copy(deep=True)
    other.utterances[1].text = "different"
    with pytest.raises(InputError, match="different texts"):
        merge_sources([[human], [LabelledDialogue(dialogue=other)]])


def test_merged_profile_keeps_self_reported_traits_and_the_annotators_styles() -> None:
    # Catches: a human source's self-reported profile (Big Five only) replacing the LLM
    # export's whole profile, so its communication and decision styles never reach a prompt.
    traits = BigFive(
        openness=4, conscientiousness=2, extraversion=3, agreeableness=5, neuroticism=1
    )
    human = _labelled()
    told = Profile(big_five=traits, confidence=3, source="self_report")
    human = human.model_copy(
        update={"dialogue": human.dialogue.model_copy(update={"profile": told})}
    )
    guessed = Profile(
        big_five=traits.model_copy(update={"openness": 1.0}),
        communication_style="terse",
        decision_style="cautious",
        task_features={"budget": "small"},
        confidence=2,
        source="llm",
    )
    llm = LabelledDialogue(dialogue=human.dialogue.model_copy(update={"profile": guessed}))
    (merged,) = merge_sources([[human], [llm]])
    profile = merged.dialogue.profile
    assert profile is not None and profile.big_five == traits  # self-report first
    assert (profile.communication_style, profile.decision_style) == ("terse", "cautious")
    assert profile.task_features == {"budget": "small"}
    system = _samples(merged)[0].messages[0].content
    assert "openness 4" in system and "talks: terse" in system


# ------------------------------------------------------------------------------ build


def _words(samples: list[Sample]) -> dict[str, object]:
    return {"tokenizer": "test", "measured": len(samples)}


def _annotation_file(tmp_path: Path) -> Path:
    items = [_labelled(f"annomi:{i}", f" {i}") for i in range(30)]
    items += [
        _labelled(f"esconv:{s}:{i}", f" {s}{i}", corpus="esconv", split=s)
        for s in ("train", "valid", "test")
        for i in range(4)
    ]
    # A train dialogue with the text of a test one: dropped as a twin, and the test one is not
    # clean (its text is in the full train split), so it is dropped too.
    items.append(_labelled("esconv:train:99", " test0", corpus="esconv", split="train"))
    path = tmp_path / "ann.jsonl"
    write_labelled(path, items)
    return path


def test_build_writes_split_files_and_a_manifest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    source = SampleSource("annotations", str(_annotation_file(tmp_path)))
    manifest = build_samples(out, [source], seed=2, count_tokens=_words)
    by_split = {s: list(read_samples(out / f"{s}.jsonl")) for s in ("train", "val", "test")}
    assert manifest["counts"] == {s: len(v) for s, v in by_split.items()}
    assert sum(manifest["counts"].values()) == 41 * 3
    owners: dict[str, set[str]] = {}
    for split, samples in by_split.items():
        for sample in samples:
            assert sample.split == split
            owners.setdefault(sample.dialogue_id, set()).add(split)
    assert all(len(s) == 1 for s in owners.values())
    assert {s.dialogue_id for s in by_split["test"] if s.corpus == "esconv"} == {
        f"esconv:test:{i}" for i in range(1, 4)
    }
    esconv = manifest["corpora"]["esconv"]
    assert esconv["split_rule"] == "official" and esconv["task"] == "ESC"
    assert esconv["dropped_as_twins"] == {"train": 1} and esconv["twins"] == {"test~train": 1}
    assert "esconv:train:99" not in owners and "esconv:test:0" not in owners
    assert esconv["dropped_as_unclean"] == {"val": 0, "test": 1}
    assert manifest["provenance"]["emotion"] == {"human": 41, "unknown": 82}
    # Emotion labels per corpus and split, from the targets (one anxiety turn per dialogue).
    emotions = {
        (corpus, split): counts
        for corpus, described in manifest["corpora"].items()
        for split, counts in described["emotions"].items()
    }
    assert emotions[("esconv", "test")] == {"anxiety": 3}
    assert sum(n for counts in emotions.values() for n in counts.values()) == 41
    # Leave targets: three user turns per dialogue, the last one ends an ESConv chat.
    assert manifest["corpora"]["esconv"]["leave"]["test"] == {"false": 6, "true": 3}
    assert manifest["corpora"]["annomi"]["leave"]["train"]["unknown"] > 0
    assert "true" not in manifest["corpora"]["annomi"]["leave"]["train"]
    assert manifest["constraints"] == {"intention direction": 41}
    assert json.loads((out / "manifest.json").read_text())["seed"] == 2


def test_target_emotion_tells_a_label_an_empty_and_an_unknown_emotion_apart() -> None:
    # Catches: an unknown emotion (null tagged unknown) counted as "no emotion", or the reverse.
    sample = _samples(_labelled())[0]
    assert target_emotion(sample) == "anxiety"
    unknown = sample.model_copy(
        update={"target": '{"emotion":null}', "target_spans": [(11, 15, "unknown")]}
    )
    assert target_emotion(unknown) is None
    empty = unknown.model_copy(update={"target_spans": [(11, 15, "state")]})
    assert target_emotion(empty) == EMPTY_EMOTION


def test_build_refuses_a_non_empty_directory_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("keep")
    source = SampleSource("annotations", str(_annotation_file(tmp_path)))
    with pytest.raises(InputError, match="not empty"):
        build_samples(out, [source], count_tokens=_words)
    build_samples(out, [source], force=True, limit=3, count_tokens=_words)
    assert (out / "notes.txt").read_text() == "keep"
    assert sum(1 for _ in read_samples(out / "train.jsonl")) <= 9
    assert not list(out.glob("*.partial"))


def test_token_lengths_have_percentiles() -> None:
    lengths = build_module.token_lengths(_samples(_labelled()))
    assert lengths["measured"] == 3
    total = lengths["total"]
    assert total["p50"] <= total["p90"] <= total["max"]
    assert lengths["prompt"]["max"] + lengths["target"]["max"] >= total["max"]


# ------------------------------------------------------------------------------ command line


def test_cli_builds_and_reports_one_line_errors(tmp_path: Path) -> None:
    _register()
    path = _annotation_file(tmp_path)
    out = tmp_path / "cli"
    result = runner.invoke(app, ["samples", "build", "--out", str(out), "--annotations", str(path)])
    assert result.exit_code == 0, result.output
    assert (out / "manifest.json").is_file() and "esconv" in result.stdout
    again = runner.invoke(app, ["samples", "build", "--out", str(out), "--annotations", str(path)])
    assert again.exit_code != 0 and isinstance(again.exception, InputError)
    assert "not empty" in str(again.exception)
    none = runner.invoke(app, ["samples", "build", "--out", str(tmp_path / "x")])
    assert "no sources" in str(none.exception)
    unknown = runner.invoke(
        app, ["samples", "build", "--out", str(tmp_path / "y"), "--human", "nope"]
    )
    assert "no human-label mapping" in str(unknown.exception)


def test_render_target_of_a_full_state_matches_the_sample_target() -> None:
    item = _labelled()
    sample = _samples(item)[0]
    out = WorldModelOutput(state=item.states[1].to_state(), utterance="u1", leave=False)
    assert render_target(out, item.states[1]) == (
        sample.target,
        [tuple(s) for s in sample.target_spans],
    )


def test_human_corpora_accept_aliases_and_refuse_unknown_names() -> None:
    assert build_module.human_corpus("P4G") == "persuasionforgood"
    assert build_module.human_corpus("dailydialog") == "dailydialog"
    with pytest.raises(InputError, match="no human-label mapping"):
        build_module.human_corpus("durecdial")


def test_cli_refuses_a_missing_annotations_file(tmp_path: Path) -> None:
    _register()
    missing = tmp_path / "none.jsonl"
    result = runner.invoke(
        app, ["samples", "build", "--out", str(tmp_path / "o"), "--annotations", str(missing)]
    )
    assert isinstance(result.exception, InputError) and "file not found" in str(result.exception)
    assert not (tmp_path / "o").exists()


def _cogwm(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run the real entry point; returns stderr after checking exit status 2."""
    from cogwm.cli.main import main

    monkeypatch.setattr("sys.argv", ["cogwm", *args])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 2
    return capsys.readouterr().err


def test_bad_input_is_one_error_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches: a traceback or another exit status for the user errors of `annotate labels`
    # and `samples build`.
    monkeypatch.delenv("COGWM_DATA_DIR", raising=False)
    wrong_tag = tmp_path / "wrong.jsonl"
    wrong_tag.write_text('{"schema": "cogwm.samples/1"}\n')
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("")
    cases = {
        "data directory": ["annotate", "labels", "esconv", "--out", str(tmp_path / "l.jsonl")],
        "does not exist": [
            *("annotate", "labels", "esconv", "--data-dir", str(tmp_path / "none")),
            *("--out", str(tmp_path / "l.jsonl")),
        ],
        "no human-label mapping": [
            *("annotate", "labels", "durecdial", "--data-dir", str(tmp_path)),
            *("--out", str(tmp_path / "l.jsonl")),
        ],
        "not empty": ["samples", "build", "--out", str(full), "--annotations", str(wrong_tag)],
        'expected "schema"': [
            *("samples", "build", "--out", str(tmp_path / "o1")),
            *("--annotations", str(wrong_tag)),
        ],
        "file not found": [
            *("samples", "build", "--out", str(tmp_path / "o2")),
            *("--annotations", str(tmp_path / "none.jsonl")),
        ],
    }
    for problem, args in cases.items():
        err = _cogwm(monkeypatch, capsys, *args)
        lines = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and problem in lines[0], (args, err)
        assert "Traceback" not in err
