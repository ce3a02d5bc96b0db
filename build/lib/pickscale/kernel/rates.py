"""Pick rates (SPEC §20): every pick read, counted per station at each threshold, and the days it fell on.

Counted per read part on the workers (in the outline, :func:`pickscale.engine.parts.outline`), whatever the
scope: a station with picks but no reference arrival is counted too (the false picks on noise-only data).
The counts combine exactly, in any order: picks at each threshold add up, and the days a model picked at a
station are a set, so two parts' (or an extension's) days are their union.  The days are kept as **runs** of
consecutive UTC days (first and last day, both included), maximal — neither overlapping nor touching — so
that a station picking every day is one run, whatever the span: the union of two parts' runs is interval
arithmetic (:func:`coalesce_runs`), never a list of days.

Numpy and pandas only: the Dask workers import this module.

Examples
--------
>>> import numpy as np, pandas as pd
>>> combos = pd.DataFrame({"dataset": ["d"], "station": ["A"], "model": ["m"]})
>>> day = 86_400 * 10**9
>>> r = count_rates(combos, np.zeros(4, np.int16), np.array([0, 0, 1, 1], np.int8),
...                 np.array([0, day + 5, day + 7, 3 * day]), np.array([0.2, 0.6, 0.9, 0.3]), np.array([0.1, 0.5]))
>>> r.at[0].tolist()  # P: picks at >= 0.1, >= 0.5; S: the same
[[2, 1], [2, 1]]
>>> r.run_first.tolist(), r.run_last.tolist()  # UTC days since 1970-01-01 with a pick: 0–1, then 3
([0, 3], [1, 3])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .station import level

__all__ = ["PickRates", "count_rates", "merge_rates", "in_key_order", "coalesce_runs", "expand_runs", "DAY_NS",
           "KEY", "sorted_groups"]

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
    run_key, run_first, run_last
        The days picked as maximal runs of consecutive UTC days, sorted by (key, first day): a row of ``keys``,
        the run's first and last day (days since 1970-01-01, int64, ``first <= last``); two runs of a key
        neither overlap nor touch (one ends two days or more before the next begins).
    """

    keys: pd.DataFrame
    at: np.ndarray
    run_key: np.ndarray
    run_first: np.ndarray
    run_last: np.ndarray

    @property
    def day_key(self) -> np.ndarray:
        """The (key, day) pairs' keys, one per day picked (expanded from the runs: for inspection and tests)."""
        return expand_runs(self.run_key, self.run_first, self.run_last)[0]

    @property
    def day(self) -> np.ndarray:
        """The days picked, one per (key, day) pair, sorted as :attr:`day_key` (expanded from the runs)."""
        return expand_runs(self.run_key, self.run_first, self.run_last)[1]


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
    return in_key_order(keys, at, *_runs_of_days(day_key, day))


def _distinct_days(row: np.ndarray, day: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (row, day) pairs, sorted by row then day (at most one per pick of the part)."""
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


def _runs_of_days(key: np.ndarray, day: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (key, day) pairs sorted by key then day as maximal runs (key, first, last)."""
    if not day.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, (key[1:] != key[:-1]) | (day[1:] != day[:-1] + 1)])
    ends = np.r_[starts[1:], day.size] - 1
    return key[starts], day[starts], day[ends]


