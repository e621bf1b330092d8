"""Reading raw corpus files.

Every failure becomes one :class:`~cogwm.errors.InputError` whose single line names the file,
the place in it (line, row or record) and what was expected. Loaders never skip a bad row: a
corpus is either read whole or not at all.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

from cogwm.errors import InputError

_MAX_SHOWN = 60
_NOTHING = object()

#: The ``csv`` module's quoting constants.
Quoting = Literal[0, 1, 2, 3]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def shown(value: object) -> str:
    """A short one-line rendering of a bad value for an error message."""
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def input_error(path: Path, where: str | None, expected: str, got: object = _NOTHING) -> InputError:
    """An ``InputError`` reading ``<file>: <where>: expected <expected>, got <value>``."""
    message = str(path)
    if where:
        message += f": {where}"
    message += f": expected {expected}"
    if got is not _NOTHING:
        message += f", got {shown(got)}"
    return InputError(message.replace("\r", " ").replace("\n", " "))


def require_dir(path: Path, expected: str) -> Path:
    """``path`` if it is a directory; an ``InputError`` saying what should be there otherwise."""
    if not path.is_dir():
        raise InputError(f"{path}: directory not found (expected {expected})")
    return path


def require_data_dir(path: Path, source: str) -> Path:
    """``path`` if it is a folder (the data directory); one error line naming ``source`` (the
    option or variable it came from) and what is wrong otherwise.

    Raises:
        InputError: ``path`` is missing, or a file.
    """
    if path.is_dir():
        return path
    if path.exists():
        raise InputError(
            f"data directory {path} is a file, not a folder (from {source}; it should hold "
            "one folder per corpus)"
        )
    raise InputError(f"data directory {path} does not exist (from {source})")


def require_file(path: Path) -> Path:
    """``path`` if it is a file; an ``InputError`` naming it otherwise."""
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    return path


def read_text(path: Path) -> str:
    """The file decoded as UTF-8 (a byte-order mark is dropped)."""
    data = require_file(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise input_error(path, f"byte {exc.start}", "UTF-8 text") from None


@dataclass(frozen=True)
class Row:
    """One record of a raw file, with typed accessors that fail with the file and place."""

    path: Path
    where: str
    values: Mapping[str, Any]

    def error(self, expected: str, got: object = _NOTHING) -> InputError:
        """An ``InputError`` at this row."""
        return input_error(self.path, self.where, expected, got)

    def raw(self, column: str) -> Any:
        """The cell as read; an error when the column is absent."""
        if column not in self.values:
            raise self.error(f"a field {column!r}")
        return self.values[column]

    def text(self, column: str) -> str:
        """A string cell (an empty spreadsheet cell reads as '')."""
        value = self.raw(column)
        if isinstance(value, str):
            return value
        if value is None:
            return ""
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise self.error(f"text in {column!r}", value)

    def optional_text(self, column: str, *, missing: Collection[str] = ("",)) -> str | None:
        """A string cell, ``None`` when it is empty or one of the ``missing`` markers."""
        value = self.text(column)
        return None if value in missing else value

    def integer(self, column: str, *, low: int | None = None, high: int | None = None) -> int:
        """An integer cell (``'3'``, ``3`` or ``3.0``) within ``[low, high]`` when given."""
        value = self.raw(column)
        number = _as_int(value)
        if number is None:
            raise self.error(f"an integer in {column!r}", value)
        if (low is not None and number < low) or (high is not None and number > high):
            raise self.error(f"an integer in {column!r} {_bounds(low, high)}", value)
        return number

    def optional_integer(self, column: str) -> int | None:
        """An integer cell, ``None`` when empty."""
        return None if _is_empty(self.raw(column)) else self.integer(column)

    def number(self, column: str) -> float:
        """A finite number."""
        value = self.raw(column)
        number = as_number(value)
        if number is None:
            raise self.error(f"a number in {column!r}", value)
        return number

    def optional_number(self, column: str) -> float | None:
        """A finite number, ``None`` when the cell is empty."""
        return None if _is_empty(self.raw(column)) else self.number(column)

    def choice(self, column: str, allowed: Collection[str]) -> str:
        """A string cell that must be one of ``allowed``."""
        value = self.raw(column)
        if not isinstance(value, str) or value not in allowed:
            raise self.error(f"{column!r} to be one of {sorted(allowed)}", value)
        return value

    def mapping(self, column: str) -> Mapping[str, Any]:
        """A JSON object cell."""
        value = self.raw(column)
        if not isinstance(value, dict):
            raise self.error(f"an object in {column!r}", value)
        return value

    def sequence(self, column: str) -> list[Any]:
        """A JSON array cell."""
        value = self.raw(column)
        if not isinstance(value, list):
            raise self.error(f"a list in {column!r}", value)
        return value

    def sub(self, column: str, where: str) -> Row:
        """The JSON object in ``column`` as a row of its own, placed at ``where``."""
        return Row(self.path, f"{self.where}, {where}", self.mapping(column))

    def check_keys(self, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
        """Fail unless the record has every required key and no key beyond the known ones."""
        needed, known = _key_sets(required, optional)
        keys = self.values.keys()
        if keys >= needed and keys <= known:
            return
        missing = needed - keys
        if missing:
            raise self.error(f"fields {sorted(missing)}", sorted(keys))
        raise self.error(f"only the fields {sorted(known)}", sorted(keys - known))


@cache
def _key_sets(
    required: tuple[str, ...], optional: tuple[str, ...]
) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(required), frozenset(required) | frozenset(optional)


def _bounds(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"from {low} to {high}"
    return f"of at least {low}" if low is not None else f"of at most {high}"


def _is_empty(value: object) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def _as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("+-").isdigit() and text.isascii():
            return int(text)
        number = as_number(text)
        return int(number) if number is not None and number.is_integer() else None
    return None


def as_number(value: object) -> float | None:
    """A finite number from an int, float or numeric string; ``None`` otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def read_table(
    path: Path,
    required: Sequence[str],
    *,
    delimiter: str = ",",
    quoting: Quoting = csv.QUOTE_MINIMAL,
) -> list[Row]:
    """Rows of a CSV/TSV file with a header; every row must have exactly the header's fields.

    Args:
        path: The file.
        required: Columns the header must contain.
        delimiter: Field separator.
        quoting: A ``csv`` quoting constant (INSPIRED's dialogue files need ``QUOTE_NONE``).

    Returns:
        One :class:`Row` per record, placed by its (last) physical line.
    """
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quoting=quoting)
    try:
        header = next(reader, None)
        if header is None:
            raise input_error(path, "line 1", f"a header with the columns {list(required)}")
        missing = [c for c in required if c not in header]
        if missing:
            raise input_error(path, "line 1", f"a header with the columns {list(required)}", header)
        rows: list[Row] = []
        for cells in reader:
            where = f"line {reader.line_num}"
            if not cells:
                continue
            if len(cells) != len(header):
                raise input_error(path, where, f"{len(header)} fields", f"{len(cells)} fields")
            rows.append(Row(path, where, dict(zip(header, cells, strict=True))))
    except csv.Error as exc:
        raise input_error(
            path, f"line {reader.line_num}", "well-formed delimited text", str(exc)
        ) from None
    return rows


