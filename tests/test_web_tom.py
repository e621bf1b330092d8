"""`cogwm view --tom-db`: the DialToM report, checked by parsing what it writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogwm.tom.items import Task, write_items
from cogwm.tom.stats import store_stats
from cogwm.tom.store import open_store
from cogwm.web.page import unpack
from cogwm.web.tom_page import tom_html
from helpers_tom import mc_item
from helpers_web import XSS, Page, cogwm, external_references


@pytest.fixture()
def tom_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    items = [mc_item(f"x:{k}#w0:retro:t") for k in range(5)]
    items += [mc_item(f"x:{k}#w0:prosp:t", task=Task.PROSPECTIVE) for k in range(4)]
    items.append(
        mc_item("x:9#w0:retro:t", question=XSS[1], options=[XSS[0], "no", "maybe"], gold="no")
    )
    path = tmp_path / "items.jsonl"
    write_items(path, items)
    db = tmp_path / "tom.sqlite"
    assert cogwm("tom", "eval", str(path), "--model", "fake:schema", "--db", str(db)) == 0
    return db


def test_rates_and_every_answer(tom_db: Path) -> None:
    with open_store(tom_db, must_exist=True) as store:
        html = tom_html(store)
        report = store_stats(store)
        answers = store.answers()
        items = store.items()
    assert external_references(html) == []
    page = Page(html)
    shown = {
        (a["data-model"], a["data-domain"], a["data-task"]): a
        for a in page.find("tr")
        if a.get("data-task") and a.get("data-model")
    }
    assert len(shown) == len(report.table3_rates) >= 2
    rates = [float(a["data-value"] or "nan") for a in page.find("td", data_metric="rate")]
    assert rates[: len(report.table3_rates)] == [r.rate for r in report.table3_rates]
    blob = next(t for a, t in page.scripts if a.get("id") == "cogwm-data")
    data = unpack(blob.strip())
    assert [(a["run"], a["item"]) for a in data["answers"]] == [
        (a.run_id, a.item_id) for a in answers
    ]
    for shown_answer, stored in zip(data["answers"], answers, strict=True):
        item = items[stored.item_id]
        record = data["items"][stored.item_id]
        assert record["options"] == item.options and record["gold"] == item.gold
        # The letter the gold was shown under is the stored gold letter.
        gold_letter = next(k for k, i in shown_answer["shown"] if i == item.gold_index)
        assert gold_letter == stored.gold_letter
        assert shown_answer["path"] == stored.path and shown_answer["raw"] == stored.raw
    assert "__pwned" not in html


def test_cli(tom_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tom.html"
    assert cogwm("view", "--tom-db", str(tom_db), "--out", str(out)) == 0
    assert "DialToM" in out.read_text()
    assert cogwm("view", "--tom-db", str(tmp_path / "none.sqlite"), "--out", str(out)) == 2
    assert "does not exist" in capsys.readouterr().err


def test_interval_marks_rate_interval_and_baselines() -> None:
    from cogwm.tom.stats import RateRow
    from cogwm.web.tom_page import interval_svg

    row = RateRow(
        n=10, correct=6, unparsed=0, rate=0.6, ci_low=0.3, ci_high=0.85, baseline=0.25,
        model="m", domain="MI", majority=0.5,
    )  # fmt: skip
    svg = str(interval_svg(row, width=108))
    # x = 4 + value * 100 on a 108-pixel strip.
    assert 'cx="64.0"' in svg and 'x1="34.0" x2="89.0"' in svg
    assert 'x1="29.0" x2="29.0"' in svg and 'x1="54.0" x2="54.0"' in svg
    assert "stroke-dasharray" in svg
