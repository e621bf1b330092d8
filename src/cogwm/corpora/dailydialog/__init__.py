"""The dailydialog corpus: its loader and its human-label mapping."""
