"""Batched decoding for the embedded backend: concurrent requests share one llama.cpp context.

One :class:`BatchEngine` per loaded model (base and adapter) owns a llama.cpp context with one
KV-cache stream per sequence (``n_seq_max`` sequences, ``kv_unified`` off: a unified cache puts a
sequence's cells at other offsets and changes its logits). A single decode thread runs the
requests in flight: between steps it admits new ones, evaluating each prompt in its own decode
calls, then decodes the next token of every running sequence. Each request keeps its own sampler
chain (seed, temperature, grammar), stop strings and token limit, built and applied as
llama-cpp-python's ``create_chat_completion`` builds and applies them.

Prompt reuse: a sequence keeps its KV cache when its request ends, and remembers the prompt
tokens in it. A new request takes the free sequence whose remembered tokens share the longest
prefix with its prompt, drops the rest of that cache and evaluates only the new tokens (a
conversation's next prompt extends its previous one, so most of a prompt is usually there).

Why the replies are the one-at-a-time path's, to the byte: llama.cpp computes each row of a
decode call to the same bits whatever else is in it, with one exception. In a call where a
sequence has a single token, the F16 products (a LoRA adapter's) take llama.cpp's one-column
kernel, which rounds the activations to F16 first; where the call holds several rows of one
micro-batch, they take the many-column kernel, and a logit moves (by up to about 1 a few tokens
later). Hence:

* steps: without an adapter all running sequences are decoded in one call (in sequence order);
  with one, each sequence is decoded in a call of its own, as the one-at-a-time path decodes
  its tokens;
* prompts: a prompt is evaluated in chunks on the one-at-a-time path's chunk boundaries
  (multiples of ``n_batch``), and reuse never leaves a single token to evaluate alone where that
  path evaluates it among others (it evaluates one more), nor reuses a token that was evaluated
  alone; every other chunking of a prompt gives the same bits.

So a model has one identity whichever engine serves it, and shares its cached replies and its
validity card between them. The equality rests on these measured properties of llama.cpp's kernels
(llama-cpp-python is pinned), not on a guarantee of its: the equivalence tests check it on real
requests, with and without an adapter, and an engine that ever gave other tokens would have to
mark its models' identity (see :data:`ENGINE_VERSION`).

Threads: the process has one budget, the cores it may run on (``os.sched_getaffinity``). Every
engine decodes with that many threads, under one process-wide lock, so the engines of a process
(the quickstart has two) never run more threads than the budget together.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cogwm.models.llamacpp_kept import (
    MIN_KEPT_TOKENS,
    KeptPrompt,
    KeptPrompts,
    common_prefix,
    copy_in,
    copy_out,
)
from cogwm.models.types import BackendError, FailureKind

if TYPE_CHECKING:
    from llama_cpp import Llama

#: The engine's version, shown by ``cogwm models check``. (batch3: prompt reuse; with an
#: adapter each sequence's step is a decode call of its own, which made every reply the
#: one-at-a-time path's. batch4: prompts copied to and from host memory and busy sequences.)
#: Not part of the model identity while the replies are the same.
ENGINE_VERSION = "batch4"

#: ``single`` serves one request at a time; anything else, the batched engine (the default).
ENGINE_ENV = "COGWM_LLAMA_ENGINE"

#: One decode (prompt evaluation or step) of any engine at a time: they share the thread budget.
_DECODE_LOCK = threading.Lock()


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # platforms without affinity masks
        return max(1, os.cpu_count() or 1)


def engine_from_env() -> str:
    """``single`` when ``$COGWM_LLAMA_ENGINE`` says so, else ``batched``.

    Batched is the default: its replies are the one-at-a-time path's byte for byte (see the
    module), so only the speed differs; ``single`` stays for comparison and as a fallback.
    """
    return "single" if os.environ.get(ENGINE_ENV, "").strip().lower() == "single" else "batched"


@dataclass
class SamplingPlan:
    """How one request samples: llama-cpp-python's chain for ``create_chat_completion``."""

    temperature: float
    top_p: float
    seed: int
    repeat_penalty: float
    max_tokens: int
    stop: list[bytes]
    grammar: Any = None  # a llama_cpp.LlamaGrammar, or None


