"""GoodOutcome for a finished arena conversation, through the metrics package's LLM judge.

The judge (``cogwm.metrics.judge.judge_good_outcome``) asks whether the task's success criterion
holds at the end of the transcript. An unparsable verdict is ``None`` and counted
in the report; a call that fails for good raises ``ModelCallError`` and the conversation ends in
error (``--resume`` runs it again).
"""

from __future__ import annotations

from typing import NamedTuple

from cogwm.arena.config import ModelConfig
from cogwm.arena.termination import Phase
from cogwm.arena.transcript import ArenaTurn
from cogwm.metrics import judge
from cogwm.models import Model
from cogwm.schema import TaskSpec

#: The GoodOutcome detail of a conversation whose config switched the judge off.
NOT_JUDGED = "not judged (good_outcome = false)"

#: Turns of the end of a conversation the judge reads (besides the cold start).
JUDGED_TURNS = 12


class Verdict(NamedTuple):
    """A GoodOutcome verdict: ``good`` is None when the judge's reply could not be parsed."""

    good: bool | None
    detail: str
    call_id: str | None


def judged_turns(turns: list[ArenaTurn], last: int) -> list[ArenaTurn]:
    """The turns the judge reads: the cold start (where the user began) and the last ``last``.

    Bounded so that long conversations fit small context windows; the criterion is about the end
    of the conversation, judged against its beginning.
    """
    opening = [t for t in turns if t.phase is Phase.COLD_START]
    tail = turns[max(len(opening), len(turns) - last) :]
    return [*opening, *tail]


async def conversation_verdict(
    model: Model,
    config: ModelConfig,
    task: TaskSpec,
    turns: list[ArenaTurn],
    *,
    seed: int,
    last_turns: int = JUDGED_TURNS,
) -> Verdict:
    """The GoodOutcome verdict on the cold start and the last ``last_turns`` turns, asked through
    the one GoodOutcome judge, ``cogwm.metrics.judge.judge_good_outcome``.

    Raises:
        ModelCallError: The judge's call failed for good.
    """
    transcript = [(t.role, t.text) for t in judged_turns(turns, last_turns)]
    (judgement,) = await judge.judge_good_outcome(
        model, [("conversation", transcript)], task, sampling=config.sampling(seed), concurrency=1
    )
    detail = judgement.reason or judgement.failure or ""
    return Verdict(judgement.good_outcome, detail, judgement.call_id)
