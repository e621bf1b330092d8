"""The inspired corpus: its loader and its human-label mapping."""
