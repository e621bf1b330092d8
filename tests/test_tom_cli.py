"""``cogwm tom``: the whole pipeline through the command line on fixtures and the fake backend."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cogwm.cli.tom import app
from cogwm.errors import InputError
from cogwm.tom.items import read_items
from cogwm.tom.templates import DROP_NOT_MOST_CONSISTENT
from helpers_cli import cogwm
from helpers_tom import tom_data_dir

SRC = Path(__file__).resolve().parents[1] / "src"
runner = CliRunner()


def _json(*args: str) -> Any:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory, fixtures_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("tom-cli")
    tom_data_dir(root / "data", fixtures_dir)
    return root


def test_contexts(workdir: Path) -> None:
    out = _json("contexts", "--data-dir", str(workdir / "data"), "--out", str(workdir / "c.jsonl"))
    by_corpus = {row["corpus"]: row for row in out["corpora"]}
    # 3 AnnoMI sessions of 20 utterances x 40 words = 800 words -> 4 windows of 200 words each
    assert (by_corpus["annomi"]["sessions"], by_corpus["annomi"]["contexts"]) == (3, 12)
    assert by_corpus["annomi"]["with_prospective"] == 9
    assert out["max_words"] == 200
    lines = (workdir / "c.jsonl").read_text().splitlines()
    assert len(lines) == out["total"] and json.loads(lines[0])["id"] == "annomi:0#w0@200"
    assert json.loads(lines[0])["kind"] == "bounded"
    # the earlier greedy rule: 5 windows of 160 words each, ids without the ceiling
    greedy = _json("contexts", "--data-dir", str(workdir / "data"), "--max-words", "0")
    by_corpus = {row["corpus"]: row for row in greedy["corpora"]}
    assert by_corpus["annomi"]["contexts"] == 15 and greedy["max_words"] is None


def test_contexts_refuse_a_ceiling_under_150_words(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cogwm("tom", "contexts", "--data-dir", str(workdir / "data"), "--max-words", "120")
    assert code == 2
    assert "--max-words must be 0 (greedy rule) or at least 150" in capsys.readouterr().err


def test_pipeline_end_to_end(workdir: Path) -> None:
    data, items = str(workdir / "data"), workdir / "items.jsonl"
    bounded = _json("build", "--corpus", "all", "--source", "template", "--out", str(items),
                    "--data-dir", data)  # fmt: skip
    counts = {(c["domain"], c["task"]): c["items"] for c in bounded["counts"]}
    assert counts[("MI", "retrospective")] == 12
    # the fixture's 200-word windows open alike: every MI prospective gold ties a distractor
    assert ("MI", "prospective") not in counts
    assert bounded["dropped"][f"annomi_talk_type: {DROP_NOT_MOST_CONSISTENT}"] == 9
    assert {w["corpus"]: w["contexts"] for w in bounded["windows"]}["annomi"] == 12
    # the rest of the pipeline runs on the greedy windows, which give prospective items here
    built = _json("build", "--corpus", "all", "--source", "template", "--out", str(items),
                  "--data-dir", data, "--max-words", "0")  # fmt: skip
    counts = {(c["domain"], c["task"]): c["items"] for c in built["counts"]}
    assert counts[("MI", "retrospective")] == 15 and counts[("MI", "prospective")] == 12
    assert counts[("ESC", "retrospective")] == 4  # the ESConv fixture has 4 sessions

    llm = workdir / "llm.jsonl"
    generated = _json("build", "--corpus", "annomi", "--source", "llm", "--model", "fake:schema",
                      "--limit", "2", "--out", str(llm), "--data-dir", data)  # fmt: skip
    assert generated["items"] > 0
    assert all(i.provenance.generator_model == "fake:schema" for i in read_items(llm))

    variants = workdir / "variants.jsonl"
    made = _json("variants", str(items), "--out", str(variants), "--easy", "--degrade", "2",
                 "--open", "--counterfactual", "--model", "fake:schema", "--with-base")  # fmt: skip
    kinds = {c["variant"] for c in made["counts"]}
    assert kinds == {"base", "easy", "degraded", "open", "counterfactual"}  # template: "base"
    all_items = read_items(variants)

    export = workdir / "verify.csv"
    result = runner.invoke(app, ["verify-export", str(variants), "--out", str(export)])
    assert result.exit_code == 0, result.output
    exported = list(csv.DictReader(export.open(encoding="utf-8")))
    assert len(exported) == len(all_items)
    votes = workdir / "votes.csv"
    with votes.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "worker", "label"])
        for k, row in enumerate(exported[:6]):
            for worker in ("w1", "w2", "w3"):
                writer.writerow([row["item_id"], worker, "valid" if k % 3 else "invalid"])
    kept_path = workdir / "kept.jsonl"
    verified = _json("verify", str(variants), "--votes", str(votes), "--out", str(kept_path))
    assert verified["kept"] == 4 and len(read_items(kept_path)) == 4

    db = str(workdir / "runs.sqlite")
    evaluated = _json("eval", str(variants), "--model", "fake:schema", "--db", db)
    assert evaluated["answered"] == len(all_items) and evaluated["failed"] == 0
    assert evaluated["paths"]["logits"] + evaluated["paths"]["generated"] == len(all_items)
    assert {r["variant"] for r in evaluated["rates"]} == {
        "base", "easy", "degraded", "counterfactual"
    }  # fmt: skip
    again = runner.invoke(app, ["eval", str(variants), "--model", "fake:schema", "--db", db])
    assert again.exit_code != 0  # an existing run needs --resume
    resumed = _json("eval", str(variants), "--model", "fake:schema", "--db", db, "--resume")
    assert (resumed["answered"], resumed["skipped"]) == (0, len(all_items))

    injected = _json("eval", str(items), "--model", "fake:schema", "--db", db, "--limit", "10",
                     "--inject-from", "fake:echo")  # fmt: skip
    assert injected["answered"] == 10

    scored = runner.invoke(app, ["score-open", "--db", db, "--no-embed", "--judge", "fake:schema"])
    assert scored.exit_code == 0, scored.output

    stats = _json("stats", "--db", db)
    assert stats["answers"] == len(all_items) - made_open(all_items) + 10
    assert stats["table3_rates"] and stats["table6_easy_hard"] and stats["degradation"]
    assert stats["table7_counterfactual"] and stats["table8_injection"]
    (open_row, *_) = stats["open_ended"]
    assert open_row["rouge_l"] is not None and 1 <= open_row["agreement"] <= 3
    csv_dir = workdir / "tables"
    result = runner.invoke(app, ["stats", "--db", db, "--csv", str(csv_dir)])
    assert result.exit_code == 0, result.output
    assert (csv_dir / "table3_rates.csv").is_file() and (csv_dir / "table8_injection.csv").is_file()
    table = runner.invoke(app, ["stats", "--db", db])
    assert table.exit_code == 0 and "Table 3" in table.stdout and "Table 8" in table.stdout


def made_open(items: list[Any]) -> int:
    """Open-ended items (answered as text, so not in the multiple-choice answer count)."""
    return sum(i.variant.value == "open" for i in items)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "cogwm.cli.main", "tom", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_bad_item_file_is_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "q1", "options": ["a", "a"]}) + "\n")
    result = _cli("eval", str(bad), "--model", "fake:schema", "--db", str(tmp_path / "r.sqlite"))
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {bad}:1: item 'q1':")
    assert len(result.stderr.strip().splitlines()) == 1


def test_usage_errors(tmp_path: Path) -> None:
    result = _cli("build", "--source", "llm", "--out", str(tmp_path / "x.jsonl"))
    assert result.returncode == 2 and "--source llm needs --model" in result.stderr
    result = _cli("stats", "--db", str(tmp_path / "missing.sqlite"))
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_eval_circular_reports_plain_and_circular_rates(tmp_path: Path) -> None:
    from cogwm.tom.items import write_items
    from helpers_tom import mc_item

    items = tmp_path / "items.jsonl"
    write_items(items, [mc_item(f"x:{k}#w0:retro:t") for k in range(6)])
    db = str(tmp_path / "runs.sqlite")
    out = _json("eval", str(items), "--model", "fake:schema", "--db", db, "--circular")
    assert out["rotated"] == 6 and out["answered"] == 6
    (row,) = out["circular"]
    assert row["n"] == 6 and row["circular"] <= row["plain"]
    assert out["position_bias"][0]["answers"] == 6 * 4
    stats = _json("stats", "--db", db)
    assert stats["circular"] == out["circular"]


def test_eval_injection_with_model_masking(tmp_path: Path) -> None:
    from cogwm.tom.items import write_items
    from cogwm.tom.store import ToMStore
    from helpers_tom import mc_item

    items = tmp_path / "items.jsonl"
    write_items(items, [mc_item(f"x:{k}#w0:retro:t") for k in range(3)])
    db = tmp_path / "runs.sqlite"
    out = _json("eval", str(items), "--model", "fake:schema", "--db", str(db),
                "--inject-from", "fake:echo", "--mask-with", "fake:schema")  # fmt: skip
    assert out["answered"] == 3
    with ToMStore(db) as store:
        masks = store.masks("fake:echo", 0, "fake:schema")
        conditions = {a.condition for a in store.scored_answers()}
    assert len(masks) == 3 and {path for _, path in masks.values()} <= {"model", "model+regex"}
    assert conditions == {"injected:fake:echo|masked-by:fake:schema"}
    bad = runner.invoke(app, ["eval", str(items), "--model", "fake:schema", "--db", str(db),
                              "--mask-with", "fake:schema"])  # fmt: skip
    assert isinstance(bad.exception, InputError) and "--inject-from" in str(bad.exception)


def test_compare_puts_three_models_in_one_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    from cogwm import models
    from cogwm.cli.tom import COMPARE_OPENAI_ENV, compare_models
    from cogwm.models.types import BackendReply, Message
    from cogwm.tom.items import write_items
    from helpers_tom import mc_item

    def knows(messages: list[Message]) -> BackendReply:
        letter = re.search(r"^([A-Z])\. yes$", messages[-1].content, re.MULTILINE)
        assert letter
        return BackendReply(text=letter.group(1), candidate_logprobs={letter.group(1): -0.1})

    items = tmp_path / "items.jsonl"
    write_items(items, [mc_item(f"x:{k}#w0:retro:t") for k in range(8)])
    models.register_fake("tom-knows", knows)
    models.register_fake("tom-says-z", lambda _m: BackendReply(text="Z"))  # never parsed
    try:
        out = _json("compare", str(items), "--db", str(tmp_path / "c.sqlite"),
                    "--model", "fake:tom-knows", "--model", "fake:tom-says-z",
                    "--model", "fake:schema")  # fmt: skip
    finally:
        models.unregister_fake("tom-knows")
        models.unregister_fake("tom-says-z")
    (row,) = out["cross_model"]
    assert (row["domain"], row["task"], row["n_items"]) == ("MI", "retrospective", 8)
    assert set(row["rates"]) == {"fake:tom-knows", "fake:tom-says-z", "fake:schema"}
    assert row["rates"]["fake:tom-knows"] == 1.0 and row["rates"]["fake:tom-says-z"] == 0.0
    assert row["random"] == 0.25

    monkeypatch.setenv(COMPARE_OPENAI_ENV, "my-model")
    default = compare_models(None)
    assert default[0] == "llamacpp:smollm2" and default[2] == "openai:my-model"
    assert "gemma" in default[1]  # the alias, or the file the chunk package assembles
    monkeypatch.delenv(COMPARE_OPENAI_ENV)
    assert len(compare_models(None)) == 2 and compare_models(["fake:a"]) == ["fake:a"]
