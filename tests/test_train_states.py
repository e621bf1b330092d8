"""Training options against a world model that repeats the previous state: state dropout and
corruption, change-weighted loss and a change share in the draws (on samples in the real prompt
format, built from labelled dialogues, and the tiny random tokenizer)."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

import pytest

from cogwm.errors import InputError
from cogwm.schema import Dialogue, Emotion, Role, StateItem, Utterance
from cogwm.schema.partial import (
    EmotionField,
    FieldKind,
    ItemsField,
    LabelledDialogue,
    Origin,
    PartialState,
    Source,
)
from cogwm.simulator.format import (
    PREVIOUS_STATE_PREFIX,
    START_STATE_PREFIX,
    STATES_HIDDEN_LINE,
    WorldModelInput,
    build_messages,
    split_states,
)
from cogwm.simulator.samples import Sample, dialogue_samples, task_for_corpus, write_samples
from cogwm.simulator.train.config import TrainConfig
from cogwm.simulator.train.data import CHANGED, encode_sample, span_weights
from cogwm.simulator.train.loop import load_data
from cogwm.simulator.train.mix import SampleIndex, draw_order, index_samples
from cogwm.simulator.train.states import (
    StateOptions,
    change_ranges,
    changed_fields,
    shown_states,
    state_view,
    task_group,
)
from helpers_cli import cogwm
from helpers_train import make_tiny_base

HUMAN = Origin(source=Source.HUMAN, rule="t.1", exact=True)
EMOTIONS = ("anxiety", "anxiety", "sadness", "hope", "sadness")


def _state(corpus: str, number: int, turn: int) -> PartialState:
    """Emotion cycling through :data:`EMOTIONS` (so some turns repeat, some change), and an
    intention that changes every other turn."""
    step = number + turn // 2
    label = EMOTIONS[step % len(EMOTIONS)]
    intention = StateItem(text=f"{corpus} plan {(step + 1) // 2}", score=1.0)
    return PartialState(
        emotion=EmotionField(
            kind=FieldKind.VALUE, value=Emotion(label=label, intensity=2), origin=HUMAN
        ),
        intentions=ItemsField(kind=FieldKind.VALUE, items=[intention], origin=HUMAN),
    )


def _dialogue(corpus: str, number: int, user_turns: int = 4) -> LabelledDialogue:
    utterances = []
    for i in range(2 * user_turns):
        role = Role.AGENT if i % 2 == 0 else Role.USER
        text = f"{'agent' if i % 2 == 0 else 'user'} line {number}.{i}"
        utterances.append(Utterance(index=i, speaker=role.value, role=role, text=text))
    dialogue = Dialogue(id=f"{corpus}:{number}", corpus=corpus, utterances=utterances)
    states = {i: _state(corpus, number, i) for i in range(1, 2 * user_turns, 2)}
    return LabelledDialogue(dialogue=dialogue, states=states)


def _samples(dialogues: int = 6) -> list[Sample]:
    samples = []
    for corpus in ("esconv", "annomi"):
        for number in range(dialogues):
            item = _dialogue(corpus, number)
            samples.extend(b.sample for b in dialogue_samples(item, "train", understand=True))
    return samples


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return make_tiny_base(tmp_path_factory.mktemp("states"))


@pytest.fixture(scope="module")
def tokenizer(base):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(base))


@pytest.fixture(scope="module")
def samples_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("samples")
    write_samples(out / "train.jsonl", _samples())
    return out


def _data(samples_dir: Path, base: Path, tokenizer, tmp_path: Path, **options):
    config = TrainConfig(samples=samples_dir, base=str(base), out=tmp_path / "out", **options)
    data = load_data(config, tokenizer, base)
    return data, [data.encoder.encoding(p) for p in range(len(data.index))]


# ---------------------------------------------------------------------------- the format


def test_a_hidden_states_input_renders_the_not_shown_line_instead_of_both_states():
    # Catches: an inference input that asks for hidden states but still shows them.
    sample = _samples(1)[4]  # turn 5: start and previous states differ, both shown
    assert START_STATE_PREFIX in sample.messages[-1].content
    task = task_for_corpus("esconv")
    shown = WorldModelInput(task=task.name, history=[("agent", "hi")])
    hidden = shown.model_copy(update={"states_hidden": True})
    text = build_messages(hidden, task)[-1].content
    assert STATES_HIDDEN_LINE in text
    assert build_messages(shown, task)[-1].content.replace(STATES_HIDDEN_LINE, "") == text.replace(
        STATES_HIDDEN_LINE, ""
    )
    before, states, instruction = split_states(sample.messages[-1].content)
    assert before + states + instruction == sample.messages[-1].content
    assert states.startswith(START_STATE_PREFIX) and PREVIOUS_STATE_PREFIX in states


# ---------------------------------------------------------------------------- state dropout


def test_state_dropout_one_hides_every_prompts_states(samples_dir, base, tokenizer, tmp_path):
    # Catches: a training prompt that still shows a start or previous state under P=1.
    data, _ = _data(samples_dir, base, tokenizer, tmp_path, state_dropout=1.0)
    assert data.encoder.view is not None
    for position in range(len(data.index)):
        trained, _ = data.encoder.view(data.encoder.read(position))
        user = trained.messages[-1].content
        assert PREVIOUS_STATE_PREFIX not in user and START_STATE_PREFIX not in user
        assert shown_states(trained) == STATES_HIDDEN_LINE
        assert trained.target == data.encoder.read(position).target


def test_state_dropout_zero_trains_on_todays_encodings(samples_dir, base, tokenizer, tmp_path):
    # Catches: the options changing samples, weights or the cache key while they are off.
    data, encodings = _data(samples_dir, base, tokenizer, tmp_path, state_dropout=0.0)
    assert data.encoder.view is None
    weights = span_weights("joint", 1.0)
    for position, encoded in enumerate(encodings):
        plain = encode_sample(data.encoder.read(position), tokenizer, weights, 2048)
        assert encoded == plain
    hidden, hidden_encodings = _data(
        samples_dir, base, tokenizer, tmp_path / "h", state_dropout=1.0
    )
    assert hidden.cache_key != data.cache_key
    assert sum(a != b for a, b in zip(encodings, hidden_encodings, strict=True)) > 20


def test_state_views_are_a_seeded_share_of_the_ids():
    # Catches: a share that drifts from P, a choice that depends on anything but seed and id.
    ids = [f"esconv:{i}:{t}" for i in range(800) for t in (1, 3, 5)]
    views = [state_view(i, 3, 0.3, 0.2) for i in ids]
    assert abs(views.count("hidden") / len(ids) - 0.3) < 0.03
    assert abs(views.count("corrupted") / len(ids) - 0.2) < 0.03
    assert views == [state_view(i, 3, 0.3, 0.2) for i in ids]
    assert views != [state_view(i, 4, 0.3, 0.2) for i in ids]
    # Raising P hides more samples, and every sample hidden at 0.3 stays hidden.
    more = [state_view(i, 3, 0.5, 0.0) for i in ids]
    assert all(m == "hidden" for v, m in zip(views, more, strict=True) if v == "hidden")


def test_corruption_shows_another_sample_of_the_same_task(samples_dir, base, tokenizer, tmp_path):
    # Catches: a donor from another task, the sample's own states, or none at all.
    data, _ = _data(samples_dir, base, tokenizer, tmp_path, state_corruption=1.0)
    assert data.encoder.view is not None
    by_states: dict[str, set[str]] = {}
    for position in range(len(data.index)):
        sample = data.encoder.read(position)
        by_states.setdefault(shown_states(sample), set()).add(task_group(sample.corpus))
    corrupted = 0
    for position in range(len(data.index)):
        sample = data.encoder.read(position)
        trained, _ = data.encoder.view(sample)
        states = shown_states(trained)
        assert states != shown_states(sample) and states != STATES_HIDDEN_LINE
        assert task_group(sample.corpus) in by_states[states]  # a same-task sample shows it
        corrupted += 1
    assert corrupted == len(data.index)


# ---------------------------------------------------------------------------- change items


def test_changed_fields_are_the_known_fields_that_differ_from_the_previous_state():
    # Catches: counting repeats as changes (or the reverse), a first turn counted as a change.
    by_id = {s.id: s for s in _samples(1)}
    assert changed_fields(by_id["esconv:0:1"]) == frozenset()  # no previous state shown
    # Turn 3 repeats turn 1's emotion (anxiety, anxiety); its intention is plan 1 after plan 0.
    assert changed_fields(by_id["esconv:0:3"]) == {"intentions"}
    # Turn 5: sadness after anxiety; plan 1 again.
    assert changed_fields(by_id["esconv:0:5"]) == {"emotion"}
    assert changed_fields(by_id["esconv:0:7"]) == {"emotion", "intentions"}
    # Beliefs and desires are unknown here: never a change.
    assert changed_fields(by_id["esconv:0:5:understand"]) == {"emotion"}


def test_change_weight_multiplies_only_the_changed_fields_state_tokens(tokenizer):
    # Catches: a weight on the unchanged fields, on syntax or utterance tokens, or on nothing.
    sample = next(s for s in _samples(1) if s.id == "esconv:0:5")
    plain = encode_sample(sample, tokenizer, span_weights("joint", 1.0), 2048)
    weights = span_weights("joint", 1.0, 3.0)
    assert weights[CHANGED] == 3.0
    boosted = encode_sample(sample, tokenizer, weights, 2048, change_ranges(sample))
    assert plain is not None and boosted is not None and plain.ids == boosted.ids
    differing = [
        i for i, (a, b) in enumerate(zip(plain.weights, boosted.weights, strict=True)) if a != b
    ]
    assert differing and all(boosted.weights[i] == 3 * plain.weights[i] for i in differing)
    ((start, end),) = change_ranges(sample)  # the emotion alone
    state_chars = {
        c for s, e, tag in sample.target_spans if tag == "state" for c in range(s, e)
    } & set(range(start, end))
    target = tokenizer(sample.target + "<|im_end|>\n", add_special_tokens=False,
                       return_offsets_mapping=True)  # fmt: skip
    first = len(plain.ids) - len(target["input_ids"])
    touching = {
        first + i
        for i, (a, b) in enumerate(target["offset_mapping"])
        if state_chars & set(range(a, max(b, a + 1)))
    }
    assert set(differing) == touching


# ---------------------------------------------------------------------------- change share


def _change_index(changes: int, others: int) -> SampleIndex:
    n = changes + others
    corpora = ["a" if i % 2 else "b" for i in range(n)]
    index = SampleIndex(
        Path("train.jsonl"), list(range(n)), [f"s{i}" for i in range(n)], corpora, [False] * n
    )
    index.changed.extend([i < changes for i in range(n)])
    return index


@pytest.mark.parametrize("mix", ["proportional", "uniform"])
def test_change_share_is_met_within_tolerance_and_seeded(mix):
    # Catches: draws that ignore the share, or a draw order that is not reproducible.
    index = _change_index(40, 360)
    pool: dict[str, list[int]] = {}
    for position, corpus in enumerate(index.corpora):
        pool.setdefault(corpus, []).append(position)
    for share in (0.5, 0.8):
        draws = list(
            islice(draw_order(pool, mix, 7, change_share=share, changed=index.changed), 4000)
        )
        got = sum(index.changed[d] for d in draws) / len(draws)
        assert abs(got - share) < 0.03, (share, got)
        again = draw_order(pool, mix, 7, change_share=share, changed=index.changed)
        assert list(islice(again, 4000)) == draws
    unbalanced = list(islice(draw_order(pool, mix, 7), 4000))
    assert abs(sum(index.changed[d] for d in unbalanced) / 4000 - 0.1) < 0.03
    with pytest.raises(InputError, match="--change-share"):
        next(draw_order(pool, mix, 7, change_share=0.5, changed=[False] * len(index)))


def test_the_index_marks_change_samples(samples_dir):
    # Catches: an index whose change flags disagree with changed_fields.
    index = index_samples(samples_dir / "train.jsonl")
    rows = [json.loads(line) for line in (samples_dir / "train.jsonl").read_text().splitlines()]
    from cogwm.simulator.samples import parse_sample

    expected = [bool(changed_fields(parse_sample(json.dumps(r)))) for r in rows]
    assert index.changed == expected and 0 < sum(expected) < len(expected)


# ---------------------------------------------------------------------------- run hash


def test_the_options_enter_the_run_hash_only_when_set():
    # Catches: a default option in the hash (every earlier checkpoint refused on resume).
    config = TrainConfig(samples=Path("s"), base="b", out=Path("o"))
    assert config.run_hash("m") == "1b0d35fe97c8583a"  # the hash before these options existed
    hashes = {
        config.model_copy(update={name: value}).run_hash("m")
        for name, value in (
            ("state_dropout", 0.2),
            ("state_corruption", 0.2),
            ("change_weight", 2.0),
            ("change_share", 0.5),
        )
    }
    assert len(hashes) == 4 and config.run_hash("m") not in hashes
    with pytest.raises(ValueError, match="must not exceed 1"):
        TrainConfig(
            samples=Path("s"), base="b", out=Path("o"), state_dropout=0.6, state_corruption=0.5
        )
    assert StateOptions().key() == "" and StateOptions(dropout=0.1).key()


# ---------------------------------------------------------------------------- the command


def test_a_run_with_the_options_records_them_and_what_it_drew(samples_dir, base, tmp_path, capsys):
    # Catches: options that never reach the run (card), or a card that hides what was drawn.
    out = tmp_path / "adapter"
    options = ["--state-dropout", "0.5", "--state-corruption", "0.25", "--change-weight", "2",
               "--change-share", "0.5"]  # fmt: skip
    common = ["train", "--samples", samples_dir, "--base", base, "--max-steps", "4",
              "--batch-tokens", "800", "--threads", "1", "--quiet",
              "--val-samples", "0"]  # fmt: skip
    assert cogwm(*common, "--out", out, *options) == 0, capsys.readouterr().err
    card = json.loads((out / "training_card.json").read_text())
    hyper = card["hyperparameters"]
    assert (hyper["state_dropout"], hyper["state_corruption"]) == (0.5, 0.25)
    assert (hyper["change_weight"], hyper["change_share"]) == (2.0, 0.5)
    data = card["data"]
    assert sum(data["state_views"].values()) == data["samples_used"]
    assert data["state_views"]["hidden"] and data["state_views"]["corrupted"]
    assert data["seen"]["change_share"] is not None and data["pool"]["change_share"] is not None
    capsys.readouterr()
    for bad, name in (
        (["--state-dropout", "0.7", "--state-corruption", "0.5"], "--state-corruption"),
        (["--change-weight", "0"], "--change-weight"),
        (["--change-share", "1.5"], "--change-share"),
    ):
        assert cogwm(*common, "--out", tmp_path / name, *bad) == 2
        err = capsys.readouterr().err
        assert name in err and len(err.strip().splitlines()) == 1, err


# ---------------------------------------------------------------------------- FailedESConv


def test_failedesconv_samples_never_reach_the_known_groups_half(real_data_dir, tmp_path, capsys):
    # Catches: a held-out FailedESConv dialogue (scored by the known-groups check) in train or
    # val, or a hold-out smaller than half the corpus.
    from cogwm.annotate.human import labelled_dialogues
    from cogwm.simulator.splits import base_id, failed_esconv_holdout
    from cogwm.validate.items import held_out, heldout_from_manifest

    out = tmp_path / "samples"
    code = cogwm("samples", "build", "--human", "failedesconv", "--data-dir", real_data_dir,
                 "--out", out, "--json")  # fmt: skip
    assert code == 0, capsys.readouterr().err
    trained = {
        json.loads(line)["dialogue_id"]
        for split in ("train", "val")
        for line in (out / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
    }
    labelled = list(labelled_dialogues("failed_esconv", real_data_dir))
    scored, _ = held_out("failed_esconv", labelled, heldout_from_manifest(out / "manifest.json"))
    scored_ids = {base_id(item.dialogue.id) for item in scored}
    assert trained and len(scored_ids) >= len(labelled) / 2
    assert not {base_id(i) for i in trained} & scored_ids
    held = set(failed_esconv_holdout([item.dialogue for item in labelled], 0))
    assert held <= scored_ids


def test_the_readme_candidate_run_parses_with_the_options_set():
    # Catches: a documented option cogwm train does not have, or a value it refuses.
    import shlex

    import typer

    from cogwm.cli.train import app as train_app

    readme = Path(__file__).resolve().parents[1] / "README.md"
    text = readme.read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [
        x for x in text.splitlines() if x.startswith("cogwm train ") and "--change-share 0" in x
    ]
    assert len(lines) == 1
    command = typer.main.get_command(train_app)
    context = command.make_context("train", shlex.split(lines[0])[2:])
    params = {k: v for k, v in context.params.items() if k in TrainConfig.model_fields}
    config = TrainConfig(**params)
    assert config.state_dropout > 0 and config.state_corruption > 0
    assert config.change_weight != 1 and config.change_share is not None


def test_simulate_shows_a_trained_on_prompt_with_the_states_hidden():
    # Catches: an inference switch whose prompt differs from the one state dropout trains on,
    # or from the one WorldModelInput(states_hidden=True) builds.
    from cogwm.simulator.samples import turn_inputs
    from cogwm.simulator.simulate import ablated_messages
    from cogwm.simulator.train.states import hide_states

    item = _dialogue("esconv", 0)
    task = task_for_corpus("esconv")
    samples = [b.sample for b in dialogue_samples(item, "train")]
    for sample, turn in zip(samples, turn_inputs(item, task=task), strict=True):
        hidden = ablated_messages(sample, "states_hidden")
        assert hidden == hide_states(sample).messages
        built = turn.input.model_copy(update={"states_hidden": True})
        assert hidden == build_messages(built, task)


def test_the_same_options_and_seed_train_the_same_weights(samples_dir, base, tmp_path, capsys):
    # Catches: a state view or donor that depends on anything but the seed and the sample ids
    # (dict order, the encoding cache, the time), which would also break resuming.
    from safetensors.torch import load_file

    args = ["train", "--samples", samples_dir, "--base", base, "--max-steps", "3",
            "--batch-tokens", "800", "--threads", "1", "--quiet", "--val-samples", "0",
            "--state-dropout", "0.3", "--state-corruption", "0.3", "--change-weight", "3",
            "--change-share", "0.7", "--seed", "5"]  # fmt: skip
    weights = []
    for name in ("a", "b"):
        assert cogwm(*args, "--out", tmp_path / name) == 0, capsys.readouterr().err
        weights.append(load_file(str(tmp_path / name / "adapter_model.safetensors")))
    assert weights[0].keys() == weights[1].keys()
    assert all(weights[0][k].equal(weights[1][k]) for k in weights[0])
