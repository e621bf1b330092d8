"""The SQLite schema of the run store.

One file holds one arena run (or the merge of its shards): the run with its config, config hash,
prompts, git revision and package versions; its scenario preparations (profile and initial state,
shared by every agent on that scenario); conversations; turns with their state JSON; model calls;
per-conversation metrics; the writer's lease. Deleting a conversation cascades to its turns, calls
and metrics.

Store format versions (``PRAGMA user_version``):

1. The first format.
2. Conversations gain ``trial`` (repeat index of a scenario), ``digest`` (over everything that
   changes the conversation's output; a changed digest re-runs the unit on resume) and
   ``failure_kind`` (``agent`` or ``infrastructure``), and the ``agent_failure`` termination;
   scenario preparations gain ``digest``; model calls gain ``conversation_attempt`` (records of
   earlier attempts of a conversation are kept); the ``lease`` table (one writer at a time).
"""

from __future__ import annotations

#: The format this code writes; ``PRAGMA user_version`` holds a store's format.
SCHEMA_VERSION = 2

#: The conversations table of the current format (``{name}`` lets a migration build it aside).
CONVERSATIONS_TABLE = """
CREATE TABLE {name} (
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
    termination     TEXT CHECK (termination IN
                        ('max_rounds', 'natural_end', 'user_left', 'agent_failure', 'error')),
    error           TEXT,
    rounds          INTEGER,
    attempts        INTEGER NOT NULL DEFAULT 1,
    started_at      REAL NOT NULL,
    finished_at     REAL,
    trial           INTEGER NOT NULL DEFAULT 0,
    digest          TEXT,
    failure_kind    TEXT CHECK (failure_kind IN ('agent', 'infrastructure')),
    UNIQUE (run_id, unit_key)
)"""

_LEASE_TABLE = """
CREATE TABLE IF NOT EXISTS lease (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    owner        TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    host         TEXT NOT NULL,
    acquired_at  REAL NOT NULL,
    heartbeat_at REAL NOT NULL
)"""

SCHEMA = f"""
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
    digest             TEXT,
    UNIQUE (run_id, task, scenario)
);

{CONVERSATIONS_TABLE.format(name="IF NOT EXISTS conversations")};
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
    id                   INTEGER PRIMARY KEY,
    run_id               INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    conversation_id      INTEGER REFERENCES conversations(id) ON DELETE CASCADE,
    call_id              TEXT NOT NULL,
    purpose              TEXT,
    model                TEXT NOT NULL,
    endpoint             TEXT,
    started_at           REAL NOT NULL,
    latency_s            REAL NOT NULL,
    prompt_tokens        INTEGER NOT NULL,
    completion_tokens    INTEGER NOT NULL,
    cost_usd             REAL NOT NULL,
    cached               INTEGER NOT NULL,
    ok                   INTEGER NOT NULL,
    error                TEXT,
    attempts             INTEGER NOT NULL,
    conversation_attempt INTEGER
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
{_LEASE_TABLE};
"""

#: Columns that format 1 and format 2 conversations share (copied by the migration).
_V1_CONVERSATION_COLUMNS = (
    "id, run_id, unit_key, task, agent, condition, scenario, scenario_source, agent_model,"
    " simulator_model, profile_source, seed, status, termination, error, rounds, attempts,"
    " started_at, finished_at"
)

#: Statements that turn a format-1 store into format 2 (run with foreign keys off, in one
#: transaction). SQLite cannot change a CHECK constraint in place, so the conversations table is
#: rebuilt and swapped in (the documented 12-step procedure); v1 failures were all
#: infrastructure failures (agent failures did not exist), v1 units were all trial 0.
MIGRATE_1_TO_2 = (
    CONVERSATIONS_TABLE.format(name="conversations_v2"),
    f"INSERT INTO conversations_v2 ({_V1_CONVERSATION_COLUMNS}, trial, digest, failure_kind)"
    f" SELECT {_V1_CONVERSATION_COLUMNS}, 0, NULL,"
    " CASE WHEN status = 'failed' THEN 'infrastructure' END FROM conversations",
    "DROP TABLE conversations",
    "ALTER TABLE conversations_v2 RENAME TO conversations",
    "CREATE INDEX IF NOT EXISTS conversations_status ON conversations(run_id, status)",
    "ALTER TABLE scenario_preps ADD COLUMN digest TEXT",
    "ALTER TABLE model_calls ADD COLUMN conversation_attempt INTEGER",
    _LEASE_TABLE,
)

#: Migrations by the version they start from.
MIGRATIONS: dict[int, tuple[str, ...]] = {1: MIGRATE_1_TO_2}