@dataclass
class Job:
    """One request in the engine: generate (``plan`` set) or score the next token."""

    tokens: list[int]
    plan: SamplingPlan | None
    future: Future[JobResult] = field(default_factory=Future)
    cancelled: bool = False


@dataclass
class JobResult:
    """What a finished job produced (``logits``: the next-token logits of a scoring job;
    ``tokens``: the generated tokens)."""

    text: str = ""
    completion_tokens: int = 0
    finish_reason: str = "stop"
    logits: Any = None
    tokens: list[int] = field(default_factory=list)


@dataclass
class PromptCounts:
    """Prompt tokens an engine took from its kept caches and evaluated, since it started."""

    reused: int = 0
    evaluated: int = 0

    def add(self, *, reused: int, evaluated: int) -> None:
        """Count one prompt."""
        self.reused += reused
        self.evaluated += evaluated


def reuse_start(kept: int, n_tokens: int, n_batch: int) -> int:
    """Where to start evaluating a prompt of ``n_tokens`` whose first ``kept`` are cached.

    At least the last token is evaluated (its logits are needed). Evaluation runs in chunks
    that end on multiples of ``n_batch``, where the one-at-a-time path's chunks end; a chunk of
    a single token is computed with other kernels than a longer one, so where the one-at-a-time
    path's chunk holds more than the token at ``start``, one more token is evaluated rather
    than that token alone.
    """
    start = min(kept, n_tokens - 1)
    chunk_end = min((start // n_batch + 1) * n_batch, n_tokens)
    their_chunk = chunk_end - start // n_batch * n_batch
    if start > 0 and chunk_end - start == 1 and their_chunk > 1:
        start -= 1
    return start


@dataclass
class _Running:
    """A generating sequence: its slot, sampler and the tokens so far."""

    job: Job
    plan: SamplingPlan
    slot: int
    sampler: Any
    completion: list[int] = field(default_factory=list)
    pending: int = -1  # the sampled token not yet decoded
    multibyte_fix: int = 0


class BatchEngine:
    """Decodes the requests in flight of one model (and adapter) together; see the module."""

    def __init__(
        self,
        llm: Llama,
        *,
        parallel: int,
        n_ctx: int,
        threads: int,
        reuse: bool = True,
        keep_bytes: int = 0,
    ) -> None:
        self.llm = llm
        self.parallel = parallel
        self.n_ctx = n_ctx
        self.threads = threads
        self.reuse = reuse
        #: With an adapter, each sequence's step is a decode call of its own (see the module).
        self.steps_apart = getattr(llm, "_lora_adapter", None) is not None
        self.counts = PromptCounts()
        #: Whether prefixes may be copied between sequences: a copy of a model with a sliding
        #: attention window lacks the cells a shorter prefix needs (see llamacpp_kept).
        self.copies = reuse and _sliding_window(llm) == 0
        #: Prompts whose sequence went to another request, in host memory (see llamacpp_kept).
        self.kept = KeptPrompts(keep_bytes if self.copies else 0)
        self._ctx = self._new_context()
        self._batch = self._new_batch()
        self._queue: queue.Queue[Job] = queue.Queue()
        self._free = list(range(parallel))
        self._cached: list[list[int]] = [[] for _ in range(parallel)]
        self._last_use = [0] * parallel
        self._running: list[_Running] = []
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="cogwm-llama-batch", daemon=True)
        self._thread.start()

    # ---------------------------------------------------------------------------- public API

    async def run(self, job: Job) -> JobResult:
        """Queue ``job`` and wait for it; a cancelled wait frees its sequence at the next step."""
        self._queue.put(job)
        try:
            return await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            job.cancelled = True
            raise

    def close(self) -> None:
        """Stop the decode thread (queued jobs fail) and free the context."""
        self._closed = True
        self._queue.put(Job(tokens=[], plan=None))
        self._thread.join(timeout=30)
        self._ctx.close()

    # ------------------------------------------------------------------------------ context

    def _new_context(self) -> Any:
        import llama_cpp.llama_cpp as raw
        from llama_cpp import _internals

        params = raw.llama_context_params()
        # Start from the one-at-a-time instance's parameters (flash attention, cache types,
        # batch sizes), so that a sequence's logits are computed the same way.
        ctypes.pointer(params)[0] = self.llm.context_params
        params.n_seq_max = self.parallel
        params.n_ctx = self.n_ctx * self.parallel
        params.kv_unified = False
        params.n_threads = self.threads
        params.n_threads_batch = self.threads
        try:
            context = _internals.LlamaContext(model=self.llm._model, params=params, verbose=False)
        except ValueError as exc:
            raise BackendError(
                FailureKind.SERVER, f"cannot create a batch context: {exc}"
            ) from None
        adapter = getattr(self.llm, "_lora_adapter", None)
        if adapter is not None:
            adapters = (raw.llama_adapter_lora_p_ctypes * 1)(adapter)
            scales = (ctypes.c_float * 1)(self.llm.lora_scale)
            if raw.llama_set_adapters_lora(context.ctx, adapters, 1, scales):
                raise BackendError(FailureKind.SERVER, "cannot apply the LoRA to the batch context")
        return context

    def _new_batch(self) -> Any:
        import llama_cpp.llama_cpp as raw

        size = max(self.llm.n_batch, self.parallel)
        batch = raw.llama_batch_init(size, 0, self.parallel)
        if batch is None:
            raise BackendError(FailureKind.SERVER, "cannot allocate a llama.cpp batch")
        return batch

    def _decode(self, items: list[tuple[int, int, int, bool]]) -> None:
        """One ``llama_decode`` of (token, position, sequence, wants logits) items."""
        import llama_cpp.llama_cpp as raw

        batch = self._batch
        batch.n_tokens = len(items)
        for i, (token, pos, seq, logits) in enumerate(items):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = logits
        code = raw.llama_decode(self._ctx.ctx, batch)
        if code != 0:
            raise BackendError(FailureKind.SERVER, f"llama_decode returned {code}")

    # -------------------------------------------------------------------------------- loop

    def _loop(self) -> None:
        while not self._closed:
            try:
                self._admit(block=not self._running)
                if self._running:
                    with _DECODE_LOCK:
                        self._step()
            except Exception as exc:
                self._fail_all(f"{type(exc).__name__}: {exc}"[:300])
        self._fail_all("the model was closed")

    def _admit(self, *, block: bool) -> None:
        """Start queued jobs while sequences are free (waits for one when nothing runs)."""
        while self._free and not self._closed:
            try:
                job = self._queue.get(block=block and not self._running)
            except queue.Empty:
                return
            if self._closed or job.cancelled or not job.future.set_running_or_notify_cancel():
                continue
            try:
                with _DECODE_LOCK:
                    self._start(job)
            except BackendError as exc:
                job.future.set_exception(exc)
            except Exception as exc:
                job.future.set_exception(BackendError(FailureKind.SERVER, str(exc)[:300]))

    def _start(self, job: Job) -> None:
        """Evaluate the job's prompt in a free sequence; score it, or sample its first token."""
        if len(job.tokens) >= self.n_ctx:
            raise BackendError(
                FailureKind.CLIENT,
                f"Requested tokens ({len(job.tokens)}) exceed context window of {self.n_ctx}",
            )
        slot = self._take_slot(job.tokens)
        try:
            last = self._evaluate_prompt(job.tokens, slot)
            if job.plan is None:
                job.future.set_result(JobResult(logits=self._logits(last).copy()))
                self._free.append(slot)
                return
            running = _Running(job, job.plan, slot, _sampler(self.llm, job.plan))
            running.pending = running.sampler.sample(self._ctx, last)
        except BaseException:
            self._free.append(slot)
            raise
        self._running.append(running)

    def _take_slot(self, tokens: list[int]) -> int:
        """The free sequence whose kept prompt shares the longest prefix with ``tokens`` (ties:
        the one used longest ago, so that recent prompts stay for their conversations). Where
        a prompt in host memory or in a busy sequence shares a longer one, it is copied into
        the free sequence used longest ago instead. A prompt a sequence loses is copied out."""
        slot = max(
            self._free,
            key=lambda free: (common_prefix(self._cached[free], tokens), -self._last_use[free]),
        )
        shared = common_prefix(self._cached[slot], tokens)
        if self.copies:
            donor, donor_shared = self._best_donor(tokens)
            if donor is not None and donor_shared >= shared + MIN_KEPT_TOKENS:
                slot = min(self._free, key=lambda free: self._last_use[free])
                self._copy_donor(donor, donor_shared, slot)
            elif len(self._cached[slot]) - shared >= MIN_KEPT_TOKENS:
                self.kept.save(self._ctx.ctx, slot, self._cached[slot])
        self._free.remove(slot)
        self._last_use[slot] = max(self._last_use) + 1
        return slot

    def _best_donor(self, tokens: list[int]) -> tuple[KeptPrompt | int | None, int]:
        """The kept prompt, or the busy sequence, sharing the longest prefix with ``tokens``,
        and that length (a kept prompt on ties: it needs no copy out)."""
        prompt, shared = self.kept.best(tokens)
        donor: KeptPrompt | int | None = prompt
        for slot in range(self.parallel):
            if slot not in self._free:
                busy_shared = common_prefix(self._cached[slot], tokens)
                if busy_shared > shared:
                    donor, shared = slot, busy_shared
        return donor, shared

    def _copy_donor(self, donor: KeptPrompt | int, shared: int, slot: int) -> None:
        """Copy ``donor``'s cache (a kept prompt, or a busy sequence's first ``shared`` tokens)
        into free sequence ``slot``, whose own prompt is copied out first."""
        ctx = self._ctx.ctx
        if isinstance(donor, KeptPrompt):
            state, held = self.kept.take(donor).state, donor.tokens
        else:
            state, held = copy_out(ctx, donor), self._cached[donor][:shared]
        self.kept.save(ctx, slot, self._cached[slot])
        # A copy llama.cpp refuses is dropped: the prompt is evaluated again.
        copied = state is not None and copy_in(ctx, state, slot, len(held))
        self._cached[slot] = held if copied else []
        self.kept.copied_in += copied

    def _evaluate_prompt(self, tokens: list[int], slot: int) -> int:
        """Evaluate what the sequence's cache lacks of ``tokens``; the batch index of the last
        token's logits. Remembers the tokens a later prompt may reuse."""
        import llama_cpp.llama_cpp as raw

        kept = common_prefix(self._cached[slot], tokens) if self.reuse else 0
        start = reuse_start(kept, len(tokens), self.llm.n_batch)
        raw.llama_memory_seq_rm(raw.llama_get_memory(self._ctx.ctx), slot, start, -1)
        self._cached[slot] = tokens[:start]
        last = self._prefill(tokens, slot, start)
        self.counts.add(reused=start, evaluated=len(tokens) - start)
        # A last token evaluated alone (the chunk boundary fell just before it) was computed
        # as no longer prompt would compute it: it is not kept.
        self._cached[slot] = tokens[:-1] if last == 0 else tokens
        return last

    def _prefill(self, tokens: list[int], slot: int, start: int = 0) -> int:
        """Evaluate ``tokens[start:]`` in chunks that end where ``Llama.eval``'s chunks of
        ``n_batch`` end; the batch index of the last token, whose logits are kept."""
        step = self.llm.n_batch
        last = 0
        begin = start
        while begin < len(tokens):
            end = min((begin // step + 1) * step, len(tokens))
            chunk = tokens[begin:end]
            self._decode([(t, begin + i, slot, i == len(chunk) - 1) for i, t in enumerate(chunk)])
            last = len(chunk) - 1
            begin = end
        return last

    def _logits(self, index: int) -> Any:
        import llama_cpp.llama_cpp as raw
        import numpy as np

        pointer = raw.llama_get_logits_ith(self._ctx.ctx, index)
        return np.ctypeslib.as_array(pointer, shape=(self.llm.n_vocab(),))

    def _step(self) -> None:
        """Take every running sequence's pending token; decode those that go on."""
        going: list[_Running] = []
        for running in list(self._running):
            if running.job.cancelled or self._advance(running):
                self._finish(running)
            else:
                going.append(running)
        if not going:
            return
        going.sort(key=lambda r: r.slot)
        try:
            if self.steps_apart:
                for running in going:
                    self._decode([self._step_row(running)])
                    running.pending = running.sampler.sample(self._ctx, 0)
            else:
                self._decode([self._step_row(running) for running in going])
                for index, running in enumerate(going):
                    running.pending = running.sampler.sample(self._ctx, index)
        except BackendError as exc:
            for running in going:
                if not running.job.future.done():
                    running.job.future.set_exception(exc)
                self._finish(running, result=False)

    @staticmethod
    def _step_row(running: _Running) -> tuple[int, int, int, bool]:
        """The decode item of a running sequence's pending token."""
        position = len(running.job.tokens) + len(running.completion) - 1
        return (running.pending, position, running.slot, True)

    def _advance(self, running: _Running) -> bool:
        """Add the pending token to the reply as ``Llama._create_completion`` does; True when
        the reply is finished (its result then set)."""
        import llama_cpp.llama_cpp as raw

        llm, plan, token = self.llm, running.plan, running.pending
        prompt = running.job.tokens
        if raw.llama_vocab_is_eog(llm._model.vocab, token):
            return self._done(running, llm.detokenize(running.completion, prev_tokens=prompt))
        running.completion.append(token)
        text = llm.detokenize(running.completion, prev_tokens=prompt)
        running.multibyte_fix = _multibyte_fix(text, running.multibyte_fix)
        if running.multibyte_fix > 0:
            running.multibyte_fix -= 1
            return False
        stops = [s for s in plan.stop if s in text]
        if stops:
            return self._done(running, text[: text.index(stops[0])])
        if len(running.completion) >= _max_tokens(plan.max_tokens, len(prompt), self.n_ctx):
            return self._done(running, text, reason="length")
        return False

    @staticmethod
    def _done(running: _Running, text: bytes, reason: str = "stop") -> bool:
        result = JobResult(
            text=text.decode("utf-8", errors="ignore"),
            completion_tokens=len(running.completion),
            finish_reason=reason,
            tokens=list(running.completion),
        )
        if not running.job.future.done():
            running.job.future.set_result(result)
        return True

    def _finish(self, running: _Running, *, result: bool = True) -> None:
        """Free the sequence (a cancelled job's future is cancelled)."""
        self._running.remove(running)
        self._free.append(running.slot)
        running.sampler.close()
        if result and not running.job.future.done():
            running.job.future.cancel()

    def _fail_all(self, why: str) -> None:
        """Fail the running jobs, and the queued ones too once the engine is closed."""
        for running in list(self._running):
            if not running.job.future.done():
                running.job.future.set_exception(BackendError(FailureKind.SERVER, why))
            self._finish(running, result=False)
        while self._closed:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if job.future.set_running_or_notify_cancel():
                job.future.set_exception(BackendError(FailureKind.SERVER, why))


def _sliding_window(llm: Llama) -> int:
    """The model's sliding attention window in tokens (0: none)."""
    import llama_cpp.llama_cpp as raw

    return int(raw.llama_model_n_swa(llm._model.model))


def _max_tokens(requested: int, prompt_tokens: int, n_ctx: int) -> int:
    """``Llama._create_completion``'s limit: the request's, cut to what the context holds."""
    if requested <= 0:
        return n_ctx - prompt_tokens
    return requested if requested + prompt_tokens < n_ctx else n_ctx - prompt_tokens


def _multibyte_fix(text: bytes, current: int) -> int:
    """How many more tokens an unfinished UTF-8 character at the end of ``text`` needs (the
    rule of ``Llama._create_completion``, kept as is so that replies end where theirs do)."""
    fix = current
    for k, char in enumerate(text[-3:]):
        k = 3 - k
        for num, pattern in ((2, 192), (3, 224), (4, 240)):
            if num > k and pattern & char == pattern:
                fix = num - k
    return fix


#: ``create_chat_completion``'s fixed sampler settings (``Llama._init_sampler``).
_TOP_K = 40
_MIN_P = 0.05

#: How many of the best tokens the grammar checks first, then next; the rest only if needed.
_GRAMMAR_CHUNKS = (64, 1024)


def _sampler(llm: Llama, plan: SamplingPlan) -> Any:
    """How a request samples: :class:`ConstrainedSampler` with a grammar, else :func:`_chain`."""
    if plan.grammar is not None:
        return ConstrainedSampler(llm, plan)
    return _chain(llm, plan, grammar=True)


def _chain(llm: Llama, plan: SamplingPlan, *, grammar: bool) -> Any:
    """The sampler chain ``Llama._init_sampler`` builds for ``create_chat_completion``'s
    arguments (top_k 40, min_p 0.05, typical_p 1.0, no mirostat); ``grammar`` False leaves out
    the plan's grammar."""
    from llama_cpp import _internals

    sampler: Any = _internals.LlamaSampler()  # type: ignore[no-untyped-call]
    sampler.add_penalties(
        n_vocab=llm.n_vocab(),
        penalty_last_n=llm.last_n_tokens_size,
        penalty_repeat=plan.repeat_penalty,
        penalty_freq=0.0,
        penalty_present=0.0,
    )
    if grammar and plan.grammar is not None:
        sampler.add_grammar(llm._model, plan.grammar)
    _add_tail(sampler, plan)
    return sampler


def _add_tail(sampler: Any, plan: SamplingPlan) -> None:
    """The samplers after penalties and grammar, as ``Llama._init_sampler`` adds them."""
    if plan.temperature == 0.0:
        sampler.add_greedy()
    else:
        sampler.add_top_k(_TOP_K)
        sampler.add_typical(1.0, 1)
        sampler.add_top_p(plan.top_p, 1)
        sampler.add_min_p(_MIN_P, 1)
        sampler.add_temp(plan.temperature)
        sampler.add_dist(plan.seed)


class ConstrainedSampler:
    """``create_chat_completion``'s chain (penalties, grammar, top-k 40, typical 1, top-p, min-p
    0.05, temperature, seeded draw), with the grammar applied to the best tokens only.

    The full chain runs the grammar over the whole vocabulary at every token, which costs more
    than decoding it. Yet what the draw sees depends only on the best grammar-valid tokens: the
    first 40 in logit order (top-k), and of those only the ones within a factor 0.05 of the best
    (min-p). So the grammar checks the best tokens in logit order, 64 then 1,024 then the rest,
    until it has those; the draw (or greedy choice) then runs on exactly the array the full chain
    hands it after top-k, with the same random state: the same token, to the bit. The penalties,
    grammar and draw keep their own state across tokens, as in the chain.
    """

    def __init__(self, llm: Llama, plan: SamplingPlan) -> None:
        import numpy as np
        from llama_cpp import _internals

        self.penalties: Any = _internals.LlamaSampler()  # type: ignore[no-untyped-call]
        self.penalties.add_penalties(
            n_vocab=llm.n_vocab(),
            penalty_last_n=llm.last_n_tokens_size,
            penalty_repeat=plan.repeat_penalty,
            penalty_freq=0.0,
            penalty_present=0.0,
        )
        self.grammar: Any = _internals.LlamaSampler()  # type: ignore[no-untyped-call]
        self.grammar.add_grammar(llm._model, plan.grammar)
        self.tail: Any = _internals.LlamaSampler()  # type: ignore[no-untyped-call]
        _add_tail(self.tail, plan)
        self.wanted = 1 if plan.temperature == 0.0 else _TOP_K
        # With top-p below 1 the top-k tokens' weights matter, not only the min-p survivors.
        self.min_p_cut = plan.temperature != 0.0 and plan.top_p >= 1.0
        self.n_vocab = llm.n_vocab()
        self.data = np.zeros(self.n_vocab, dtype=_token_data_dtype())
        self.data["id"] = np.arange(self.n_vocab, dtype=np.int32)

    def sample(self, ctx: Any, index: int) -> int:
        """The next token from the logits of batch row ``index`` of ``ctx`` (accepted into the
        penalties, grammar and draw, as ``llama_sampler_sample`` accepts it)."""
        import llama_cpp.llama_cpp as raw
        import numpy as np

        logits = np.ctypeslib.as_array(
            raw.llama_get_logits_ith(ctx.ctx, index), shape=(self.n_vocab,)
        )
        data = self.data
        data["logit"] = logits
        data["p"] = 0.0
        _apply(self.penalties, data, is_sorted=False)
        candidates = self._best_valid(data)
        token = _apply(self.tail, candidates, is_sorted=True)
        for sampler in (self.penalties, self.grammar, self.tail):
            raw.llama_sampler_accept(sampler.sampler, token)
        return token

    def _best_valid(self, data: Any) -> Any:
        """The best grammar-valid tokens, best first (ties: lower id first), as many as the
        draw can see: ``wanted`` of them, fewer once no token left could pass min-p."""
        import numpy as np

        logits = data["logit"]
        found: list[Any] = []
        count = 0
        upper = np.inf
        for size in (*_GRAMMAR_CHUNKS, self.n_vocab):
            lower = -np.inf if size >= self.n_vocab else np.partition(logits, -size)[-size]
            chunk = data[(logits >= lower) & (logits < upper)]
            chunk = chunk[np.lexsort((chunk["id"], -chunk["logit"]))]
            _apply(self.grammar, chunk, is_sorted=True)
            valid = chunk[chunk["logit"] != -np.inf]
            found.append(valid)
            count += len(valid)
            upper = lower
            if count >= self.wanted or (count and self._beyond_min_p(found, lower)):
                break
        best = np.concatenate(found)[: self.wanted]
        if not len(best):
            raise BackendError(FailureKind.SERVER, "the grammar allows no token")
        return best

    def _beyond_min_p(self, found: list[Any], lower: float) -> bool:
        """Whether every token not yet checked (all below ``lower``) would fall to min-p."""
        import math

        if not self.min_p_cut:
            return False
        best = next(float(part["logit"][0]) for part in found if len(part))
        return lower < best + math.log(_MIN_P) - 1e-3

    def close(self) -> None:
        """Free the samplers."""
        for sampler in (self.penalties, self.grammar, self.tail):
            sampler.close()


def _token_data_dtype() -> Any:
    """numpy's layout of ``llama_token_data`` (id, logit, p)."""
    import numpy as np

    return np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


def _apply(sampler: Any, data: Any, *, is_sorted: bool) -> int:
    """Run ``sampler`` over ``data`` in place; the token it selected (-1: none)."""
    import llama_cpp.llama_cpp as raw

    array = raw.llama_token_data_array(
        data=data.ctypes.data_as(raw.llama_token_data_p),
        size=len(data),
        selected=-1,
        sorted=is_sorted,
    )
    raw.llama_sampler_apply(sampler.sampler, ctypes.byref(array))
    # Read through the array: a sampler may have pointed it at a buffer of its own.
    return -1 if array.selected < 0 else int(array.data[array.selected].id)
