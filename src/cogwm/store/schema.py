"""The SQLite schema of the run store (DESIGN.md §6, STYLE.md "SQLite").

One file holds one arena run (or the merge of its shards): the run with its config, config hash,
prompts, git revision and package versions; its scenario preparations (profile and initial state,
shared by every agent on that scenario); conversations; turns with their state JSON; model calls;
per-conversation metrics. Deleting a conversation cascades to its turns, calls and metrics.
"""

from __future__ import annotations

#: Bumped when the schema changes; ``PRAGMA user_version`` holds it.
SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    created_at    REAL NOT NULL,
    updated_at    REAL NOT NULL,
    config_json   TEXT NOT NULL,
    config_hash   TEXT NOT NULL,
    prompts_json  TEXT NOT NULL,
    git_revision  TEXT,
    packages_json TEXT NOT NULL,
    seed          INTEGER NOT NULL,
    shard         TEXT
);

CREATE TABLE IF NOT EXISTS scenario_preps (
    id                 INTEGER PRIMARY KEY,
    run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    task               TEXT NOT NULL,
    scenario           TEXT NOT NULL,
    profile_json       TEXT NOT NULL,
    profile_source     TEXT NOT NULL,
    initial_state_json TEXT NOT NULL,
    call_id            TEXT,
    UNIQUE (run_id, task, scenario)
);

CREATE TABLE IF NOT EXISTS conversations (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    unit_key        TEXT NOT NULL,
    task            TEXT NOT NULL,
    agent           TEXT NOT NULL,
    condition       TEXT NOT NULL,
    scenario        TEXT NOT NULL,
    scenario_source TEXT NOT NULL,
    agent_model     TEXT NOT NULL,
    simulator_model TEXT NOT NULL,
    profile_source  TEXT,
    seed            INTEGER NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed')),
    termination     TEXT CHECK (termination IN ('max_rounds', 'natural_end', 'user_left', 'error')),
    error           TEXT,
    rounds          INTEGER,
    attempts        INTEGER NOT NULL DEFAULT 1,
    started_at      REAL NOT NULL,
    finished_at     REAL,
    UNIQUE (run_id, unit_key)
);
CREATE INDEX IF NOT EXISTS conversations_status ON conversations(run_id, status);

CREATE TABLE IF NOT EXISTS turns (
    id              INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    idx             INTEGER NOT NULL,
    round           INTEGER NOT NULL,
    role            TEXT NOT NULL CHECK (role IN ('user', 'agent')),
    phase           TEXT NOT NULL CHECK (phase IN ('cold_start', 'simulated')),
    text            TEXT NOT NULL,
    state_json      TEXT,
    reasoning       TEXT,
    call_id         TEXT,
    UNIQUE (conversation_id, idx)
);

CREATE TABLE IF NOT EXISTS model_calls (
    id                INTEGER PRIMARY KEY,
    run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    conversation_id   INTEGER REFERENCES conversations(id) ON DELETE CASCADE,
    call_id           TEXT NOT NULL,
    purpose           TEXT,
    model             TEXT NOT NULL,
    endpoint          TEXT,
    started_at        REAL NOT NULL,
    latency_s         REAL NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd          REAL NOT NULL,
    cached            INTEGER NOT NULL,
    ok                INTEGER NOT NULL,
    error             TEXT,
    attempts          INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS model_calls_conversation ON model_calls(conversation_id);
CREATE INDEX IF NOT EXISTS model_calls_call_id ON model_calls(call_id);

CREATE TABLE IF NOT EXISTS metrics (
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    value           REAL,
    detail          TEXT,
    PRIMARY KEY (conversation_id, name)
);
"""
