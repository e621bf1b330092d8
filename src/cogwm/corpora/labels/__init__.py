"""The shared machinery of the human-label mappings: tables, field builders, lexicon extensions."""
