"""The persuasionforgood corpus: its loader and its human-label mapping."""
