"""Run cogwm on many bad or awkward inputs and count what a user would not want to see.

Each probe runs the real command in a subprocess (stdout and stderr piped, as in a log) in a
fresh temporary directory and is classed as:

* ``ok``: one ``error: ...`` line and exit 2, or the documented outcome (exit 1 for a run with
  failed units, exit 0 with a correct result);
* ``traceback``: a Python traceback on stderr;
* ``silent``: exit 0 where the input was wrong or the run failed;
* ``other``: anything else (several error lines, another exit code).

Files each probe must leave untouched are compared byte for byte.

    python bench/probe_bad_inputs.py [--only SUBSTRING] [--verbose]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ARENA = """
name = "probe"
tasks = ["ESC"]
dialogues_per_task = 1
max_rounds = {max_rounds}
intent_from_round = {intent_from}

[simulator]
model = "{simulator}"

[[agents]]
name = "a"
model = "{agent}"
prompt = "{prompt}"
"""

UNREACHABLE = "http://127.0.0.1:9/v1"


def arena_config(
    d: Path,
    *,
    agent: str = "fake:schema",
    simulator: str = "fake:schema",
    prompt: str = "builtin:dismissive",
    max_rounds: int = 4,
    intent_from: int = 3,
) -> str:
    path = d / "arena.toml"
    path.write_text(
        ARENA.format(
            agent=agent,
            simulator=simulator,
            prompt=prompt,
            max_rounds=max_rounds,
            intent_from=intent_from,
        )
    )
    return str(path)


def foreign(d: Path) -> str:
    path = d / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    conn.commit()
    conn.close()
    return str(path)


def corpus_config(d: Path) -> str:
    """A config whose scenarios come from a corpus that is not there."""
    path = Path(arena_config(d))
    path.write_text(
        path.read_text().replace(
            "max_rounds", 'scenarios = "corpus"\ndata_dir = "/nonexistent"\nmax_rounds', 1
        )
    )
    return str(path)


def absurd_states(d: Path) -> str:
    """Two conversations' states; the second has a belief score of 1e6 (ESC's range is 0..2)."""
    path = d / "trajectories.jsonl"
    states = [[1.0, 2.0], [1.0, 1e6]]
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"c{k}",
                    "states": [
                        {
                            "emotion": {"label": "sadness", "intensity": 3},
                            "beliefs": [{"text": "it helps", "score": score}],
                        }
                        for score in scores
                    ],
                }
            )
            + "\n"
            for k, scores in enumerate(states)
        )
    )
    return str(path)


def fidelity_records(d: Path) -> str:
    """One valid fidelity record (as gold and as prediction)."""
    path = d / "fidelity.jsonl"
    state = {"emotion": {"label": "sadness", "intensity": 2}}
    path.write_text(json.dumps({"id": "a", "state": state, "utterance": "I lost my job"}) + "\n")
    return str(path)


def empty(d: Path) -> str:
    path = d / "notes.jsonl"
    path.write_text("")
    return str(path)


def not_utf8(d: Path) -> str:
    path = d / "latin1.jsonl"
    path.write_bytes("caf\xe9\n".encode("latin-1"))
    return str(path)


def a_dir(d: Path) -> str:
    (d / "folder").mkdir(exist_ok=True)
    return str(d / "folder")


def binary(d: Path) -> str:
    path = d / "binary.toml"
    path.write_bytes(bytes(range(256)))
    return str(path)


def a_file(d: Path) -> str:
    path = d / "file.txt"
    path.write_text("x")
    return str(path)


@dataclass
class Probe:
    """One command on one bad input."""

    name: str
    args: Callable[[Path], list[str]]
    expect: str = "error"  # 'error' (exit 2, one line), 'failed' (exit 1), 'zero' (exit 0)
    untouched: Callable[[Path], list[Path]] = field(default=lambda d: [])
    check: Callable[[Path, str, str], bool] | None = None  # extra check on (dir, out, err)
    stdin: bytes = b""  # what the command reads on stdin
    env: Callable[[Path], dict[str, str]] = field(default=lambda d: {})  # extra variables


def _probes() -> list[Probe]:
    return [
        Probe(
            "arena run: unknown agent backend",
            lambda d: ["arena", "run", arena_config(d, agent="foo:bar"), "--db", f"{d}/r.sqlite"],
        ),
        Probe(
            "arena run: unknown fake agent (every conversation fails)",
            lambda d: [
                "arena",
                "run",
                arena_config(d, agent="fake:nobody"),
                "--db",
                f"{d}/r.sqlite",
            ],
            "failed",
        ),
        Probe(
            "arena run: openai: agent without a base URL",
            lambda d: [
                "arena",
                "run",
                arena_config(d, agent="openai:qwen"),
                "--db",
                f"{d}/r.sqlite",
            ],
        ),
        Probe(
            "arena run: openai: agent server unreachable",
            lambda d: [
                "arena",
                "run",
                arena_config(
                    d, agent=f'openai:qwen"\noptions = {{ base_url = "{UNREACHABLE}" }} #'
                ),
                "--db",
                f"{d}/r.sqlite",
            ],
        ),
        Probe(
            "arena run --db on another tool's SQLite file",
            lambda d: ["arena", "run", arena_config(d), "--db", foreign(d)],
            untouched=lambda d: [d / "other.sqlite"],
        ),
        Probe(
            "arena report --db on another tool's SQLite file",
            lambda d: ["arena", "report", "--db", foreign(d)],
            untouched=lambda d: [d / "other.sqlite"],
        ),
        Probe(
            "arena report --db on an empty .jsonl",
            lambda d: ["arena", "report", "--db", empty(d)],
            untouched=lambda d: [d / "notes.jsonl"],
        ),
        Probe(
            "tom stats --db on an empty .jsonl",
            lambda d: ["tom", "stats", "--db", empty(d)],
            untouched=lambda d: [d / "notes.jsonl"],
        ),
        Probe(
            "tom stats --db on another tool's SQLite file",
            lambda d: ["tom", "stats", "--db", foreign(d)],
            untouched=lambda d: [d / "other.sqlite"],
        ),
        Probe(
            "arena run: CONFIG is a directory",
            lambda d: ["arena", "run", a_dir(d), "--db", f"{d}/r.sqlite"],
        ),
        Probe(
            "arena run: CONFIG is binary",
            lambda d: ["arena", "run", binary(d), "--db", f"{d}/r.sqlite"],
        ),
        Probe(
            "arena run: prompt 'bultin:dismissive'",
            lambda d: [
                "arena",
                "run",
                arena_config(d, prompt="bultin:dismissive"),
                "--db",
                f"{d}/r.sqlite",
            ],
        ),
        Probe(
            "arena run: intent_from_round > max_rounds",
            lambda d: [
                "arena",
                "run",
                arena_config(d, max_rounds=6, intent_from=50),
                "--db",
                f"{d}/r.sqlite",
            ],
        ),
        Probe(
            "arena report --plots on a file",
            lambda d: (
                [*_with_run(d, ["arena", "report", "--db", f"{d}/ok.sqlite", "--plots"]), a_file(d)]
            ),
        ),
        Probe(
            "tom variants: non-UTF-8 items",
            lambda d: ["tom", "variants", not_utf8(d), "--easy", "--out", f"{d}/v.jsonl"],
        ),
        Probe(
            "tom verify-export: non-UTF-8 items",
            lambda d: ["tom", "verify-export", not_utf8(d), "--out", f"{d}/v.csv"],
        ),
        Probe(
            "tom verify: non-UTF-8 items",
            lambda d: ["tom", "verify", not_utf8(d), "--votes", not_utf8(d)],
        ),
        Probe(
            "tom eval: unreachable model",
            lambda d: _with_items(
                d,
                [
                    "tom",
                    "eval",
                    f"{d}/items.jsonl",
                    "--model",
                    "openai:nobody",
                    "--base-url",
                    UNREACHABLE,
                    "--db",
                    f"{d}/t.sqlite",
                    "--limit",
                    "2",
                ],
            ),
        ),
        Probe(
            "tom build: --out in a directory that cannot be made",
            lambda d: [
                "tom",
                "build",
                "--corpus",
                "annomi",
                "--limit",
                "1",
                "--data-dir",
                _data(),
                "--out",
                "/proc/cogwm/items.jsonl",
            ],
        ),
        Probe(
            "tom build: --out is a directory",
            lambda d: [
                "tom",
                "build",
                "--corpus",
                "annomi",
                "--limit",
                "1",
                "--data-dir",
                _data(),
                "--out",
                a_dir(d),
            ],
        ),
        Probe(
            "tom build --source llm: unreachable model leaves no --out",
            lambda d: [
                "tom",
                "build",
                "--corpus",
                "annomi",
                "--limit",
                "1",
                "--data-dir",
                _data(),
                "--source",
                "llm",
                "--model",
                "openai:nobody",
                "--base-url",
                UNREACHABLE,
                "--out",
                f"{d}/llm.jsonl",
            ],
            check=lambda d, out, err: not (d / "llm.jsonl").exists(),
        ),
        Probe(
            "tom stats --db on a cogwm run store",
            lambda d: _with_run(d, ["tom", "stats", "--db", f"{d}/ok.sqlite"]),
            untouched=lambda d: [d / "ok.sqlite"],
        ),
        Probe(
            "arena run: corpus scenarios without the corpus write no file",
            lambda d: ["arena", "run", corpus_config(d), "--db", f"{d}/r.sqlite"],
            check=lambda d, out, err: not (d / "r.sqlite").exists(),
        ),
        Probe(
            "arena merge of 1 of 2 shards",
            lambda d: ["arena", "merge", f"{d}/all.sqlite", _shard(d, "1/2")],
            "zero",
            check=lambda d, out, err: "2/2 of the run were not given" in err,
        ),
        Probe(
            "score trajectories: a state score of 1e6",
            lambda d: ["score", "trajectories", absurd_states(d), "--task", "ESC"],
        ),
        Probe(
            "score fidelity --embedding-cache on another tool's SQLite file",
            lambda d: [
                "score",
                "fidelity",
                fidelity_records(d),
                fidelity_records(d),
                "--embedding-cache",
                foreign(d),
            ],
            untouched=lambda d: [d / "other.sqlite"],
        ),
        Probe(
            "score fidelity --resamples 10^11",
            lambda d: ["score", "fidelity", "--resamples", "100000000000", f"{d}/none.jsonl"],
        ),
        Probe(
            "annotate export --db on another tool's SQLite file",
            lambda d: ["annotate", "export", "--db", foreign(d), "--out", f"{d}/a.jsonl"],
            untouched=lambda d: [d / "other.sqlite"],
        ),
        Probe(
            "annotate quality --db on an empty .jsonl",
            lambda d: ["annotate", "quality", "--db", empty(d), "--data-dir", _data()],
            untouched=lambda d: [d / "notes.jsonl"],
        ),
        Probe(
            "annotate run: unknown backend",
            lambda d: [
                "annotate",
                "run",
                "esconv",
                "--model",
                "foo:bar",
                "--db",
                f"{d}/a.sqlite",
                "--data-dir",
                _data(),
                "--limit",
                "1",
            ],
        ),
        Probe(
            "train --samples missing",
            lambda d: ["train", "--samples", f"{d}/none", "--base", "smollm2", "--out", f"{d}/ad"],
        ),
        Probe(
            "validate --compare non-UTF-8 cards",
            lambda d: ["validate", "--compare", not_utf8(d), not_utf8(d)],
        ),
        Probe(
            "samples build --out is a file",
            lambda d: [
                "samples",
                "build",
                "--out",
                a_file(d),
                "--human",
                "annomi",
                "--data-dir",
                _data(),
            ],
        ),
        Probe(
            "data list --data-dir /nonexistent",
            lambda d: ["data", "list", "--data-dir", f"{d}/nonexistent"],
        ),
        Probe(
            "arena run: openai: simulator without a base URL",
            lambda d: [
                "arena",
                "run",
                arena_config(d, simulator="openai:qwen"),
                "--db",
                f"{d}/r.sqlite",
            ],
        ),
        Probe(
            "tom stats without --db beside an arena runs.sqlite",
            lambda d: _with_run(d, ["tom", "stats"], db="runs.sqlite"),
            untouched=lambda d: [d / "runs.sqlite"],
            check=lambda d, out, err: "tom.sqlite" in err and not (d / "tom.sqlite").exists(),
        ),
        Probe(
            "arena report in a log: no cell cut",
            lambda d: _with_run(d, ["arena", "report", "--db", f"{d}/ok.sqlite"]),
            "zero",
            check=lambda d, out, err: "a/no_cot" in out and "…" not in out,
        ),
        Probe(
            "tom build --task ESC (the arena's task where tom means retrospective/prospective)",
            lambda d: ["tom", "build", "--task", "ESC", "--out", f"{d}/i.jsonl"],
            check=lambda d, out, err: "--tom-task must be retrospective or prospective" in err,
        ),
        Probe(
            "chat --help: no '<bool>', no internal note",
            lambda d: ["chat", "--help"],
            "zero",
            check=lambda d, out, err: "<bool>" not in out and "Registered" not in out,
        ),
        # first-hour probes: exit codes, read-only
        Probe(
            "chat: stdin that is not UTF-8",
            lambda d: ["chat", "fake:echo"],
            stdin=b"hello\n\xff\xfe hello\n",
            check=lambda d, out, err: "line 2 is not UTF-8" in err,
        ),
        Probe(
            "serve on a port in use",
            lambda d: ["serve", "--port", str(_busy_port())],
            check=lambda d, out, err: "is in use" in err and "http://" not in err,
        ),
        Probe(
            "arena run --resume of a store that does not exist",
            lambda d: ["arena", "run", arena_config(d), "--db", f"{d}/typo.sqlite", "--resume"],
            check=lambda d, out, err: not (d / "typo.sqlite").exists(),
        ),
        Probe(
            "data list --data-dir on a file",
            lambda d: ["data", "list", "--data-dir", a_file(d)],
            check=lambda d, out, err: "is a file, not a folder" in err,
        ),
        Probe(
            "data list with $COGWM_DATA_DIR on a file",
            lambda d: ["data", "list"],
            env=lambda d: {"COGWM_DATA_DIR": a_file(d)},
            check=lambda d, out, err: "is a file, not a folder" in err and out == "",
        ),
        Probe(
            "arena report leaves no -shm or -wal",
            lambda d: _with_run(d, ["arena", "report", "--db", f"{d}/ok.sqlite"]),
            "zero",
            untouched=lambda d: [d / "ok.sqlite"],
            check=lambda d, out, err: _only_store(d),
        ),
        Probe(
            "view leaves no -shm or -wal",
            lambda d: _with_run(d, ["view", "--db", f"{d}/ok.sqlite", "--out", f"{d}/v.html"]),
            "zero",
            untouched=lambda d: [d / "ok.sqlite"],
            check=lambda d, out, err: _only_store(d),
        ),
        Probe(
            "arena run --resume refused (config changed) changes no byte",
            _refused_resume,
            untouched=lambda d: [d / "ok.sqlite"],
            check=lambda d, out, err: "config changed" in err and _only_store(d),
        ),
        Probe(
            "cogwm --version",
            lambda d: ["--version"],
            "zero",
            check=lambda d, out, err: out.startswith("cogwm ") and len(out.split()) == 2,
        ),
        # first-hour probes: models, caps, export
        Probe(
            "arena run: judge llamacpp:nosuchmodel (refused before any store)",
            lambda d: ["arena", "run", judged_by(d, "llamacpp:nosuchmodel"), "--db", f"{d}/r.db"],
            check=lambda d, out, err: "judge: unknown model" in err and _nothing_but(d, JUDGED),
        ),
        Probe(
            "arena run: agent hf:/nonexistent/dir (refused before any store)",
            lambda d: [
                "arena",
                "run",
                arena_config(d, agent="hf:/nonexistent/dir"),
                "--db",
                f"{d}/r.db",
            ],
            check=lambda d, out, err: (
                "agents.a: unknown model" in err and _nothing_but(d, "arena.toml")
            ),
        ),
        *(
            Probe(
                f"{' '.join(a for a in args[:2] if not a.startswith(('-', '/')))} --model "
                f"{model} (refused, nothing created)",
                lambda d, args=args, model=model: [*_in(d, args), "--model", model],
                check=lambda d, out, err: (
                    ("--model: unknown model" in err or "agents.empathetic: unknown model" in err)
                    and _nothing_but(d)
                ),
            )
            for args in (
                ["quickstart", "--db", "{d}/q.sqlite", "--out", "{d}/plots"],
                ["validate", "--data-dir", "{d}"],
                [
                    *("annotate", "run", str(CUSTOM / "dialogues.jsonl")),
                    *("--task", str(CUSTOM / "task.toml"), "--db", "{d}/a.db"),
                ],
                ["serve", "--play-db", "{d}/play.sqlite", "--port", "1"],
            )
            for model in ("llamacpp:nosuchmodel", "hf:/nonexistent/dir")
        ),
        Probe(
            "tom eval --model llamacpp:nosuchmodel",
            lambda d: _with_items(
                d, ["tom", "eval", f"{d}/items.jsonl", "--model", "llamacpp:nosuchmodel"]
            ),
            check=lambda d, out, err: (
                "--model: unknown model" in err and not (d / "tom.sqlite").exists()
            ),
        ),
        Probe(
            "arena run --dry-run: max_rounds = 2**63 - 1",
            lambda d: ["arena", "run", arena_config(d, max_rounds=2**63 - 1), "--dry-run"],
            check=lambda d, out, err: "max_rounds" in err and "1000" in err,
        ),
        Probe(
            "arena run --dry-run: max_rounds at its bound (1000)",
            lambda d: ["arena", "run", arena_config(d, max_rounds=1000), "--dry-run"],
            "zero",
        ),
        Probe(
            "arena run --dry-run: trials above the bound",
            lambda d: ["arena", "run", with_trials(d, 10**6), "--dry-run"],
            check=lambda d, out, err: "trials" in err,
        ),
        Probe(
            "quickstart --dialogues 2**63 - 1",
            lambda d: ["quickstart", "--dialogues", str(2**63 - 1), "--db", f"{d}/q.sqlite"],
        ),
        Probe(
            "arena export of the custom task example (task read from the run)",
            lambda d: ["arena", "export", "--db", custom_task_run(d), "--conversation", "1"],
            "zero",
            check=lambda d, out, err: "TUTOR" in out and "| user" in out,
        ),
    ]


#: Sockets held open while a probe runs (a port another program is listening on).
_HELD: list[socket.socket] = []


def _busy_port() -> int:
    """A loopback port this process listens on until ``release_ports``."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    _HELD.append(holder)
    return int(holder.getsockname()[1])


