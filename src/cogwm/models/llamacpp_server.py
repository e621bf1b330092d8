"""llama-cpp-python's OpenAI-compatible server, loading models as the in-process backend does.

``python -m cogwm.models.llamacpp_server --model FILE.gguf --port 8000`` takes the arguments of
``python -m llama_cpp.server``; the difference is that weights are loaded without llama.cpp's
extra buffer types (a source build on a CPU with AMX crashes with them; set
``$COGWM_LLAMA_EXTRA_BUFFERS=1`` to keep them).
"""

from __future__ import annotations


def main() -> None:
    """Run the server with the process-wide weight-buffer setting applied first."""
    from llama_cpp.server.__main__ import main as serve

    from cogwm.models.llamacpp import plain_weight_buffers_for_process

    plain_weight_buffers_for_process()
    serve()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
