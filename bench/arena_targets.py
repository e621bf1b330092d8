"""The arena's three orchestration-cost targets, and their comparison against a baseline commit.

``bench_arena.py --targets`` prints one ``target:`` line per target (and, with ``--json``, one
JSON object). ``bench_arena.py --targets --baseline REV`` exports REV's tree into a temporary
folder and runs the ``--targets`` of both trees alternately (baseline, current, current,
baseline, ...), each in a fresh process on its own ``src``, so that drift on a shared machine
hits both sides. It prints each side's median, the ratio current / baseline and whether the
current tree is within 5 % of the baseline, plus every raw figure.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 0.05  # the current tree may be at most 5 % worse than the baseline
BASELINE, CURRENT = "baseline", "current"


@dataclass(frozen=True)
class Target:
    """One cost target: its JSON key, its label on the ``target:`` line, its floor."""

    key: str
    label: str
    floor: float
    fmt: str


TARGETS = (
    Target("turns_per_cpu_second", "turns per CPU second", 6000.0, ",.0f"),
    Target("ideal_actual_100_50ms", "ideal/actual, 100 in flight, 50 ms", 0.9, ".2f"),
    Target("ideal_actual_1000_250ms", "ideal/actual, 1,000 in flight, 250 ms", 0.8, ".2f"),
)

# e.g. "target: ideal/actual, 100 in flight, 50 ms 0.82 (>= 0.90) BELOW"
_TARGET_LINE = re.compile(
    r"^target: (?P<label>.+) (?P<value>\d[\d,]*(?:\.\d+)?) \(>= [^)]*\) (?:ok|BELOW)\s*$",
    re.MULTILINE,
)


class BenchError(Exception):
    """A comparison that cannot go on: a bad revision, or a tree whose bench gave no figure."""


def target_lines(values: dict[str, float]) -> list[str]:
    """The ``target:`` lines of ``--targets`` (the format :func:`parse_targets_text` reads)."""
    lines = []
    for target in TARGETS:
        value = values[target.key]
        verdict = "ok" if value >= target.floor else "BELOW"
        lines.append(
            f"target: {target.label} {value:{target.fmt}} (>= {target.floor:{target.fmt}}) "
            f"{verdict}"
        )
    return lines


def targets_json(values: dict[str, float]) -> str:
    """The ``--targets --json`` object: each target's value, floor and verdict, by key."""
    return json.dumps(
        {
            "targets": {
                t.key: {
                    "label": t.label,
                    "value": values[t.key],
                    "floor": t.floor,
                    "ok": values[t.key] >= t.floor,
                }
                for t in TARGETS
            }
        }
    )


def parse_targets_text(text: str) -> dict[str, float]:
    """The three figures of a ``--targets`` text output, by key.

    Raises:
        BenchError: a target has no ``target:`` line in ``text``.
    """
    by_label = {m["label"]: float(m["value"].replace(",", "")) for m in _TARGET_LINE.finditer(text)}
    missing = [t.label for t in TARGETS if t.label not in by_label]
    if missing:
        raise BenchError(f"no 'target:' line for {', '.join(map(repr, missing))}")
    return {t.key: by_label[t.label] for t in TARGETS}


def parse_targets_json(text: str) -> dict[str, float]:
    """The three figures of a ``--targets --json`` output, by key.

    Raises:
        BenchError: the output is not that JSON object, or a figure is missing.
    """
    try:
        found = json.loads(text)["targets"]
        return {t.key: float(found[t.key]["value"]) for t in TARGETS}
    except (ValueError, KeyError, TypeError) as exc:
        raise BenchError(f"--json output without every target ({exc!r})") from exc


def run_order(repeats: int) -> list[str]:
    """Baseline and current alternately, each pair reversed: B C C B B C ..."""
    pairs = [(BASELINE, CURRENT) if i % 2 == 0 else (CURRENT, BASELINE) for i in range(repeats)]
    return [side for pair in pairs for side in pair]


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise BenchError("--baseline needs git on the PATH") from exc


def resolve_commit(rev: str) -> str:
    """The full hash of the commit ``rev`` names in this repository.

    Raises:
        BenchError: ``rev`` names no commit here.
    """
    found = _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if rev.startswith("-") or found.returncode != 0:
        raise BenchError(f"--baseline {rev!r} is not a commit of this repository")
    return found.stdout.strip()


def export_tree(commit: str, dest: Path) -> Path:
    """Extract ``commit``'s files into ``dest`` (``git archive``), its sources compiled.

    Compiling them now keeps the baseline's first run from paying for it.
    """
    with subprocess.Popen(
        ["git", "archive", "--format=tar", commit], cwd=ROOT, stdout=subprocess.PIPE
    ) as archive:
        assert archive.stdout is not None
        with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
            tar.extractall(dest, filter="data")
    if archive.returncode != 0:
        raise BenchError(f"git archive {commit[:12]} failed (exit {archive.returncode})")
    if not (dest / "bench" / "bench_arena.py").is_file():
        raise BenchError(f"the baseline {commit[:12]} has no bench/bench_arena.py")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest / "src")], check=False)
    return dest