def release_ports() -> None:
    """Close the sockets ``_busy_port`` opened."""
    while _HELD:
        _HELD.pop().close()


def _only_store(d: Path) -> bool:
    """Nothing beside the run store ``ok.sqlite`` (no ``-shm``, ``-wal`` or journal)."""
    return not [p for p in d.iterdir() if p.name.startswith("ok.sqlite") and p.name != "ok.sqlite"]


def _refused_resume(d: Path) -> list[str]:
    """Run the probe config into ``d/ok.sqlite``; then resume it under a changed config."""
    _with_run(d, [])
    changed = d / "changed.toml"
    config = Path(arena_config(d)).read_text()
    changed.write_text(config.replace("max_rounds = 4", "max_rounds = 5"))
    return ["arena", "run", str(changed), "--db", f"{d}/ok.sqlite", "--resume", "--no-progress"]


CUSTOM = Path(__file__).resolve().parent.parent / "examples" / "custom_task"
JUDGED = "arena.toml"


def judged_by(d: Path, judge: str) -> str:
    """The probe config with a ``[judge]`` of its own."""
    path = Path(arena_config(d))
    path.write_text(path.read_text() + f'\n[judge]\nmodel = "{judge}"\n')
    return str(path)


def with_trials(d: Path, trials: int) -> str:
    """The probe config with ``trials`` repeats of each conversation."""
    path = Path(arena_config(d))
    path.write_text(path.read_text().replace("max_rounds", f"trials = {trials}\nmax_rounds", 1))
    return str(path)


