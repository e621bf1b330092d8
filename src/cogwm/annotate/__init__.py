"""Annotation: partial cognitive states from the corpora's human labels and from LLM annotators.

Both kinds are written and read in one line format (``cogwm.labels/1``, see
:mod:`cogwm.annotate.io`): one :class:`~cogwm.schema.partial.LabelledDialogue` per line.
"""
