"""The annomi corpus: its loader and its human-label mapping."""
