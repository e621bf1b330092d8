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

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from cogwm.errors import InputError
from cogwm.jsonl import dump_tagged, parse_tagged, read_lines, write_lines
from cogwm.schema.lexicon import DEFAULT_VALENCES, register_emotion, valence
from cogwm.schema.partial import LabelledDialogue

#: The tag every line carries.
SCHEMA = "cogwm.labels/1"
_EMOTIONS_KEY = "emotions"


def dump_line(item: LabelledDialogue) -> str:
    """One labelled dialogue as a JSON line (without the newline), tagged with :data:`SCHEMA`."""
    data: dict[str, Any] = {}
    extensions = _extension_labels(item)
    if extensions:
        data[_EMOTIONS_KEY] = extensions
    data.update(item.model_dump(mode="json"))
    return dump_tagged(SCHEMA, data)


def parse_line(line: str, *, where: str = "<line>") -> LabelledDialogue:
    """One JSON line back into a :class:`LabelledDialogue`.

    Args:
        line: The line's text.
        where: How errors name the line (e.g. ``"file.jsonl: line 3"``).

    Raises:
        InputError: Not JSON, no or another schema tag, an emotion label whose valence clashes
            with the lexicon, or a record that does not validate.
    """

    def extensions_first(data: dict[str, Any]) -> None:
        _register_extensions(data.pop(_EMOTIONS_KEY, {}), where)

    return parse_tagged(
        line,
        SCHEMA,
        LabelledDialogue,
        where=where,
        what="labelled dialogue",
        before=extensions_first,
    )


def read_labelled(path: Path | str) -> Iterator[LabelledDialogue]:
    """Read a ``cogwm.labels/1`` file lazily, one labelled dialogue per non-blank line.

    Raises:
        InputError: A missing or unreadable file, or a bad line (named by file and line number).
    """
    return read_lines(path, lambda line, where: parse_line(line, where=where))


def write_labelled(path: Path | str, items: Iterable[LabelledDialogue]) -> int:
    """Write labelled dialogues as ``cogwm.labels/1`` lines; returns how many were written.

    The file is written beside its final name and renamed at the end, so an interrupted write
    never leaves a truncated file under that name.

    Raises:
        InputError: The directory does not exist or the file cannot be written.
    """
    return write_lines(path, (dump_line(item) for item in items))


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
