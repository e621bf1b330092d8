"""The transition model's training rows on the real corpora: only the samples' train split,
never a known-groups hold-out dialogue, never a counterfactual-bank or scripted-agent line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cogwm.annotate.human import labelled_dialogues
from cogwm.simulator.build import Source, build_samples
from cogwm.simulator.splits import base_id, failed_esconv_holdout
from cogwm.simulator.transition import fit
from cogwm.simulator.transition.fit import excluded_lines, split_turns, training_rows

CORPORA = ("esconv", "failed_esconv", "persuasionforgood", "annomi")


@pytest.fixture(scope="module")
def samples(real_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("transition") / "samples"
    build_samples(
        out, [Source("human", c) for c in CORPORA], data_dir=real_data_dir,
        count_tokens=lambda _: {},
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def rows(samples: Path, real_data_dir: Path) -> tuple[list[fit.Row], dict[str, Any]]:
    return training_rows(samples, real_data_dir)


def test_rows_are_train_turns_and_never_a_bank_or_script_line(
    samples: Path, real_data_dir: Path, rows: tuple[list[fit.Row], dict[str, Any]]
) -> None:
    found, summary = rows
    assert set(summary["rows_by_corpus"]) == set(CORPORA)
    train = split_turns(samples, "train")
    held = split_turns(samples, "val") | split_turns(samples, "test")
    ids = {(r.id.rsplit(":", 1)[0], int(r.id.rsplit(":", 1)[1])) for r in found}
    assert ids <= train and not ids & held
    failed = [ld.dialogue for ld in labelled_dialogues("failed_esconv", real_data_dir)]
    holdout = set(failed_esconv_holdout(failed, 0))
    assert holdout and not {base_id(d) for d, _ in ids} & holdout
    forbidden = excluded_lines()
    assert not [r.id for r in found if r.view.agent.strip() in forbidden]
    assert not [r.id for r in found if r.view.user.strip() in forbidden]


def test_a_bank_line_among_the_turns_is_dropped_and_counted(
    samples: Path,
    real_data_dir: Path,
    rows: tuple[list[fit.Row], dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found, _ = rows
    line = next(r.view.agent for r in found if r.corpus == "persuasionforgood" and r.view.agent)
    monkeypatch.setattr(fit, "excluded_lines", lambda: frozenset({line.strip()}))
    kept, summary = training_rows(samples, real_data_dir)
    assert summary["dropped_bank_or_script_lines"] >= 1
    assert len(kept) == len(found) - summary["dropped_bank_or_script_lines"]
    assert all(r.view.agent != line for r in kept)


def _normalised(text: str) -> str:
    return " " + " ".join(re.findall(r"[a-z0-9']+", text.lower())) + " "


def test_no_bank_or_script_line_occurs_in_the_training_samples_or_rows(
    samples: Path, rows: tuple[list[fit.Row], dict[str, Any]]
) -> None:
    """The counterfactual bank's and the scripted agents' lines (the arena-sensitivity check's
    and the quickstart's dismissive control's) never occur, even inside a longer turn, in what
    either simulator trains on: the samples' train.jsonl (the LoRA's data) and the transition
    model's rows."""
    forbidden = {_normalised(line) for line in excluded_lines()}
    assert len(forbidden) > 100  # the bank and the scripts were found
    found, _ = rows
    turns = [_normalised(t) for r in found for t in (r.view.agent, r.view.user)]
    with (samples / "train.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            texts = [m["content"] for m in record["messages"]] + [record["target"]]
            turns += [_normalised(t) for t in texts]
    assert len(turns) > 10_000
    text = "\n".join(turns)
    assert not [line for line in forbidden if line in text]
