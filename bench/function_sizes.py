"""Measure the size of every function and method in cogwm: how many are long, and which.

A function's size is its line count from the ``def`` line (decorators excluded) to its last
line, docstring and signature included: a typer command whose signature declares every option
again is as long to read as one with long logic. Figures printed:

1. The number of functions and methods measured.
2. How many are over 50 lines and how many over 60.
3. The largest ones (15 by default), with lines, qualified name and file:line.

The files measured are those of the ``cogwm`` found on ``sys.path`` (set ``PYTHONPATH`` to
measure another checkout), or of ``--root``.

Usage: python bench/function_sizes.py [--root DIR] [--top N] [--over N]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FunctionSize:
    """One function or method: where it is and how many lines it spans."""

    name: str
    path: Path
    line: int
    lines: int


def default_root() -> Path:
    """The directory of the ``cogwm`` package importable from here."""
    spec = importlib.util.find_spec("cogwm")
    if spec is None or spec.origin is None:
        raise SystemExit("cogwm is not importable: set PYTHONPATH or pass --root")
    return Path(spec.origin).parent


def functions_in(path: Path) -> list[FunctionSize]:
    """Every function and method defined in one file, nested ones included."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[FunctionSize] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                end = child.end_lineno or child.lineno
                found.append(FunctionSize(name, path, child.lineno, end - child.lineno + 1))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def measure(root: Path) -> list[FunctionSize]:
    """Every function under ``root``, largest first."""
    sizes = [size for path in sorted(root.rglob("*.py")) for size in functions_in(path)]
    return sorted(sizes, key=lambda size: (-size.lines, str(size.path), size.line))


def main() -> None:
    """Print the counts and the largest functions."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None, help="package directory to measure")
    parser.add_argument("--top", type=int, default=15, help="how many of the largest to list")
    parser.add_argument("--over", type=int, nargs="*", default=[50, 60], help="thresholds")
    args = parser.parse_args()
    root = args.root or default_root()
    sizes = measure(root)
    print(f"functions measured: {len(sizes)} (under {root.name}/)")
    for threshold in args.over:
        print(f"over {threshold} lines: {sum(size.lines > threshold for size in sizes)}")
    print(f"largest {min(args.top, len(sizes))}:")
    for size in sizes[: args.top]:
        where = f"{size.path.relative_to(root.parent)}:{size.line}"
        print(f"  {size.lines:4d}  {size.name}  ({where})")


if __name__ == "__main__":
    main()
