"""The esconv corpus: its loader and its human-label mapping."""
