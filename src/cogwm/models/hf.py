"""The ``hf:<path>[+<adapter dir>]`` backend: transformers (and peft for LoRA adapters) in process.

This is how trained adapters are served without converting them: ``hf:./base+./adapter`` loads the
base model (a transformers directory, or a ``.gguf`` file that transformers dequantizes) and the
peft adapter on top. It needs the optional ``train`` extra; the libraries are imported on first
use. Structured output is validated and repaired (no grammar here); multiple-choice scoring reads
the full next-token distribution from one forward pass.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from cogwm.errors import ConfigError
from cogwm.models.backend import Backend, local_sampling
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
    import torch


class HFOptions(BaseModel):
    """Options of ``hf:`` models."""

    model_config = ConfigDict(extra="forbid")

    device: str = Field(default="cpu", description="torch device, e.g. 'cpu' or 'cuda:0'.")
    dtype: str = Field(default="float32", description="torch dtype name for the weights.")
    repeat_penalty: float = Field(default=1.1, gt=0, description="When Sampling leaves it unset.")
    max_tokens_cap: int = Field(default=512, ge=1, description="Upper bound on max_tokens.")


def split_target(target: str) -> tuple[Path, Path | None]:
    """``<model>[+<adapter>]`` into the model path and the optional adapter directory.

    Only the files' presence is checked (nothing is loaded), so preflights can call it.

    Raises:
        ConfigError: No such model path, an adapter folder without ``adapter_config.json``, or
            a model folder without ``config.json`` (not a transformers model).
    """
    model, plus, adapter = target.partition("+")
    model_path = Path(model).expanduser()
    adapter_path = Path(adapter).expanduser() if plus else None
    if not model_path.exists():
        raise ConfigError(f"hf:{target}: no such model path {model_path}")
    if adapter_path is not None and not (adapter_path / "adapter_config.json").is_file():
        raise ConfigError(
            f"hf:{target}: {adapter_path} is not a peft adapter (no adapter_config.json)"
        )
    if model_path.is_dir() and not (model_path / "config.json").is_file():
        raise ConfigError(
            f"hf:{target}: {model_path} has no config.json (not a transformers model folder)"
        )
    return model_path, adapter_path


def path_fingerprint(path: Path) -> str:
    """Size and head/tail hash of a file, or of a directory's weight and config files."""
    files = (
        [path]
        if path.is_file()
        else sorted(
            p for p in path.iterdir() if p.suffix in {".safetensors", ".bin", ".gguf", ".json"}
        )
    )
    digest = hashlib.blake2b(digest_size=8)
    for file in files:
        size = file.stat().st_size
        digest.update(f"{file.name}:{size}".encode())
        with file.open("rb") as handle:
            digest.update(handle.read(1 << 20))
            handle.seek(max(0, size - (1 << 20)))
            digest.update(handle.read(1 << 20))
    return digest.hexdigest()


