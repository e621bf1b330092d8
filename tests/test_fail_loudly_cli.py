"""Failed runs say so, no command writes into a file that is not cogwm's, bad input is one line.

Every test runs the real entry point (``cogwm.cli.main.main``) and checks the exit status and,
for user errors, exactly one ``error:`` line on stderr and no traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cogwm.cli.common import EXIT_UNITS_FAILED
from helpers_cli import cogwm, digest, foreign_db

ARENA = """
name = "loud"
seed = 3
tasks = ["ESC"]
dialogues_per_task = 2
max_rounds = 4
intent_from_round = 3
history_turns = 20

[simulator]
model = "fake:arena-script"

[[agents]]
name = "warm"
model = "{agent}"
prompt = "builtin:empathetic"
"""


pytestmark = pytest.mark.usefixtures("fake_arena_models")


def one_error(capsys: pytest.CaptureFixture[str], *args: str, code: int = 2) -> str:
    """Run ``cogwm ARGS``; assert the exit code and exactly one ``error:`` line, no traceback."""
    got = cogwm(*args)
    err = capsys.readouterr().err
    assert got == code, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# --------------------------------------------------------------------- failed runs exit non-zero


def test_arena_run_with_failed_conversations_exits_1_with_causes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent="fake:no-such-fake"))
    db = tmp_path / "run.sqlite"
    assert cogwm("arena", "run", str(config), "--db", str(db), "--no-progress") == (
        EXIT_UNITS_FAILED
    )
    err = capsys.readouterr().err
    assert "Failed conversations by cause" in err and "infrastructure" in err
    assert "no-such-fake" in err and "--resume" in err
    # the report shows the same table
    assert cogwm("arena", "report", "--db", str(db)) == 0
    assert "Failed conversations by cause" in capsys.readouterr().out


def test_arena_run_without_failures_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent="fake:arena-script"))
    db = tmp_path / "run.sqlite"
    assert cogwm("arena", "run", str(config), "--db", str(db), "--no-progress") == 0
    assert "Failed conversations" not in capsys.readouterr().err


def test_arena_run_refused_by_validation_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    text = ARENA.format(agent="fake:arena-script").replace(
        'tasks = ["ESC"]', 'tasks = ["ESC"]\nscenarios = "corpus"\ndata_dir = "/nonexistent"'
    )
    config.write_text(text)
    db = tmp_path / "run.sqlite"
    one_error(capsys, "arena", "run", str(config), "--db", str(db), "--no-progress")
    assert not db.exists()


# -------------------------------------------------------------------- files that are not ours


@pytest.mark.parametrize(
    "command",
    [
        ("arena", "run", "{config}", "--no-progress", "--db", "{db}"),
        ("arena", "report", "--db", "{db}"),
        ("arena", "export", "--conversation", "1", "--db", "{db}"),
        ("tom", "stats", "--db", "{db}"),
        ("view", "--db", "{db}", "--out", "{tmp}/v.html"),
        ("annotate", "export", "--db", "{db}", "--out", "{tmp}/a.jsonl"),
        ("annotate", "quality", "--db", "{db}"),
    ],
)
def test_foreign_sqlite_file_is_refused_and_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent="fake:arena-script"))
    db = foreign_db(tmp_path / "other.sqlite")
    before = digest(db)
    args = [a.format(config=config, db=db, tmp=tmp_path) for a in command]
    line = one_error(capsys, *args)
    assert "other.sqlite" in line and "not a cogwm" in line
    assert digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == [
        "arena.toml",
        "other.sqlite",
    ]


@pytest.mark.parametrize(
    "command", [("arena", "report"), ("tom", "stats"), ("annotate", "quality")]
)
def test_read_only_commands_never_turn_an_empty_file_into_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    empty = tmp_path / "notes.jsonl"
    empty.write_text("")
    line = one_error(capsys, *command, "--db", str(empty))
    assert "empty file" in line
    assert empty.read_bytes() == b""


def test_stores_of_the_other_kind_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent="fake:arena-script"))
    arena_db = tmp_path / "arena.sqlite"
    assert cogwm("arena", "run", str(config), "--db", str(arena_db), "--no-progress") == 0
    capsys.readouterr()
    before = digest(arena_db)
    line = one_error(capsys, "tom", "stats", "--db", str(arena_db))
    assert "is a cogwm run store, not a cogwm DialToM store" in line
    assert digest(arena_db) == before
    # a read-only command leaves a cogwm store byte-identical too
    assert cogwm("arena", "report", "--db", str(arena_db), "--json") == 0
    assert digest(arena_db) == before


def test_arena_and_tom_have_different_default_stores() -> None:
    import inspect

    from cogwm.cli import arena, tom

    arena_default = inspect.signature(arena.run_command).parameters["db"].default
    tom_default = inspect.signature(tom.stats_command).parameters["db"].default
    assert arena_default != tom_default


# ------------------------------------------------------------ one line instead of a traceback


def _items(d: Path) -> Path:
    from cogwm.tom.items import write_items
    from helpers_tom import mc_item

    path = d / "items.jsonl"
    write_items(path, [mc_item("x:1#w0:retro:t"), mc_item("x:2#w0:retro:t", dialogue_id="x:2")])
    return path


def _latin1(d: Path) -> Path:
    path = d / "latin1.jsonl"
    path.write_bytes("caf\xe9\n".encode("latin-1"))
    return path


def _folder(d: Path) -> Path:
    (d / "folder").mkdir(exist_ok=True)
    return d / "folder"


def _binary(d: Path) -> Path:
    path = d / "binary.toml"
    path.write_bytes(bytes(range(256)))
    return path


def _a_file(d: Path) -> Path:
    path = d / "file.txt"
    path.write_text("x")
    return path


def _config(d: Path, **fields: object) -> Path:
    text = ARENA.format(agent="fake:arena-script")
    for key, value in fields.items():
        text = text.replace(f'{key} = "builtin:empathetic"', f"{key} = {value}")
    path = d / "arena.toml"
    path.write_text(text)
    return path


BAD_INPUTS: dict[str, Callable[[Path], list[object]]] = {
    "arena CONFIG is a directory": lambda d: ["arena", "run", _folder(d), "--db", d / "r.sqlite"],
    "arena CONFIG is binary": lambda d: ["arena", "run", _binary(d), "--db", d / "r.sqlite"],
    "misspelt builtin: prompt": lambda d: [
        "arena",
        "run",
        _config(d, prompt='"bultin:dismissive"'),
        "--db",
        d / "r.sqlite",
    ],
    "report --plots on a file": lambda d: ["arena", "report", "--plots", _a_file(d)],
    "tom variants non-UTF-8": lambda d: ["tom", "variants", _latin1(d), "--easy", "--out", d / "o"],
    "tom verify-export non-UTF-8": lambda d: [
        "tom",
        "verify-export",
        _latin1(d),
        "--out",
        d / "o.csv",
    ],
    "tom verify votes non-UTF-8": lambda d: ["tom", "verify", _items(d), "--votes", _latin1(d)],
    "tom variants --out is a directory": lambda d: [
        "tom",
        "variants",
        _items(d),
        "--easy",
        "--out",
        _folder(d),
    ],
    "tom verify-export --out is a directory": lambda d: [
        "tom",
        "verify-export",
        _items(d),
        "--out",
        _folder(d),
    ],
    "data list on a missing folder": lambda d: ["data", "list", "--data-dir", d / "nowhere"],
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    args = [str(a) for a in BAD_INPUTS[case](tmp_path)]
    if args[:2] == ["arena", "report"]:
        # a real store to report on, so only --plots is wrong
        config = _config(tmp_path)
        assert (
            cogwm("arena", "run", str(config), "--db", str(tmp_path / "ok.sqlite"), "--no-progress")
            == 0
        )
        capsys.readouterr()
        args += ["--db", str(tmp_path / "ok.sqlite")]
    one_error(capsys, *args)


def test_tom_eval_against_an_unreachable_model_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "t.sqlite"
    args = ["tom", "eval", str(_items(tmp_path)), "--model", "openai:nobody", "--db", str(db)]
    # --no-preflight: the model's calls fail during the run (with it, nothing would start)
    code = cogwm(*args, "--base-url", "http://127.0.0.1:9/v1", "--no-preflight")
    err = capsys.readouterr().err
    assert code == EXIT_UNITS_FAILED, err
    assert "Traceback" not in err and "failed" in err


def test_tom_build_llm_against_an_unreachable_model_leaves_no_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from helpers_tom import write_annomi

    write_annomi(tmp_path / "data" / "annomi", sessions=1, rounds=4)
    out = tmp_path / "llm.jsonl"
    code = cogwm(
        "tom",
        "build",
        "--corpus",
        "annomi",
        "--data-dir",
        str(tmp_path / "data"),
        "--source",
        "llm",
        "--model",
        "openai:nobody",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--out",
        str(out),
        "--no-preflight",
    )
    err = capsys.readouterr().err
    assert code == EXIT_UNITS_FAILED and "Traceback" not in err, err
    assert not out.exists()


def test_intent_from_round_beyond_max_rounds_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(
        ARENA.format(agent="fake:arena-script").replace(
            "intent_from_round = 3", "intent_from_round = 50"
        )
    )
    db = tmp_path / "r.sqlite"
    line = one_error(capsys, "arena", "run", str(config), "--db", str(db), "--no-progress")
    assert f"{config}: intent_from_round: 50 is beyond max_rounds 4" in line
    assert not db.exists()


def test_merge_of_part_of_the_shards_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path)
    shard = tmp_path / "s1.sqlite"
    assert (
        cogwm("arena", "run", str(config), "--db", str(shard), "--shard", "1/3", "--no-progress")
        == 0
    )
    capsys.readouterr()
    assert cogwm("arena", "merge", str(tmp_path / "all.sqlite"), str(shard)) == 0
    assert "shard(s) 2/3, 3/3 of the run were not given" in capsys.readouterr().err


# ------------------------------------------------------------------------ output off a terminal


def test_tables_are_not_cut_off_a_terminal(tmp_path: Path) -> None:
    import os
    import subprocess

    long_name = "an_agent_with_a_name_much_longer_than_any_column_of_a_table" * 2
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent="fake:schema").replace('"warm"', f'"{long_name}"'))
    config.write_text(config.read_text().replace('"fake:arena-script"', '"fake:schema"'))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["COGWM_CACHE_DIR"] = str(tmp_path / "cache")
    db = tmp_path / "r.sqlite"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cogwm.cli.main", *args],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )

    assert run("arena", "run", str(config), "--db", str(db), "--no-progress").returncode == 0
    done = run("arena", "report", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert f"{long_name}/no_cot" in done.stdout  # the table row, neither cut nor folded
    assert "…" not in done.stdout
    # stderr is not wrapped mid-message either
    bad = run("arena", "report", "--db", str(tmp_path / "missing" / "nowhere-to-be-found.sqlite"))
    assert len(bad.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------ meaning, not only type


def test_state_score_outside_the_task_range_is_refused_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from cogwm.schema import CognitiveState, Emotion, StateItem

    def state(score: float) -> dict[str, object]:
        return CognitiveState(
            emotion=Emotion(label="sadness", intensity=3),
            beliefs=[StateItem(text="it helps", score=score)],
        ).model_dump(mode="json")

    rows = [
        {"id": "fine", "states": [state(0.0), state(2.0)]},
        {"id": "absurd", "states": [state(1.0), state(1e6)]},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    line = one_error(capsys, "score", "trajectories", str(path), "--task", "ESC")
    assert "line 2 (absurd): state 1: beliefs score 1e+06 is outside ESC's range 0..2" in line


# ------------------------------------------------------------------------------------ names


def test_help_shows_no_type_beside_flags_and_no_internal_notes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cogwm("chat", "--help") == 0
    out = capsys.readouterr().out
    assert "<bool>" not in out and "Registered as" not in out
    assert "--no-cache" in out


def test_tom_task_option_does_not_clash_with_the_arena_task(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cogwm("tom", "build", "--help") == 0
    out = capsys.readouterr().out
    assert "--tom-task" in out and "--task " not in out
    line = one_error(capsys, "tom", "build", "--out", "x.jsonl", "--tom-task", "ESC")
    assert "--tom-task must be retrospective or prospective" in line
    # the former name is still read
    line = one_error(capsys, "tom", "build", "--out", "x.jsonl", "--task", "ESC")
    assert "--tom-task must be retrospective or prospective" in line


# -------------------------------------------------------------------------------- preflight


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ("foo:bar", "agents.warm: model 'foo:bar': unknown backend 'foo'"),
        ("openai:qwen", "agents.warm: model 'openai:qwen' has no base_url"),
    ],
)
def test_preflight_refuses_models_that_cannot_be_called_as_written(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    agent: str,
    expected: str,
) -> None:
    monkeypatch.delenv("COGWM_BASE_URL", raising=False)
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent=agent))
    db = tmp_path / "r.sqlite"
    line = one_error(capsys, "arena", "run", str(config), "--db", str(db), "--no-progress")
    assert expected in line
    assert not db.exists()


def test_preflight_accepts_an_openai_model_with_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from cogwm.arena.config import parse_config
    from cogwm.arena.preflight import preflight

    monkeypatch.delenv("COGWM_BASE_URL", raising=False)
    raw = {
        "tasks": ["ESC"],
        "dialogues_per_task": 1,
        "simulator": {"model": "openai:qwen", "options": {"base_url": "http://127.0.0.1:9/v1"}},
        "agents": [{"name": "a", "model": "fake:schema"}],
    }
    preflight(parse_config(raw))
    monkeypatch.setenv("COGWM_BASE_URL", "http://127.0.0.1:9/v1")
    raw["simulator"] = {"model": "openai:qwen"}
    preflight(parse_config(raw))


def test_unknown_emotion_label_error_lists_the_allowed_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    state = {"emotion": {"label": "glee", "intensity": 2}}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "c", "states": [state, state]}) + "\n")
    line = one_error(capsys, "score", "trajectories", str(path), "--task", "ESC")
    assert "'glee' is not in the lexicon (allowed: " in line and "sadness" in line


def test_reply_cache_refuses_a_foreign_file_and_is_recognised_by_stores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cogwm.errors import InputError
    from cogwm.models.cache import ReplyCache

    other = foreign_db(tmp_path / "other.sqlite")
    before = digest(other)
    with pytest.raises(InputError, match="another tool's SQLite database"):
        ReplyCache(other)
    assert digest(other) == before
    cache = ReplyCache(tmp_path / "cache.sqlite")
    cache.close()
    line = one_error(capsys, "arena", "report", "--db", str(tmp_path / "cache.sqlite"))
    assert "is a cogwm reply cache, not a cogwm run store" in line


def test_quickstart_with_failed_conversations_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, out = tmp_path / "qs.sqlite", tmp_path / "plots"
    args = ["quickstart", "--db", str(db), "--out", str(out), "--no-progress", "--dialogues", "1"]
    assert cogwm(*args, "--model", "fake:no-such-fake") == EXIT_UNITS_FAILED
    err = capsys.readouterr().err
    assert "Failed conversations by cause" in err and "Traceback" not in err


def test_tom_compare_with_failed_answers_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COGWM_BASE_URL", "http://127.0.0.1:9/v1")
    args = ["tom", "compare", str(_items(tmp_path)), "--db", str(tmp_path / "t.sqlite")]
    assert cogwm(*args, "--model", "openai:nobody") == EXIT_UNITS_FAILED
    err = capsys.readouterr().err
    assert "Traceback" not in err and "answers failed" in err
