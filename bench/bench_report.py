"""Benchmark of ``cogwm arena report``: reading stored metrics against computing them again.

Runs 1,000 conversations of 10 simulated turns on the arena benchmark's scripted fake model
(ESC, 20 built-in scenarios, 50 agents) into a store, copies the store and deletes the stored
trajectory metrics from the copy (GoodOutcome stays), so that the reader has to compute them from
the stored states, as a store written before the metrics were stored is read. Then it times the
report's steps on both (reading the run, the tables with their bootstrap, the JSON) and prints
the ratios, and checks that both stores give byte-identical ``arena report --json`` output.

Usage: python bench/bench_report.py [--conversations 1000] [--resamples 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from bench_web import make_store
from cogwm.arena.scoring import CONVERSATION_METRICS
from cogwm.report import build_report, load_run, to_json
from cogwm.store import RunStore


def strip_metrics(source: Path, target: Path) -> int:
    """A copy of ``source`` at ``target`` without the stored trajectory metrics; rows deleted."""
    shutil.copyfile(source, target)
    names = ",".join("?" * len(CONVERSATION_METRICS))
    with sqlite3.connect(target) as db:
        deleted = db.execute(
            f"DELETE FROM metrics WHERE name IN ({names})", CONVERSATION_METRICS
        ).rowcount
    return int(deleted)


def timed_report(db: Path, resamples: int) -> tuple[float, float, str]:
    """CPU seconds to read the run (``load_run``) and to build the report's tables and JSON
    from it (``arena report --json`` without the process start), and the JSON text. CPU time,
    not wall time: the figures hold on a machine shared with other work."""
    with RunStore(db, read_only=True) as store:
        start = time.process_time()
        data = load_run(store)
        read = time.process_time() - start
    start = time.process_time()
    text = json.dumps(to_json(build_report(data, n_resamples=resamples, seed=0)), indent=2)
    return read, time.process_time() - start, text


def best_of(db: Path, resamples: int, repeats: int) -> tuple[float, float, str]:
    """The fastest read and the fastest report of ``repeats`` tries, and the JSON."""
    tries = [timed_report(db, resamples) for _ in range(repeats)]
    return min(t[0] for t in tries), min(t[0] + t[1] for t in tries), tries[-1][2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stored, computed = Path(tmp) / "stored.sqlite", Path(tmp) / "computed.sqlite"
        build_s = make_store(stored, args.conversations)
        deleted = strip_metrics(stored, computed)
        timed_report(stored, 10)  # warm-up: the statistics libraries load on first use
        read_stored, total_stored, json_stored = best_of(stored, args.resamples, args.repeats)
        read_computed, total_computed, json_computed = best_of(
            computed, args.resamples, args.repeats
        )
    print(f"run: {args.conversations} conversations in {build_s:.1f} s; {deleted} rows deleted")
    print(
        f"read the run (CPU s, best of {args.repeats}): stored {read_stored:.3f} s, computed "
        f"{read_computed:.3f} s -> computed/stored = {read_computed / read_stored:.2f}"
    )
    print(
        f"report --json (CPU s, {args.resamples} resamples, best of {args.repeats}): stored "
        f"{total_stored:.3f} s, computed {total_computed:.3f} s -> computed/stored = "
        f"{total_computed / total_stored:.2f}"
    )
    print(f"byte-identical JSON: {'yes' if json_stored == json_computed else 'NO'}")


if __name__ == "__main__":
    main()
