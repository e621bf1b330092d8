"""Every store keeps its format the same way: ``PRAGMA user_version``, migrated step by step.

Annotation and DialToM stores made before the convention kept their format in a key/value table;
they stay readable (a reader changes no byte), a writer stamps ``user_version`` from the marker
and keeps the marker, and a store newer than this cogwm is refused in one line.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from cogwm.annotate.store import FORMAT_VERSION, AnnotationStore
from cogwm.errors import InputError
from cogwm.store import RunStore
from cogwm.store.schema import SCHEMA_VERSION
from cogwm.store.versions import migrate, read_format
from cogwm.tom.store import SCHEMA_VERSION as TOM_VERSION
from cogwm.tom.store import ToMStore

#: Each kind: how to open it (writer, reader), its current format, its legacy marker table/key.
Kind = tuple[Callable[[Path], object], Callable[[Path], object], int, tuple[str, str] | None]
KINDS: dict[str, Kind] = {
    "run": (RunStore, lambda p: RunStore(p, read_only=True), SCHEMA_VERSION, None),
    "annotation": (
        AnnotationStore,
        lambda p: AnnotationStore(p, read_only=True),
        FORMAT_VERSION,
        ("meta", "format_version"),
    ),
    "tom": (
        ToMStore,
        lambda p: ToMStore(p, read_only=True),
        TOM_VERSION,
        ("tom_meta", "schema_version"),
    ),
}


def _make(kind: str, path: Path) -> None:
    store = KINDS[kind][0](path)
    store.close()  # type: ignore[attr-defined]


def _user_version(path: Path, value: int | None = None) -> int:
    with sqlite3.connect(path) as conn:
        if value is not None:
            conn.execute(f"PRAGMA user_version={value}")
        found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    conn.close()
    return found


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_new_store_records_its_format_in_user_version(kind: str, tmp_path: Path) -> None:
    # Catches: a store kind keeping its format anywhere but user_version.
    path = tmp_path / "s.sqlite"
    _make(kind, path)
    assert _user_version(path) == KINDS[kind][2]


@pytest.mark.parametrize("kind", ["annotation", "tom"])
def test_a_store_made_before_the_convention_is_read_and_stamped(kind: str, tmp_path: Path) -> None:
    # Catches: the old stores (format only in their key/value table) refused or rewritten by a
    # reader.
    path = tmp_path / "s.sqlite"
    _make(kind, path)
    _user_version(path, 0)  # as the store was written before user_version was used
    before = path.read_bytes()
    KINDS[kind][1](path).close()  # type: ignore[attr-defined]
    assert path.read_bytes() == before
    _make(kind, path)  # a writer adopts the marker
    assert _user_version(path) == KINDS[kind][2]
    table, key = KINDS[kind][3] or ("", "")
    with sqlite3.connect(path) as conn:
        kept = conn.execute(f"SELECT value FROM {table} WHERE key=?", (key,)).fetchone()
        assert read_format(conn) == KINDS[kind][2]
    conn.close()
    assert kept == (str(KINDS[kind][2]),)  # the older cogwm still finds its marker


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_newer_store_is_refused_in_one_line(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    _make(kind, path)
    _user_version(path, KINDS[kind][2] + 1)
    for opening in KINDS[kind][:2]:
        with pytest.raises(InputError) as caught:
            opening(path)  # type: ignore[operator]
        assert "\n" not in str(caught.value) and str(KINDS[kind][2] + 1) in str(caught.value)


def test_migrations_run_in_order_and_a_missing_step_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    seen: list[int] = []
    steps = {v: (lambda c, v=v: seen.append(v)) for v in (1, 2)}
    assert migrate(conn, 1, 3, steps, path=tmp_path, what="format") == 3
    assert seen == [1, 2]
    with pytest.raises(InputError, match="format 3 cannot be brought to 4"):
        migrate(conn, 3, 4, steps, path=tmp_path, what="format")
    conn.close()
