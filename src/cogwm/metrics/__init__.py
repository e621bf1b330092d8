"""The three tiers of evaluation (docs/architecture.md, "Evaluation tiers"): turn fidelity,
trajectory dynamics and task scores, plus the LLM-judge metrics and the aggregation of all of them.

Pure functions over stored results. Modules: ``turn`` (fidelity per sample), ``text`` (ROUGE,
BLEU, length ratio, Distinct-1), ``embeddings`` (sentence embeddings for B/D/I-Sim),
``trajectory`` (composite score and its dynamics), ``task`` (CTS, GoodOutcome rate), ``judge``
(LLM-judge metrics), ``aggregate`` (means, bootstrap CIs, agent comparisons).
"""
