"""DialToM: a theory-of-mind benchmark over real conversations.

Modules: ``contexts`` (sliding windows of AnnoMI, ESConv, PersuasionForGood), ``items`` (item
records with provenance, load-time validation), ``templates`` (items from human labels),
``generator`` (LLM items), ``variants`` (easy, counterfactual, degradation, open-ended),
``verify`` (export, votes, Dawid-Skene, Gwet's AC1, retention), ``prompts`` and ``evaluate``
(scoring, the reasoning-injection probe), ``reasoning`` (answers of models that think first:
the thinking budget and the final-letter rule), ``store`` (SQLite), ``open_ended`` (BLEU, ROUGE-L,
embedding similarity, 3-point judge), ``stats`` and ``tables`` (the paper's tables and tests).
"""

from cogwm.tom.items import (
    NONE_OF_THE_ABOVE,
    Attribute,
    Domain,
    Provenance,
    Source,
    Task,
    ToMItem,
    Variant,
    read_items,
    write_items,
)

__all__ = [
    "NONE_OF_THE_ABOVE",
    "Attribute",
    "Domain",
    "Provenance",
    "Source",
    "Task",
    "ToMItem",
    "Variant",
    "read_items",
    "write_items",
]
