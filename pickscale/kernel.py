"""One station in, every additive count of SPEC §4–§7 out.

The kernel matches once per tolerance and reads every threshold off that one
matching (SPEC §3's prefix property): a pick that survives θ (``conf >= θ``)
contributes to every count at every grid value at or below its confidence.
So each per-threshold count is a reverse cumulative sum of a ``bincount`` over
the pick's *level* — the number of grid values at or below its conf.

All (model, phase) groups of a station are matched in one call: each group's
times are shifted into a disjoint stretch of the int64 axis (group ``g`` at
``g * stride``), far enough apart that no pair can form across groups.  The
stride is computed in Python integers, and when even one model's two groups do
not fit below 2**62 (times spread over centuries: a stray placeholder pick in
1800, rows in 1677 and 2262) the groups are matched one by one on their raw
times instead, with window edges saturating at the int64 limits
(:func:`pickscale.matching.windows`); no key, sentinel or difference of two
arbitrary times can wrap.

Nothing here depends on the order of the input rows: picks are put into a
canonical order first (model, phase, conf descending, time ascending), and
every float sum runs in that order.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from . import exact
from .matching import match_sorted, range_max, windows
from .options import N_BINS, Options

__all__ = ["StationResult", "score_station", "merge_results", "level", "calibration_bin"]

_N_PHASES = 2
# Keep every shifted key below 2**62: far from int64 overflow in `key ± tol`.
_KEY_LIMIT = 1 << 62


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

    def equals(self, other: StationResult) -> bool:
        """Bit-for-bit equality of every field."""
        return all(
            getattr(self, f.name).dtype == getattr(other, f.name).dtype
            and getattr(self, f.name).shape == getattr(other, f.name).shape
            and getattr(self, f.name).tobytes() == getattr(other, f.name).tobytes()
            for f in fields(self)
        )


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


def _survivor_counts(group: np.ndarray, lvl: np.ndarray, n_groups: int, n_levels: int, weights=None) -> np.ndarray:
    """counts[g, k] = Σ weights over items of group g with level > k, for k < n_levels."""
    flat = np.bincount(group * (n_levels + 1) + lvl, weights=weights, minlength=n_groups * (n_levels + 1))
    per_level = flat.reshape(n_groups, n_levels + 1)
    # Reverse cumulative sum: items at level L survive thresholds 0 … L-1.
    at_or_above = np.cumsum(per_level[:, ::-1], axis=1)[:, ::-1]
    return at_or_above[:, 1:].astype(np.int64)


def _interval_counts(group: np.ndarray, start: np.ndarray, stop: np.ndarray, n_groups: int, n_levels: int) -> np.ndarray:
    """counts[g, k] = number of items of group g with start <= k < stop."""
    keep = stop > start
    width = n_levels + 1
    plus = np.bincount(group[keep] * width + start[keep], minlength=n_groups * width)
    minus = np.bincount(group[keep] * width + stop[keep], minlength=n_groups * width)
    return np.cumsum((plus - minus).reshape(n_groups, width), axis=1)[:, :n_levels].astype(np.int64)


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
    n_groups = n_models * _N_PHASES
    a_phase = _as(arrival_phase, np.int64)
    a_time = _as(arrival_time, np.int64)
    p_model = _as(pick_model, np.int64)
    p_phase = _as(pick_phase, np.int64)
    p_time = _as(pick_time, np.int64)
    p_conf = _as(pick_conf, np.float64)

    # SPEC §2: the floor is the lowest grid value; picks below it take part in nothing.
    above = p_conf >= options.floor
    p_model, p_phase, p_time, p_conf = p_model[above], p_phase[above], p_time[above], p_conf[above]
    p_group = p_model * _N_PHASES + p_phase

    # Canonical order: group, conf descending, time ascending.
    order, conf_levels = _canonical_order(p_group, p_conf, p_time, grid, fine)
    p_group, p_time, p_conf = p_group[order], p_time[order], p_conf[order]
    lvl, flvl = conf_levels[0][order], conf_levels[1][order]

    # Arrivals repeated once per model: group (m, phase) sees the arrivals of its phase.
    a_order = np.lexsort((a_time, a_phase))
    a_phase, a_time = a_phase[a_order], a_time[a_order]
    n_reference = np.bincount(a_phase, minlength=_N_PHASES).astype(np.int64)
    r_group = (np.arange(n_models, dtype=np.int64)[:, None] * _N_PHASES + a_phase[None, :]).ravel()
    r_time = np.tile(a_time, n_models)
    r_order = np.lexsort((r_time, r_group))
    r_group, r_time = r_group[r_order], r_time[r_order]

    det, res, near, other_conf = _match_groups(
        r_group, r_time, p_group, p_time, p_conf, n_groups=n_groups,
        tol=options.tol_ns, rtol=options.residual_tol_ns,
    )
    hit = det >= 0

    emitted = _survivor_counts(p_group, lvl, n_groups, grid.size)
    matched = _survivor_counts(p_group[hit], lvl[hit], n_groups, grid.size)
    dup = ~hit & near
    duplicates = _survivor_counts(p_group[dup], lvl[dup], n_groups, grid.size)

    # Swapped (SPEC §4): at θ, an arrival is swapped when its own-phase match is
    # below θ (or missing) and some other-phase pick within tol is at or above θ:
    # grid indices k with level(matched conf) <= k < level(best other conf).
    matched_conf = np.full(r_time.size, -np.inf)
    matched_conf[det[hit]] = p_conf[hit]
    swapped = _interval_counts(r_group, level(matched_conf, grid), level(other_conf, grid), n_groups, grid.size)

    fine_emitted = _survivor_counts(p_group, flvl, n_groups, fine.size)
    fine_matched = _survivor_counts(p_group[hit], flvl[hit], n_groups, fine.size)

    cbin = p_group * N_BINS + calibration_bin(p_conf)
    size = n_groups * N_BINS
    cal_n = np.bincount(cbin, minlength=size).astype(np.int64)
    cal_hits = np.bincount(cbin[hit], minlength=size).astype(np.int64)
    cal_conf_limbs, conf_sq_sums, hit_conf_limbs = exact.sums(p_conf, hit, p_group, cbin, n_groups)

    paired = res >= 0
    residual = p_time[paired] - r_time[res[paired]]
    pg, pc = p_group[paired], p_conf[paired]
    pair_order = np.lexsort((pc, residual, pg))

    shape3 = (n_models, _N_PHASES, -1)
    return StationResult(
        n_reference=n_reference,
        emitted=emitted.reshape(shape3),
        matched=matched.reshape(shape3),
        duplicates=duplicates.reshape(shape3),
        swapped=swapped.reshape(shape3),
        fine_emitted=fine_emitted.reshape(shape3),
        fine_matched=fine_matched.reshape(shape3),
        cal_n=cal_n.reshape(shape3),
        cal_hits=cal_hits.reshape(shape3),
        cal_conf=exact.conf_sum(cal_conf_limbs).reshape(shape3),
        brier_sum=exact.brier_sum(conf_sq_sums, hit_conf_limbs, cal_hits.reshape(n_groups, N_BINS).sum(axis=1))
        .reshape(n_models, _N_PHASES),
        pair_model=(pg[pair_order] // _N_PHASES).astype(np.int32),
        pair_phase=(pg[pair_order] % _N_PHASES).astype(np.int8),
        pair_residual_ns=residual[pair_order].astype(np.int64),
        pair_conf=pc[pair_order],
        cal_conf_limbs=cal_conf_limbs.reshape(n_models, _N_PHASES, N_BINS, exact.N_LIMBS),
        conf_sq_sums=conf_sq_sums.reshape(n_models, _N_PHASES, exact.N_PRODUCTS),
        hit_conf_limbs=hit_conf_limbs.reshape(n_models, _N_PHASES, exact.N_LIMBS),
    )


def merge_results(parts: list[StationResult]) -> StationResult:
    """Add the results of one station's time blocks: the whole station's result, bit for bit.

    Every count is an integer sum; the residual pairs are re-sorted into the
    canonical order; the two float sums are recomputed from their exact
    integer forms, so no float is ever added twice.
    """
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    out = {f.name: sum(getattr(p, f.name) for p in parts) for f in fields(first)
           if f.name not in _PAIR_FIELDS + ("cal_conf", "brier_sum")}
    pairs = {name: np.concatenate([getattr(p, name) for p in parts]) for name in _PAIR_FIELDS}
    order = np.lexsort((pairs["pair_conf"], pairs["pair_residual_ns"], pairs["pair_phase"], pairs["pair_model"]))
    out.update({name: values[order] for name, values in pairs.items()})
    shape = first.cal_conf.shape
    # Sums of canonical forms are not canonical: make them so, as one block would have them.
    out["cal_conf_limbs"], out["conf_sq_sums"] = exact.canonical(out["cal_conf_limbs"], out["conf_sq_sums"])
    out["hit_conf_limbs"] = exact.canonical(out["hit_conf_limbs"], out["conf_sq_sums"])[0]
    n_hits = out["cal_hits"].sum(axis=-1)
    out["cal_conf"] = exact.conf_sum(out["cal_conf_limbs"].reshape(-1, exact.N_LIMBS)).reshape(shape)
    out["brier_sum"] = exact.brier_sum(
        out["conf_sq_sums"].reshape(-1, exact.N_PRODUCTS), out["hit_conf_limbs"].reshape(-1, exact.N_LIMBS),
        n_hits.reshape(-1),
    ).reshape(first.brier_sum.shape)
    return StationResult(**out)


_PAIR_FIELDS = ("pair_model", "pair_phase", "pair_residual_ns", "pair_conf")


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


def _canonical_order(group, conf, time, grid, fine):
    """Order picks by (group, conf descending, time ascending); also their grid and fine levels.

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
    levels = (level(-c_values, grid)[c_rank], level(-c_values, fine)[c_rank])
    n_groups = int(group.max()) + 1
    if n_groups * n_c * n_t < (1 << 62):
        order = np.argsort((group * n_c + c_rank) * n_t + t_rank)
    else:
        order = np.lexsort((time, -conf, group))
    return order, levels


