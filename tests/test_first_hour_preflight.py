"""Every model a command will call is resolved before the first call: a name that does not exist
is one line naming the role, exit 2, and nothing is created (no store, no output folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogwm.errors import ConfigError
from cogwm.models.preflight import ModelUse, check_address
from test_fail_loudly_cli import ARENA, _items, one_error

pytestmark = pytest.mark.usefixtures("fake_arena_models")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_task"
BAD_LLAMACPP = "llamacpp:nosuchmodel"


def _never_serve(*args: object, **kwargs: object) -> None:
    raise AssertionError("serve started with a model that does not exist")


def _created(folder: Path, before: set[str]) -> list[str]:
    return sorted({p.name for p in folder.iterdir()} - before)


# ------------------------------------------------------------------------ the shared function


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        (BAD_LLAMACPP, "not a known alias"),
        ("llamacpp:/nonexistent/model.gguf", "no such file"),
        ("llamacpp:smollm2+/nonexistent/lora.gguf", "no such LoRA file"),
        ("hf:/nonexistent/dir", "no such model path"),
    ],
)
def test_an_address_that_names_nothing_is_refused_with_its_role(address: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_address(ModelUse("judge", address))
    message = str(caught.value)
    assert message.startswith(f"judge: unknown model {address!r}: ") and "\n" not in message
    assert reason in message


def test_an_hf_folder_without_a_config_is_refused(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"has no config\.json"):
        check_address(ModelUse("simulator", f"hf:{tmp_path}"))
    (tmp_path / "config.json").write_text("{}")
    check_address(ModelUse("simulator", f"hf:{tmp_path}"))  # resolved without loading anything


def test_installed_and_shipped_models_pass() -> None:
    for address in ("llamacpp:smollm2", "llamacpp:smollm2-wm", "fake:schema"):
        check_address(ModelUse("judge", address))


def test_an_alias_is_checked_by_its_package_without_asking_for_its_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cogwm.models import llamacpp

    def never(*args: object) -> None:
        raise AssertionError("the preflight asked for the GGUF file (a chunked one assembles)")

    monkeypatch.setattr(llamacpp, "alias_path", never)
    check_address(ModelUse("judge", "llamacpp:smollm2-wm"))
    missing = llamacpp.Alias("no_such_package_for_cogwm", "*.gguf", "a model not installed")
    monkeypatch.setitem(llamacpp.ALIASES, "absent", missing)
    with pytest.raises(ConfigError) as caught:
        check_address(ModelUse("agents.a", "llamacpp:absent"))
    assert str(caught.value) == (
        "agents.a: unknown model 'llamacpp:absent': needs the no-such-package-for-cogwm "
        "package: pip install no-such-package-for-cogwm (or pip install 'cogwm[local]')"
    )


# ------------------------------------------------------------------------------ the commands


def _arena_args(d: Path, judge: str) -> list[str]:
    config = d / "arena.toml"
    config.write_text(ARENA.format(agent="fake:arena-script") + f'\n[judge]\nmodel = "{judge}"\n')
    return ["arena", "run", str(config), "--db", str(d / "run.sqlite"), "--no-progress"]


def _command_args(command: str, d: Path, address: str) -> tuple[list[str], str]:
    """The command line with ``address`` as a model, and the role the error must name."""
    model = ["--model", address]
    task = ["--task", str(EXAMPLE / "task.toml")]
    return {
        "arena run": lambda: (_arena_args(d, address), "judge"),
        "quickstart": lambda: (
            ["quickstart", "--db", str(d / "q.sqlite"), "--out", str(d / "plots"), *model],
            "agents.empathetic",
        ),
        "validate": lambda: (["validate", "--data-dir", str(d), *model], "--model"),
        "annotate run": lambda: (
            [
                "annotate",
                "run",
                str(EXAMPLE / "dialogues.jsonl"),
                *task,
                "--db",
                str(d / "a.db"),
                *model,
            ],
            "--model",
        ),
        "tom eval": lambda: (
            ["tom", "eval", str(_items(d)), "--db", str(d / "t.db"), *model],
            "--model",
        ),
        "serve": lambda: (["serve", "--play-db", str(d / "play.sqlite"), *model], "--model"),
    }[command]()


@pytest.mark.parametrize(
    "command", ["arena run", "quickstart", "validate", "annotate run", "tom eval", "serve"]
)
@pytest.mark.parametrize("address", [BAD_LLAMACPP, "hf:/nonexistent/dir"])
def test_commands_refuse_a_model_that_does_not_exist_before_creating_anything(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    address: str,
) -> None:
    monkeypatch.setattr("uvicorn.run", _never_serve)  # a regression must fail, not serve forever
    args, role = _command_args(command, tmp_path, address)
    before = {p.name for p in tmp_path.iterdir()}
    line = one_error(capsys, *args)
    assert line.startswith(f"error: {role}: unknown model {address!r}: "), line
    assert _created(tmp_path, before) == []


def test_arena_run_names_the_agent_whose_model_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent="hf:/nonexistent/dir"))
    line = one_error(capsys, "arena", "run", str(config), "--db", str(tmp_path / "r.sqlite"))
    assert line.startswith("error: agents.warm: unknown model 'hf:/nonexistent/dir': ")
    assert not (tmp_path / "r.sqlite").exists()


@pytest.mark.parametrize(
    ("options", "wrong"),
    [
        ("{ n_ctxx = 4096 }", "option n_ctxx"),  # a typo of a llama.cpp option
        ("{ n_ctx = 8 }", "option n_ctx"),  # below the smallest context
        ("{ max_attempts = 0 }", "option max_attempts"),  # a common option out of range
    ],
)
def test_arena_run_refuses_bad_model_options_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: str, wrong: str
) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(ARENA.format(agent=f'llamacpp:smollm2"\noptions = {options} #'))
    line = one_error(capsys, "arena", "run", str(config), "--db", str(tmp_path / "r.sqlite"))
    assert line.startswith("error: agents.warm: model 'llamacpp:smollm2': "), line
    assert wrong in line
    assert not (tmp_path / "r.sqlite").exists()
