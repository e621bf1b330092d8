"""The import contracts of pyproject.toml ([tool.importlinter]) hold, and would catch a break.

The first test is what ``lint-imports`` checks in CI: every package imports only from the layers
below its own, the arena's modules keep their order, and no modules or packages import each
other in a circle. The others add one forbidden import to the real graph and expect the
contract it breaks to say so (a contract that could not fail would pass the first test too).
"""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest
from importlinter import configuration
from importlinter.application.use_cases import lint_imports, read_user_options
from importlinter.application.user_options import UserOptions
from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
from importlinter.contracts.layers import LayersContract
from importlinter.domain.contract import Contract

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


@pytest.fixture(scope="module")
def options() -> UserOptions:
    configuration.configure()  # what the lint-imports command sets up: readers, graph builder
    return read_user_options(config_filename=str(PYPROJECT))


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    # As the contracts read it: imports inside functions and under TYPE_CHECKING count.
    return grimp.build_graph("cogwm", exclude_type_checking_imports=False)


def _contract(options: UserOptions, contract_id: str) -> Contract:
    found = next(c for c in options.contracts_options if c.get("id") == contract_id)
    kind = {"layers": LayersContract, "acyclic_siblings": AcyclicSiblingsContract}[found["type"]]
    return kind(name=found["name"], session_options=options.session_options, contract_options=found)


def test_every_import_contract_is_kept(options: UserOptions) -> None:
    assert {c["id"] for c in options.contracts_options} == {"packages", "arena", "acyclic"}
    kept = lint_imports(config_filename=str(PYPROJECT), cache_dir=None, no_logo=True)
    assert kept, "an import contract is broken: the report printed above names the imports"


def test_the_package_layers_cover_every_top_level_module(
    options: UserOptions, graph: grimp.ImportGraph
) -> None:
    contract = _contract(options, "packages")
    named = {
        name.strip()
        for row in contract.contract_options["layers"]
        for name in row.replace(":", "|").split("|")
    }
    top_level = {m.removeprefix("cogwm.") for m in graph.find_children("cogwm")}
    assert named == top_level


@pytest.mark.parametrize(
    ("contract_id", "importer", "imported"),
    [
        ("packages", "cogwm.schema.base", "cogwm.cli.main"),  # a record importing the CLI
        ("packages", "cogwm.store.db", "cogwm.models.types"),  # the store above the models
        ("packages", "cogwm.simulator.rule", "cogwm.arena.transcript"),  # simulator -> arena
        ("packages", "cogwm.annotate.runner", "cogwm.tom.prompts"),  # two independent siblings
        ("arena", "cogwm.arena.windows", "cogwm.arena.runner"),  # the plan importing the run
        ("arena", "cogwm.arena.config", "cogwm.arena.judging"),  # the spec importing the judge
        ("acyclic", "cogwm.report.series", "cogwm.report.plots"),  # a circle in one layer
        ("acyclic", "cogwm.validate.inputs", "cogwm.validate.reader"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    options: UserOptions, graph: grimp.ImportGraph, contract_id: str, importer: str, imported: str
) -> None:
    contract = _contract(options, contract_id)
    assert contract.check(graph, verbose=False).kept  # the real graph keeps it
    assert not graph.direct_import_exists(importer=importer, imported=imported)
    graph.add_import(importer=importer, imported=imported)
    try:
        assert not contract.check(graph, verbose=False).kept
    finally:
        graph.remove_import(importer=importer, imported=imported)
