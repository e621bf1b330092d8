"""``cogwm validate``: the validity card of a user simulator against held-out human labels.

::

    from cogwm import models
    from cogwm.validate import build_card, write_card

    card = build_card(models.load("llamacpp:smollm2"), address="llamacpp:smollm2",
                      data_dir=Path("data"), limit=60)
    write_card(card, Path("card.json"))

Modules: ``card`` (the record and its file), ``items`` (held-out turns per corpus), ``reader``
(simulator calls in the world-model format, input switches), ``figures`` (estimates, cluster
bootstrap CIs, baselines), ``parts`` (what each part measures), ``run`` (the card),
``compare`` (cards side by side).
"""

from cogwm.validate.card import (
    CARD_SCHEMA,
    Baselines,
    Card,
    Check,
    Figure,
    Gate,
    PartInfo,
    card_json,
    read_card,
    write_card,
)
from cogwm.validate.compare import Comparison, compare, text_rows, to_csv
from cogwm.validate.inputs import ABLATIONS
from cogwm.validate.parts import NOT_YET, PARTS
from cogwm.validate.run import DEFAULT_PARTS, build_card

__all__ = [
    "ABLATIONS",
    "CARD_SCHEMA",
    "DEFAULT_PARTS",
    "NOT_YET",
    "PARTS",
    "Baselines",
    "Card",
    "Check",
    "Comparison",
    "Figure",
    "Gate",
    "PartInfo",
    "build_card",
    "card_json",
    "compare",
    "read_card",
    "text_rows",
    "to_csv",
    "write_card",
]
