"""Python's cyclic garbage collector tuned for the length of an arena run.

A run allocates many small, short-lived objects per turn (messages, records, futures) that
reference counting frees at once, while the collector keeps walking everything alive: the
imported libraries, the config, the models and every conversation in flight. On the benchmark
(1,000 conversations, fake backend) that walking cost about a sixth of the CPU time per turn and
found almost nothing to free. During a run the objects alive at its start are frozen out of
collections (``gc.freeze``) and the youngest generation is collected every 100,000 allocations
instead of every 700; both are restored when the run ends.

Most of what survives between young collections is the state of conversations in flight (turns,
states, messages), which lives until its conversation ends; every collection walks it and frees
nothing. At 1,000 conversations in flight against a 250 ms fake, 20,000 allocations meant ~17
collections of 30 ms each (about 12% of the CPU, each a stall of every conversation); 100,000
means two or three (about 4%). Cyclic garbage left for the next collection stays bounded by the
threshold (at most some tens of MB of small objects); runs create almost none.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations between collections of the youngest generation during a run (Python's default
#: is 700).
RUN_THRESHOLD = 100_000

_depth = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def steady_collector() -> Iterator[None]:
    """Tune the collector for the block (nested or overlapping blocks restore it once, at the
    end of the outermost)."""
    global _depth, _saved
    if _depth == 0:
        _saved = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(max(_saved[0], RUN_THRESHOLD), _saved[1], _saved[2])
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            gc.unfreeze()
            _saved = None
