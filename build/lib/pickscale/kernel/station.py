"""One station in, every additive count of SPEC §4–§7 out.

The kernel matches once per tolerance and reads every threshold off that one
matching (SPEC §3's prefix property): a pick that survives θ (``conf >= θ``)
contributes to every count at every grid value at or below its confidence.
So each per-threshold count is a reverse cumulative sum of a ``bincount`` over
the pick's *level* — the number of grid values at or below its conf.

All (model, phase) streams of a station (code ``model * 2 + phase``) are matched in one call
(:mod:`pickscale.kernel.streams`), so no time of any stream, however far from
the others, can make a key wrap.  A *group* is SPEC §14's alone: a group of arrivals
(``arrival_group``; ``a_group`` per arrival, ``r_group`` per arrival repeated per model).

Nothing here depends on the order of the input rows: picks are put into a
canonical order first (model, phase, conf descending, time ascending), and
every float sum runs in that order.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..options import N_BINS, Options
from . import exact
from .bins import bin_index
from .combine import finalize, merge, pair_order
from .events import empty_rows, station_events
from .streams import N_PHASES, match_detections, match_streams

__all__ = ["StationResult", "score_station", "merge_results", "level", "calibration_bin"]

@dataclass
class StationResult:
    """Additive counts of one (dataset, station); see docs/internals.md.

    Shapes: M models, 2 phases, T grid thresholds, F fine thresholds, 10 bins,
    K residual pairs.
    """

    n_reference: np.ndarray  # (2,) int64
    emitted: np.ndarray  # (M, 2, T) int64
    matched: np.ndarray
    duplicates: np.ndarray
    swapped: np.ndarray
    fine_emitted: np.ndarray  # (M, 2, F) int64
    fine_matched: np.ndarray
    cal_n: np.ndarray  # (M, 2, 10) int64
    cal_hits: np.ndarray
    cal_conf: np.ndarray  # (M, 2, 10) float64, exact sum correctly rounded
    brier_sum: np.ndarray  # (M, 2) float64, exact sum correctly rounded
    pair_model: np.ndarray  # (K,) int32
    pair_phase: np.ndarray  # (K,) int8
    pair_residual_ns: np.ndarray  # (K,) int64
    pair_conf: np.ndarray  # (K,) float64
    # Exact integer forms of the two float sums, so that results of time blocks add up to
    # the whole station's bit for bit (see `exact`): conf as fixed point v = conf * 2**62.
    cal_conf_limbs: np.ndarray  # (M, 2, 10, 4) int64: per bin, sums of v's four 16-bit limbs
    conf_sq_sums: np.ndarray  # (M, 2, 10) int64: sums of the ten limb products v_i * v_j (i <= j)
    hit_conf_limbs: np.ndarray  # (M, 2, 4) int64: sums of v's limbs over the matched picks
    # Time bins (SPEC §10), at the shared threshold only; G = len(options.bin_edges) - 1, 0 without bins.
    # Sparse in the bin axis (issue 22): B rows, one per bin where the station has a nonzero count, so a
    # station costs the bins it occupies, not G (3 years of hours: 26,280); dense views below.
    n_time_bins: np.ndarray  # () int64: G
    binned_bin: np.ndarray  # (B,) int64: the occupied bins, ascending
    binned_n_reference: np.ndarray  # (B, 2) int64: arrivals per bin of their time
    binned_emitted: np.ndarray  # (B, M, 2) int64: picks >= threshold per bin of their time
    binned_matched: np.ndarray  # (B, M, 2) int64: of those, matched (tol), per bin of their arrival's time
    # Groups of arrivals (SPEC §14), at the shared threshold only; R = options.n_groups, 0 without groups.
    n_reference_by_group: np.ndarray  # (2, R) int64: arrivals per group
    matched_by_group: np.ndarray  # (M, 2, R) int64: picks >= threshold matched (tol), per group of their arrival
    pair_group: np.ndarray  # (K,) int32: the group of each residual pair's arrival (0 without groups)
    # Tolerance sensitivity (SPEC §13), at the shared threshold only; L = len(options.tols), 0 without tols.
    matched_at_tol: np.ndarray  # (M, 2, L) int64: picks >= threshold in a detection pair of the matching at tols[l]
    # Event detection (SPEC §19; kernel/events.py): one row per event with an arrival here; E = 0 without events.
    event_code: np.ndarray  # (E,) int64: the events (codes the client assigned), ascending
    event_n_reference: np.ndarray  # (E, 2) int64: the event's arrivals here, per phase
    event_levels: np.ndarray  # (E, M, 2, K) int16: per model and phase, the K highest detection levels, descending

    @property
    def n_reference_over_time(self) -> np.ndarray:
        """(2, G) int64: arrivals per bin of their time, dense (a new array)."""
        return _dense(self.binned_bin, self.binned_n_reference, int(self.n_time_bins))

    @property
    def emitted_over_time(self) -> np.ndarray:
        """(M, 2, G) int64: picks >= the shared threshold per bin of their time, dense."""
        return _dense(self.binned_bin, self.binned_emitted, int(self.n_time_bins))

    @property
    def matched_over_time(self) -> np.ndarray:
        """(M, 2, G) int64: of those, matched, per bin of their arrival's time, dense."""
        return _dense(self.binned_bin, self.binned_matched, int(self.n_time_bins))

    def equals(self, other: StationResult) -> bool:
        """Bit-for-bit equality of every field."""
        return all(
            getattr(self, f.name).dtype == getattr(other, f.name).dtype
            and getattr(self, f.name).shape == getattr(other, f.name).shape
            and getattr(self, f.name).tobytes() == getattr(other, f.name).tobytes()
            for f in fields(self)
        )


