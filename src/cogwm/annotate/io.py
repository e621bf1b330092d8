"""The ``cogwm.labels/1`` file: one labelled dialogue per JSON line.

Each line is a :class:`~cogwm.schema.partial.LabelledDialogue` as JSON with two more keys:

- ``"schema": "cogwm.labels/1"`` (required), so that a file of another kind is refused at its
  first line instead of being half read;
- ``"emotions"`` (written only when needed): ``{label: valence}`` for every emotion label the line
  uses that is not in the paper's lexicon (e.g. DailyDialog's ``happiness``). Reading registers
  them with :func:`cogwm.schema.lexicon.register_emotion`, so a file can be read by a program that
  never imported the mapping that introduced the labels, and a label whose valence disagrees with
  the running lexicon is refused rather than silently reinterpreted.

Human-label files (``cogwm annotate labels``) and LLM-annotation exports share this format.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cogwm.errors import InputError
from cogwm.schema.lexicon import DEFAULT_VALENCES, register_emotion, valence
from cogwm.schema.partial import LabelledDialogue

#: The tag every line carries.
SCHEMA = "cogwm.labels/1"
_SCHEMA_KEY = "schema"
_EMOTIONS_KEY = "emotions"


def dump_line(item: LabelledDialogue) -> str:
    """One labelled dialogue as a JSON line (without the newline), tagged with :data:`SCHEMA`."""
    data: dict[str, Any] = {_SCHEMA_KEY: SCHEMA}
    extensions = _extension_labels(item)
    if extensions:
        data[_EMOTIONS_KEY] = extensions
    data.update(item.model_dump(mode="json"))
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def parse_line(line: str, *, where: str = "<line>") -> LabelledDialogue:
    """One JSON line back into a :class:`LabelledDialogue`.

    Args:
        line: The line's text.
        where: How errors name the line (e.g. ``"file.jsonl: line 3"``).

    Raises:
        InputError: Not JSON, no or another schema tag, an emotion label whose valence clashes
            with the lexicon, or a record that does not validate.
    """
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(data).__name__}")
    tag = data.pop(_SCHEMA_KEY, None)
    if tag != SCHEMA:
        raise InputError(f'{where}: expected "schema": "{SCHEMA}", got {tag!r}')
    _register_extensions(data.pop(_EMOTIONS_KEY, {}), where)
    try:
        # Validated from JSON text, so enums and integer dict keys parse as they were written.
        return LabelledDialogue.model_validate_json(json.dumps(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ()))
        raise InputError(f"{where}: invalid labelled dialogue at {field}: {first['msg']}") from None


def read_labelled(path: Path | str) -> Iterator[LabelledDialogue]:
    """Read a ``cogwm.labels/1`` file lazily, one labelled dialogue per non-blank line.

    Raises:
        InputError: A missing or unreadable file, or a bad line (named by file and line number).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    return _read_lines(path)


def _read_lines(path: Path) -> Iterator[LabelledDialogue]:
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield parse_line(line, where=f"{path}: line {number}")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start} of a line)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def write_labelled(path: Path | str, items: Iterable[LabelledDialogue]) -> int:
    """Write labelled dialogues as ``cogwm.labels/1`` lines; returns how many were written.

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
            for item in items:
                handle.write(dump_line(item))
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


def _extension_labels(item: LabelledDialogue) -> dict[str, float]:
    """The labels used in ``item`` (states and utterance states) beyond the paper's lexicon."""
    labels = {s.emotion.value.label for s in item.states.values() if s.emotion.value is not None}
    labels.update(
        u.state.emotion.label
        for u in item.dialogue.utterances
        if u.state is not None and u.state.emotion is not None
    )
    return {label: valence(label) for label in sorted(labels) if label not in DEFAULT_VALENCES}


def _register_extensions(extensions: object, where: str) -> None:
    if not isinstance(extensions, dict):
        raise InputError(f'{where}: expected "{_EMOTIONS_KEY}" to map labels to valences')
    for label, value in extensions.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise InputError(f"{where}: emotion {label!r}: expected a valence, got {value!r}")
        try:
            register_emotion(label, float(value))
        except ValueError as exc:
            raise InputError(f"{where}: {exc}") from None
