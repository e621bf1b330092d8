"""Benchmark of ``cogwm view``: size and time of the HTML report of a large run.

Runs 1,000 conversations of 10 simulated turns on the arena benchmark's scripted fake model
(ESC, 20 built-in scenarios, 50 agents), then writes the report and prints its size, the time to
write it and the share of that spent on the cross-task figure, and, where Debian's chromium is
installed, the time until the page has decoded its data and drawn the first page of the
conversation list (headless, one cold start of the browser included, so it is an upper bound).

Usage: python bench/bench_web.py [--conversations 1000] [--resamples 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench_arena import FAKE, _reply, concurrency_config
from cogwm.arena.config import parse_config
from cogwm.arena.runner import run_arena
from cogwm.models import register_fake
from cogwm.report import load_run
from cogwm.store import RunStore
from cogwm.web.figures import cross_task_figure
from cogwm.web.page import write_report

BROWSER_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def make_store(path: Path, conversations: int) -> float:
    """The run on the fake model; returns seconds."""
    register_fake(FAKE, _reply)
    config = parse_config(concurrency_config(conversations, 100, 0.0), source="bench")
    start = time.perf_counter()
    with RunStore(path) as store:
        asyncio.run(run_arena(config, store, show_progress=False))
    return time.perf_counter() - start


def browser_seconds(html: Path, folder: Path) -> float | None:
    """Seconds for headless chromium to load the page and draw the conversation list."""
    browser = shutil.which("chromium")
    if browser is None:
        return None
    start = time.perf_counter()
    dom = subprocess.run(
        [
            browser,
            *BROWSER_FLAGS,
            f"--user-data-dir={folder / 'profile'}",
            "--virtual-time-budget=30000",
            "--dump-dom",
            html.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    elapsed = time.perf_counter() - start
    if 'data-ready="1"' not in dom:
        raise RuntimeError("the page did not finish drawing")
    return elapsed


def cross_task_seconds(db: Path, resamples: int) -> float:
    """Seconds to draw the cross-task mean trajectory (its bootstrap of Δ per agent dominates)."""
    with RunStore(db, read_only=True) as store:
        data = load_run(store)
    start = time.perf_counter()
    cross_task_figure(data, n_resamples=resamples)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db, out = folder / "run.sqlite", folder / "report.html"
        run_s = make_store(db, args.conversations)
        print(f"store: {args.conversations} conversations in {run_s:.1f}s")
        start = time.perf_counter()
        size = write_report(db, out, n_resamples=args.resamples)
        write_s = time.perf_counter() - start
        print(f"report: {size / 1e6:.2f} MB written in {write_s:.2f}s ({args.resamples} resamples)")
        figure_s = cross_task_seconds(db, args.resamples)
        print(f"of which the cross-task figure: {figure_s:.2f}s ({figure_s / write_s:.0%})")
        seconds = browser_seconds(out, folder)
        if seconds is None:
            print("browser: chromium not installed, load time not measured")
        else:
            print(f"browser: page decoded and first list page drawn in {seconds:.2f}s (cold start)")


if __name__ == "__main__":
    main()
