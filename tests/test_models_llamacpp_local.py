"""The llamacpp backend's local concerns: model aliases (chunked packages too) and schema guards."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cogwm.errors import ConfigError
from cogwm.models.llamacpp import Alias, alias_path


def _package(root: Path, name: str, body: str) -> None:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text(body)


def test_a_chunked_package_resolves_to_the_file_its_assemble_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Catches: an alias that only globs inside the package never finds a chunked model.
    target = tmp_path / "cache" / "model.gguf"
    body = (
        "from pathlib import Path\n"
        "def assemble():\n"
        f"    path = Path({str(target)!r})\n"
        "    path.parent.mkdir(parents=True, exist_ok=True)\n"
        "    path.write_bytes(b'GGUF')\n"
        "    return path\n"
    )
    _package(tmp_path, "chunked_model_pkg", body)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert alias_path(Alias("chunked_model_pkg", "*.gguf", "test")) == target
    sys.modules.pop("chunked_model_pkg", None)


def test_a_failed_assembly_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "def assemble():\n    raise ValueError('sha256 did not match')\n"
    _package(tmp_path, "broken_model_pkg", body)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="sha256 did not match"):
        alias_path(Alias("broken_model_pkg", "*.gguf", "test"))
    sys.modules.pop("broken_model_pkg", None)


def test_a_package_without_the_file_or_assemble_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _package(tmp_path, "empty_model_pkg", "")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert alias_path(Alias("empty_model_pkg", "*.gguf", "test")) is None
    sys.modules.pop("empty_model_pkg", None)


def test_schema_choices_llama_cpp_cannot_express_are_found() -> None:
    # Catches: a quote inside an enum reaching llama.cpp, whose grammar parser then aborts the
    # whole process instead of raising.
    from cogwm.models.structured import grammar_unsafe_literals

    schema = {
        "type": "object",
        "properties": {
            "quote": {"enum": ["fine", 'he said "no"']},
            "items": {"type": "array", "items": {"const": "back\\slash"}},
            "plain": {"enum": ["a", "b", 3]},
        },
    }
    assert grammar_unsafe_literals(schema) == ['he said "no"', "back\\slash"]
    assert grammar_unsafe_literals({"enum": ["anger", "fear"]}) == []
