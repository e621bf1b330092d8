"""GGUF identities: a content hash of the whole file, cached by path, size and mtime."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cogwm.models.llamacpp import fingerprint

MIB = 1 << 20


def test_files_alike_at_both_ends_get_different_fingerprints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Catches: size plus the first and last MiB let two different weights files collide, so one
    # model's cached replies were served for the other.
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    ends = os.urandom(MIB)
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    a.write_bytes(ends + b"\x00" * MIB + ends)
    b.write_bytes(ends + b"\x01" * MIB + ends)
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(a).startswith(f"{3 * MIB}-")


def test_fingerprints_are_cached_until_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "m.gguf"
    path.write_bytes(b"weights" * 1000)
    first = fingerprint(path)
    assert (tmp_path / "cache" / "fingerprints.json").is_file()
    # A cached entry is used as it is (the file is not read again)...
    opened: list[Path] = []
    original = Path.open

    def tracking(self: Path, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        opened.append(self)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", tracking)
    assert fingerprint(path) == first and path not in opened
    # ... until the file changes (size and mtime differ).
    path.write_bytes(b"other weights" * 1000)
    assert fingerprint(path) != first and path in opened
