"""All (model, phase) groups of a station matched in one call, on one int64 axis.

Each group's times are shifted into a disjoint stretch of the int64 axis
(group ``g`` at ``g * stride``), far enough apart that no pair can form across
groups.  The stride is computed in Python integers, and when even one model's
two groups do not fit below 2**62 (times spread over centuries: a stray
placeholder pick in 1800, rows in 1677 and 2262) the groups are matched one by
one on their raw times instead, with window edges saturating at the int64
limits (:func:`pickscale.kernel.matching.windows`); no key, sentinel or
difference of two arbitrary times can wrap.
"""

from __future__ import annotations

import numpy as np

from .matching import match_sorted, range_max, windows

__all__ = ["N_PHASES", "match_detections", "match_groups"]

#: Phases per model: group ``g`` is (model ``g // 2``, phase ``g % 2``).
N_PHASES = 2
# Keep every shifted key below 2**62: far from int64 overflow in `key ± tol`.
_KEY_LIMIT = 1 << 62


def match_groups(r_group, r_time, p_group, p_time, p_conf, *, n_groups, tol, rtol):
    """Both matchings, the duplicate test and the other-phase reach, for all groups.

    Picks are in canonical order, so within a group the index is the priority
    rank.  Groups are shifted apart on the time axis in batches small enough
    that no shifted key overflows; with ordinary spans one batch holds every
    group.
    """
    # Arrival indices (only ever used as indices): int32 while they fit, 4 bytes a pick each.
    index_dtype = np.int32 if r_time.size < np.iinfo(np.int32).max else np.int64
    det = np.full(p_time.size, -1, dtype=index_dtype)
    res = np.full(p_time.size, -1, dtype=index_dtype)
    near = np.zeros(p_time.size, dtype=bool)
    other_conf = np.full(r_time.size, -np.inf)
    if p_time.size == 0 or r_time.size == 0:
        return det, res, near, other_conf
    tol, rtol = int(tol), int(rtol)
    # Python integers: the span of a station can reach 2**64 - 2 ns (1677 … 2262).
    t0 = int(min(p_time.min(), r_time.min()))
    stride = (int(max(p_time.max(), r_time.max())) - t0) + 2 * rtol + 1
    per_batch = min(n_groups, (_KEY_LIMIT // stride) // 2 * 2)  # whole (P, S) pairs
    if per_batch < 2:
        _match_apart(r_group, r_time, p_group, p_time, p_conf, n_groups, tol, rtol, det, res, near, other_conf)
        return det, res, near, other_conf
    for first, rm, r_key, key, pos in _batches(r_group, r_time, p_group, p_time, n_groups, per_batch, stride, t0):
        _match_batch(r_key, rm, key, pos, tol, rtol, det, res, near)

        # The other phase of the same model: group g ^ 1 (phase is the low bit).
        other_key = ((r_group[rm] ^ 1) - first) * stride + (r_time[rm] - t0)
        lo, hi = windows(key, other_key, tol)
        other_conf[rm] = range_max(p_conf[pos], lo, hi)
    return det, res, near, other_conf


def _batches(r_group, r_time, p_group, p_time, n_groups, per_batch, stride, t0):
    """Per batch of ``per_batch`` groups from ``first``: the arrivals ``rm`` and their keys, the picks' sorted
    keys and their indices ``pos`` (index = priority rank within a group), groups shifted ``stride`` apart."""
    for first in range(0, n_groups, per_batch):
        rm = np.flatnonzero((r_group >= first) & (r_group < first + per_batch))
        # Every key lies in [0, per_batch · stride) ⊂ [0, 2**62): `key ± tol` cannot wrap.
        r_key = (r_group[rm] - first) * stride + (r_time[rm] - t0)
        if per_batch >= n_groups:  # one batch (ordinary spans): every pick, no index array of them
            p_key = p_group * stride + (p_time - t0)
            pos = np.argsort(p_key)
            key = p_key[pos]
        else:
            pm = np.flatnonzero((p_group >= first) & (p_group < first + per_batch))
            p_key = (p_group[pm] - first) * stride + (p_time[pm] - t0)
            by_time = np.argsort(p_key)
            key, pos = p_key[by_time], pm[by_time]
            del pm, by_time
        del p_key  # time-sorted picks remain: key, and pos = index = rank
        yield first, rm, r_key, key, pos


def match_detections(r_group, r_time, p_group, p_time, *, n_groups, tols):
    """The detection matching of :func:`match_groups` alone, at each of ``tols``: one array per tolerance.

    Entry ``i`` equals ``match_groups(..., tol=tols[i], rtol=...)[0]`` for any ``rtol >= tols[i]`` (SPEC §13:
    only ``det`` is read there).  Neither the residual matching, nor the duplicate test, nor the other-phase
    reach is computed, and one candidate search serves every tolerance: the picks are keyed and sorted once,
    and those with an arrival within the largest tolerance are kept; SPEC §3's walk then runs per tolerance on
    that set (a pick without an arrival within ``tol`` takes part in nothing at ``tol``).  Picks are in
    canonical order (index = priority rank within a group), as for :func:`match_groups`.
    """
    tols = [int(t) for t in tols]
    index_dtype = np.int32 if r_time.size < np.iinfo(np.int32).max else np.int64
    dets = [np.full(p_time.size, -1, dtype=index_dtype) for _ in tols]
    if not tols or p_time.size == 0 or r_time.size == 0:
        return dets
    widest = max(tols)
    t0 = int(min(p_time.min(), r_time.min()))
    stride = (int(max(p_time.max(), r_time.max())) - t0) + 2 * widest + 1
    per_batch = min(n_groups, (_KEY_LIMIT // stride) // 2 * 2)
    if per_batch < 2:
        _detect_apart(r_group, r_time, p_group, p_time, n_groups, tols, dets)
        return dets
    for _, rm, r_key, key, pos in _batches(r_group, r_time, p_group, p_time, n_groups, per_batch, stride, t0):
        _detect_batch(r_key, rm, key, pos, tols, dets)
    return dets


def _detect_batch(r_key, rm, key, pos, tols, dets):
    """The detection matchings of one batch at every tolerance, on one candidate set (``key`` sorted)."""
    lo, hi = windows(r_key, key, max(tols))
    reach = hi > lo
    del lo, hi
    c_key, c_pos = key[reach], pos[reach]
    del reach
    for tolerance, out in zip(tols, dets):
        got = match_sorted(r_key, c_key, c_pos, tol_ns=tolerance)
        out[c_pos] = np.where(got >= 0, rm[np.maximum(got, 0)], -1)


def _detect_apart(r_group, r_time, p_group, p_time, n_groups, tols, dets):
    """:func:`match_detections` one group at a time on raw times (spans too wide to shift groups apart)."""
    r_bounds = np.searchsorted(r_group, np.arange(n_groups + 1))
    p_by = np.argsort(p_group, kind="stable")
    p_bounds = np.searchsorted(p_group[p_by], np.arange(n_groups + 1))
    for g in range(n_groups):
        rm = np.arange(r_bounds[g], r_bounds[g + 1])
        pm = p_by[p_bounds[g]:p_bounds[g + 1]]
        if rm.size and pm.size:
            by_time = np.argsort(p_time[pm], kind="stable")
            _detect_batch(r_time[rm], rm, p_time[pm][by_time], pm[by_time], tols, dets)


def _match_batch(r_key, rm, key, pos, tol, rtol, det, res, near):
    """Both matchings and the duplicate test of one batch, on its keys (``key`` sorted, ``pos`` their ranks)."""
    # Only picks with an arrival within residual_tol take part in either matching.
    lo, hi = windows(r_key, key, rtol)
    reach = hi > lo
    del lo, hi
    c_key, c_pos = key[reach], pos[reach]
    del reach
    lo, hi = windows(r_key, c_key, tol)
    near[c_pos] = hi > lo
    for tolerance, out in ((tol, det), (rtol, res)):
        got = match_sorted(r_key, c_key, c_pos, tol_ns=tolerance)
        out[c_pos] = np.where(got >= 0, rm[np.maximum(got, 0)], -1)


def _match_apart(r_group, r_time, p_group, p_time, p_conf, n_groups, tol, rtol, det, res, near, other_conf):
    """:func:`match_groups` one group at a time on raw times, for spans too wide to shift groups apart.

    No key is formed: times stay as given (anywhere in int64), and the windows
    saturate at the int64 limits.
    """
    r_bounds = np.searchsorted(r_group, np.arange(n_groups + 1))  # arrivals are sorted by (group, time)
    p_by = np.argsort(p_group, kind="stable")  # canonical order kept within each group
    p_bounds = np.searchsorted(p_group[p_by], np.arange(n_groups + 1))
    sorted_picks = []
    for g in range(n_groups):
        pm = p_by[p_bounds[g]:p_bounds[g + 1]]
        by_time = np.argsort(p_time[pm], kind="stable")
        sorted_picks.append((p_time[pm][by_time], pm[by_time]))
    for g in range(n_groups):
        rm = np.arange(r_bounds[g], r_bounds[g + 1])
        key, pos = sorted_picks[g]
        if rm.size and key.size:
            _match_batch(r_time[rm], rm, key, pos, tol, rtol, det, res, near)
        other_key, other_pos = sorted_picks[g ^ 1]
        if rm.size and other_key.size:
            lo, hi = windows(other_key, r_time[rm], tol)
            other_conf[rm] = range_max(p_conf[other_pos], lo, hi)
