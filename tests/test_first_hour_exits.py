"""What a new user meets in the first hour: one line and exit 2 for their mistakes, never a
traceback, and exit codes that mean what the README says.

Each test runs the real entry point on an input a newcomer gives by accident: bytes that are
not UTF-8 on ``chat``'s stdin, ``serve`` on a port another program holds, ``--resume`` of a
store that was never written, a data directory that is a file.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cogwm.cli.common import EXIT_BUDGET_REACHED, EXIT_UNITS_FAILED
from helpers_cli import cogwm

ARENA = """
name = "first-hour"
tasks = ["ESC"]
dialogues_per_task = 1
max_rounds = 3
intent_from_round = 3

[simulator]
model = "fake:schema"

[[agents]]
name = "a"
model = "fake:schema"
prompt = "builtin:empathetic"
"""


def _cli(
    *args: object, cwd: Path, stdin: bytes = b"", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``cogwm ARGS`` in a child process (real stdin bytes, real sockets); 60 s at most."""
    return subprocess.run(
        [sys.executable, "-m", "cogwm.cli.main", *(str(a) for a in args)],
        input=stdin.decode("latin-1"),  # every byte through unchanged (latin-1 maps 1:1)
        capture_output=True,
        text=True,
        encoding="latin-1",
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# ------------------------------------------------------------------------------------ chat


@pytest.mark.parametrize("locale", ["C", "C.UTF-8"])
def test_chat_on_stdin_that_is_not_utf8_is_one_line_and_exit_2(tmp_path: Path, locale: str) -> None:
    # Under the C locale Python decodes stdin with surrogateescape, so the bad bytes reached the
    # model as lone surrogates and failed there with a UnicodeEncodeError traceback.
    done = _cli(
        "chat", "fake:echo", cwd=tmp_path, stdin=b"hello\n\xff\xfe hello\n",
        env={"LC_ALL": locale, "PYTHONUTF8": "0"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    line = _one_error_line(done.stderr)
    assert "line 2" in line and "UTF-8" in line and "0xff" in line, line
    assert done.stdout.splitlines() == ["hello"]  # the good line before it was answered


# ----------------------------------------------------------------------------------- serve


@pytest.fixture()
def busy_port() -> Iterator[int]:
    """A loopback port another program is listening on."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        yield int(holder.getsockname()[1])
    finally:
        holder.close()


def test_serve_on_a_busy_port_says_so_before_any_url_and_exits_2(
    tmp_path: Path, busy_port: int
) -> None:
    done = _cli("serve", "--port", busy_port, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    line = _one_error_line(done.stderr)
    assert f"port {busy_port} is in use" in line, line
    assert "http://" not in done.stderr  # no URL printed as if it had started
    assert list(tmp_path.iterdir()) == []  # not even the play store


def test_the_documented_exit_codes_are_the_cli_constants() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("**Exit codes and files.**", 1)[1].split("\n\n", 1)[0]
    assert f"{EXIT_UNITS_FAILED} when it ran but" in section
    assert f"{EXIT_BUDGET_REACHED} when `--max-cost-usd`" in section
    assert "serve" in section and "in use" in section


# ---------------------------------------------------------------------------------- resume


def _arena_resume(d: Path, db: Path) -> list[object]:
    config = d / "arena.toml"
    config.write_text(ARENA)
    return ["arena", "run", config, "--db", db, "--resume", "--no-progress"]


def _annotate_resume(d: Path, db: Path) -> list[object]:
    fixtures = Path(__file__).resolve().parent / "fixtures"
    return [
        "annotate", "run", "esconv", "--model", "fake:schema", "--limit", "1", "--no-progress",
        "--data-dir", fixtures, "--db", db, "--resume",
    ]  # fmt: skip


def _tom_eval_resume(d: Path, db: Path) -> list[object]:
    from cogwm.tom.items import write_items
    from helpers_tom import mc_item

    items = d / "items.jsonl"
    write_items(items, [mc_item("x:1#w0:retro:t")])
    return ["tom", "eval", items, "--model", "fake:schema", "--db", db, "--resume"]


def _tom_build_resume(d: Path, out: Path) -> list[object]:
    fixtures = Path(__file__).resolve().parent / "fixtures"
    return [
        "tom", "build", "--corpus", "esconv", "--limit", "1", "--data-dir", fixtures,
        "--source", "llm", "--model", "fake:schema", "--out", out, "--resume",
    ]  # fmt: skip


def _train_resume(d: Path, out: Path) -> list[object]:
    samples = d / "samples"
    samples.mkdir()
    return ["train", "--samples", samples, "--base", "smollm2", "--out", out, "--resume"]


@pytest.mark.parametrize(
    "build",
    [_arena_resume, _annotate_resume, _tom_eval_resume, _tom_build_resume, _train_resume],
)
def test_resume_of_a_store_that_does_not_exist_is_refused_and_creates_nothing(
    build: Callable[[Path, Path], list[object]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "runs" / "typo.sqlite"
    db.parent.mkdir()
    args = build(tmp_path, db)
    capsys.readouterr()
    code = cogwm(*args)
    line = _one_error_line(capsys.readouterr().err)
    assert code == 2
    assert str(db) in line and "--resume" in line and "does not exist" in line, line
    assert list(db.parent.iterdir()) == []


# -------------------------------------------------------------------------------- data dir


def test_data_dir_that_is_a_file_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    assert cogwm("data", "list", "--data-dir", a_file) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert f"{a_file} is a file, not a folder" in line, line


@pytest.mark.parametrize("kind", ["file", "missing"])
def test_cogwm_data_dir_that_is_not_a_folder_is_an_error_not_a_table_of_question_marks(
    kind: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = tmp_path / "data"
    if kind == "file":
        target.write_text("not a folder")
    monkeypatch.setenv("COGWM_DATA_DIR", str(target))
    assert cogwm("data", "list") == 2
    out, err = capsys.readouterr()
    line = _one_error_line(err)
    assert "COGWM_DATA_DIR" in line and str(target) in line, line
    assert out == ""


def test_data_list_without_any_data_dir_still_lists_the_corpora(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COGWM_DATA_DIR", raising=False)
    assert cogwm("data", "list") == 0
    assert "esconv" in capsys.readouterr().out
