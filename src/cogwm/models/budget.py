"""Spend only what was allowed: caps on what one invocation spends on model calls
(``--max-cost-usd``, ``--max-tokens-total``).

A ``Budget`` is charged with every model call a run records (cache hits are free) and, once a
cap is reached, calls back whoever stops the run; what finished stays stored and ``--resume``
continues. The caps count what one invocation spends. Costs come from the models'
``cost_per_1k_prompt`` and ``cost_per_1k_completion`` options (USD per 1,000 tokens).
"""

from __future__ import annotations

from collections.abc import Callable

from cogwm.errors import InputError
from cogwm.schema.calls import CallRecord


class Budget:
    """Caps on what one invocation of a run may spend; ``None`` means no cap.

    Raises:
        InputError: A cap that is not positive.
    """

    def __init__(self, *, max_cost_usd: float | None = None, max_tokens_total: int | None = None):
        if max_cost_usd is not None and not max_cost_usd > 0:
            raise InputError(f"--max-cost-usd must be positive, got {max_cost_usd:g}")
        if max_tokens_total is not None and max_tokens_total < 1:
            raise InputError(f"--max-tokens-total must be positive, got {max_tokens_total}")
        self.max_cost_usd = max_cost_usd
        self.max_tokens_total = max_tokens_total
        self.tokens = 0
        self.cost_usd = 0.0
        #: Why the run was stopped (which cap, what was spent); None while within the caps.
        self.reached: str | None = None
        self._stops: list[Callable[[], None]] = []

    @property
    def capped(self) -> bool:
        """Whether any cap is set."""
        return self.max_cost_usd is not None or self.max_tokens_total is not None

    def charge(self, record: CallRecord) -> None:
        """Count one model call; the first call that reaches a cap stops the run."""
        if record.cached:  # a reply from the cache costs nothing
            return
        self.tokens += record.prompt_tokens + record.completion_tokens
        self.cost_usd += record.cost_usd
        if self.reached is None:
            self.reached = self._over()
            if self.reached is not None:
                for stop in self._stops:
                    stop()

    def on_reached(self, stop: Callable[[], None]) -> None:
        """Call ``stop`` when a cap is reached (at once if one already is)."""
        self._stops.append(stop)
        if self.reached is not None:
            stop()

    def _over(self) -> str | None:
        if self.max_tokens_total is not None and self.tokens >= self.max_tokens_total:
            return f"{self.tokens:,} tokens spent, --max-tokens-total {self.max_tokens_total:,}"
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return f"${self.cost_usd:.4f} spent, --max-cost-usd {self.max_cost_usd:g}"
        return None
