"""Tagged JSON Lines: tags checked, errors named by file and line, atomic writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from cogwm.errors import InputError
from cogwm.jsonl import dump_tagged, parse_tagged, read_lines, write_lines


class Row(BaseModel):
    n: int


def _parse(line: str, where: str) -> Row:
    return parse_tagged(line, "t/1", Row, where=where, what="row")


def test_round_trip_and_blank_lines_skipped(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    assert write_lines(path, [dump_tagged("t/1", {"n": 1}), "", dump_tagged("t/1", {"n": 2})]) == 3
    assert [r.n for r in read_lines(path, _parse)] == [1, 2]


@pytest.mark.parametrize(
    ("line", "problem"),
    [('{"n": 1}', 'expected "schema"'), ('{"schema": "t/1", "n": "x"}', "invalid row at n")],
)
def test_bad_lines_are_named(tmp_path: Path, line: str, problem: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputError, match=problem) as caught:
        list(read_lines(path, _parse))
    assert "line 1" in str(caught.value)


def test_non_utf8_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"schema": "t/1", "n": 1, "x": "\xe9"}\n')
    with pytest.raises(InputError, match="not UTF-8"):
        list(read_lines(path, _parse))
    with pytest.raises(InputError, match="file not found"):
        read_lines(tmp_path / "none.jsonl", _parse)
    with pytest.raises(InputError, match="does not exist"):
        write_lines(tmp_path / "no" / "x.jsonl", [])


def test_an_interrupted_write_leaves_no_file(tmp_path: Path) -> None:
    def lines() -> Iterator[str]:
        yield dump_tagged("t/1", {"n": 1})
        raise KeyboardInterrupt

    path = tmp_path / "x.jsonl"
    with pytest.raises(KeyboardInterrupt):
        write_lines(path, lines())
    assert list(tmp_path.iterdir()) == []