def _dense(bins: np.ndarray, rows: np.ndarray, n_bins: int) -> np.ndarray:
    """Rows (B, ...) of the bins ``bins`` as a dense array (..., n_bins), zero in the other bins."""
    out = np.zeros(rows.shape[1:] + (n_bins,), dtype=np.int64)
    out[..., bins] = np.moveaxis(rows, 0, -1)
    return out


def level(conf: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Number of ``thresholds`` (sorted ascending) that ``conf`` survives (``conf >= θ``).

    Examples
    --------
    >>> level(np.array([0.1, 0.3, 0.95]), np.array([0.1, 0.3, 0.5])).tolist()
    [1, 2, 3]
    """
    return np.searchsorted(thresholds, conf, side="right")


def calibration_bin(conf: np.ndarray) -> np.ndarray:
    """SPEC §6 bin: ``min(floor(conf * 10), 9)`` computed in float64.

    Examples
    --------
    >>> calibration_bin(np.array([0.3, 0.6, 0.7, 1.0])).tolist()
    [3, 6, 7, 9]
    """
    return np.minimum(np.floor(np.asarray(conf, dtype=np.float64) * 10.0), N_BINS - 1).astype(np.int64)


def _survivor_counts(stream: np.ndarray, lvl: np.ndarray, n_streams: int, n_levels: int, weights=None) -> np.ndarray:
    """counts[g, k] = Σ weights over items of stream g with level > k, for k < n_levels."""
    flat = np.bincount(stream * (n_levels + 1) + lvl, weights=weights, minlength=n_streams * (n_levels + 1))
    per_level = flat.reshape(n_streams, n_levels + 1)
    # Reverse cumulative sum: items at level L survive thresholds 0 … L-1.
    at_or_above = np.cumsum(per_level[:, ::-1], axis=1)[:, ::-1]
    return at_or_above[:, 1:].astype(np.int64)


def _interval_counts(stream: np.ndarray, start: np.ndarray, stop: np.ndarray, n_streams: int,
                     n_levels: int) -> np.ndarray:
    """counts[g, k] = number of items of stream g with start <= k < stop."""
    keep = stop > start
    width = n_levels + 1
    plus = np.bincount(stream[keep] * width + start[keep], minlength=n_streams * width)
    minus = np.bincount(stream[keep] * width + stop[keep], minlength=n_streams * width)
    return np.cumsum((plus - minus).reshape(n_streams, width), axis=1)[:, :n_levels].astype(np.int64)


def _as(a, dtype) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a), dtype=dtype)


def score_station(
    arrival_phase: np.ndarray,
    arrival_time: np.ndarray,
    pick_model: np.ndarray,
    pick_phase: np.ndarray,
    pick_time: np.ndarray,
    pick_conf: np.ndarray,
    *,
    n_models: int,
    options: Options,
    arrival_group: np.ndarray | None = None,
    arrival_event: np.ndarray | None = None,
) -> StationResult:
    """Every additive count of SPEC §4–§7 for one (dataset, station).

    Parameters
    ----------
    arrival_phase, arrival_time
        Reference arrivals: phase code (0 = P, 1 = S) and time (int64 ns).
    pick_model, pick_phase, pick_time, pick_conf
        Picks: model index (0 … n_models-1), phase code, time (int64 ns) and
        confidence.  Picks below ``options.floor`` take part in nothing.
    n_models
        Number of models of the dataset (the leading axis of the result).
    options
        Grid, fine grid and tolerances.
    arrival_group
        Each arrival's group code (``0 … options.n_groups - 1``; SPEC §14),
        used only when ``options.n_groups`` > 0; ``None``: every arrival in
        group 0.
    arrival_event
        Each arrival's event code (SPEC §19; −1: no event), used only when
        ``options.n_event_levels`` > 0; ``None``: no event rows.

    Returns
    -------
    StationResult

    Examples
    --------
    One P arrival at 10 s, one P pick 0.1 s late at conf 0.8:

    >>> s = 1_000_000_000
    >>> r = score_station([0], [10 * s], [0], [0], [10 * s + s // 10], [0.8],
    ...                   n_models=1, options=Options(thresholds=[0.5, 0.9], threshold=0.5))
    >>> r.n_reference.tolist(), r.emitted[0, 0].tolist(), r.matched[0, 0].tolist()
    ([1, 0], [1, 0], [1, 0])
    >>> r.pair_residual_ns.tolist()
    [100000000]
    """
    grid, fine = options.grid, options.fine
    n_models = int(n_models)
    n_streams = n_models * N_PHASES
    a_phase = _as(arrival_phase, np.int64)
    a_time = _as(arrival_time, np.int64)
    p_model = _as(pick_model, np.int64)
    p_phase = _as(pick_phase, np.int64)
    p_time = _as(pick_time, np.int64)
    p_conf = _as(pick_conf, np.float64)

    # SPEC §2: the floor is the lowest grid value; picks below it take part in nothing.
    above = p_conf >= options.floor
    if not above.all():  # (the engine's parts hold only picks at or above the floor: no copy then)
        p_model, p_phase, p_time, p_conf = p_model[above], p_phase[above], p_time[above], p_conf[above]
    p_stream = p_model * N_PHASES + p_phase
    del above, p_model, p_phase  # memory: every full-size array is dropped as soon as it is used

    # Canonical order: stream, conf descending, time ascending.
    order, conf_levels = canonical_order(p_stream, p_conf, p_time, grid, fine)
    p_stream, p_time, p_conf = p_stream[order], p_time[order], p_conf[order]
    lvl, flvl = conf_levels[0][order], conf_levels[1][order]
    del order, conf_levels

    # Arrivals repeated once per model: stream (m, phase) sees the arrivals of its phase.
    a_order = np.lexsort((a_time, a_phase))
    a_phase, a_time = a_phase[a_order], a_time[a_order]
    a_group = _arrival_groups(arrival_group, a_order, options)
    n_reference = np.bincount(a_phase, minlength=N_PHASES).astype(np.int64)
    r_stream = (np.arange(n_models, dtype=np.int64)[:, None] * N_PHASES + a_phase[None, :]).ravel()
    r_time = np.tile(a_time, n_models)
    r_order = np.lexsort((r_time, r_stream))
    r_stream, r_time = r_stream[r_order], r_time[r_order]

    det, res, near, other_conf = match_streams(
        r_stream, r_time, p_stream, p_time, p_conf, n_streams=n_streams,
        tol=options.tol_ns, rtol=options.residual_tol_ns,
    )
    out = _counts(p_stream, p_conf, lvl, flvl, r_stream, det, near, other_conf, n_streams=n_streams, options=options)
    out["n_reference"] = n_reference
    out.update(_over_time(a_phase, a_time, p_stream, p_time, lvl, r_time, det, n_models=n_models, options=options))
    r_group = np.tile(a_group, n_models)[r_order]  # SPEC §14: each repeated arrival's group of arrivals
    out.update(_by_group(a_phase, a_group, p_stream, lvl, r_group, det, n_models=n_models, options=options))
    out.update(_pairs(p_stream, p_time, p_conf, r_time, res, r_group))
    out["matched_at_tol"] = _matched_at_tols(r_stream, r_time, p_stream, p_time, p_conf, lvl, n_streams=n_streams,
                                             options=options)
    out.update(_events(arrival_event, a_order, a_phase, r_order, r_stream, det, lvl, n_models=n_models,
                       options=options))
    shape3 = (n_models, N_PHASES, -1)
    out = {name: values.reshape(shape3) if name in _PER_STREAM else values for name, values in out.items()}
    out["cal_conf_limbs"] = out["cal_conf_limbs"].reshape(n_models, N_PHASES, N_BINS, exact.N_LIMBS)
    out.update(finalize(out))
    return StationResult(**out)


def _dense_rank(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank of each value among the distinct values (equal values, equal rank), and those values."""
    order = np.argsort(values)
    v = values[order]
    new = np.empty(v.size, dtype=bool)
    new[:1] = True
    np.not_equal(v[1:], v[:-1], out=new[1:])
    dense = np.empty(v.size, dtype=np.int64)
    dense[order] = np.cumsum(new) - 1
    return dense, v[new]


def _narrow(levels: np.ndarray) -> np.ndarray:
    return levels.astype(np.int16) if levels.size and levels.max() < np.iinfo(np.int16).max else levels


def canonical_order(stream, conf, time, grid, fine):
    """Order picks by (stream, conf descending, time ascending); also their grid and fine levels.

    One unstable argsort on a composite integer key of dense ranks replaces a
    three-key ``lexsort`` (several times faster); picks with equal keys are
    identical in every field, so their relative order changes nothing.
    """
    if conf.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, (empty, empty)
    c_rank, c_values = _dense_rank(-conf)  # rank 0 = most confident
    t_rank, t_values = _dense_rank(time)
    n_c, n_t = c_values.size, t_values.size
    # Levels are a function of conf alone: compute them on the distinct values.
    # int16 (the grids are far shorter than 32,767): 2 bytes a pick instead of 8, the same values.
    levels = (_narrow(level(-c_values, grid))[c_rank], _narrow(level(-c_values, fine))[c_rank])
    n_streams = int(stream.max()) + 1
    if n_streams * n_c * n_t < (1 << 62):
        order = np.argsort((stream * n_c + c_rank) * n_t + t_rank)
    else:
        order = np.lexsort((time, -conf, stream))
    return order, levels


# Fields computed with one row per (model, phase) stream, then shaped (M, 2, ...).
_PER_STREAM = ("emitted", "matched", "duplicates", "swapped", "fine_emitted", "fine_matched", "cal_n", "cal_hits",
               "conf_sq_sums", "hit_conf_limbs", "matched_at_tol")


def _counts(p_stream, p_conf, lvl, flvl, r_stream, det, near, other_conf, *, n_streams: int,
            options: Options) -> dict[str, np.ndarray]:
    """Every count of the picks (in canonical order) given both matchings, one row per stream."""
    grid, fine = options.grid, options.fine
    hit = det >= 0
    dup = ~hit & near
    # Swapped (SPEC §4): at θ, an arrival is swapped when its own-phase match is
    # below θ (or missing) and some other-phase pick within tol is at or above θ:
    # grid indices k with level(matched conf) <= k < level(best other conf).
    matched_conf = np.full(r_stream.size, -np.inf)
    matched_conf[det[hit]] = p_conf[hit]

    cbin = p_stream * N_BINS + calibration_bin(p_conf)
    size = n_streams * N_BINS
    cal_conf_limbs, conf_sq_sums, hit_conf_limbs = exact.sums(p_conf, hit, p_stream, cbin, n_streams)
    return {
        "emitted": _survivor_counts(p_stream, lvl, n_streams, grid.size),
        "matched": _survivor_counts(p_stream[hit], lvl[hit], n_streams, grid.size),
        "duplicates": _survivor_counts(p_stream[dup], lvl[dup], n_streams, grid.size),
        "swapped": _interval_counts(r_stream, level(matched_conf, grid), level(other_conf, grid), n_streams, grid.size),
        "fine_emitted": _survivor_counts(p_stream, flvl, n_streams, fine.size),
        "fine_matched": _survivor_counts(p_stream[hit], flvl[hit], n_streams, fine.size),
        "cal_n": np.bincount(cbin, minlength=size).astype(np.int64),
        "cal_hits": np.bincount(cbin[hit], minlength=size).astype(np.int64),
        "cal_conf_limbs": cal_conf_limbs,
        "conf_sq_sums": conf_sq_sums,
        "hit_conf_limbs": hit_conf_limbs,
    }


def _at_shared(lvl: np.ndarray, p_stream: np.ndarray, options: Options) -> np.ndarray:
    """Which picks survive the shared threshold of their own phase (SPEC §2), from their grid levels."""
    ti = options.threshold_indices
    if ti[0] == ti[1]:
        return lvl > ti[0]
    return lvl > ti[p_stream % N_PHASES]


def _over_time(a_phase, a_time, p_stream, p_time, lvl, r_time, det, *, n_models: int,
               options: Options) -> dict[str, np.ndarray]:
    """SPEC §10: counts per time bin at the shared threshold, from the same detection matching.

    An arrival counts in the bin of its time, an emitted pick in the bin of
    its time, a matched pick in the bin of its arrival's time.  Only the bins
    the station occupies get a row (``binned_*``): the bin indices are ranked
    among the station's own distinct bins and counted on those ranks, so
    nothing here is as long as the run's bins (issue 22: 3 years of hourly
    bins × 1,000 stations put a worker at 5.75 GB when each station had them all).
    """
    edges = options.bin_edges
    n_bins = 0 if edges is None else max(int(edges.size) - 1, 0)
    if edges is None or n_bins == 0:
        return {"n_time_bins": np.array(n_bins, np.int64), "binned_bin": np.zeros(0, np.int64),
                "binned_n_reference": np.zeros((0, N_PHASES), np.int64),
                "binned_emitted": np.zeros((0, n_models, N_PHASES), np.int64),
                "binned_matched": np.zeros((0, n_models, N_PHASES), np.int64)}
    surviving = _at_shared(lvl, p_stream, options)  # conf >= the shared threshold (its phase's)
    hit = surviving & (det >= 0)
    a_bin = bin_index(a_time, edges)
    p_bin = bin_index(p_time[surviving], edges)
    m_bin = bin_index(r_time[det[hit]], edges)
    occupied, rank = np.unique(np.concatenate([a_bin, p_bin, m_bin]), return_inverse=True)
    rank = rank.reshape(-1)
    a_rank, p_rank, m_rank = np.split(rank, [a_bin.size, a_bin.size + p_bin.size])
    n_streams = n_models * N_PHASES
    b = occupied.size
    # Every occupied bin has a nonzero count (it holds an arrival, an emitted or a matched pick): rows are
    # exactly the nonzero bins, so they do not depend on how the station was cut into time blocks.
    return {
        "n_time_bins": np.array(n_bins, np.int64),
        "binned_bin": occupied.astype(np.int64),
        "binned_n_reference": np.bincount(a_rank * N_PHASES + a_phase, minlength=b * N_PHASES)
        .astype(np.int64).reshape(b, N_PHASES),
        "binned_emitted": np.bincount(p_rank * n_streams + p_stream[surviving], minlength=b * n_streams)
        .astype(np.int64).reshape(b, n_models, N_PHASES),
        "binned_matched": np.bincount(m_rank * n_streams + p_stream[hit], minlength=b * n_streams)
        .astype(np.int64).reshape(b, n_models, N_PHASES),
    }


def _matched_at_tols(r_stream, r_time, p_stream, p_time, p_conf, lvl, *, n_streams: int,
                     options: Options) -> np.ndarray:
    """SPEC §13: per stream, the picks >= the shared threshold matched by the detection matching at each of ``tols``.

    One SPEC §3 matching per tolerance (picks >= the floor, as at ``tol``), read at the shared threshold;
    at ``tol`` itself it is the run's own matching, so the count equals ``matched`` there.  Shape
    (streams, L); (streams, 0) without ``tols``.

    Only the picks at or above the shared threshold are matched: within a stream they come first in the
    confidence order (the threshold is its phase's, and equal confidences share a level), so SPEC §3's walk
    of just those picks is the walk of every pick restricted to them (§3, "one matching serves every
    threshold").  The detection matchings alone, one candidate search for every tolerance
    (:func:`~pickscale.kernel.streams.match_detections`).
    """
    tols = options.tols_ns
    out = np.zeros((n_streams, len(tols)), dtype=np.int64)
    if not tols or p_time.size == 0 or r_time.size == 0:
        return out
    surviving = _at_shared(lvl, p_stream, options)  # conf >= the shared threshold (its phase's)
    if not surviving.all():  # canonical order is kept: index = priority rank within a stream
        p_stream, p_time = p_stream[surviving], p_time[surviving]
    # Each tol <= residual_tol (Options): the same reach as the run's own matching.
    for i, det in enumerate(match_detections(r_stream, r_time, p_stream, p_time, n_streams=n_streams, tols=tols)):
        out[:, i] = np.bincount(p_stream[det >= 0], minlength=n_streams)
    return out


def _events(arrival_event, a_order, a_phase, r_order, r_stream, det, lvl, *, n_models: int,
            options: Options) -> dict[str, np.ndarray]:
    """SPEC §19: the station's event rows, from the same detection matching (``tol``) as every count.

    An arrival's level is that of the pick that took it (0: none took it); by SPEC §3 it is matched at
    grid threshold k exactly when its level is > k, so each event keeps its K highest levels per (model, phase).
    """
    k = options.n_event_levels
    if k == 0 or arrival_event is None:
        return empty_rows()
    a_event = _as(arrival_event, np.int64)[a_order]
    r_event = np.tile(a_event, n_models)[r_order]
    r_level = np.zeros(r_stream.size, np.int64)
    hit = det >= 0
    r_level[det[hit]] = lvl[hit]
    return station_events(a_event, a_phase, r_event, r_stream, r_level, n_models=n_models, k=k)


def _arrival_groups(arrival_group, a_order: np.ndarray, options: Options) -> np.ndarray:
    """Each arrival's group code (int64), in ``a_order``; zeros without groups (SPEC §14)."""
    if options.n_groups == 0 or arrival_group is None:
        return np.zeros(a_order.size, np.int64)
    return _as(arrival_group, np.int64)[a_order]


def _by_group(a_phase, a_group, p_stream, lvl, r_group, det, *, n_models: int,
              options: Options) -> dict[str, np.ndarray]:
    """SPEC §14: arrivals per (phase, group), and picks >= the shared threshold matched per group of their arrival.

    From the same detection matching as every other count; emitted picks have no group.
    """
    n_groups = options.n_groups
    if n_groups == 0:
        return {"n_reference_by_group": np.zeros((N_PHASES, 0), np.int64),
                "matched_by_group": np.zeros((n_models, N_PHASES, 0), np.int64)}
    hit = _at_shared(lvl, p_stream, options) & (det >= 0)
    size = n_models * N_PHASES * n_groups
    return {
        "n_reference_by_group": np.bincount(a_phase * n_groups + a_group, minlength=N_PHASES * n_groups)
        .astype(np.int64).reshape(N_PHASES, n_groups),
        "matched_by_group": np.bincount(p_stream[hit] * n_groups + r_group[det[hit]], minlength=size)
        .astype(np.int64).reshape(n_models, N_PHASES, n_groups),
    }


def _pairs(p_stream, p_time, p_conf, r_time, res, r_group) -> dict[str, np.ndarray]:
    """The residual pairs, in canonical order (model, phase, residual, conf, group)."""
    paired = res >= 0
    ps = p_stream[paired]
    pairs = {
        "pair_model": (ps // N_PHASES).astype(np.int32),
        "pair_phase": (ps % N_PHASES).astype(np.int8),
        "pair_residual_ns": (p_time[paired] - r_time[res[paired]]).astype(np.int64),
        "pair_conf": p_conf[paired],
        "pair_group": r_group[res[paired]].astype(np.int32),
    }
    order = pair_order(pairs)
    return {name: values[order] for name, values in pairs.items()}


def merge_results(parts: list[StationResult]) -> StationResult:
    """Add the results of one station's time blocks: the whole station's result, bit for bit.

    Each field combines as :data:`pickscale.kernel.combine.FIELDS` declares
    (:func:`pickscale.kernel.combine.merge`): counts summed, exact limbs summed
    and re-canonicalised, the two float sums derived from them (no float is
    ever added twice), residual pairs re-sorted into the canonical order.

    Examples
    --------
    >>> o = Options(thresholds=[0.5], threshold=0.5)
    >>> a = score_station([0], [0], [0], [0], [1], [0.9], n_models=1, options=o)
    >>> b = score_station([0], [100], [0], [0], [101], [0.6], n_models=1, options=o)
    >>> merged = merge_results([a, b])
    >>> merged.matched[0, 0].tolist(), merged.cal_conf[0, 0, [6, 9]].tolist(), merged.pair_conf.tolist()
    ([2], [0.6, 0.9], [0.6, 0.9])
    """
    if len(parts) == 1:
        return parts[0]
    return StationResult(**merge([vars(p) for p in parts]))
