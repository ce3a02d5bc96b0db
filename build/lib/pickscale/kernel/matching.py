"""SPEC §3 matching: confidence-ordered greedy, in vectorised rounds.

The walk of SPEC §3 takes picks one at a time in confidence order (conf
descending, then time ascending); each takes the nearest arrival within
``tol`` that no earlier pick has taken, the earlier arrival on equal distance.

A pick's outcome depends only on which arrivals in its window ``[q - tol,
q + tol]`` the more confident picks took.  So a pick can be settled as soon as
no *unsettled*, more confident pick can reach a *free* arrival of its window.
Each round settles every such pick at once:

1. for each free arrival, its *best claimant* is the most confident unsettled
   pick within ``tol`` (a range minimum of the priority rank over the
   time-sorted picks);
2. a pick whose window holds no free arrival is unmatched (free arrivals only
   ever disappear, so this is final);
3. a pick that is the best claimant of every free arrival of its window is
   settled: it takes its nearest free arrival.  Two settled picks can never
   want the same arrival (that arrival's best claimant is one of them, so the
   other is not settled);
4. taken arrivals and settled picks leave; repeat.

The most confident unsettled pick always settles, so the rounds end.  With
confidences that are not ordered along the time axis (real pickers), the
number of rounds grows like log(n) (as in Luby's parallel independent-set
algorithm), and each round works on the shrinking set of unsettled picks.

Every comparison is on int64 nanoseconds; ``tol`` is inclusive.  Times may lie
anywhere in int64 (pandas' whole 1677–2262 range): window edges ``t ± tol``
saturate at the int64 limits instead of wrapping, and the only differences
formed are between a pick and an arrival of its window (at most ``tol`` apart).
"""

from __future__ import annotations

import numpy as np

__all__ = ["greedy_match", "match_sorted", "priority_rank", "range_min", "range_max", "windows"]

_BIG = np.iinfo(np.int64).max
_SMALL = np.iinfo(np.int64).min


def priority_rank(pick_times: np.ndarray, pick_conf: np.ndarray) -> np.ndarray:
    """Position of each pick in SPEC §3's order: conf descending, then time ascending.

    Picks equal in both are interchangeable; they get consecutive ranks in input
    order, which changes nothing in any count.

    Examples
    --------
    >>> priority_rank(np.array([5, 1, 3]), np.array([0.5, 0.9, 0.5])).tolist()
    [2, 0, 1]
    """
    order = np.lexsort((pick_times, -np.asarray(pick_conf, dtype=np.float64)))
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size, dtype=np.int64)
    return rank


def windows(sorted_times: np.ndarray, centres: np.ndarray, half_width: int) -> tuple[np.ndarray, np.ndarray]:
    """Index range ``[lo, hi)`` of ``sorted_times`` within ``half_width`` of each centre (inclusive).

    ``half_width`` >= 0.  The edges ``centre ± half_width`` saturate at the
    int64 limits (no time lies beyond them), so centres anywhere in int64 are
    fine.

    Examples
    --------
    >>> lo, hi = windows(np.array([0, 5, 10]), np.array([5]), 5)
    >>> lo.tolist(), hi.tolist()
    ([0], [3])
    >>> big = np.iinfo(np.int64).max
    >>> windows(np.array([-big, big]), np.array([big - 1]), 5)[0].tolist()
    [1]
    """
    half_width = int(half_width)
    centres = np.asarray(centres, dtype=np.int64)
    if half_width and centres.size and (centres.min() < _SMALL + half_width or centres.max() > _BIG - half_width):
        lo_edge = np.maximum(centres, _SMALL + half_width) - half_width
        hi_edge = np.minimum(centres, _BIG - half_width) + half_width
    else:
        lo_edge, hi_edge = centres - half_width, centres + half_width
    lo = np.searchsorted(sorted_times, lo_edge, side="left")
    hi = np.searchsorted(sorted_times, hi_edge, side="right")
    return lo, hi


def _sparse_table(values: np.ndarray, max_len: int, op) -> list[np.ndarray]:
    # table[k][i] = op over values[i : i + 2**k]
    table = [values]
    k = 1
    while (1 << k) <= max_len:
        prev = table[-1]
        half = 1 << (k - 1)
        table.append(op(prev[:-half], prev[half:]))
        k += 1
    return table


def _range_reduce(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, op, empty) -> np.ndarray:
    out = np.full(lo.shape, empty, dtype=values.dtype)
    length = hi - lo
    nonempty = length > 0
    if not nonempty.any():
        return out
    lo_n, hi_n, len_n = lo[nonempty], hi[nonempty], length[nonempty]
    table = _sparse_table(values, int(len_n.max()), op)
    k = np.floor(np.log2(len_n)).astype(np.int64)
    # log2 in float can be off by one at exact powers of two; correct it exactly.
    k -= (np.left_shift(1, k) > len_n)
    k += (np.left_shift(1, k + 1) <= len_n)
    res = np.empty(len_n.size, dtype=values.dtype)
    for level in np.unique(k):
        sel = k == level
        row = table[level]
        a = row[lo_n[sel]]
        b = row[hi_n[sel] - (1 << int(level))]
        res[sel] = op(a, b)
    out[nonempty] = res
    return out


