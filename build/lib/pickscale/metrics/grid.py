"""Residuals on a time grid (SPEC §5, "Residuals on a grid"): exact on integer nanoseconds.

A picker that steps its windows by a fixed time (GPD: 0.1 s) puts its picks on a grid whose origin is
each window's start; a reference placed at a fixed offset into those windows (labels at exactly 30.00 s)
sits at one point of that grid in every window.  Then every residual (pick − arrival) is congruent to one
value modulo the step, whatever the window: the residuals lie on a lattice.  A picker's own timing (or a
reference read off the waveform) spreads the residuals over the step instead.

This module is imported by workers: numpy only.

Examples
--------
>>> grid = residual_grid([0, 100_000_000, -100_000_000, 200_000_000] * 5 + [3_000_000])
>>> grid["step_ns"], grid["offset_ns"], grid["count"], grid["n"], grid["values"]
(100000000, 0, 20, 21, 4)
>>> on_grid(grid)
True
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["GRID_STEPS_NS", "GRID_SHARE", "GRID_MIN_VALUES", "GRID_MIN_PAIRS", "GRID_NAMES", "residual_grid",
           "on_grid", "OFFSET_BINS", "to_ms", "offset_bin", "offset_grid", "fixed_offset", "at_fixed_offset"]

#: The steps searched, coarsest first (integer ns): 0.5, 0.25, 0.2, 0.1 and 0.05 s.  Not finer: every
#: residual of picks and labels on the samples of 100 Hz data is a multiple of 0.01 s, and of 50 Hz data
#: of 0.02 s -- that is the sampling, not a grid of the picker or the labels.
GRID_STEPS_NS: tuple[int, ...] = (500_000_000, 250_000_000, 200_000_000, 100_000_000, 50_000_000)
#: On a grid: at least this share of the pairs congruent to one value modulo the step …
GRID_SHARE = 0.9
#: … taking at least this many distinct residuals (one or two are §5's concentration, not a grid) …
GRID_MIN_VALUES = 3
#: … among at least this many pairs (as for concentrated residuals).
GRID_MIN_PAIRS = 20
#: The keys of :func:`residual_grid`.
GRID_NAMES: tuple[str, ...] = ("n", "step_ns", "offset_ns", "count", "values")


def residual_grid(residual_ns: ArrayLike) -> dict[str, int]:
    """The coarsest step of :data:`GRID_STEPS_NS` on which the residuals lie (SPEC §5, "Residuals on a grid").

    For each step ``s``, coarsest first: ``c`` = the most common residue ``residual mod s`` (in
    ``[0, s)``; the smallest of equally common ones), ``count`` = how many residuals have it and
    ``values`` = how many distinct residuals those are.  The first step with ``count >= GRID_SHARE · n``
    and ``values >= GRID_MIN_VALUES`` is returned (``offset_ns``: ``c`` written in ``(−s/2, s/2]``);
    ``step_ns`` is 0 when no step qualifies (then the other keys describe nothing).

    Parameters
    ----------
    residual_ns : array_like of int
        The residuals, integer nanoseconds, in any order.

    Returns
    -------
    dict
        ``n`` (pairs), ``step_ns``, ``offset_ns``, ``count`` and ``values``, all ints.

    Examples
    --------
    >>> residual_grid([0, 0, 50_000_000, 100_000_000])["step_ns"]  # 3 of 4 on 0.1 s; all 4 (3 values) on 0.05 s
    50000000
    >>> residual_grid([1, 2, 3])["step_ns"]
    0
    """
    x = np.asarray(residual_ns, dtype=np.int64)
    n = int(x.size)
    none = {"n": n, "step_ns": 0, "offset_ns": 0, "count": 0, "values": 0}
    if not n:
        return none
    # Every step is a multiple of the finest: residuals congruent modulo a step are congruent modulo the
    # finest too, so one count there rules out every step for the residuals of most pickers.
    finest = min(GRID_STEPS_NS)
    if int(np.unique(np.mod(x, finest), return_counts=True)[1].max()) < GRID_SHARE * n:
        return none
    for step in GRID_STEPS_NS:
        residues = np.mod(x, step)
        values, counts = np.unique(residues, return_counts=True)
        top = int(np.argmax(counts))  # the first of the largest counts: the smallest residue
        count = int(counts[top])
        if count < GRID_SHARE * n:
            continue
        distinct = int(np.unique(x[residues == values[top]]).size)
        if distinct < GRID_MIN_VALUES:
            continue
        c = int(values[top])
        return {"n": n, "step_ns": step, "offset_ns": c - step if 2 * c > step else c, "count": count,
                "values": distinct}
    return none


def on_grid(grid: dict[str, int]) -> bool:
    """Whether residuals with this :func:`residual_grid` lie on a grid (SPEC §5): a step, and ``n >= 20``.

    Examples
    --------
    >>> on_grid({"n": 99, "step_ns": 100_000_000, "offset_ns": 0, "count": 99, "values": 5})
    True
    >>> on_grid({"n": 12, "step_ns": 100_000_000, "offset_ns": 0, "count": 12, "values": 5})  # too few pairs
    False
    """
    return int(grid["step_ns"]) > 0 and int(grid["n"]) >= GRID_MIN_PAIRS


#: Offsets into windows are counted per millisecond of the second (SPEC §5, "... with windows"): 1,000 bins,
#: offset modulo 1 s rounded to the nearest ms.  Every step of :data:`GRID_STEPS_NS` divides 1 s, so the
#: residue modulo a step is read off these bins, and counts of bins add up over parts and stations exactly.
OFFSET_BINS = 1000
_MS = 1_000_000


def to_ms(offset_ns: ArrayLike) -> np.ndarray:
    """Offsets rounded to the nearest millisecond (half up), still in ns.

    Examples
    --------
    >>> to_ms([100_499_999, 100_500_000, -400_000]).tolist()
    [100000000, 101000000, 0]
    """
    return np.floor_divide(np.asarray(offset_ns, dtype=np.int64) + _MS // 2, _MS) * _MS


def offset_bin(offset_ns: ArrayLike) -> np.ndarray:
    """The bin of each offset: modulo 1 s, rounded to the nearest millisecond (half up), in 0 … 999.

    Rounding makes a time written to the microsecond (``…50.880000``) or off by a nanosecond of float
    conversion fall in the bin of the millisecond it means.

    Examples
    --------
    >>> offset_bin([0, 30_000_000_000, 100_000_400, 100_499_999, 100_500_000, 999_600_000, -1]).tolist()
    [0, 0, 100, 100, 101, 0, 0]
    """
    return (to_ms(offset_ns) // _MS % OFFSET_BINS).astype(np.int64)


def offset_grid(counts: ArrayLike) -> dict[str, int]:
    """:func:`residual_grid`'s rule on offsets counted per :func:`offset_bin` (SPEC §5, with windows).

    For each step ``s`` of :data:`GRID_STEPS_NS`, coarsest first, the bins are folded modulo ``s``: ``count``
    = the largest folded count (the smallest residue of equally large ones), ``values`` = the nonzero bins
    folded into it.  The first step with ``count >= GRID_SHARE · n`` and ``values >= GRID_MIN_VALUES`` is
    returned, as :func:`residual_grid` returns it (``offset_ns`` in ``(−s/2, s/2]``, multiples of 1 ms).

    Parameters
    ----------
    counts : array_like of int, shape (1000,)
        Offsets per bin.

    Returns
    -------
    dict
        ``n``, ``step_ns``, ``offset_ns``, ``count`` and ``values`` (:data:`GRID_NAMES`), all ints.

    Examples
    --------
    >>> h = np.zeros(OFFSET_BINS, int)
    >>> h[[0, 100, 200, 300]] = 6; h[7] = 1  # 24 of 25 offsets on 0.1 s steps, 4 distinct
    >>> g = offset_grid(h); g["step_ns"], g["count"], g["values"], on_grid(g)
    (100000000, 24, 4, True)
    """
    h = np.asarray(counts, dtype=np.int64).reshape(OFFSET_BINS)
    n = int(h.sum())
    none = {"n": n, "step_ns": 0, "offset_ns": 0, "count": 0, "values": 0}
    for step in GRID_STEPS_NS:
        s = step // _MS
        folded = h.reshape(OFFSET_BINS // s, s)  # row j, column r: bin j·s + r
        per_residue = folded.sum(axis=0)
        top = int(np.argmax(per_residue))
        count = int(per_residue[top])
        distinct = int(np.count_nonzero(folded[:, top]))
        if n and count >= GRID_SHARE * n and distinct >= GRID_MIN_VALUES:
            c = top * _MS
            return {"n": n, "step_ns": step, "offset_ns": c - step if 2 * c > step else c, "count": count,
                    "values": distinct}
    return none


def fixed_offset(offset_ns: ArrayLike) -> dict[str, int]:
    """The most common offset into windows, to the millisecond (SPEC §5, with windows): ``n``, ``offset_ns``
    (the smallest of equally common ones, nearest ms) and ``count``.

    Examples
    --------
    >>> fixed_offset([30_000_000_000, 30_000_000_200, 29_999_999_900, 12_500_000_000])
    {'n': 4, 'offset_ns': 30000000000, 'count': 3}
    >>> fixed_offset([])
    {'n': 0, 'offset_ns': 0, 'count': 0}
    """
    x = np.asarray(offset_ns, dtype=np.int64)
    if not x.size:
        return {"n": 0, "offset_ns": 0, "count": 0}
    values, counts = np.unique(to_ms(x), return_counts=True)
    top = int(np.argmax(counts))
    return {"n": int(x.size), "offset_ns": int(values[top]), "count": int(counts[top])}


def at_fixed_offset(found: dict[str, int]) -> bool:
    """Whether arrivals with this :func:`fixed_offset` sit at a fixed offset into their windows: at least
    :data:`GRID_SHARE` of at least :data:`GRID_MIN_PAIRS` arrivals at one offset.

    Examples
    --------
    >>> at_fixed_offset({"n": 25, "offset_ns": 30_000_000_000, "count": 23})
    True
    >>> at_fixed_offset({"n": 5, "offset_ns": 0, "count": 5})  # too few arrivals
    False
    """
    return int(found["n"]) >= GRID_MIN_PAIRS and int(found["count"]) >= GRID_SHARE * int(found["n"])
