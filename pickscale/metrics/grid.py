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
           "on_grid"]

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