def read_json(path: Path) -> Any:
    """A whole JSON document."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise input_error(path, where, "valid JSON", exc.msg) from None
    except RecursionError:
        raise input_error(path, None, "valid JSON of reasonable nesting depth") from None


def read_json_lines(path: Path) -> list[Row]:
    """One JSON object per non-blank line (JSON Lines, whatever the file's suffix)."""
    rows: list[Row] = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise input_error(path, where, "one JSON object per line", exc.msg) from None
        except RecursionError:
            raise input_error(path, where, "JSON of reasonable nesting depth") from None
        if not isinstance(value, dict):
            raise input_error(path, where, "a JSON object", type(value).__name__)
        rows.append(Row(path, where, value))
    return rows


def read_xlsx(path: Path, required: Sequence[str]) -> list[Row]:
    """Rows of the first sheet of a workbook whose first row is the header.

    Empty header cells get the name ``""``; wholly empty rows are skipped.
    """
    import openpyxl  # heavy-ish; only the P4G loader needs it

    require_file(path)
    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises zip, XML and key errors alike on bad files
        raise input_error(path, None, "an .xlsx workbook", type(exc).__name__) from None
    try:
        return _sheet_rows(path, workbook.worksheets, required)
    except InputError:
        raise
    except Exception as exc:  # a workbook that opens can still fail while streaming its rows
        raise input_error(path, None, "a readable .xlsx sheet", type(exc).__name__) from None
    finally:
        workbook.close()


def _sheet_rows(path: Path, sheets: Sequence[Any], required: Sequence[str]) -> list[Row]:
    if not sheets:
        raise input_error(path, None, "at least one sheet")
    cells = sheets[0].iter_rows(values_only=True)
    header_cells = next(cells, None)
    header = ["" if c is None else str(c) for c in (header_cells or ())]
    missing = [c for c in required if c not in header]
    if missing:
        raise input_error(path, "row 1", f"a header with the columns {list(required)}", header)
    rows: list[Row] = []
    for number, values in enumerate(cells, start=2):
        if all(v is None for v in values):
            continue
        if len(values) > len(header) and any(v is not None for v in values[len(header) :]):
            raise input_error(path, f"row {number}", f"{len(header)} cells", f"{len(values)} cells")
        padded = list(values) + [None] * (len(header) - len(values))
        rows.append(Row(path, f"row {number}", dict(zip(header, padded, strict=False))))
    return rows


def group_by(items: Iterable[V], key: Callable[[V], K]) -> dict[K, list[V]]:
    """Items grouped by ``key(item)``, groups and members in first-seen order."""
    groups: dict[K, list[V]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups
