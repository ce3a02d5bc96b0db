"""Time blocks: cutting a busy station into work units without changing any number.

Under SPEC §3 a pick's match can depend on more confident picks nearby, and
those on others, in chains that run through arrivals.  Every interaction —
both matchings, duplicates, swaps — is between a pick and an arrival at most
``residual_tol`` apart (``residual_tol >= tol``).  So a cut at time ``c`` with
no arrival of any phase within ``residual_tol`` of it splits the station into
two halves that never interact: a pick before ``c`` can only reach arrivals
before ``c``, and likewise after.  Each block owns the picks and arrivals with
``cut_k <= time < cut_{k+1}``; its counts add up to the whole station's
exactly (the two float sums are exact too, see :mod:`pickscale.kernel.exact`).

Where a station has no quiet gap (a long burst with arrivals closer than
``2·residual_tol``), it is not cut there: correctness first, the block is
simply larger.
"""

from __future__ import annotations

import numpy as np

__all__ = ["candidate_cuts", "cut_points", "block_of"]

_I64 = np.iinfo(np.int64)


def candidate_cuts(arrivals: np.ndarray, residual_tol_ns: int) -> np.ndarray:
    """Every admissible cut: a time with no arrival within ``residual_tol`` (inclusive).

    One candidate per quiet gap — ``a_i + residual_tol + 1`` where the next
    arrival is at least ``2·residual_tol + 2`` later — plus one before the
    first arrival and one after the last.

    Examples
    --------
    >>> candidate_cuts(np.array([100, 105, 200]), 10).tolist()
    [89, 116, 211]
    """
    a = np.unique(np.asarray(arrivals, dtype=np.int64))
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    rtol = int(residual_tol_ns)
    # Gaps as uint64: two arrivals can be up to 2**64 - 2 ns apart (1677 … 2262).
    gaps = np.flatnonzero(np.diff(a).view(np.uint64) >= 2 * rtol + 2)
    inner = a[gaps] + rtol + 1  # < the next arrival: no wrap
    # The outer cuts only where int64 holds them (no time lies beyond the limits anyway).
    first = [int(a[0]) - rtol - 1] if int(a[0]) - rtol - 1 >= _I64.min else []
    last = [int(a[-1]) + rtol + 1] if int(a[-1]) + rtol + 1 <= _I64.max else []
    return np.concatenate([np.array(first, dtype=np.int64), inner, np.array(last, dtype=np.int64)])


def cut_points(arrivals: np.ndarray, *, residual_tol_ns: int, span: tuple[int, int], n_blocks: int) -> np.ndarray:
    """Up to ``n_blocks − 1`` cuts, at the admissible times nearest to an even split of ``span``.

    ``span`` is the station's (first pick, last pick).  Returns sorted, unique
    cut times strictly inside the span.

    Examples
    --------
    >>> cut_points(np.array([100, 105, 200, 300]), residual_tol_ns=10, span=(0, 400), n_blocks=4).tolist()
    [89, 211, 311]
    """
    if n_blocks <= 1:
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(span[0]), int(span[1])
    cand = candidate_cuts(arrivals, residual_tol_ns)
    cand = cand[(cand > lo) & (cand <= hi)]
    if cand.size == 0:
        return cand
    # Integer arithmetic: no float rounding in where a cut falls.
    wanted = np.array([lo + (hi - lo) * k // n_blocks for k in range(1, n_blocks)], dtype=np.int64)
    right = np.clip(np.searchsorted(cand, wanted), 0, cand.size - 1)
    left = np.clip(right - 1, 0, cand.size - 1)
    # Distances in Python integers (a span can exceed int64): one per wanted cut.
    nearest = [int(c_l) if abs(int(c_l) - w) <= abs(int(c_r) - w) else int(c_r)
               for c_l, c_r, w in zip(cand[left], cand[right], wanted.tolist())]
    return np.unique(np.array(nearest, dtype=np.int64))


def block_of(times: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Block index of each time: the number of cuts at or before it.

    Examples
    --------
    >>> block_of(np.array([0, 89, 90, 500]), np.array([89, 211])).tolist()
    [0, 1, 1, 2]
    """
    return np.searchsorted(np.asarray(cuts, dtype=np.int64), np.asarray(times, dtype=np.int64), side="right")
