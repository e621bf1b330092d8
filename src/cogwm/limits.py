"""Upper bounds on the sizes a config or a command line may ask for.

Each is far above any run that finishes on purpose, and low enough that a typo (an extra zero,
an integer's maximum) is one error line before anything is planned, instead of a command that
fills the memory or never answers. The README lists them.
"""

from __future__ import annotations

#: Rounds of one conversation (``max_rounds``, ``intent_from_round``, ``--rounds``,
#: ``--max-rounds``): the paper's protocol has 20.
MAX_ROUNDS = 1_000
#: Scenarios (dialogues) per task (``dialogues_per_task``, ``--dialogues``, ``--scenarios``).
MAX_DIALOGUES_PER_TASK = 10_000
#: Conversations per scenario and arm (``trials``).
MAX_TRIALS = 100
#: Conversations, dialogues or model calls in flight at once (``concurrency``,
#: ``--concurrency``).
MAX_CONCURRENCY = 1_024
#: Tokens of one reply (``max_tokens``, ``reasoning_max_tokens``).
MAX_REPLY_TOKENS = 131_072
#: Turns of history a model is shown (``history_turns``): two per round, and an opening.
MAX_HISTORY_TURNS = 2 * MAX_ROUNDS + 1_000
#: A model's context in tokens (``context_tokens``).
MAX_CONTEXT_TOKENS = 10_000_000
#: Bootstrap resamples per interval (``--resamples``).
MAX_RESAMPLES = 100_000
