"""Shared test fixtures.

The real corpora are read from ``../shared/data`` beside the repository (or ``$COGWM_DATA_DIR``);
tests that need them skip with a clear reason when they are absent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _real_data_dir() -> Path | None:
    env = os.environ.get("COGWM_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "data")
    return next((c for c in candidates if c.is_dir()), None)


@pytest.fixture(scope="session")
def real_data_dir() -> Path:
    """The directory of the real corpora; skips the test when it is not present."""
    found = _real_data_dir()
    if found is None:
        pytest.skip("real corpora not present (../shared/data or $COGWM_DATA_DIR)")
    return found


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """Small hand-written corpus fixtures that ship with the tests."""
    return FIXTURES


@pytest.fixture(autouse=True, scope="session")
def _isolated_model_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep every test's model cache out of the user's cache directory."""
    os.environ["COGWM_CACHE_DIR"] = str(tmp_path_factory.mktemp("model-cache"))


@pytest.fixture()
def fake_arena_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The arena tests' fake models registered, with a reply cache of the test's own."""
    from cogwm.models import unregister_fake
    from helpers_arena import FAKE_NAME, register

    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    register()
    yield
    unregister_fake(FAKE_NAME)
