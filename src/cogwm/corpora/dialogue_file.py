"""Reading a file of ``Dialogue`` records (as ``cogwm data export`` writes them), one per line."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from cogwm.errors import InputError
from cogwm.schema import Dialogue


def read_dialogues(path: Path) -> list[Dialogue]:
    """The dialogues of a JSONL file, one ``Dialogue`` object per line.

    Raises:
        InputError: A missing file or a bad line (named by file and line number).
    """
    from cogwm.jsonl import read_lines

    def parse(line: str, where: str) -> Dialogue:
        try:
            return Dialogue.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first.get("loc", ())) or "(line)"
            raise InputError(f"{where}: invalid dialogue at {field}: {first['msg']}") from None

    return list(read_lines(path, parse))
