"""Provenance: the git revision is marked dirty for an edit anywhere in the repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cogwm.arena.provenance import git_revision

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_an_edit_outside_the_source_folder_marks_the_revision_dirty(tmp_path: Path) -> None:
    # Catches: only edits under the arena's own folder counted, so a run made with an edited
    # metrics module or test helper was recorded as a clean commit.
    source = tmp_path / "src" / "cogwm" / "arena"
    source.mkdir(parents=True)
    (source / "runner.py").write_text("x = 1\n")
    (tmp_path / "elsewhere.py").write_text("y = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "start")
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert git_revision(source) == head
    (tmp_path / "elsewhere.py").write_text("y = 2\n")
    assert git_revision(source) == f"{head}+dirty"
    assert git_revision(tmp_path.parent / "nowhere") is None
