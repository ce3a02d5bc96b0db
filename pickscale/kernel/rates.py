"""Pick rates (SPEC §20): every pick read, counted per station at each threshold, and the days it fell on.

Counted per read part on the workers (in the outline, :func:`pickscale.engine.parts.outline`), whatever the
scope: a station with picks but no reference arrival is counted too (the false picks on noise-only data).
The counts combine exactly, in any order: picks at each threshold add up, and the days a model picked at a
station are a set, so two parts' (or an extension's) days are their union.

Numpy and pandas only: the Dask workers import this module.

Examples
--------
>>> import numpy as np, pandas as pd
>>> combos = pd.DataFrame({"dataset": ["d"], "station": ["A"], "model": ["m"]})
>>> day = 86_400 * 10**9
>>> r = count_rates(combos, np.zeros(3, np.int16), np.array([0, 0, 1], np.int8),
...                 np.array([0, day + 5, day + 7]), np.array([0.2, 0.6, 0.9]), np.array([0.1, 0.5]))
>>> r.at[0].tolist()  # P: picks at >= 0.1, >= 0.5; S: the same
[[2, 1], [1, 1]]
>>> r.day.tolist()  # UTC days since 1970-01-01 with a pick
[0, 1]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .station import level

__all__ = ["PickRates", "count_rates", "merge_rates", "in_key_order", "DAY_NS", "KEY"]

#: One UTC day in integer nanoseconds: a pick's day is ``floor(time / DAY_NS)`` (days since 1970-01-01).
DAY_NS = 86_400 * 10**9
#: What the counts are kept per (besides the phase and the threshold).
KEY = ["dataset", "station", "model"]
# A part's days are marked in a dense (key × day) table up to this many cells, else found by sorting.
_DENSE_CELLS = 1 << 24


@dataclass
class PickRates:
    """A set of picks' rates: per (dataset, station, model), the picks at each threshold and the days picked.

    Attributes
    ----------
    keys
        One row per (dataset, station, model), sorted, each value a Python ``str``.
    at
        ``(len(keys), 2, G)`` int64: picks with ``conf >= grid[g]``, per phase (P, S).
    day_key, day
        The distinct (key, UTC day) pairs, sorted: a row of ``keys`` and days since 1970-01-01 (int64).
    """

    keys: pd.DataFrame
    at: np.ndarray
    day_key: np.ndarray
    day: np.ndarray


def count_rates(combos: pd.DataFrame, combo: np.ndarray, phase: np.ndarray, time: np.ndarray, conf: np.ndarray,
                grid: np.ndarray) -> PickRates:
    """A part's :class:`PickRates`: ``combos`` its (dataset, station, model) rows, ``combo`` each pick's row,
    ``phase`` (0 = P), ``time`` (int64 ns) and ``conf`` per pick, ``grid`` the ascending thresholds."""
    grid = np.asarray(grid, dtype=np.float64)
    n, g = len(combos), grid.size
    row = np.asarray(combo, dtype=np.int64)
    # A pick counts at every threshold its confidence reaches (conf >= θ, in float64 as everywhere else):
    # histogram of levels, then summed from the top level down.
    cell = (row * 2 + np.asarray(phase, dtype=np.int64)) * (g + 1) + level(np.asarray(conf, np.float64), grid)
    hist = np.bincount(cell, minlength=n * 2 * (g + 1)).reshape(n, 2, g + 1)
    at = np.cumsum(hist[..., ::-1], axis=-1)[..., ::-1][..., 1:].astype(np.int64)
    day_key, day = _distinct_days(row, np.asarray(time, dtype=np.int64) // DAY_NS, n)
    keys = pd.DataFrame({k: combos[k].to_numpy(object) for k in KEY})
    return in_key_order(keys, at, day_key, day)


def _distinct_days(row: np.ndarray, day: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (row, day) pairs, sorted by row then day."""
    if not day.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    first = int(day.min())
    span = int(day.max()) - first + 1
    flat = row * span + (day - first)
    if n * span <= _DENSE_CELLS:  # a part spans few days: mark them (linear), no sort
        marked = np.zeros(n * span, dtype=bool)
        marked[flat] = True
        flat = np.flatnonzero(marked)
    else:
        flat = np.unique(flat)
    return (flat // span).astype(np.int64), (flat % span + first).astype(np.int64)


def in_key_order(keys: pd.DataFrame, at: np.ndarray, day_key: np.ndarray, day: np.ndarray) -> PickRates:
    """The rates with their keys merged and sorted: rows of equal keys summed, days united."""
    if not len(keys):
        return PickRates(keys.reset_index(drop=True), at, day_key, day)
    groups = keys.groupby(KEY, sort=True)
    new = groups.ngroup().to_numpy(np.int64)  # numbered in the sorted order of the keys
    uniques = groups.size().reset_index()[KEY]
    merged = np.zeros((len(uniques),) + at.shape[1:], dtype=np.int64)
    np.add.at(merged, new, at)
    day_key = new[day_key]
    if day.size:
        order = np.lexsort((day, day_key))
        day_key, day = day_key[order], day[order]
        keep = np.ones(day.size, dtype=bool)
        keep[1:] = (day_key[1:] != day_key[:-1]) | (day[1:] != day[:-1])
        day_key, day = day_key[keep], day[keep]
    out = pd.DataFrame({k: uniques[k].to_numpy(object) for k in KEY})
    return PickRates(out, merged, day_key, day)


def merge_rates(parts: list[PickRates]) -> PickRates:
    """Several parts' rates as one (any order, any grouping: the same result)."""
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [len(p.keys) for p in parts])
    keys = pd.concat([p.keys for p in parts], ignore_index=True)
    at = np.concatenate([p.at for p in parts]) if parts else np.zeros((0, 2, 0), np.int64)
    day_key = np.concatenate([p.day_key + offsets[i] for i, p in enumerate(parts)])
    day = np.concatenate([p.day for p in parts])
    return in_key_order(keys, at, day_key, day)
