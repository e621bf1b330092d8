"""Docstrings and comments cite documents that ship with the repository.

The formulas and constants the code refers to are explained in ``docs/architecture.md``; a
citation of a document that is not in the repository (or of a section the architecture page does
not have) leaves the reader with nothing to follow.
"""

from __future__ import annotations

import re
from pathlib import Path

import cogwm

SOURCE = Path(cogwm.__file__).parent
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
#: ``docs/architecture.md, "Section"`` as the source cites a section.
_SECTION_CITATION = re.compile(r'architecture\.md, "([^"]+)"')


def _sources() -> list[Path]:
    return sorted(SOURCE.rglob("*.py"))


def test_no_source_file_cites_a_document_outside_the_repository() -> None:
    citing = [
        str(path.relative_to(SOURCE))
        for path in _sources()
        if re.search(r"\b(DESIGN|STYLE)\.md\b", path.read_text(encoding="utf-8"))
    ]
    assert citing == []


def test_every_cited_architecture_section_exists() -> None:
    headings = set(re.findall(r"^## (.+)$", ARCHITECTURE.read_text(encoding="utf-8"), re.M))
    cited = {
        (str(path.relative_to(SOURCE)), section)
        for path in _sources()
        for section in _SECTION_CITATION.findall(path.read_text(encoding="utf-8"))
    }
    assert cited, "the source cites no architecture section (the pattern no longer matches)"
    assert sorted(c for c in cited if c[1] not in headings) == []
