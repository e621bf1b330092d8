"""What each metric column of the report means, in one sentence: the column headers' tooltips on
the pages, and the README's list of the report's columns (a test keeps the two the same)."""

from __future__ import annotations

import json

from markupsafe import Markup

#: One sentence per metric column header.
METRIC_HELP: dict[str, str] = {
    "CTS": (
        "Composite Trajectory Score, 0.40·AUC + 0.30·PSR + 0.30·Δ of the user's composite state "
        "s_t: higher means the agent moved the user further the task's way."
    ),
    "AUC": (
        "Area under the s_t curve divided by the number of states N: how high the user's state "
        "stayed over the conversation (length-biased: a constant c scores c·(N−1)/N)."
    ),
    "Δ": "Change of s_t from the first state (read from the cold start) to the last.",
    "C-Δ": "Change of the composite s_t from the first state to the last, on this task only.",
    "PSR": "Positive step rate: the share of the user's turns after which s_t rose.",
    "Mono": (
        "Monotonicity: the share of steps that move s_t in the direction of its overall "
        "change Δ (flat steps when Δ is 0)."
    ),
    "E-Δ": "Change of the user's emotion (valence × intensity) from the first state to the last.",
    "B-Δ": "Change of the user's belief score from the first state to the last.",
    "D-Δ": "Change of the user's desire score from the first state to the last.",
    "I-Δ": "Change of the user's intention score from the first state to the last.",
    "nz%": (
        "Share of the user's states that state at least one belief, desire or intention (an "
        "empty dimension scores 0, so a low nz% makes the B/D/I deltas less telling)."
    ),
    "GO": (
        "GoodOutcome: the share of conversations an LLM judge called a good ending for the "
        "task (ESC: emotion improved or a plan; PD: decided to donate; CR: accepted a "
        "recommendation)."
    ),
    "pass^k": (
        "Of the scenarios with all k trials judged, the share where every trial was a "
        "GoodOutcome (how consistently the agent succeeds)."
    ),
}


def metric_key(header: str) -> str | None:
    """The glossary entry a column header shows (``GO%``, ``GO-ESC`` and ``GO pass^3`` included),
    None for a header that names no metric."""
    if header in METRIC_HELP:
        return header
    if header.startswith("GO pass^"):
        return "pass^k"
    if header == "GO%" or header.startswith("GO-"):
        return "GO"
    return None


def metric_help(header: str) -> str | None:
    """The sentence that explains the column ``header`` (None: not a metric)."""
    key = metric_key(header)
    return None if key is None else METRIC_HELP[key]


def header_cell(header: str) -> Markup:
    """A ``<th>`` for ``header`` with its explanation as the tooltip (``title``)."""
    sentence = metric_help(header)
    if sentence is None:
        return Markup("<th>{}</th>").format(header)
    return Markup('<th title="{}" data-help="{}">{}</th>').format(
        sentence, metric_key(header), header
    )


def help_json() -> Markup:
    """The glossary as JSON that is safe inside a ``<script>`` element (for headers drawn by the
    pages' script)."""
    text = json.dumps(METRIC_HELP, ensure_ascii=False).replace("<", "\\u003c")
    return Markup(text)