def _nothing_but(d: Path, *names: str) -> bool:
    """Whether ``d`` holds only ``names`` (and the cache folder): nothing was created."""
    return {p.name for p in d.iterdir()} <= {*names, "cache"}


def _in(d: Path, args: list[str]) -> list[str]:
    return [a.format(d=d) for a in args]


def custom_task_run(d: Path) -> str:
    """Run the custom task example on the fake model into ``d/tutor.sqlite``, from ``d`` (away
    from the task file, whose path the run records relative to the repository)."""
    text = (CUSTOM / "arena.toml").read_text(encoding="utf-8")
    text = re.sub(r"llamacpp:smollm2(-wm)?", "fake:schema", text)
    config = d / "tutor.toml"
    config.write_text(text.replace("examples/custom_task/", f"{CUSTOM}/"), encoding="utf-8")
    db = d / "tutor.sqlite"
    subprocess.run(
        [sys.executable, "-m", "cogwm.cli.main", "arena", "run", str(config), "--db", str(db),
         "--no-progress"],
        capture_output=True,
        cwd=d,
        check=False,
    )  # fmt: skip
    return str(db)


def _data() -> str:
    return os.environ.get("COGWM_DATA_DIR", str(Path(__file__).parent.parent / "tests/fixtures"))


def _with_run(d: Path, args: list[str], db: str = "ok.sqlite") -> list[str]:
    """Run the probe config into ``d/db`` first; then ``args``."""
    config = arena_config(d)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cogwm.cli.main",
            "arena",
            "run",
            config,
            "--db",
            f"{d}/{db}",
            "--no-progress",
        ],
        capture_output=True,
        cwd=d,
        check=False,
    )
    return args


