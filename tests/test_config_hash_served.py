"""A config's hash is a function of the config and the served model ids it is handed.

The model id each ``openai:`` endpoint reports enters the hash (a server restarted with other
weights under the same name must not resume the old run), but it is asked once per run and passed
in: what the process happens to have asked before never changes the hash. The pinned digests are
those the same configs had when the ids were read from process state, so stored runs resume.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import pytest

from cogwm.arena.config import ArenaConfig, config_hash, parse_config
from cogwm.arena.digests import Digests
from cogwm.arena.runner import planned_units
from cogwm.models import openai_api
from cogwm.models.openai_api import endpoint_label
from cogwm.schema import lexicon
from helpers_arena import config

URL = "http://127.0.0.1:8011/v1"
#: The digests of this config before and after the server reported its weights.
HASH_UNASKED = "9efc25f2a1255994a2fb0ae1f13a6e8297b1f0cdf2a4c58375f7ee637b5c803c"
HASH_SERVED = "ef945cd0da5b66542122da72b2bd7437f293b52d53f834e9aeba18026b89db3c"
UNIT_SERVED = "6d7d3af918a3ec105e091c5c56dacb593f6ee15ff2762a0fabeb5baede610156"
PREP_SERVED = "5c6dfe52a9e208bbf8f7823a8657c1165b323ec71e818eed2a61e20e1379f864"


@pytest.fixture(autouse=True)
def _default_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    # The pinned digests name the default emotion labels: labels another test registered for the
    # whole process (human-label extensions) would change them.
    monkeypatch.setattr(lexicon, "_ACTIVE", ContextVar("lexicon", default=lexicon.DEFAULT_LEXICON))


def _config() -> ArenaConfig:
    options = {"base_url": URL, "modes": ["json_schema"], "logprobs": False}
    raw: dict[str, Any] = config(model_name="unused")
    raw["simulator"] = {"model": "openai:qwen", "options": options}
    raw["agents"] = [{**a, "model": "openai:qwen", "options": options} for a in raw["agents"]]
    return parse_config(raw)


def _served(weights: str = "/weights/qwen-a") -> dict[tuple[str, str], str]:
    return {("qwen", endpoint_label(URL)): f"qwen:{weights}"}


def test_the_hash_ignores_what_the_process_has_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    # Catches: the hash reading the process's table of served models (two configs built in one
    # process, or a resumed run after another run asked the server, hashed differently).
    cfg = _config()
    monkeypatch.setattr(openai_api, "_SERVED", {})
    before = config_hash(cfg)
    openai_api._SERVED.update(_served("/weights/qwen-b"))
    assert config_hash(cfg) == before == HASH_UNASKED
    assert Digests(cfg).unit(planned_units(cfg)[0]) == Digests(cfg, served={}).unit(
        planned_units(cfg)[0]
    )


def test_the_served_ids_handed_in_give_the_hashes_runs_were_stored_with() -> None:
    cfg = _config()
    assert config_hash(cfg, _served()) == HASH_SERVED
    assert config_hash(cfg, _served("/weights/qwen-b")) not in {HASH_SERVED, HASH_UNASKED}
    unit = planned_units(cfg)[0]
    digests = Digests(cfg, served=_served())
    assert digests.unit(unit) == UNIT_SERVED
    assert digests.prep(unit.task, unit.scenario) == PREP_SERVED


def test_ids_of_another_model_or_endpoint_change_nothing() -> None:
    cfg = _config()
    other = {("llama", endpoint_label(URL)): "llama", ("qwen", "http://elsewhere/v1"): "qwen:x"}
    assert config_hash(cfg, other) == HASH_UNASKED