def coalesce_runs(key: np.ndarray, first: np.ndarray, last: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of runs of days per key, as maximal runs sorted by (key, first day): overlapping runs and runs
    that touch (one ends the day before the other begins) become one; interval arithmetic, no day is listed.

    Examples
    --------
    >>> k, f, l = coalesce_runs(np.array([1, 0, 0, 0, 0]), np.array([5, 9, 1, 4, 12]), np.array([5, 10, 3, 6, 12]))
    >>> k.tolist(), f.tolist(), l.tolist()  # key 0: 1–3 and 4–6 touch, 9–10 and 12 do not
    ([0, 0, 0, 1], [1, 9, 12, 5], [6, 10, 12, 5])
    """
    key, first, last = (np.asarray(a, dtype=np.int64) for a in (key, first, last))
    if not key.size:
        return key, first, last
    same = key[1:] == key[:-1]
    if ((key[1:] > key[:-1]) | (same & (first[1:] > last[:-1] + 1))).all() and (last >= first).all():
        # Already maximal runs in order (a stored side's runs, a merge's own output): one pass, no sort.
        return key, first, last
    order = _key_order(key, first)
    key, first, last = key[order], first[order], last[order]
    new_key = np.r_[True, key[1:] != key[:-1]]
    # The furthest last day reached so far within each key: one running maximum over the whole array, each
    # key lifted above every earlier one (its rank times the span of the days), so no key reaches into the next.
    low = int(first.min())
    span = max(int(last.max()), int(first.max())) - low + 2
    rank = np.cumsum(new_key) - 1
    if int(rank[-1]) * span >= 2**62:  # (beyond any datetime64[ns] day: ±106,752 days)
        raise ValueError("coalesce_runs: the days span too far")
    lift = rank * span
    reach = np.maximum.accumulate(lift + (last - low)) - lift + low
    starts = np.flatnonzero(new_key | np.r_[True, first[1:] > reach[:-1] + 1])
    ends = np.r_[starts[1:], key.size] - 1
    return key[starts], first[starts], reach[ends]


def _key_order(key: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The order that sorts by (key, first): ``np.lexsort((first, key))``, as one stable sort of a combined
    integer when both fit in one (Timsort then finds the sorted stretches a merge of sorted sides has)."""
    k0, f0 = int(key.min()), int(first.min())
    k_span, f_span = int(key.max()) - k0 + 1, int(first.max()) - f0 + 1
    if k_span * f_span >= 2**62:
        return np.lexsort((first, key))
    return np.argsort((key - k0) * f_span + (first - f0), kind="stable")


def expand_runs(key: np.ndarray, first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (key, day) pairs of runs, one per day (as many as the days: for inspection, tests and brute forces).

    Examples
    --------
    >>> [a.tolist() for a in expand_runs(np.array([0, 2]), np.array([-1, 7]), np.array([1, 7]))]
    [[0, 0, 0, 2], [-1, 0, 1, 7]]
    """
    key, first, last = (np.asarray(a, dtype=np.int64) for a in (key, first, last))
    length = last - first + 1
    total = int(length.sum()) if length.size else 0
    offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(length) - length, length)
    return np.repeat(key, length), np.repeat(first, length) + offset


def sorted_groups(frame: pd.DataFrame, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(each row's group of equal values in columns ``names``, numbered in the groups' sorted order; one row of
    each group, in that order) — ``frame.groupby(names, sort=True).ngroup()`` and its groups' first rows.

    Each column factorized with its values sorted (Python ``str`` order for text), then one ``lexsort``: a
    pandas ``groupby`` on three text columns cost ~5 ms however few the rows (issue 27).

    Examples
    --------
    >>> frame = pd.DataFrame({"a": ["y", "x", "y", "x"], "b": [2, 1, 1, 1]})
    >>> group, first = sorted_groups(frame, ["a", "b"])
    >>> group.tolist(), first.tolist()
    ([2, 0, 1, 0], [1, 2, 0])
    >>> group.tolist() == frame.groupby(["a", "b"], sort=True).ngroup().tolist()
    True
    """
    n = len(frame)
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    codes = [pd.factorize(frame[name].to_numpy(), sort=True)[0] for name in names]
    order = np.lexsort(codes[::-1])
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for code in codes:
        ordered = code[order]
        change[1:] |= ordered[1:] != ordered[:-1]
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(change) - 1
    return group, order[change]


def in_key_order(keys: pd.DataFrame, at: np.ndarray, run_key: np.ndarray, run_first: np.ndarray,
                 run_last: np.ndarray) -> PickRates:
    """The rates with their keys merged and sorted: rows of equal keys summed, their runs of days united
    (:func:`coalesce_runs`)."""
    if not len(keys):
        return PickRates(keys.reset_index(drop=True), at, *(np.zeros(0, np.int64),) * 3)
    new, first = sorted_groups(keys, KEY)  # numbered in the sorted order of the keys
    merged = np.zeros((first.size,) + at.shape[1:], dtype=np.int64)
    np.add.at(merged, new, at)
    run_key, run_first, run_last = coalesce_runs(new[np.asarray(run_key, dtype=np.int64)], run_first, run_last)
    out = pd.DataFrame({k: keys[k].to_numpy(object)[first] for k in KEY})
    return PickRates(out, merged, run_key, run_first, run_last)


def merge_rates(parts: list[PickRates]) -> PickRates:
    """Several parts' rates as one (any order, any grouping: the same result)."""
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [len(p.keys) for p in parts])
    keys = pd.concat([p.keys for p in parts], ignore_index=True)
    at = np.concatenate([p.at for p in parts]) if parts else np.zeros((0, 2, 0), np.int64)
    run_key = np.concatenate([p.run_key + offsets[i] for i, p in enumerate(parts)])
    run_first = np.concatenate([p.run_first for p in parts])
    run_last = np.concatenate([p.run_last for p in parts])
    return in_key_order(keys, at, run_key, run_first, run_last)
