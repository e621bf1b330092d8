"""What kind of distractor a wrong answer chose (``cogwm tom stats --errors``).

The kind of each distractor comes from the item itself:

- template items: the corpus label the distractor stands for (their rationales read
  ``label <field> = <value> ...``), e.g. ``client_talk_type=sustain``;
- easy items: ``other dialogue`` (their distractors are continuations of other sessions);
- counterfactual items: ``original gold`` (the continuation that fitted the replaced profile) or
  ``original distractor``;
- LLM items: the distractor's rationale, sorted by its wording into a small fixed taxonomy
  (:data:`RATIONALE_KINDS`, first match wins): ``contradicts the evidence``, ``overstated``,
  ``wrong person``, ``wrong time``, ``unsupported``, else ``other``. This is a keyword heuristic
  over free text; the rationale itself stays in the item for a closer look;
- a distractor without a rationale: ``unexplained``.
"""

from __future__ import annotations

import re

from cogwm.tom.items import ToMItem, Variant, option_key

#: LLM rationale wording -> kind, tried in order (case-insensitive regular expressions).
RATIONALE_KINDS: tuple[tuple[str, str], ...] = (
    (
        "contradicts the evidence",
        r"contradict|opposite|conflict|inconsistent|contrary|rather than|instead of|"
        r"\bopposes?\b|\bdenies\b|\brejects?\b",
    ),
    ("overstated", r"too strong|exaggerat|overstat|extreme|too far|\bdefinitive|overly"),
    (
        "wrong person",
        r"\b(?:counsel+or|therapist|supporter|persuader)'?s?\b(?! (?:asks|says|suggests))|"
        r"the other (?:person|speaker)|attribut",
    ),
    ("wrong time", r"\bearlier\b|\blater\b|no longer|\bin the past\b|\bfuture\b|\balready\b"),
    (
        "unsupported",
        r"no evidence|not mention|never (?:say|said|mention|express)|not supported|unsupported|"
        r"nothing|speculat|assum|not stated|not indicated|no indication|does ?n[o']t|not in the",
    ),
)
_COMPILED = [(kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in RATIONALE_KINDS]
_LABEL = re.compile(r"^label (\S+) = (\S+)")

ORIGINAL_GOLD = "original gold"
ORIGINAL_DISTRACTOR = "original distractor"
OTHER_DIALOGUE = "other dialogue"
UNEXPLAINED = "unexplained"


def rationale_kind(rationale: str) -> str:
    """The kind of an LLM distractor, from its rationale's wording (see the module doc)."""
    for kind, pattern in _COMPILED:
        if pattern.search(rationale):
            return kind
    return "other"


def template_rationale(field: str, value: str, gold: str) -> str:
    """The rationale a template item gives a distractor that stands for label ``value``."""
    return f"label {field} = {value} (the gold is {gold})"


def option_kinds(item: ToMItem) -> list[str | None]:
    """The kind of each stored option of ``item`` (None for the gold)."""
    rationales = {option_key(k): v for k, v in item.rationales.items()}
    return [
        None if option == item.gold else _kind(item, rationales.get(option_key(option)))
        for option in item.options
    ]


def _kind(item: ToMItem, rationale: str | None) -> str:
    if item.variant is Variant.EASY:
        return OTHER_DIALOGUE
    if item.variant is Variant.COUNTERFACTUAL:
        return ORIGINAL_GOLD if rationale is not None else ORIGINAL_DISTRACTOR
    if rationale is None:
        return UNEXPLAINED
    label = _LABEL.match(rationale)
    if label:
        return f"{label.group(1)}={label.group(2)}"
    return rationale_kind(rationale)
