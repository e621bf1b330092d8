"""Prompts kept in host memory for the batched engine, as llama.cpp's server keeps them
(``--cache-ram``).

A batched engine has a few sequences and many conversations: when a sequence is given to
another request, the KV cache of the prompt it held is copied out to host memory
(``llama_state_seq_get_data``), and when that conversation's next prompt comes, it is copied
back into a free sequence (``llama_state_seq_set_data``) and only the new tokens are evaluated.
A copy is a few milliseconds for a prompt that takes seconds to evaluate on a CPU.

The copy holds the cells' K and V bits and positions. Copying back first empties the sequence
(llama.cpp's ``seq_rm`` moves the stream's head to its first cell), so the cells land at the
offsets a prompt evaluated whole would fill, and a prompt continued from a copy gets that
prompt's bits (the equivalence tests check it). A copy is taken only where it holds every cell
of its prompt: llama.cpp leaves out the cells a sliding attention window no longer sees, which
a shorter prefix of the prompt would need, so models with such a window are not copied.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

#: A copy must save at least this many tokens of evaluation (fewer are not worth its memory).
MIN_KEPT_TOKENS = 32


@dataclass
class KeptPrompt:
    """A prompt's tokens and the KV cache state of its sequence, copied out."""

    tokens: list[int]
    state: Any  # a ctypes uint8 array


def common_prefix(first: list[int], second: list[int]) -> int:
    """How many leading tokens ``first`` and ``second`` share."""
    for index, (a, b) in enumerate(zip(first, second, strict=False)):
        if a != b:
            return index
    return min(len(first), len(second))


def copy_out(ctx: Any, seq: int) -> Any:
    """The KV cache state of sequence ``seq`` (a ctypes byte array), or None if llama.cpp
    gives none."""
    import llama_cpp.llama_cpp as raw

    size = raw.llama_state_seq_get_size(ctx, seq)
    if size <= 0:
        return None
    state = (ctypes.c_uint8 * size)()
    if raw.llama_state_seq_get_data(ctx, state, size, seq) != size:
        return None
    return state


def copy_in(ctx: Any, state: Any, seq: int, n_tokens: int) -> bool:
    """Replace sequence ``seq``'s cache with ``state``, which must hold the cells of positions
    0 to ``n_tokens - 1``; False (and the sequence empty) if llama.cpp refused it or it holds
    less."""
    import llama_cpp.llama_cpp as raw

    memory = raw.llama_get_memory(ctx)
    raw.llama_memory_seq_rm(memory, seq, -1, -1)
    if (
        raw.llama_state_seq_set_data(ctx, state, len(state), seq) == len(state)
        and raw.llama_memory_seq_pos_min(memory, seq) == 0
        and raw.llama_memory_seq_pos_max(memory, seq) >= n_tokens - 1
    ):
        return True
    raw.llama_memory_seq_rm(memory, seq, -1, -1)
    return False


class KeptPrompts:
    """The prompts copied out of one context's sequences, the oldest first, within a byte budget."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self.prompts: list[KeptPrompt] = []
        self.saved = 0  #: prompts copied out since the engine started
        self.dropped = 0  #: copies dropped to stay within the budget
        self.copied_in = 0  #: prefixes copied into a sequence (from here or a busy sequence)

    @property
    def nbytes(self) -> int:
        """Host memory the kept prompts take."""
        return sum(len(p.state) for p in self.prompts)

    def best(self, tokens: list[int]) -> tuple[KeptPrompt | None, int]:
        """The kept prompt sharing the longest prefix with ``tokens`` (ties: the newest), and
        that length; (None, 0) when none shares any."""
        best, length = None, 0
        for prompt in self.prompts:
            shared = common_prefix(prompt.tokens, tokens)
            if shared >= length and shared > 0:
                best, length = prompt, shared
        return best, length

    def take(self, prompt: KeptPrompt) -> KeptPrompt:
        """Forget ``prompt`` (it goes back into a sequence)."""
        self.prompts.remove(prompt)
        return prompt

    def save(self, ctx: Any, seq: int, tokens: list[int]) -> None:
        """Copy out sequence ``seq``, whose cache holds ``tokens`` (and perhaps a reply after
        them, dropped first: only prompts are reused)."""
        import llama_cpp.llama_cpp as raw

        if self.budget_bytes <= 0 or len(tokens) < MIN_KEPT_TOKENS:
            return
        covering = [p for p in self.prompts if common_prefix(p.tokens, tokens) == len(tokens)]
        if covering:  # a kept prompt already holds all of these: it is the newest again
            self.prompts.remove(covering[0])
            self.prompts.append(covering[0])
            return
        raw.llama_memory_seq_rm(raw.llama_get_memory(ctx), seq, len(tokens), -1)
        state = copy_out(ctx, seq)
        if state is None or len(state) > self.budget_bytes:
            return
        # A kept prompt that is a prefix of this one is of no more use.
        self.prompts = [p for p in self.prompts if common_prefix(p.tokens, tokens) < len(p.tokens)]
        self.prompts.append(KeptPrompt(list(tokens), state))
        self.saved += 1
        while self.nbytes > self.budget_bytes:
            self.prompts.pop(0)
            self.dropped += 1
