"""The fail-loudly issue's probes, rerun: one line and a non-zero exit, or a correct result.

The probes are those of ``bench/probe_bad_inputs.py`` (one list for the bench and this test),
run here in process on the fake backend. Then every command that takes an SQLite store is
pointed at another tool's database, which must come out byte-identical.
"""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer

from helpers_cli import cogwm, digest, foreign_db

BENCH = Path(__file__).resolve().parents[1] / "bench" / "probe_bad_inputs.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("probe_bad_inputs", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


bench = _bench()
PROBES = {probe.name: probe for probe in bench._probes()}


@pytest.fixture()
def probe_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory and model cache, no $COGWM_BASE_URL (as the bench runs)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("COGWM_BASE_URL", raising=False)
    return tmp_path


@pytest.mark.parametrize("name", sorted(PROBES))
def test_probe_of_the_issue(
    name: str,
    probe_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    probe = PROBES[name]
    args = probe.args(probe_dir)
    for key, value in probe.env(probe_dir).items():
        monkeypatch.setenv(key, value)
    # The probe's bytes as a process's stdin under the C locale would give them.
    stdin = io.TextIOWrapper(io.BytesIO(probe.stdin), encoding="utf-8", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdin", stdin)
    before = {path: digest(path) for path in probe.untouched(probe_dir)}
    capsys.readouterr()
    try:
        code = cogwm(*args)
    finally:
        bench.release_ports()
    out, err = capsys.readouterr()
    assert bench.classify(probe, probe_dir, code, out, err) == "ok", (code, err)
    if probe.expect == "error":
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), err
    for path, sha in before.items():
        assert digest(path) == sha, f"{path.name} was changed"


# ------------------------------------------------------------- another tool's SQLite file


def _items(d: Path) -> Path:
    from cogwm.tom.items import write_items
    from helpers_tom import mc_item

    path = d / "items.jsonl"
    write_items(path, [mc_item("x:1#w0:retro:t")])
    return path


def _sheet(d: Path) -> Path:
    path = d / "sheet.csv"
    path.write_text("item_id,respondent,choice\nx:1#w0:retro:t,r1,A\n")
    return path


def _fixtures() -> Path:
    return Path(__file__).resolve().parent / "fixtures"


#: Every command option (or argument) that names an SQLite store: 'command param' -> arguments,
#: given the working directory and the foreign file.
STORE_USES: dict[str, Callable[[Path, Path], list[object]]] = {
    "quickstart db": lambda d, f: [
        "quickstart", "--model", "fake:schema", "--dialogues", "1", "--no-progress",
        "--db", f, "--out", d / "plots",
    ],
    "view db": lambda d, f: ["view", "--db", f, "--out", d / "v.html"],
    "view tom_db": lambda d, f: ["view", "--tom-db", f, "--out", d / "v.html"],
    "serve db": lambda d, f: ["serve", "--db", f, "--port", "1"],
    "serve play_db": lambda d, f: ["serve", "--play-db", f, "--port", "1"],
    "annotate run db": lambda d, f: [
        "annotate", "run", "esconv", "--model", "fake:schema", "--limit", "1", "--no-progress",
        "--data-dir", _fixtures(), "--db", f,
    ],
    "annotate export db": lambda d, f: ["annotate", "export", "--db", f, "--out", d / "a.jsonl"],
    "annotate quality-export db": lambda d, f: [
        "annotate", "quality-export", "--db", f, "--out", d / "q.csv",
    ],
    "annotate quality db": lambda d, f: ["annotate", "quality", "--db", f],
    "arena run db": lambda d, f: ["arena", "run", bench.arena_config(d), "--db", f],
    "arena report db": lambda d, f: ["arena", "report", "--db", f],
    "arena export db": lambda d, f: ["arena", "export", "--conversation", "1", "--db", f],
    "arena merge out": lambda d, f: ["arena", "merge", f, f],
    "arena sensitivity db": lambda d, f: [
        "arena", "sensitivity", "--simulator", "python:cogwm.simulator.rule:SentimentMeter",
        "--task", "ESC", "--no-progress", "--db", f,
    ],
    "arena merge shards": lambda d, f: ["arena", "merge", d / "all.sqlite", f],
    "score fidelity embedding_cache": lambda d, f: [
        "score", "fidelity", bench.fidelity_records(d), bench.fidelity_records(d),
        "--embedding-cache", f,
    ],
    "tom answers-import db": lambda d, f: [
        "tom", "answers-import", _sheet(d), "--as", "human:lay", "--items", _items(d), "--db", f,
    ],
    "tom eval db": lambda d, f: ["tom", "eval", _items(d), "--model", "fake:schema", "--db", f],
    "tom compare db": lambda d, f: [
        "tom", "compare", _items(d), "--model", "fake:schema", "--db", f,
    ],
    "tom score-open db": lambda d, f: ["tom", "score-open", "--no-embed", "--db", f],
    "tom stats db": lambda d, f: ["tom", "stats", "--db", f],
}  # fmt: skip


def _store_params() -> set[str]:
    """'command param' for every parameter of the CLI that names an SQLite store."""
    from cogwm.cli.main import _register, app

    _register()
    found: set[str] = set()

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for param in command.params:
            is_store = param.name.endswith(("db", "_cache")) and not getattr(param, "is_flag", 0)
            if is_store or (path == ("arena", "merge") and param.name in ("out", "shards")):
                found.add(f"{' '.join(path)} {param.name}")
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


def test_every_store_option_is_probed() -> None:
    assert _store_params() == set(STORE_USES)


@pytest.mark.parametrize("use", sorted(STORE_USES))
def test_another_tools_sqlite_file_is_refused_and_byte_identical(
    use: str, probe_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign = foreign_db(probe_dir / "other.sqlite")
    before = digest(foreign)
    args = [str(a) for a in STORE_USES[use](probe_dir, foreign)]
    if args[0] == "serve":  # a regression would serve forever: a subprocess with a timeout
        done = subprocess.run(
            [sys.executable, "-m", "cogwm.cli.main", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        code, err = done.returncode, done.stderr
    else:
        capsys.readouterr()
        code = cogwm(*args)
        err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert digest(foreign) == before
    assert not (probe_dir / "all.sqlite").exists()


def test_train_refuses_missing_samples_before_loading_torch(tmp_path: Path) -> None:
    # It used to import torch and convert the GGUF base (about 40 s) before finding no samples.
    code = (
        "import sys\n"
        "from cogwm.cli.main import main\n"
        f"sys.argv = ['cogwm', 'train', '--samples', {str(tmp_path / 'none')!r},"
        f" '--base', 'smollm2', '--out', {str(tmp_path / 'adapter')!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    print(exc.code, 'torch' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.split() == ["2", "False"], done.stderr
    assert "train.jsonl: file not found" in done.stderr
