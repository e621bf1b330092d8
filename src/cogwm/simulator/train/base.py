"""The base model of a training run: an HF model directory, a GGUF file, or a GGUF alias.

transformers dequantizes a GGUF file to fp32 on load, which takes minutes for SmolLM2; the result
is saved once as an ordinary model directory in the cache and reused (seconds to load). A model
loaded from GGUF refuses ``save_pretrained`` while it still carries the GGUF quantizer, so that is
dropped first (the weights are already plain fp32 tensors).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from cogwm.errors import ConfigError
from cogwm.models.cache import default_cache_path
from cogwm.models.llamacpp import ALIASES, fingerprint, resolve_gguf

COMPLETE_MARKER = ".complete"


BASES_DIR_ENV = "COGWM_BASES_DIR"


def bases_dir() -> Path:
    """Where dequantized bases are kept: ``$COGWM_BASES_DIR``, else beside the reply cache."""
    env = os.environ.get(BASES_DIR_ENV)
    return Path(env) if env else default_cache_path().parent / "bases"


def resolve_base(spec: str, cache: Path | None = None) -> Path:
    """A transformers model directory for ``spec`` (a directory, a ``.gguf`` file or an alias).

    Raises:
        ConfigError: Not a model directory, GGUF file nor known alias.
    """
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ConfigError(f"--base {spec}: a directory without config.json is not a model")
        return path
    if spec.lower() not in ALIASES and path.suffix.lower() != ".gguf":
        known = ", ".join(ALIASES)
        raise ConfigError(
            f"--base {spec}: not a model directory, a .gguf file nor an alias ({known})"
        )
    _, gguf = resolve_gguf(spec)
    target = (cache or bases_dir()) / f"{gguf.stem}-{fingerprint(gguf)}"
    if not (target / COMPLETE_MARKER).is_file():
        dequantize(gguf, target)
    return target


def dequantize(gguf: Path, target: Path) -> None:
    """Load ``gguf`` with transformers (fp32) and save it with its tokenizer to ``target``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        tokenizer: Any = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model: Any = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / COMPLETE_MARKER).write_text(str(gguf) + "\n", encoding="utf-8")
        if target.exists():  # a partial copy from an interrupted earlier attempt
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
