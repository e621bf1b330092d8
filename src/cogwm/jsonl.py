"""Tagged JSON Lines files: one record per line with a ``"schema"`` tag, read lazily, written
atomically.

The tag makes a file of another kind fail at its first line instead of being half read; errors
name the file and the line. Used by the samples files (``cogwm.samples/1``); any record file of the
same shape can use it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from cogwm.errors import InputError

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

TAG_KEY = "schema"


def dump_tagged(tag: str, data: dict[str, Any]) -> str:
    """``data`` as one compact JSON line (without the newline), the tag first."""
    return json.dumps({TAG_KEY: tag, **data}, ensure_ascii=False, separators=(",", ":"))


def parse_tagged(
    line: str,
    tag: str,
    model: type[M],
    *,
    where: str = "<line>",
    what: str = "record",
    before: Callable[[dict[str, Any]], None] | None = None,
) -> M:
    """One tagged JSON line as a ``model`` record.

    Args:
        line: The line's text.
        tag: The tag the line must carry.
        model: The record type (validated from JSON text, so enums and integer keys parse as
            written).
        where: How errors name the line (e.g. ``"file.jsonl: line 3"``).
        what: How errors name the record.
        before: Called with the line's object (tag removed) before validation; may pop keys.

    Raises:
        InputError: Not JSON, no or another tag, or a record that does not validate.
    """
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(data).__name__}")
    found = data.pop(TAG_KEY, None)
    if found != tag:
        raise InputError(f'{where}: expected "{TAG_KEY}": "{tag}", got {found!r}')
    if before is not None:
        before(data)
    try:
        return model.model_validate_json(json.dumps(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ()))
        raise InputError(f"{where}: invalid {what} at {field}: {first['msg']}") from None


def read_lines(path: Path | str, parse: Callable[[str, str], T]) -> Iterator[T]:
    """Parse a file lazily, one record per non-blank line (``parse(line, where)``).

    Raises:
        InputError: A missing or unreadable file, or a bad line (named by file and line number).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    return _lines(path, parse)


def _lines(path: Path, parse: Callable[[str, str], T]) -> Iterator[T]:
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield parse(line, f"{path}: line {number}")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start} of a line)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def write_lines(path: Path | str, lines: Iterable[str]) -> int:
    """Write lines (each without its newline); returns how many were written.

    The file is written beside its final name and renamed at the end, so an interrupted write
    never leaves a truncated file under that name.

    Raises:
        InputError: The directory does not exist or the file cannot be written.
    """
    path = Path(path)
    if not path.parent.is_dir():
        raise InputError(f"{path}: directory {path.parent} does not exist")
    partial = path.with_name(path.name + ".partial")
    count = 0
    try:
        with partial.open("w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(line)
                handle.write("\n")
                count += 1
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write ({exc.strerror})") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return count