def _tree_env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree / "src")}


def check_imports_from(tree: Path) -> None:
    """Make sure a process on ``tree``'s environment imports that tree's cogwm, not another.

    Raises:
        BenchError: cogwm comes from elsewhere (an installed copy shadows the tree).
    """
    probe = subprocess.run(
        [sys.executable, "-c", "import cogwm; print(cogwm.__file__)"],
        env=_tree_env(tree),
        capture_output=True,
        text=True,
        check=False,
    )
    found = Path(probe.stdout.strip()).resolve() if probe.returncode == 0 else None
    if found is None or not found.is_relative_to((tree / "src").resolve()):
        raise BenchError(f"cogwm does not import from {tree / 'src'} (got {found})")


def measure(tree: Path, side: str) -> dict[str, float]:
    """Run ``tree``'s own ``bench/bench_arena.py --targets`` in a fresh process; its figures.

    ``--json`` where that bench has it, else its text lines.

    Raises:
        BenchError: the bench failed or printed no figure for a target.
    """
    bench = tree / "bench" / "bench_arena.py"
    use_json = '"--json"' in bench.read_text(encoding="utf-8")
    command = [sys.executable, str(bench), "--targets", *(["--json"] if use_json else [])]
    done = subprocess.run(
        command, cwd=tree, env=_tree_env(tree), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"{side}: bench_arena.py --targets exited {done.returncode}: {last}")
    try:
        return parse_targets_json(done.stdout) if use_json else parse_targets_text(done.stdout)
    except BenchError as exc:
        raise BenchError(f"{side}: {exc}") from exc


def _describe_current() -> str:
    head = _git("rev-parse", "--short", "HEAD").stdout.strip() or "unknown"
    dirty = _git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    return f"the working tree at {head}{' with uncommitted changes' if dirty else ''}"


def compare(rev: str, repeats: int) -> dict[str, dict[str, list[float]]]:
    """Measure ``rev``'s tree and the current tree ``repeats`` times each, alternately.

    Returns:
        ``{target key: {"baseline": [...], "current": [...]}}``, the figures in run order.

    Raises:
        BenchError: ``rev`` names no commit, or either tree's bench gave no figure.
    """
    commit = resolve_commit(rev)
    figures: dict[str, dict[str, list[float]]] = {
        t.key: {BASELINE: [], CURRENT: []} for t in TARGETS
    }
    with tempfile.TemporaryDirectory(prefix="cogwm-baseline-") as tmp:
        trees = {BASELINE: export_tree(commit, Path(tmp)), CURRENT: ROOT}
        for tree in trees.values():
            check_imports_from(tree)
        print(f"baseline: {rev} ({commit[:12]}); current: {_describe_current()}")
        order = run_order(repeats)
        print(f"order: {' '.join(order)}  (each run: a fresh process, --targets)", flush=True)
        for i, side in enumerate(order, 1):
            values = measure(trees[side], side)
            for key, value in values.items():
                figures[key][side].append(value)
            print(f"  run {i}/{len(order)} {side}: " + ", ".join(f"{v:g}" for v in values.values()))
    return figures


def ratio_or_none(current: float, baseline: float) -> float | None:
    """``current / baseline``; None (undefined) when the baseline is 0."""
    return current / baseline if baseline else None


def report(figures: dict[str, dict[str, list[float]]]) -> list[str]:
    """Per target: both medians, current / baseline, within 5 %, then every raw figure."""
    lines = [f"{'target':<40} {'baseline':>10} {'current':>10} {'cur/base':>9}  within 5 %"]
    for t in TARGETS:
        base = statistics.median(figures[t.key][BASELINE])
        cur = statistics.median(figures[t.key][CURRENT])
        ratio = ratio_or_none(cur, base)
        within = "undefined" if ratio is None else ("yes" if ratio >= 1 - TOLERANCE else "NO")
        shown = "undefined" if ratio is None else f"{ratio:.3f}"
        lines.append(f"{t.label:<40} {base:>10{t.fmt}} {cur:>10{t.fmt}} {shown:>9}  {within}")
    lines.append("raw figures, in run order:")
    for t in TARGETS:
        for side in (BASELINE, CURRENT):
            raw = ", ".join(f"{v:{t.fmt}}" for v in figures[t.key][side])
            lines.append(f"  {t.label}, {side}: {raw}")
    return lines


def main_baseline(rev: str, repeats: int) -> int:
    """``--targets --baseline REV``: print the comparison; 0 either way, 2 when it cannot run."""
    try:
        figures = compare(rev, repeats)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"medians of {repeats} run(s) per side; within 5 %: current >= 0.95 x baseline")
    print("\n".join(report(figures)))
    return 0