def range_min(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, *, empty=_BIG) -> np.ndarray:
    """Minimum of ``values[lo[i]:hi[i]]`` for every i (``empty`` where the range is empty).

    Examples
    --------
    >>> range_min(np.array([4, 2, 7, 1]), np.array([0, 2, 3]), np.array([3, 3, 3])).tolist()
    [2, 7, 9223372036854775807]
    """
    return _range_reduce(values, lo, hi, np.minimum, empty)


def range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, *, empty=-np.inf) -> np.ndarray:
    """Maximum of ``values[lo[i]:hi[i]]`` for every i (``empty`` where the range is empty).

    Examples
    --------
    >>> range_max(np.array([0.1, 0.5, 0.3]), np.array([0, 2]), np.array([2, 2])).tolist()
    [0.5, -inf]
    """
    return _range_reduce(values, lo, hi, np.maximum, empty)


def greedy_match(
    arrivals: np.ndarray,
    pick_times: np.ndarray,
    pick_conf: np.ndarray,
    *,
    tol_ns: int,
    rank: np.ndarray | None = None,
) -> np.ndarray:
    """Match picks to arrivals by SPEC §3's confidence-ordered greedy walk.

    Parameters
    ----------
    arrivals
        Arrival times, int64 ns, sorted ascending (repeats allowed).
    pick_times, pick_conf
        Pick times (int64 ns) and confidences (float64), in any order.
    tol_ns
        Tolerance in ns; a pick and an arrival can pair when
        ``abs(pick - arrival) <= tol_ns``.
    rank
        Optional precomputed :func:`priority_rank` of the picks (any strict
        order consistent with SPEC §3's).

    Returns
    -------
    numpy.ndarray
        int64, one entry per pick in input order: the index into ``arrivals``
        of the arrival the pick takes, or -1 when it takes none.

    Examples
    --------
    SPEC §3's counter-example: the confident pick at 10.25 s takes 10.0 s (the
    nearer arrival); the pick at 9.6 s then finds nothing free within 0.5 s.

    >>> s = 1_000_000_000
    >>> greedy_match(np.array([10 * s, 10_700_000_000]),
    ...              np.array([10_250_000_000, 9_600_000_000]),
    ...              np.array([0.9, 0.5]), tol_ns=s // 2).tolist()
    [0, -1]
    """
    arrivals = np.asarray(arrivals, dtype=np.int64)
    pick_times = np.asarray(pick_times, dtype=np.int64)
    out = np.full(pick_times.size, -1, dtype=np.int64)
    if pick_times.size == 0 or arrivals.size == 0:
        return out
    if rank is None:
        rank = priority_rank(pick_times, pick_conf)
    by_time = np.argsort(pick_times)
    out[by_time] = match_sorted(arrivals, pick_times[by_time], np.asarray(rank)[by_time], tol_ns=tol_ns)
    return out


def match_sorted(arrivals: np.ndarray, pick_times: np.ndarray, pick_rank: np.ndarray, *, tol_ns: int) -> np.ndarray:
    """:func:`greedy_match` on picks already sorted by time, with their priority ranks.

    The order among picks at the same instant does not matter: only the ranks
    decide who goes first.  Returns the arrival index per pick (this order), or -1.
    """
    out = np.full(pick_times.size, -1, dtype=np.int64)
    tol_ns = int(tol_ns)
    p_idx = np.arange(pick_times.size, dtype=np.int64)
    p_t, p_rank = pick_times, pick_rank
    a_idx = np.arange(arrivals.size, dtype=np.int64)
    a_t = arrivals
    while p_idx.size and a_t.size:
        lo, hi = windows(a_t, p_t, tol_ns)
        live = hi > lo
        if not live.all():
            # No free arrival within reach: unmatched for good.
            p_idx, p_t, p_rank, lo, hi = p_idx[live], p_t[live], p_rank[live], lo[live], hi[live]
            if not p_idx.size:
                break
        clo, chi = windows(p_t, a_t, tol_ns)
        best = range_min(p_rank, clo, chi)
        settled = range_min(best, lo, hi) == p_rank
        taken = _nearest(a_t, p_t[settled], lo[settled], hi[settled])
        out[p_idx[settled]] = a_idx[taken]
        keep_a = np.ones(a_t.size, dtype=bool)
        keep_a[taken] = False
        a_t, a_idx = a_t[keep_a], a_idx[keep_a]
        keep_p = ~settled
        p_idx, p_t, p_rank = p_idx[keep_p], p_t[keep_p], p_rank[keep_p]
    return out


def _nearest(a_t: np.ndarray, q: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Index of the nearest of ``a_t[lo:hi]`` to each ``q`` (non-empty ranges).

    On equal distance the earlier arrival wins; among arrivals at the same
    instant, the lowest index.
    """
    right = np.searchsorted(a_t, q, side="left")  # first arrival >= q
    left = right - 1
    has_left = left >= lo
    has_right = right < hi
    # A missing side borrows the other (the range is non-empty): every difference
    # below is between q and an arrival of its window, never two arbitrary times.
    left_c = np.where(has_left, left, right)
    right_c = np.where(has_right, right, left)
    d_left = np.where(has_left, q - a_t[left_c], _BIG)
    d_right = np.where(has_right, a_t[right_c] - q, _BIG)
    take_left = has_left & (d_left <= d_right)
    # The left candidate is the last of its run of equal times; the walk takes the first.
    first_of_run = np.searchsorted(a_t, a_t[left_c], side="left")
    return np.where(take_left, first_of_run, right_c)
