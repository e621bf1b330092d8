"""Benchmark of ``cogwm arena run --dry-run`` at the size bounds, printing every figure and ratio
from one run.

The dry run plans every conversation to ``max_rounds`` and sizes every call's history window, so
its cost grows with the rounds; it must stay linear in them. Each case writes a config (the
example ESC arena: three agents, two conditions, the built-in scenarios, the base model's
context) and runs the real command in a child process under ``/usr/bin/time -v``, which gives
the wall time and the peak memory (maximum resident set size).

1. ``max_rounds`` = 100 and = the bound (``cogwm.limits.MAX_ROUNDS``): the ratio of their times
   over the ratio of their rounds is about 1 for a linear plan (a quadratic one gives about the
   ratio of rounds). Target: the run at the bound under 5 s and 1 GB.
2. The bound on rounds and on ``trials`` together (the trials of one arm are planned once).
   Target: under 5 s and 1 GB.
3. ``--corpus-scenarios N``: N ESConv cold starts (``scenarios = "corpus"``) at the bound on
   rounds, from ``--data-dir`` (or ``$COGWM_DATA_DIR``); the plan is linear in scenarios too.

Usage: python bench/bench_dry_run.py [--corpus-scenarios N] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from cogwm.limits import MAX_ROUNDS, MAX_TRIALS

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "arena_esc.toml"
TIME = "/usr/bin/time"


class Measure(NamedTuple):
    """One dry run: its wall time and peak memory."""

    seconds: float
    peak_mb: float


def _config(folder: Path, name: str, **settings: object) -> Path:
    """The example config with some top-level keys set."""
    text = EXAMPLE.read_text(encoding="utf-8")
    for key, value in settings.items():
        line = f"{key} = {value!r}".replace("'", '"')
        pattern = rf"^{key} = .*$"
        if re.search(pattern, text, flags=re.MULTILINE):
            text = re.sub(pattern, line, text, count=1, flags=re.MULTILINE)
        else:
            text = text.replace("[simulator]", f"{line}\n\n[simulator]", 1)
    path = folder / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _dry_run(config: Path, *extra: str) -> Measure:
    """Run the dry run under ``/usr/bin/time -v``; its wall time and peak memory."""
    command = [TIME, "-v", sys.executable, "-m", "cogwm.cli.main", "arena", "run"]
    done = subprocess.run(
        [*command, str(config), "--dry-run", *extra], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"dry run of {config.name} failed:\n{done.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    if wall is None or peak is None:
        raise SystemExit(f"{TIME} -v printed no wall time or peak memory")
    hours, minutes, seconds = wall.groups()
    total = int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
    return Measure(total, int(peak.group(1)) / 1024)


def _show(label: str, measure: Measure, *, target: bool) -> None:
    verdict = ""
    if target:
        ok = measure.seconds < 5 and measure.peak_mb < 1024
        verdict = "  (target < 5 s, < 1 GB: " + ("met)" if ok else "MISSED)")
    print(f"{label:<44} {measure.seconds:7.2f} s {measure.peak_mb:8.0f} MB{verdict}")


def main() -> None:
    """Run the cases and print their figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus-scenarios", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=os.environ.get("COGWM_DATA_DIR"))
    args = parser.parse_args()
    if not Path(TIME).is_file():
        raise SystemExit(f"{TIME} is needed (GNU time) to measure peak memory")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        short = _dry_run(_config(folder, "short", max_rounds=100))
        long = _dry_run(_config(folder, "long", max_rounds=MAX_ROUNDS))
        both = _dry_run(_config(folder, "both", max_rounds=MAX_ROUNDS, trials=MAX_TRIALS))
        _show("max_rounds = 100", short, target=False)
        _show(f"max_rounds = {MAX_ROUNDS}", long, target=True)
        _show(f"max_rounds = {MAX_ROUNDS}, trials = {MAX_TRIALS}", both, target=True)
        # Process start-up (imports) is in both times; the ratio still tells linear from
        # quadratic: about 1 or below for linear, about the ratio of rounds for quadratic.
        ratio = (long.seconds / short.seconds) / (MAX_ROUNDS / 100)
        print(f"time ratio / rounds ratio ({MAX_ROUNDS} vs 100 rounds): {ratio:.2f}")
        if args.corpus_scenarios:
            if args.data_dir is None:
                raise SystemExit("--corpus-scenarios needs --data-dir or $COGWM_DATA_DIR")
            corpus = _config(
                folder,
                "corpus",
                max_rounds=MAX_ROUNDS,
                dialogues_per_task=args.corpus_scenarios,
                scenarios="corpus",
                scenario_split="all",
            )
            measure = _dry_run(corpus, "--data-dir", str(args.data_dir))
            label = f"{args.corpus_scenarios} ESConv scenarios, {MAX_ROUNDS} rounds"
            _show(label, measure, target=False)


if __name__ == "__main__":
    main()
