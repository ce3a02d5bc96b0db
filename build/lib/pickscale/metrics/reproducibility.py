"""SPEC §18: one-to-one matching of two pick sets of one model, and what differs per group.

Two runs of the same model on the same data (production against a rerun) should emit the same picks.
The matching pairs a pick of set A with a pick of set B of the same group (one dataset, model, station,
phase and UTC day) when their times are within ``tol``, **closest pairs first**: every candidate pair is
ranked by

1. ``|t_a − t_b|`` ascending (integer nanoseconds),
2. the earlier of the two times ascending,
3. ``|c_a − c_b|`` ascending (float64),
4. the smaller of the two confidences ascending, then the larger ascending,

and the pairs are taken in that order, each when neither of its picks is taken yet.  Pairs equal in every
key join picks equal in time and confidence (interchangeable): the counts and maxima do not depend on which
is taken, so the result does not depend on row order, and swapping A and B only swaps ``only_a`` and
``only_b`` (every key is symmetric in the two sides).

The walk is run in vectorised rounds: a pair ranked first among the live pairs at both of its picks is
taken by the walk (every pair that shares a pick with it comes later), so each round takes every such pair
at once and drops the pairs that touch a taken pick.  Pairs that share no pick with another pair, nearly
all of them when the two runs agree, are taken in the first round.

Numpy only; every time comparison is on int64 nanoseconds, ``tol`` inclusive.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["candidate_pairs", "match", "compare_counts", "COUNT_NAMES"]

#: The columns of :func:`compare_counts`, in the order of the comparison table (SPEC §18).
COUNT_NAMES = ("n_a", "n_b", "matched", "only_a", "only_b", "max_dconf", "max_dt")

_MAX = np.iinfo(np.int64).max


def _groups(group: ArrayLike | None, n: int) -> NDArray[np.int64]:
    if group is None:
        return np.zeros(n, dtype=np.int64)
    out = np.asarray(group, dtype=np.int64)
    if out.shape != (n,):
        raise ValueError(f"a group code per pick is needed: {out.shape} codes for {n} picks")
    return out


def candidate_pairs(time_a: ArrayLike, time_b: ArrayLike, *, tol_ns: int, group_a: ArrayLike | None = None,
                    group_b: ArrayLike | None = None) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Every pair ``(i, j)`` of a pick of A and a pick of B in the same group with ``|t_a − t_b| <= tol_ns``.

    Parameters
    ----------
    time_a, time_b
        Pick times in int64 nanoseconds.
    tol_ns
        The tolerance in nanoseconds (inclusive, ``>= 0``).
    group_a, group_b
        Integer group codes per pick (picks of different groups never pair); ``None``: one group.

    Returns
    -------
    ia, ib : ndarray of int64
        The indices into A and B of each candidate pair, sorted by ``ia`` then ``ib``.

    Examples
    --------
    >>> ia, ib = candidate_pairs(np.array([0, 100]), np.array([5, 95, 300]), tol_ns=10)
    >>> ia.tolist(), ib.tolist()
    ([0, 1], [0, 1])
    >>> ia, ib = candidate_pairs(np.array([0, 0]), np.array([0]), tol_ns=0, group_a=[0, 1], group_b=[1])
    >>> ia.tolist(), ib.tolist()
    ([1], [0])
    """
    ta, tb = np.asarray(time_a, dtype=np.int64), np.asarray(time_b, dtype=np.int64)
    ga, gb = _groups(group_a, ta.size), _groups(group_b, tb.size)
    tol = int(tol_ns)
    # One sweep over both sets merged, sorted by (group, time): the picks within tol of a pick in its group are
    # the ones that follow it closely.  Offsets k = 1, 2, … are compared until no pair k apart is within reach:
    # one k apart too far (or in another group) makes every pair further apart too far, so the loop runs as
    # many times as the most picks within tol of one another, not once per pick.
    side = np.concatenate([np.zeros(ta.size, dtype=np.int8), np.ones(tb.size, dtype=np.int8)])
    index = np.concatenate([np.arange(ta.size, dtype=np.int64), np.arange(tb.size, dtype=np.int64)])
    t, g = np.concatenate([ta, tb]), np.concatenate([ga, gb])
    order = np.lexsort((t, g))
    t, g, side, index = t[order], g[order], side[order], index[order]
    # t + tol saturates at the int64 maximum instead of wrapping: no difference of far-apart times is formed.
    reach = np.minimum(t, _MAX - tol) + tol
    found_a, found_b = [], []
    for k in range(1, t.size):
        near = (g[k:] == g[:-k]) & (t[k:] <= reach[:-k])
        if not near.any():
            break
        first = np.flatnonzero(near & (side[k:] != side[:-k]))
        second = first + k
        a_first = side[first] == 0
        found_a.append(np.where(a_first, index[first], index[second]))
        found_b.append(np.where(a_first, index[second], index[first]))
    if not found_a:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ia, ib = np.concatenate(found_a), np.concatenate(found_b)
    by_a = np.lexsort((ib, ia))
    return ia[by_a], ib[by_a]


