"""``bench/bench_arena.py --targets``: its figures read back from text and JSON, the baseline
comparison's order and verdicts, and a bad ``--baseline`` as one line with exit 2. The benchmark
itself is never run here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from arena_targets import (
    BASELINE,
    CURRENT,
    BenchError,
    parse_targets_json,
    parse_targets_text,
    report,
    run_order,
    target_lines,
    targets_json,
)

BENCH = Path(__file__).resolve().parents[1] / "bench"

# The real output of `python bench/bench_arena.py --targets` (one run on a shared machine).
CAPTURED = """\
[1] 1000 conversations, 0 failed, 15000 turns, 11000 + 20 calls at 0 ms, concurrency 100
    ideal 0.00 s, actual 3.57 s -> ideal/actual = 0.00  (target >= 0.8)
    1,008,314 conversations/hour, 4,201 turns/s; 1.80 s of CPU -> 8,337 turns per CPU second
[1] 1000 conversations, 0 failed, 15000 turns, 11000 + 20 calls at 50 ms, concurrency 100
    ideal 5.55 s, actual 6.74 s -> ideal/actual = 0.82  (target >= 0.8)
    533,884 conversations/hour, 2,225 turns/s; 2.23 s of CPU -> 6,727 turns per CPU second
[1] 1000 conversations, 0 failed, 15000 turns, 11000 + 20 calls at 250 ms, concurrency 1000
    ideal 3.00 s, actual 4.48 s -> ideal/actual = 0.67  (target >= 0.8)
    804,140 conversations/hour, 3,351 turns/s; 1.91 s of CPU -> 7,834 turns per CPU second
target: turns per CPU second 8,337 (>= 6,000) ok
target: ideal/actual, 100 in flight, 50 ms 0.82 (>= 0.90) BELOW
target: ideal/actual, 1,000 in flight, 250 ms 0.67 (>= 0.80) BELOW
"""
FIGURES = {
    "turns_per_cpu_second": 8337.0,
    "ideal_actual_100_50ms": 0.82,
    "ideal_actual_1000_250ms": 0.67,
}


def test_the_text_parser_reads_the_three_figures_of_a_captured_output() -> None:
    # Catches: the thousands comma kept (float("8,337") fails) or read as a decimal point; a
    # label matched by prefix, so that the 50 ms line took the 250 ms figure; the "[1]" lines'
    # own "ideal/actual = 0.00" read as a target.
    assert parse_targets_text(CAPTURED) == FIGURES
    windows = CAPTURED.replace("\n", "\r\n")  # a baseline's output captured on Windows
    assert parse_targets_text(windows) == FIGURES


def test_a_missing_figure_is_named_not_taken_as_zero() -> None:
    # Catches: a target line the bench no longer prints read as 0 or silently left out.
    without = "\n".join(line for line in CAPTURED.splitlines() if "250 ms 0.67" not in line)
    with pytest.raises(BenchError, match=r"ideal/actual, 1,000 in flight, 250 ms"):
        parse_targets_text(without)
    with pytest.raises(BenchError, match="turns per CPU second"):
        parse_targets_text("Traceback (most recent call last):\n")


def test_the_bench_writes_what_the_parsers_read() -> None:
    # Catches: a label changed in the bench's lines but not in the parser (the next baseline
    # comparison would fail), and a JSON key or value lost between writer and reader.
    assert parse_targets_text("\n".join(target_lines(FIGURES))) == FIGURES
    precise = {key: value * 1.0001 for key, value in FIGURES.items()}
    assert parse_targets_json(targets_json(precise)) == precise
    with pytest.raises(BenchError):
        parse_targets_json('{"targets": {}}')


def test_the_runs_alternate_so_drift_hits_both_sides() -> None:
    # Catches: all baseline runs first (a machine getting busier would favour one side).
    b, c = BASELINE, CURRENT
    assert run_order(3) == [b, c, c, b, b, c]
    assert run_order(1) == [b, c]


def test_the_report_gives_medians_ratios_and_the_5_percent_verdict() -> None:
    # Catches: the mean instead of the median (one outlier run decides), the ratio inverted
    # (baseline / current), a verdict at 0.9 instead of 0.95, a 0 baseline divided by.
    b, c = BASELINE, CURRENT
    figures = {
        "turns_per_cpu_second": {b: [8000.0, 8000.0, 1.0], c: [7700.0, 7600.0, 9.0]},
        "ideal_actual_100_50ms": {b: [0.80, 0.80, 0.80], c: [0.75, 0.75, 0.75]},
        "ideal_actual_1000_250ms": {b: [0.0, 0.0, 0.0], c: [0.60, 0.60, 0.60]},
    }
    lines = report(figures)
    cpu, at_50ms, at_250ms = lines[1:4]
    assert cpu.split()[-4:] == ["8,000", "7,600", "0.950", "yes"]
    assert at_50ms.split()[-4:] == ["0.80", "0.75", "0.938", "NO"]
    assert at_250ms.split()[-2:] == ["undefined", "undefined"]
    assert "  turns per CPU second, current: 7,700, 7,600, 9" in lines  # every raw figure


def test_a_bad_baseline_revision_is_one_line_and_exit_2() -> None:
    # Catches: the git error surfacing as a traceback, or the bench starting its runs anyway.
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent / "src")}
    done = subprocess.run(
        [sys.executable, str(BENCH / "bench_arena.py"), "--targets", "--baseline", "no-such-rev"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: --baseline 'no-such-rev' is not a commit of this repository"
    ]
