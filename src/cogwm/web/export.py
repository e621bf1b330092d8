"""A case-study transcript of one stored conversation with the user's state at each user turn,
as a Markdown or LaTeX table (``cogwm arena export``), for papers and issue threads."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from cogwm.errors import InputError
from cogwm.metrics.trajectory import EmptyPolicy
from cogwm.store.db import ConversationRow, RunStore
from cogwm.web.payload import conversation_record


class ExportFormat(StrEnum):
    """Output formats of a case study."""

    MD = "md"
    TEX = "tex"


_TEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def tex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped and newlines as spaces."""
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in " ".join(text.split()))


def md_escape(text: str) -> str:
    """``text`` safe inside a Markdown table cell (pipes escaped, one line, no raw HTML)."""
    flat = " ".join(text.split())
    return flat.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _score(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def _items(items: list[list[Any]]) -> str:
    return "; ".join(f"{text} ({_score(score)})" for text, score, _ in items) or "–"


def _emotion(state: dict[str, Any]) -> str:
    e = state.get("e")
    return "–" if e is None else f"{e[0]} ({e[1]})"


def _st(state: dict[str, Any]) -> str:
    value = state.get("s")
    return "–" if value is None else f"{value:+.3f}"


def _rows(record: dict[str, Any]) -> list[list[str]]:
    """One row per turn: turn, speaker, utterance, emotion, B, D, I, s_t (states on user turns)."""
    rows = []
    for n, (role, phase, _round, text, state, _reasoning) in enumerate(record["turns"], 1):
        speaker = role + (" (cold start)" if phase == "cold_start" else "")
        if state is None:
            rows.append([str(n), speaker, text, "", "", "", "", ""])
        else:
            rows.append(
                [
                    str(n),
                    speaker,
                    text,
                    _emotion(state),
                    _items(state["b"]),
                    _items(state["d"]),
                    _items(state["i"]),
                    _st(state),
                ]
            )
    return rows


HEADERS = ["#", "Speaker", "Utterance", "Emotion", "Beliefs", "Desires", "Intentions", "s_t"]


def _caption(record: dict[str, Any]) -> str:
    trial = f", trial {record['trial']}" if record.get("trial") is not None else ""
    metrics = record.get("metrics") or {}
    cts = metrics.get("cts")
    return (
        f"Conversation {record['id']}: {record['task']}, agent {record['arm']}, scenario "
        f"{record['scenario']}{trial}; ended by {record['termination']}"
        + ("" if cts is None else f"; CTS {cts:+.3f}")
    )


def to_markdown(record: dict[str, Any]) -> str:
    """The case study as a Markdown table with a caption line."""
    lines = [f"**{md_escape(_caption(record))}**", ""]
    lines.append("| " + " | ".join(HEADERS) + " |")
    lines.append("|" + "|".join("---" for _ in HEADERS) + "|")
    for row in _rows(record):
        lines.append("| " + " | ".join(md_escape(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def to_tex(record: dict[str, Any]) -> str:
    """The case study as a LaTeX ``longtable`` (needs the longtable package)."""
    spec = r"r l p{0.28\linewidth} l p{0.13\linewidth} p{0.13\linewidth} p{0.13\linewidth} r"
    lines = [
        r"\begin{longtable}{" + spec + "}",
        r"\caption{" + tex_escape(_caption(record)) + r"}\\",
        r"\hline",
        " & ".join(tex_escape(h) for h in HEADERS) + r" \\",
        r"\hline",
        r"\endhead",
    ]
    for row in _rows(record):
        lines.append(" & ".join(tex_escape(c) for c in row) + r" \\")
    lines += [r"\hline", r"\end{longtable}"]
    return "\n".join(lines) + "\n"


def export_conversation(
    store: RunStore, conversation_id: int, fmt: ExportFormat | str, *, empty: str = "zero"
) -> str:
    """The case study of conversation ``conversation_id`` in ``fmt``.

    Raises:
        InputError: The store has no such conversation.
    """
    row = next((r for r in store.conversations() if r.id == conversation_id), None)
    if row is None:
        raise InputError(f"{store.path} has no conversation {conversation_id}")
    from cogwm.arena.run_data import run_catalog
    from cogwm.tasks import BUILTIN_CATALOG

    run = store.run()
    # A run on a task read from a file carries the task (and the emotions it adds to the
    # lexicon), as the report reads it: the export needs no file.
    catalog = BUILTIN_CATALOG if run is None else run_catalog(run)
    with catalog.active():
        return _export(store, row, conversation_id, fmt, empty)


def _export(
    store: RunStore, row: ConversationRow, conversation_id: int, fmt: ExportFormat | str, empty: str
) -> str:
    from cogwm.arena.run_data import states_of
    from cogwm.arena.scoring import stored_metrics
    from cogwm.tasks import get

    turns = store.turns(conversation_id)
    policy = EmptyPolicy(empty)
    stored = store.metrics().get(conversation_id, {})
    metrics = (
        stored_metrics(stored, states_of(turns), get(row.task), policy)
        if row.status == "finished"
        else {}
    )
    go = stored.get("go")
    record = conversation_record(row, turns, metrics, go, policy)
    return to_markdown(record) if ExportFormat(fmt) is ExportFormat.MD else to_tex(record)