def _shard(d: Path, shard: str) -> str:
    """Run one shard of the probe config; the shard's store."""
    out = f"{d}/shard.sqlite"
    subprocess.run(
        [sys.executable, "-m", "cogwm.cli.main", "arena", "run", arena_config(d), "--db", out,
         "--shard", shard, "--no-progress"],
        capture_output=True,
        cwd=d,
        check=False,
    )  # fmt: skip
    return out


def _with_items(d: Path, args: list[str]) -> list[str]:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cogwm.cli.main",
            "tom",
            "build",
            "--corpus",
            "annomi",
            "--limit",
            "2",
            "--data-dir",
            _data(),
            "--out",
            f"{d}/items.jsonl",
        ],
        capture_output=True,
        cwd=d,
        check=False,
    )
    return args


def classify(probe: Probe, d: Path, code: int, out: str, err: str) -> str:
    """The probe's class (see the module doc)."""
    if "Traceback" in err:
        return "traceback"
    if probe.check is not None and not probe.check(d, out, err):
        return "other"
    if probe.expect == "zero":
        return "ok" if code == 0 else "other"
    if code == 0:
        return "silent"
    if probe.expect == "failed":
        return "ok" if code == 1 else "other"
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    return "ok" if code == 2 and len(errors) == 1 else "other"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--verbose", action="store_true")
    ns = parser.parse_args()
    counts: Counter[str] = Counter()
    for probe in _probes():
        if ns.only not in probe.name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            env = {**os.environ, "COGWM_CACHE_DIR": f"{d}/cache", "COLUMNS": "80"}
            env.pop("COGWM_BASE_URL", None)
            args = probe.args(d)
            env.update(probe.env(d))
            before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in probe.untouched(d)}
            done = subprocess.run(
                [sys.executable, "-m", "cogwm.cli.main", *args],
                input=probe.stdin,  # bytes: a probe may send some that are not UTF-8
                capture_output=True,
                cwd=d,
                env=env,
                timeout=300,
                check=False,
            )
            release_ports()
            out = done.stdout.decode("utf-8", errors="replace")
            err = done.stderr.decode("utf-8", errors="replace")
            kind = classify(probe, d, done.returncode, out, err)
            changed = [
                p.name for p, h in before.items() if hashlib.sha256(p.read_bytes()).hexdigest() != h
            ]
            if changed:
                kind = "wrote-foreign"
        counts[kind] += 1
        print(f"{kind:13s} exit {done.returncode:3d}  {probe.name}")
        if ns.verbose or kind != "ok":
            tail = err.strip().splitlines()[-2:]
            for line in tail:
                print(f"{'':20s}{line[:150]}")
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())), f"of {sum(counts.values())}")
    return 0 if set(counts) <= {"ok"} else 1


if __name__ == "__main__":
    sys.exit(main())
