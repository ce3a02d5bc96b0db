"""All (model, phase) streams of a station matched in one call, on one int64 axis.

A *stream* is the picks of one model for one phase, coded ``model index * 2 + phase``
(the arrivals of that phase, repeated per model, carry the same code); not to be
confused with SPEC §14's *groups* of arrivals, which the kernel counts apart
(:func:`pickscale.kernel.station.score_station`, ``arrival_group``).

Each stream's times are shifted into a disjoint stretch of the int64 axis
(stream ``g`` at ``g * stride``), far enough apart that no pair can form across
streams.  The stride is computed in Python integers, and when even one model's
two streams do not fit below 2**62 (times spread over centuries: a stray
placeholder pick in 1800, rows in 1677 and 2262) the streams are matched one by
one on their raw times instead, with window edges saturating at the int64
limits (:func:`pickscale.kernel.matching.windows`); no key, sentinel or
difference of two arbitrary times can wrap.
"""

from __future__ import annotations

import numpy as np

from .matching import match_sorted, range_max, windows

__all__ = ["N_PHASES", "match_detections", "match_streams"]

#: Phases per model: stream ``g`` is (model ``g // 2``, phase ``g % 2``).
N_PHASES = 2
# Keep every shifted key below 2**62: far from int64 overflow in `key ± tol`.
_KEY_LIMIT = 1 << 62


def match_streams(r_stream, r_time, p_stream, p_time, p_conf, *, n_streams, tol, rtol):
    """Both matchings, the duplicate test and the other-phase reach, for all streams.

    Picks are in canonical order, so within a stream the index is the priority
    rank.  Streams are shifted apart on the time axis in batches small enough
    that no shifted key overflows; with ordinary spans one batch holds every
    stream.
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
    per_batch = min(n_streams, (_KEY_LIMIT // stride) // 2 * 2)  # whole (P, S) pairs
    if per_batch < 2:
        _match_apart(r_stream, r_time, p_stream, p_time, p_conf, n_streams, tol, rtol, det, res, near, other_conf)
        return det, res, near, other_conf
    for first, rm, r_key, key, pos in _batches(r_stream, r_time, p_stream, p_time, n_streams, per_batch, stride, t0):
        _match_batch(r_key, rm, key, pos, tol, rtol, det, res, near)

        # The other phase of the same model: stream g ^ 1 (phase is the low bit).
        other_key = ((r_stream[rm] ^ 1) - first) * stride + (r_time[rm] - t0)
        lo, hi = windows(key, other_key, tol)
        other_conf[rm] = range_max(p_conf[pos], lo, hi)
    return det, res, near, other_conf


def _batches(r_stream, r_time, p_stream, p_time, n_streams, per_batch, stride, t0):
    """Per batch of ``per_batch`` streams from ``first``: the arrivals ``rm`` and their keys, the picks' sorted
    keys and their indices ``pos`` (index = priority rank within a stream), streams shifted ``stride`` apart."""
    for first in range(0, n_streams, per_batch):
        rm = np.flatnonzero((r_stream >= first) & (r_stream < first + per_batch))
        # Every key lies in [0, per_batch · stride) ⊂ [0, 2**62): `key ± tol` cannot wrap.
        r_key = (r_stream[rm] - first) * stride + (r_time[rm] - t0)
        if per_batch >= n_streams:  # one batch (ordinary spans): every pick, no index array of them
            p_key = p_stream * stride + (p_time - t0)
            pos = np.argsort(p_key)
            key = p_key[pos]
        else:
            pm = np.flatnonzero((p_stream >= first) & (p_stream < first + per_batch))
            p_key = (p_stream[pm] - first) * stride + (p_time[pm] - t0)
            by_time = np.argsort(p_key)
            key, pos = p_key[by_time], pm[by_time]
            del pm, by_time
        del p_key  # time-sorted picks remain: key, and pos = index = rank
        yield first, rm, r_key, key, pos


def match_detections(r_stream, r_time, p_stream, p_time, *, n_streams, tols):
    """The detection matching of :func:`match_streams` alone, at each of ``tols``: one array per tolerance.

    Entry ``i`` equals ``match_streams(..., tol=tols[i], rtol=...)[0]`` for any ``rtol >= tols[i]`` (SPEC §13:
    only ``det`` is read there).  Neither the residual matching, nor the duplicate test, nor the other-phase
    reach is computed, and one candidate search serves every tolerance: the picks are keyed and sorted once,
    and those with an arrival within the largest tolerance are kept; SPEC §3's walk then runs per tolerance on
    that set (a pick without an arrival within ``tol`` takes part in nothing at ``tol``).  Picks are in
    canonical order (index = priority rank within a stream), as for :func:`match_streams`.
    """
    tols = [int(t) for t in tols]
    index_dtype = np.int32 if r_time.size < np.iinfo(np.int32).max else np.int64
    dets = [np.full(p_time.size, -1, dtype=index_dtype) for _ in tols]
    if not tols or p_time.size == 0 or r_time.size == 0:
        return dets
    widest = max(tols)
    t0 = int(min(p_time.min(), r_time.min()))
    stride = (int(max(p_time.max(), r_time.max())) - t0) + 2 * widest + 1
    per_batch = min(n_streams, (_KEY_LIMIT // stride) // 2 * 2)
    if per_batch < 2:
        _detect_apart(r_stream, r_time, p_stream, p_time, n_streams, tols, dets)
        return dets
    for _, rm, r_key, key, pos in _batches(r_stream, r_time, p_stream, p_time, n_streams, per_batch, stride, t0):
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


def _detect_apart(r_stream, r_time, p_stream, p_time, n_streams, tols, dets):
    """:func:`match_detections` one stream at a time on raw times (spans too wide to shift streams apart)."""
    r_bounds = np.searchsorted(r_stream, np.arange(n_streams + 1))
    p_by = np.argsort(p_stream, kind="stable")
    p_bounds = np.searchsorted(p_stream[p_by], np.arange(n_streams + 1))
    for g in range(n_streams):
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


def _match_apart(r_stream, r_time, p_stream, p_time, p_conf, n_streams, tol, rtol, det, res, near, other_conf):
    """:func:`match_streams` one stream at a time on raw times, for spans too wide to shift streams apart.

    No key is formed: times stay as given (anywhere in int64), and the windows
    saturate at the int64 limits.
    """
    r_bounds = np.searchsorted(r_stream, np.arange(n_streams + 1))  # arrivals are sorted by (stream, time)
    p_by = np.argsort(p_stream, kind="stable")  # canonical order kept within each stream
    p_bounds = np.searchsorted(p_stream[p_by], np.arange(n_streams + 1))
    sorted_picks = []
    for g in range(n_streams):
        pm = p_by[p_bounds[g]:p_bounds[g + 1]]
        by_time = np.argsort(p_time[pm], kind="stable")
        sorted_picks.append((p_time[pm][by_time], pm[by_time]))
    for g in range(n_streams):
        rm = np.arange(r_bounds[g], r_bounds[g + 1])
        key, pos = sorted_picks[g]
        if rm.size and key.size:
            _match_batch(r_time[rm], rm, key, pos, tol, rtol, det, res, near)
        other_key, other_pos = sorted_picks[g ^ 1]
        if rm.size and other_key.size:
            lo, hi = windows(other_key, r_time[rm], tol)
            other_conf[rm] = range_max(p_conf[other_pos], lo, hi)