def _match_groups(r_group, r_time, p_group, p_time, p_conf, *, n_groups, tol, rtol):
    """Both matchings, the duplicate test and the other-phase reach, for all groups.

    Picks are in canonical order, so within a group the index is the priority
    rank.  Groups are shifted apart on the time axis in batches small enough
    that no shifted key overflows; with ordinary spans one batch holds every
    group.
    """
    det = np.full(p_time.size, -1, dtype=np.int64)
    res = np.full(p_time.size, -1, dtype=np.int64)
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
    for first in range(0, n_groups, per_batch):
        pm = np.flatnonzero((p_group >= first) & (p_group < first + per_batch))
        rm = np.flatnonzero((r_group >= first) & (r_group < first + per_batch))
        # Every key lies in [0, per_batch · stride) ⊂ [0, 2**62): `key ± rtol` cannot wrap.
        r_key = (r_group[rm] - first) * stride + (r_time[rm] - t0)
        p_key = (p_group[pm] - first) * stride + (p_time[pm] - t0)
        by_time = np.argsort(p_key)
        key, pos = p_key[by_time], pm[by_time]  # time-sorted picks; pos = index = rank
        _match_batch(r_key, rm, key, pos, tol, rtol, det, res, near)

        # The other phase of the same model: group g ^ 1 (phase is the low bit).
        other_key = ((r_group[rm] ^ 1) - first) * stride + (r_time[rm] - t0)
        lo, hi = windows(key, other_key, tol)
        other_conf[rm] = range_max(p_conf[pos], lo, hi)
    return det, res, near, other_conf


def _match_batch(r_key, rm, key, pos, tol, rtol, det, res, near):
    """Both matchings and the duplicate test of one batch, on its keys (``key`` sorted, ``pos`` their ranks)."""
    # Only picks with an arrival within residual_tol take part in either matching.
    lo, hi = windows(r_key, key, rtol)
    reach = hi > lo
    c_key, c_pos = key[reach], pos[reach]
    lo, hi = windows(r_key, c_key, tol)
    near[c_pos] = hi > lo
    for tolerance, out in ((tol, det), (rtol, res)):
        got = match_sorted(r_key, c_key, c_pos, tol_ns=tolerance)
        out[c_pos] = np.where(got >= 0, rm[np.maximum(got, 0)], -1)


def _match_apart(r_group, r_time, p_group, p_time, p_conf, n_groups, tol, rtol, det, res, near, other_conf):
    """:func:`_match_groups` one group at a time on raw times, for spans too wide to shift groups apart.

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