class HFBackend(Backend):
    """A transformers causal LM (plus an optional peft adapter) in this process."""

    def __init__(self, model_path: Path, adapter_path: Path | None, options: HFOptions) -> None:
        self.model_path = model_path
        self.adapter_path = adapter_path
        self.options = options
        name = f"{model_path.name}@{path_fingerprint(model_path)}"
        if adapter_path is not None:
            name += f"+{adapter_path.name}@{path_fingerprint(adapter_path)}"
        self.identity = f"hf:{name}"
        self.endpoints = [
            f"inprocess:{model_path.name}" + (f"+{adapter_path.name}" if adapter_path else "")
        ]
        self.default_concurrency = 1
        self.default_timeout_s = None
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None

    async def capabilities(self, endpoint: str) -> Capabilities:
        """No grammar: schemas go in the prompt; logprobs and full logits are available."""
        return Capabilities(modes=[StructuredMode.PROMPT], logprobs=True, full_logits=True)

    def effective_sampling(self, sampling: Sampling) -> Sampling:
        """Default repetition penalty and the max_tokens cap applied."""
        return local_sampling(
            sampling,
            repeat_penalty=self.options.repeat_penalty,
            max_tokens_cap=self.options.max_tokens_cap,
        )

    async def complete(self, request: BackendRequest, endpoint: str) -> BackendReply:
        """Run the request in a worker thread (one at a time per loaded model)."""
        return await asyncio.to_thread(self._complete_locked, request)

    def describe(self) -> dict[str, str]:
        """Model and adapter paths, device and dtype."""
        return {
            "model": str(self.model_path),
            "adapter": str(self.adapter_path) if self.adapter_path else "-",
            "device": self.options.device,
            "dtype": self.options.dtype,
        }

    # ------------------------------------------------------------------------------ internals

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        source, extra = self._source()
        dtype = getattr(torch, self.options.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise ConfigError(f"hf: unknown dtype {self.options.dtype!r}")
        try:
            tokenizer = AutoTokenizer.from_pretrained(source, **extra)
            model: Any = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **extra)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"hf: cannot load {self.model_path}: {exc}") from None
        if self.adapter_path is not None:
            try:
                from peft import PeftModel
            except ImportError:
                raise ConfigError(
                    "hf: loading an adapter needs peft: pip install 'cogwm[train]'"
                ) from None
            model = PeftModel.from_pretrained(model, str(self.adapter_path))
        model.to(self.options.device)
        model.eval()
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._model, self._tokenizer = model, tokenizer

    def _source(self) -> tuple[str, dict[str, Any]]:
        if self.model_path.is_file() and self.model_path.suffix.lower() == ".gguf":
            return str(self.model_path.parent), {"gguf_file": self.model_path.name}
        return str(self.model_path), {}

    def _complete_locked(self, request: BackendRequest) -> BackendReply:
        import torch

        with self._lock:
            if self._model is None:
                self._load()
            try:
                with torch.inference_mode():
                    if request.candidates:
                        return self._score(request)
                    return self._generate(request)
            except (RuntimeError, ValueError) as exc:
                raise BackendError(FailureKind.CLIENT, str(exc)[:300]) from None

    def _prompt_ids(self, request: BackendRequest) -> torch.Tensor:
        messages = [m.model_dump() for m in request.messages]
        ids: torch.Tensor = self._tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )["input_ids"]
        return ids.to(self.options.device)

    def _generate(self, request: BackendRequest) -> BackendReply:
        import torch

        sampling = request.sampling
        input_ids = self._prompt_ids(request)
        sample = sampling.temperature > 0
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed)
        kwargs: dict[str, Any] = {
            "max_new_tokens": sampling.max_tokens,
            "do_sample": sample,
            "repetition_penalty": sampling.repeat_penalty or 1.0,
            "return_dict_in_generate": True,
            "output_logits": request.logprobs is not None,
            "pad_token_id": self._tokenizer.pad_token_id,
        }
        if sample:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p)
        if sampling.stop:
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=self._tokenizer)
        out = self._model.generate(
            input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs
        )
        new_ids = out.sequences[0, input_ids.shape[1] :]
        text = self._tokenizer.decode(new_ids, skip_special_tokens=True)
        for stop in sampling.stop or []:
            text = text.split(stop, 1)[0]
        finished = bool(len(new_ids)) and int(new_ids[-1]) == self._tokenizer.eos_token_id
        logprobs = None
        if request.logprobs is not None:
            logprobs = self._token_logprobs(new_ids, out.logits, request.logprobs)
        return BackendReply(
            text=text,
            usage=Usage(prompt_tokens=int(input_ids.shape[1]), completion_tokens=len(new_ids)),
            logprobs=logprobs,
            finish_reason="stop" if finished or len(new_ids) < sampling.max_tokens else "length",
        )

    def _token_logprobs(self, ids: torch.Tensor, logits: Any, k: int) -> list[TokenLogprob]:
        import torch

        result = []
        for token_id, step in zip(ids.tolist(), logits, strict=False):
            logprobs = torch.log_softmax(step[0].float(), dim=-1)
            top: dict[str, float] = {}
            if k:
                values, indices = torch.topk(logprobs, k)
                for value, index in zip(values.tolist(), indices.tolist(), strict=True):
                    # Distinct ids can decode alike (partial UTF-8); keep the most likely.
                    top.setdefault(self._tokenizer.decode([index]), value)
            result.append(
                TokenLogprob(
                    token=self._tokenizer.decode([token_id]),
                    logprob=float(logprobs[token_id]),
                    top=top,
                )
            )
        return result

    def _score(self, request: BackendRequest) -> BackendReply:
        import torch

        input_ids = self._prompt_ids(request)
        logits = self._model(input_ids=input_ids).logits[0, -1].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        scores: dict[str, float] = {}
        seen: set[int] = set()
        for candidate in request.candidates or []:
            ids = self._tokenizer.encode(candidate, add_special_tokens=False)
            if len(ids) == 1 and ids[0] not in seen:
                seen.add(ids[0])
                scores[candidate] = float(logprobs[ids[0]])
        best = int(torch.argmax(logprobs))
        return BackendReply(
            text=self._tokenizer.decode([best]),
            usage=Usage(prompt_tokens=int(input_ids.shape[1]), completion_tokens=0),
            candidate_logprobs=scores,
            finish_reason="scored",
        )


def make_hf(target: str, options: dict[str, Any]) -> HFBackend:
    """The backend for ``hf:<path>[+<adapter dir>]`` (loaded on first use)."""
    model_path, adapter_path = split_target(target)
    return HFBackend(model_path, adapter_path, HFOptions(**options))
