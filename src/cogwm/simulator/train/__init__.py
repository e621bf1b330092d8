"""LoRA training of the world model, and its adapter's export for llama.cpp.

``loop.train(TrainConfig)`` is the run (``cogwm train``); ``data`` turns samples files into token
ids and per-token loss weights; ``gguf_export`` writes a trained adapter as a GGUF LoRA that
llama.cpp applies over the base. torch, transformers, peft and accelerate are imported only inside
the functions that use them.
"""

from cogwm.simulator.train.config import TrainConfig

__all__ = ["TrainConfig"]
