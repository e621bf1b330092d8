"""cogwm: measure how dialogue agents change the people they talk to.

The package is organised by what it does: ``schema`` (records), ``tasks`` (task specs),
``corpora`` (loaders and sliding windows), ``models`` (one interface to every LLM),
``metrics`` and ``stats`` (the verdicts), ``arena`` (agents against a user simulator),
``tom`` (the DialToM benchmark), ``store`` and ``report``. Heavy libraries are imported
only inside the modules that need them, so ``import cogwm`` stays fast.
"""


def __getattr__(name: str) -> str:
    """``cogwm.__version__``: the installed distribution's version, read when first asked."""
    if name == "__version__":
        from cogwm.version import version

        return version()
    raise AttributeError(f"module 'cogwm' has no attribute {name!r}")
