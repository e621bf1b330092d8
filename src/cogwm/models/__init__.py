"""One model interface for every LLM use (DESIGN.md §8).

Contract (implemented in this package):

- ``load(spec, **options) -> Model`` where ``spec`` is an address string:
  ``llamacpp:smollm2`` (embedded default) or ``llamacpp:/path/model.gguf``;
  ``openai:<model>`` (base URL(s) from ``base_url=`` or ``$COGWM_BASE_URL``, comma-separated for
  several endpoints; key from ``$COGWM_API_KEY`` / ``$OPENAI_API_KEY``);
  ``hf:<path>[+<adapter dir>]``; ``fake:<name>`` (tests).
- ``Model.generate(messages, sampling=Sampling(), *, sample=0, tag=None, logprobs=None)``
  -> ``Completion`` (async).
- ``Model.generate_structured(messages, OutputModel, sampling=..., *, sample=0, tag=None)``
  -> ``Structured[OutputModel]`` (async); raises ``StructuredOutputError`` after one repair.
- ``Model.score_choices(messages, letters, *, tag=None)`` -> ``ChoiceScores`` (async).
- ``recording(callback)``: a context manager; every call made inside it (including in tasks
  started inside it) is reported to ``callback(CallRecord)``.
"""