def match(time_a: ArrayLike, conf_a: ArrayLike, time_b: ArrayLike, conf_b: ArrayLike, *, tol_ns: int,
          group_a: ArrayLike | None = None, group_b: ArrayLike | None = None
          ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The one-to-one matching of SPEC §18: closest pairs first, within a group.

    Parameters
    ----------
    time_a, conf_a, time_b, conf_b
        Pick times (int64 ns) and confidences (float64) of the two sets.
    tol_ns
        The tolerance in nanoseconds (inclusive, ``>= 0``).
    group_a, group_b
        Integer group codes per pick (one dataset, model, station, phase and day each); ``None``: one group.

    Returns
    -------
    ia, ib : ndarray of int64
        The indices into A and B of the matched pairs, sorted by ``ia``.

    Examples
    --------
    A pick moved by 30 ms is still matched; one moved by 0.3 s is not (tol 0.1 s):

    >>> s = 10**9
    >>> ia, ib = match([1 * s, 5 * s], [0.9, 0.8], [1 * s + 30_000_000, 5 * s + 300_000_000], [0.9, 0.8],
    ...                tol_ns=s // 10)
    >>> ia.tolist(), ib.tolist()
    ([0], [0])

    Closest first: B's pick at 0.10 s goes to A's pick at 0.08 s, not to the more distant one at 0.00 s
    (then A's 0.00 s finds nothing free), although both are within 0.1 s:

    >>> ms = 10**6
    >>> match([0, 80 * ms], [0.5, 0.5], [100 * ms], [0.5], tol_ns=100 * ms)[0].tolist()
    [1]
    """
    ta, tb = np.asarray(time_a, dtype=np.int64), np.asarray(time_b, dtype=np.int64)
    ca, cb = np.asarray(conf_a, dtype=np.float64), np.asarray(conf_b, dtype=np.float64)
    if ca.shape != ta.shape or cb.shape != tb.shape:
        raise ValueError("a confidence per pick is needed")
    ia, ib = candidate_pairs(ta, tb, tol_ns=tol_ns, group_a=group_a, group_b=group_b)
    if ia.size == 0:
        return ia, ib
    # Within a pair the difference is at most tol: no overflow.  |t_a - t_b| and the earlier time are the same
    # whichever side is called A, and so are the confidence keys: the ranking is symmetric in the two sets.
    dt = np.abs(ta[ia] - tb[ib])
    earlier = np.minimum(ta[ia], tb[ib])
    dconf = np.abs(ca[ia] - cb[ib])
    low, high = np.minimum(ca[ia], cb[ib]), np.maximum(ca[ia], cb[ib])
    order = np.lexsort((high, low, dconf, earlier, dt))  # the last key is the first one sorted on
    rank = np.empty(ia.size, dtype=np.int64)
    rank[order] = np.arange(ia.size, dtype=np.int64)

    taken = np.zeros(ia.size, dtype=bool)
    live = np.ones(ia.size, dtype=bool)
    used_a, used_b = np.zeros(ta.size, dtype=bool), np.zeros(tb.size, dtype=bool)
    while live.any():
        best_a = np.full(ta.size, _MAX, dtype=np.int64)
        best_b = np.full(tb.size, _MAX, dtype=np.int64)
        np.minimum.at(best_a, ia[live], rank[live])
        np.minimum.at(best_b, ib[live], rank[live])
        # First among the live pairs at both of its picks: the walk in rank order takes it (every pair sharing a
        # pick with it comes later, and every earlier pair it could have lost to is gone).
        now = live & (best_a[ia] == rank) & (best_b[ib] == rank)
        taken |= now
        used_a[ia[now]] = True
        used_b[ib[now]] = True
        live &= ~(used_a[ia] | used_b[ib])
    return ia[taken], ib[taken]


def compare_counts(n_groups: int, group_a: ArrayLike, time_a: ArrayLike, conf_a: ArrayLike, group_b: ArrayLike,
                   time_b: ArrayLike, conf_b: ArrayLike, *, tol_ns: int) -> dict[str, NDArray]:
    """Per group, the columns of the comparison table (SPEC §18), from one matching of the two sets.

    Parameters
    ----------
    n_groups
        The number of groups; codes are ``0 … n_groups − 1``.
    group_a, time_a, conf_a, group_b, time_b, conf_b
        Group code, time (int64 ns) and confidence of each pick of A and of B.
    tol_ns
        The tolerance in nanoseconds (inclusive, ``>= 0``).

    Returns
    -------
    dict of str to ndarray
        :data:`COUNT_NAMES`: ``n_a``, ``n_b``, ``matched``, ``only_a = n_a − matched``,
        ``only_b = n_b − matched`` (int64); ``max_dconf``, the largest ``|c_a − c_b|`` of a matched pair, and
        ``max_dt``, the largest ``|t_a − t_b|`` of a matched pair in seconds (the integer nanoseconds converted
        once; float64, NaN in a group without a matched pair).

    Examples
    --------
    Group 0: the same two picks on both sides, one confidence changed by 0.25; group 1: A's pick moved
    0.5 s in B (beyond tol 0.1 s), one pick only in A and one only in B:

    >>> s = 10**9
    >>> out = compare_counts(2, [0, 0, 1], [1 * s, 2 * s, 3 * s], [0.5, 0.75, 0.5],
    ...                      [0, 0, 1], [1 * s, 2 * s, 3 * s + s // 2], [0.5, 0.5, 0.5], tol_ns=s // 10)
    >>> {k: v.tolist() for k, v in out.items()}  # doctest: +NORMALIZE_WHITESPACE
    {'n_a': [2, 1], 'n_b': [2, 1], 'matched': [2, 0], 'only_a': [0, 1], 'only_b': [0, 1],
     'max_dconf': [0.25, nan], 'max_dt': [0.0, nan]}
    """
    ga, gb = np.asarray(group_a, dtype=np.int64), np.asarray(group_b, dtype=np.int64)
    ta, tb = np.asarray(time_a, dtype=np.int64), np.asarray(time_b, dtype=np.int64)
    ca, cb = np.asarray(conf_a, dtype=np.float64), np.asarray(conf_b, dtype=np.float64)
    ia, ib = match(ta, ca, tb, cb, tol_ns=tol_ns, group_a=ga, group_b=gb)
    n_a = np.bincount(ga, minlength=n_groups).astype(np.int64)
    n_b = np.bincount(gb, minlength=n_groups).astype(np.int64)
    g = ga[ia]  # a matched pair's group: both of its picks are in it
    matched = np.bincount(g, minlength=n_groups).astype(np.int64)
    max_dconf = np.full(n_groups, -np.inf)
    np.maximum.at(max_dconf, g, np.abs(ca[ia] - cb[ib]))
    max_dt_ns = np.full(n_groups, -1, dtype=np.int64)
    np.maximum.at(max_dt_ns, g, np.abs(ta[ia] - tb[ib]))
    none = matched == 0
    max_dconf[none] = np.nan
    max_dt = max_dt_ns.astype(np.float64) / 1e9
    max_dt[none] = np.nan
    return {"n_a": n_a, "n_b": n_b, "matched": matched, "only_a": n_a - matched, "only_b": n_b - matched,
            "max_dconf": max_dconf, "max_dt": max_dt}
