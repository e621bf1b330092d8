"""Input checks shared by the statistics wrappers: each failure names what is wrong."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from cogwm.errors import InputError


class StatsInputError(InputError, ValueError):
    """Input a statistic cannot be computed from (wrong shape, too few values, NaN...).

    It is both a ``ValueError`` (what numeric code expects) and an ``InputError`` (so the
    command line prints it on one line).
    """


def finite_vector(
    values: Sequence[float] | npt.ArrayLike, name: str, *, min_len: int = 1
) -> npt.NDArray[np.float64]:
    """``values`` as a 1-d float array of finite numbers with at least ``min_len`` entries."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(f"{name}: expected numbers, got {values!r:.80}") from exc
    if array.ndim != 1:
        raise StatsInputError(f"{name}: expected a 1-d sequence, got shape {array.shape}")
    if array.size < min_len:
        raise StatsInputError(f"{name}: needs at least {min_len} values, got {array.size}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise StatsInputError(f"{name}: value at index {int(bad[0])} is not finite")
    return array


def paired_vectors(
    x: Sequence[float] | npt.ArrayLike, y: Sequence[float] | npt.ArrayLike, *, min_len: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Two finite vectors of equal length (at least ``min_len``)."""
    a = finite_vector(x, "x", min_len=0)
    b = finite_vector(y, "y", min_len=0)
    if a.size != b.size:
        raise StatsInputError(f"x and y must have the same length, got {a.size} and {b.size}")
    if a.size < min_len:
        raise StatsInputError(f"x and y: need at least {min_len} pairs, got {a.size}")
    return a, b


def count_table(
    table: Sequence[Sequence[float]] | npt.ArrayLike,
    name: str,
    *,
    shape: tuple[int, int] | None = None,
) -> npt.NDArray[np.float64]:
    """A 2-d table of non-negative finite counts (of a fixed ``shape`` when given)."""
    try:
        array = np.asarray(table, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(f"{name}: expected a 2-d table of counts") from exc
    if array.ndim != 2:
        raise StatsInputError(f"{name}: expected a 2-d table of counts, got shape {array.shape}")
    if shape is not None and array.shape != shape:
        raise StatsInputError(f"{name}: expected shape {shape}, got {array.shape}")
    if min(array.shape) < 2:
        raise StatsInputError(f"{name}: needs at least 2 rows and 2 columns, got {array.shape}")
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        raise StatsInputError(f"{name}: counts must be finite and non-negative")
    return array


def is_missing(value: Any) -> bool:
    """Whether a rating is missing: ``None``, NaN or the empty string."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value == ""
