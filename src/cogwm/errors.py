"""Errors the command line turns into one-line messages with exit code 2."""

from __future__ import annotations


class CogwmError(Exception):
    """Base class of every error that is the user's to fix (bad input, missing files)."""


class InputError(CogwmError):
    """Input that cannot be used: a missing file, a malformed row, an unknown name."""


class ConfigError(CogwmError):
    """A configuration file or option with a wrong key or value."""
