"""What a training sample's prompt shows of the user's earlier states, and what its target changes.

A world model shown the previous state can learn to repeat it instead of reading the turn. Two
training options counter that (both off by default, so samples train exactly as written):

- **State dropout** (``--state-dropout P``, ``--state-corruption C``): a share P of the samples
  shows :data:`~cogwm.simulator.format.STATES_HIDDEN_LINE` instead of its start and previous
  states, and a further share C shows the states part of another sample of the same task. The
  choice is ``sha256("<seed>:state-view:<sample id>")`` read as a fraction u of 2^64: hidden when
  u < P, corrupted when P <= u < P + C. The donor of a corrupted sample is the first of the
  task's samples drawn at ``sha256("<seed>:state-donor:<sample id>:<try>")`` (try 0, 1, ...)
  whose states part is not empty and differs from the sample's own; when none of
  :data:`DONOR_TRIES` tries finds one (a task whose samples show no state), the states are
  hidden instead.
- **Change items** (``--change-weight W``, ``--change-share S``): a state field of the target
  *changes* when the sample's prompt shows a previous state and the field's gold value, written
  as the prompt writes states, differs from that state's. Fields the source does not know never
  change; a sample without a previous state (the user's first turn) has no change.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cogwm.errors import InputError
from cogwm.models.types import Message
from cogwm.schema.partial import STATE_FIELDS
from cogwm.simulator.format import PREVIOUS_STATE_PREFIX, STATES_HIDDEN_LINE, split_states
from cogwm.simulator.samples import Sample, task_for_corpus

StateView = Literal["shown", "hidden", "corrupted"]
#: Samples a corrupted sample looks at for a donor (each is read from the file).
DONOR_TRIES = 64
#: How :func:`~cogwm.simulator.format.describe_state` separates the fields of a state.
_FIELD_PARTS = re.compile(r" \| (?=(?:beliefs|desires|intentions): )")


def state_view(sample_id: str, seed: int, dropout: float, corruption: float) -> StateView:
    """Whether a sample's prompt keeps, hides or corrupts its states (module docstring)."""
    if dropout <= 0 and corruption <= 0:
        return "shown"
    digest = hashlib.sha256(f"{seed}:state-view:{sample_id}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    if u < dropout:
        return "hidden"
    return "corrupted" if u < dropout + corruption else "shown"


def shown_states(sample: Sample) -> str:
    """The states part of the sample's prompt (empty when it shows none)."""
    return split_states(sample.messages[-1].content)[1]


def with_states(sample: Sample, states: str) -> Sample:
    """The sample with the states part of its prompt replaced by ``states``."""
    last = sample.messages[-1]
    before, _, instruction = split_states(last.content)
    message = Message(role=last.role, content=before + states + instruction)
    return sample.model_copy(update={"messages": [*sample.messages[:-1], message]})


def hide_states(sample: Sample) -> Sample:
    """The sample with its start and previous states withheld (:data:`STATES_HIDDEN_LINE`)."""
    return with_states(sample, STATES_HIDDEN_LINE)


def task_group(corpus: str) -> str:
    """The task whose samples may lend a corpus's samples their states (a corpus no task plays
    is a group of its own)."""
    try:
        return task_for_corpus(corpus).name
    except InputError:
        return corpus


# --------------------------------------------------------------------------------------------
# Change items
# --------------------------------------------------------------------------------------------


def field_ranges(target: str) -> dict[str, tuple[int, int]]:
    """Char range of each state field's value in a target (``render_target``'s fixed key order:
    strings are JSON, so a key pattern can only be the key itself)."""
    starts = []
    for position, field in enumerate(STATE_FIELDS):
        key = ("," if position else "{") + f'"{field}":'
        at = target.find(key)
        if at < 0:
            raise InputError(f"target without the {field} key: {target[:60]!r}")
        starts.append((field, at + len(key)))
    end = target.find(',"utterance":', starts[-1][1])
    ends = [at - len(f',"{field}":') for field, at in starts[1:]]
    ends.append(end if end >= 0 else len(target) - 1)
    return {field: (start, stop) for (field, start), stop in zip(starts, ends, strict=True)}


def changed_fields(sample: Sample) -> frozenset[str]:
    """The known state fields of the target whose gold differs from the previous state shown
    (none when the prompt shows no previous state)."""
    previous = _previous_parts(shown_states(sample))
    if previous is None:
        return frozenset()
    gold = json.loads(sample.target)
    unknown = [(s, e) for s, e, tag in sample.target_spans if tag == "unknown"]
    changed = set()
    for field, (start, _) in field_ranges(sample.target).items():
        if any(s <= start < e for s, e in unknown):
            continue  # the source says nothing about it: no gold to compare
        if _differs(field, gold[field], previous.get(field)):
            changed.add(field)
    return frozenset(changed)


def change_ranges(sample: Sample) -> list[tuple[int, int]]:
    """Char ranges of the target's changed fields (see :func:`changed_fields`)."""
    ranges = field_ranges(sample.target)
    return [ranges[field] for field in STATE_FIELDS if field in changed_fields(sample)]


def _previous_parts(states: str) -> dict[str, str] | None:
    line = next((x for x in states.split("\n") if x.startswith(PREVIOUS_STATE_PREFIX)), None)
    if line is None:
        return None
    text = line[len(PREVIOUS_STATE_PREFIX) :]
    if text == "none":
        return {}
    # Each part starts with its field's name: "emotion sad 2", "beliefs: ...".
    return {part.split(" ", 1)[0].rstrip(":"): part for part in _FIELD_PARTS.split(text)}


def _differs(field: str, gold: Any, previous: str | None) -> bool:
    written = _gold_part(field, gold)
    if field == "emotion" and gold and gold.get("intensity") is None and previous is not None:
        # The source gives the label alone: only the label can differ.
        return previous.rsplit(" ", 1)[0] != f"emotion {gold['label']}"
    return written != previous


def _gold_part(field: str, value: Any) -> str | None:
    """A gold field as :func:`~cogwm.simulator.format.describe_state` writes it (None: absent)."""
    if not value:
        return None
    if field == "emotion":
        return f"emotion {value['label']} {value['intensity']}"
    listed = "; ".join(
        f"{item['text']} ({item['score']:g})" if item.get("score") is not None else item["text"]
        for item in value
    )
    return f"{field}: {listed}"


# --------------------------------------------------------------------------------------------
# The training view of a sample
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StateOptions:
    """The run's state dropout and change weighting (defaults: samples as written)."""

    dropout: float = 0.0
    corruption: float = 0.0
    change_weight: float = 1.0
    seed: int = 0

    @property
    def active(self) -> bool:
        """Whether any option changes what a sample trains on."""
        return self.dropout > 0 or self.corruption > 0 or self.change_weight != 1

    def key(self) -> str:
        """What the encodings depend on beyond the samples ('' when inactive)."""
        if not self.active:
            return ""
        return f"state-view:{self.dropout}:{self.corruption}:{self.change_weight}:{self.seed}"


@dataclass
class TrainingView:
    """Turns a sample as written into the one trained on: its states hidden or replaced, and the
    char ranges of its changed fields (for ``--change-weight``).

    ``donors`` lists, per task group, the file positions of its samples; ``read`` reads one.
    """

    options: StateOptions
    donors: dict[str, list[int]]
    read: Callable[[int], Sample]

    def __call__(self, sample: Sample) -> tuple[Sample, list[tuple[int, int]]]:
        """The trained-on sample and the target ranges whose state tokens weigh extra."""
        options = self.options
        boosted = change_ranges(sample) if options.change_weight != 1 else []
        view = state_view(sample.id, options.seed, options.dropout, options.corruption)
        if view == "hidden":
            sample = hide_states(sample)
        elif view == "corrupted":
            sample = with_states(sample, self.donor_states(sample))
        return sample, boosted

    def donor_states(self, sample: Sample) -> str:
        """The states part of another sample of the same task (hidden when none of the
        :data:`DONOR_TRIES` looked at has one)."""
        own = shown_states(sample)
        group = self.donors.get(task_group(sample.corpus), [])
        for attempt in range(DONOR_TRIES if group else 0):
            key = f"{self.options.seed}:state-donor:{sample.id}:{attempt}"
            digest = hashlib.sha256(key.encode()).digest()
            states = shown_states(self.read(group[int.from_bytes(digest[:8], "big") % len(group)]))
            if states and states != own and states != STATES_HIDDEN_LINE:
                return states
        return STATES_HIDDEN_LINE


def donor_groups(corpora: Sequence[str]) -> dict[str, list[int]]:
    """File positions of the samples by task group."""
    groups: dict[str, list[int]] = {}
    for position, corpus in enumerate(corpora):
        groups.setdefault(task_group(corpus), []).append(position)
    return groups
