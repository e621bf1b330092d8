"""Benchmark of the report's CTS-GoodOutcome figures: what tau-b's and the discordant share's
scenario bootstraps cost next to one Table 6 column (the per-arm means of one metric, paired over
scenarios), for runs of 3 to 50 arms.

Each arm plays 20 scenarios once, with a random CTS and a random verdict per conversation, so tau
is defined and its interval is drawn (on a run where it is undefined nothing is resampled).
Prints CPU seconds of one scope (a task, or all tasks) and the ratio to one column.

Usage: python bench/bench_concordance.py [--resamples 2000] [--scenarios 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cogwm.stats.bootstrap import Settings
from cogwm.stats.concordance import tau_of_unit_means, two_by_two
from cogwm.stats.means import paired_means


def cpu_seconds(arms: int, scenarios: int, resamples: int) -> tuple[float, float, float]:
    """CPU seconds of tau-b, of the 2x2, and of one Table 6 column on the same conversations."""
    rng = np.random.default_rng(0)
    units = [f"arm{a}" for s in range(scenarios) for a in range(arms)]
    groups = [f"s{s}" for s in range(scenarios) for _ in range(arms)]
    cts = rng.standard_normal(len(units)).tolist()
    go = (rng.random(len(units)) < 0.5).tolist()
    settings = Settings(resamples=resamples, seed=0)
    start = time.process_time()
    tau = tau_of_unit_means(units, cts, [float(g) for g in go], groups, settings)
    tau_s = time.process_time() - start
    assert tau.ci is not None
    start = time.process_time()
    two_by_two(go, [c > 0 for c in cts], groups, settings)
    table_s = time.process_time() - start
    start = time.process_time()
    paired_means(zip(units, groups, cts, strict=True), n_resamples=resamples, seed=0)
    column_s = time.process_time() - start
    return tau_s, table_s, column_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--scenarios", type=int, default=20)
    args = parser.parse_args()
    cpu_seconds(3, 5, 10)  # warm-up: scipy loads on first use
    print(f"CPU s per scope, {args.resamples} resamples, {args.scenarios} scenarios")
    for arms in (3, 6, 12, 50):
        tau_s, table_s, column_s = cpu_seconds(arms, args.scenarios, args.resamples)
        print(
            f"{arms:>3} arms: tau {tau_s:.3f} s, 2x2 {table_s:.3f} s, one Table 6 column "
            f"{column_s:.3f} s -> (tau + 2x2) / column = {(tau_s + table_s) / column_s:.1f}"
        )


if __name__ == "__main__":
    main()
