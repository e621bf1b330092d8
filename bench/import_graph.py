"""Measure cogwm's import graph: module-level cycles, package-level cycles and upward imports.

Every import counts, including imports inside functions and under ``TYPE_CHECKING``, because
each one is an arrow a reader has to follow and a change has to respect. Figures printed:

1. Module cycles: strongly connected components of more than one cogwm module, with members.
2. Package cycles: strongly connected components of more than one top-level package
   (``cogwm.arena``, ``cogwm.simulator``, ...), with an example import for each arrow.
3. Upward imports: imports from a lower layer to a higher one, by the layer order of the
   ``layers`` contract in pyproject.toml (or the order given here when pyproject has none).

The graph is built from the ``cogwm`` found on ``sys.path`` (set ``PYTHONPATH`` to measure
another checkout).

Usage: python bench/import_graph.py [--details] [--pyproject PATH]
"""

from __future__ import annotations

import argparse
import tomllib
from collections import defaultdict
from pathlib import Path

import grimp

ROOT = "cogwm"
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def strongly_connected(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; returns the components of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def top_package(module: str) -> str:
    """``cogwm.arena.runner`` -> ``cogwm.arena``; ``cogwm.errors`` stays itself."""
    return ".".join(module.split(".")[:2])


def layer_order(pyproject: Path) -> list[list[str]]:
    """The top-level layers, lowest first, from the first layers contract over ``cogwm``."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    contracts = config.get("tool", {}).get("importlinter", {}).get("contracts", [])
    for contract in contracts:
        if contract.get("type") == "layers" and contract.get("containers") == [ROOT]:
            rows = [row.replace("(", "").replace(")", "") for row in contract["layers"]]
            split = [[p.strip() for p in row.replace("|", ":").split(":")] for row in rows]
            return [[f"{ROOT}.{name}" for name in row if name] for row in reversed(split)]
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--details", action="store_true", help="list every upward import")
    parser.add_argument(
        "--pyproject",
        type=Path,
        default=PYPROJECT,
        help="where the layers contract is read (to measure an older tree by today's layers)",
    )
    args = parser.parse_args()
    graph = grimp.build_graph(ROOT, exclude_type_checking_imports=False)
    modules = set(graph.modules)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) & modules for m in modules}
    n_imports = sum(len(targets) for targets in edges.values())
    print(f"modules: {len(modules)}  import arrows between them: {n_imports}")

    module_cycles = strongly_connected(modules, edges)
    print(f"module-level cycles (SCCs > 1): {len(module_cycles)}")
    for cycle in module_cycles:
        print(f"  [{len(cycle)}] " + ", ".join(m.removeprefix(ROOT + ".") for m in cycle))

    package_edges: dict[str, set[str]] = defaultdict(set)
    example: dict[tuple[str, str], str] = {}
    for source, targets in edges.items():
        for target in targets:
            a, b = top_package(source), top_package(target)
            if a != b and a != ROOT and b != ROOT:
                package_edges[a].add(b)
                example.setdefault((a, b), f"{source} -> {target}")
    packages = {top_package(m) for m in modules} - {ROOT}
    package_cycles = strongly_connected(packages, package_edges)
    print(f"package-level cycles (SCCs > 1): {len(package_cycles)}")
    for cycle in package_cycles:
        print(f"  [{len(cycle)}] " + ", ".join(p.removeprefix(ROOT + ".") for p in cycle))
        for a in cycle:
            for b in sorted(package_edges[a] & set(cycle)):
                print(f"      {example[(a, b)]}")

    layers = layer_order(args.pyproject)
    if not layers:
        print("upward imports: no layers contract in pyproject.toml")
        return
    rank = {package: level for level, row in enumerate(layers) for package in row}
    unranked = sorted(packages - set(rank))
    upward = sorted(
        (source, target)
        for source, targets in edges.items()
        for target in targets
        if top_package(source) in rank
        and top_package(target) in rank
        and rank[top_package(target)] > rank[top_package(source)]
    )
    print(f"upward imports (module arrows, by the layers contract): {len(upward)}")
    by_pair: dict[tuple[str, str], int] = defaultdict(int)
    for source, target in upward:
        by_pair[(top_package(source), top_package(target))] += 1
    for (a, b), count in sorted(by_pair.items()):
        print(f"  {a.removeprefix(ROOT + '.')} -> {b.removeprefix(ROOT + '.')}: {count}")
    if args.details:
        for source, target in upward:
            print(f"      {source} -> {target}")
    if unranked:
        print("packages in no layer: " + ", ".join(unranked))


if __name__ == "__main__":
    main()
