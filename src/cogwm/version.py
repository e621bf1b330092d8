"""The version of cogwm that is running, from its installed distribution's metadata."""

from __future__ import annotations

from functools import cache

#: Reported when cogwm runs from a source tree that was never installed (no metadata to read).
UNKNOWN = "0+unknown"


@cache
def version() -> str:
    """The installed ``cogwm`` distribution's version (``0+unknown`` if it is not installed).

    Read through ``importlib.metadata``, so it is the version in ``pyproject.toml`` at install
    time; imported here, not at ``import cogwm``, which it would slow by tens of milliseconds.
    """
    from importlib import metadata

    try:
        return metadata.version("cogwm")
    except metadata.PackageNotFoundError:
        return UNKNOWN
