"""A brute-force reference implementation of SPEC §3–§7, for the tests only.

Written from ``/work/shared/SPEC.md`` alone, with plain Python loops, so that
each line can be checked against the sentence of the SPEC it implements.  It is
deliberately slow and deliberately naive:

* the §3 walk is the literal loop (sort the picks, let each one scan every
  arrival), with no ``searchsorted`` and no vectorised rounds;
* every count at a threshold θ re-runs the walk *from scratch* on the picks with
  ``conf >= θ``.  The real kernel matches once and reads every threshold as a
  prefix of that one matching (SPEC §3, "one matching per tolerance serves
  every threshold"); comparing it with a from-scratch walk at every θ is what
  checks that prefix property instead of assuming it;
* statistics of residuals are computed with exact integer / ``Fraction``
  arithmetic on the nanosecond residuals and rounded to float64 once at the end,
  so the reference value is the correctly rounded one and any float
  implementation can be compared with it at a tight relative tolerance.

Nothing here imports ``pickscale``: the point is an independent second reading
of the SPEC.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

NAN = float("nan")
N_BINS = 10
# The timing columns of the tables (SPEC §8): fraction_within is one column per bound.
TIMING_NAMES = (
    "n_pairs",
    "mae",
    "rmse",
    "medae",
    "bias",
    "residual_mean",
    "residual_std",
    "gross_error_rate",
    "fraction_within_0.1",
    "fraction_within_0.25",
    "fraction_within_0.5",
)
WITHIN = (("fraction_within_0.1", 0.1), ("fraction_within_0.25", 0.25), ("fraction_within_0.5", 0.5))


# --------------------------------------------------------------------------
# Grids (SPEC §2, §7)
# --------------------------------------------------------------------------


def default_grid(threshold: float = 0.3) -> list[float]:
    """``round(0.02 * k, 3)`` for k = 1…47, plus the shared threshold, ascending (SPEC §2)."""
    grid = {round(0.02 * k, 3) for k in range(1, 48)}
    grid.add(float(threshold))
    return sorted(grid)


def fine_grid(floor: float) -> list[float]:
    """``k / 1000`` for the integers k with ``floor <= k / 1000 <= 1`` (SPEC §7)."""
    return [k / 1000 for k in range(0, 1001) if floor <= k / 1000 <= 1]


# --------------------------------------------------------------------------
# Matching (SPEC §3)
# --------------------------------------------------------------------------


def confidence_order(picks: Sequence[tuple[int, float]]) -> list[int]:
    """Pick indices in SPEC §3 order: conf descending, then time ascending.

    Picks equal in both are interchangeable; the input index is only a last key
    so that the order is reproducible.
    """
    return sorted(range(len(picks)), key=lambda j: (-float(picks[j][1]), int(picks[j][0]), j))


def walk(arrivals: Sequence[int], picks: Sequence[tuple[int, float]], tol_ns: int) -> list[int]:
    """SPEC §3, literally.

    Parameters
    ----------
    arrivals
        Arrival times in integer ns, sorted ascending (repeats allowed).
    picks
        ``(time_ns, conf)`` per pick, any order.
    tol_ns
        The tolerance in integer ns; ``|q - r| <= tol_ns`` matches (inclusive).

    Returns
    -------
    list of int
        For each pick in input order, the index into ``arrivals`` of the arrival
        it took, or -1.
    """
    arrivals = [int(a) for a in arrivals]
    assert arrivals == sorted(arrivals), "walk() wants the arrivals sorted ascending"
    taken = [False] * len(arrivals)
    result = [-1] * len(picks)
    for j in confidence_order(picks):
        q = int(picks[j][0])
        best, best_d = -1, None
        # Scan the arrivals in ascending time.  A strictly smaller distance is
        # needed to replace the current best, so at equal distance the earlier
        # arrival (and, for identical times, the lower index) is kept.
        for i, r in enumerate(arrivals):
            if taken[i]:
                continue
            d = abs(q - r)
            if d > tol_ns:
                continue
            if best == -1 or d < best_d:
                best, best_d = i, d
        if best != -1:
            taken[best] = True
            result[j] = best
    return result


def calibration_bin(conf: float) -> int:
    """``min(floor(conf * 10), 9)`` in float64 (SPEC §6)."""
    return min(math.floor(float(conf) * 10.0), N_BINS - 1)


# --------------------------------------------------------------------------
# One station (SPEC §4–§7 counts)
# --------------------------------------------------------------------------


@dataclass
class BruteStation:
    """Brute-force counts for one station; same names and shapes as the kernel's ``StationResult``.

    ``residuals[(m, p, t)]`` is the sorted list of ``(residual_ns, conf)`` of the
    pairs of a from-scratch walk at ``residual_tol`` over the picks with
    ``conf >= grid[t]``.  ``floor_pairs`` lists ``(model, phase, residual_ns,
    conf)`` of the walk at ``residual_tol`` over all picks >= floor.
    """

    grid: list[float]
    fine: list[float]
    n_reference: np.ndarray
    emitted: np.ndarray
    matched: np.ndarray
    duplicates: np.ndarray
    swapped: np.ndarray
    unmatched_arrivals: np.ndarray
    extra: np.ndarray
    fine_emitted: np.ndarray
    fine_matched: np.ndarray
    cal_n: np.ndarray
    cal_hits: np.ndarray
    cal_conf: np.ndarray
    brier_sum: np.ndarray
    residuals: dict = field(default_factory=dict)
    floor_pairs: list = field(default_factory=list)


def score_station(
    arrival_phase,
    arrival_time,
    pick_model,
    pick_phase,
    pick_time,
    pick_conf,
    *,
    n_models: int,
    grid: Sequence[float],
    tol_ns: int,
    residual_tol_ns: int,
) -> BruteStation:
    """Every SPEC §4–§7 count of one station, by re-running the walk at each threshold."""
    grid = [float(g) for g in grid]
    floor = grid[0]
    fine = fine_grid(floor)
    M, P, T, F = n_models, 2, len(grid), len(fine)

    arrivals = {p: sorted(int(t) for ph, t in zip(arrival_phase, arrival_time) if int(ph) == p) for p in range(P)}
    # Picks below the floor take part in nothing (SPEC §2).
    picks = {
        (m, p): [
            (int(t), float(c))
            for mm, pp, t, c in zip(pick_model, pick_phase, pick_time, pick_conf)
            if int(mm) == m and int(pp) == p and float(c) >= floor
        ]
        for m in range(M)
        for p in range(P)
    }

    def survivors(m: int, p: int, theta: float) -> list[tuple[int, float]]:
        return [(t, c) for t, c in picks[(m, p)] if c >= theta]

    n_reference = np.array([len(arrivals[p]) for p in range(P)], dtype=np.int64)
    emitted = np.zeros((M, P, T), np.int64)
    matched = np.zeros((M, P, T), np.int64)
    duplicates = np.zeros((M, P, T), np.int64)
    swapped = np.zeros((M, P, T), np.int64)
    unmatched_arrivals = np.zeros((M, P, T), np.int64)
    extra = np.zeros((M, P, T), np.int64)
    fine_emitted = np.zeros((M, P, F), np.int64)
    fine_matched = np.zeros((M, P, F), np.int64)
    cal_n = np.zeros((M, P, N_BINS), np.int64)
    cal_hits = np.zeros((M, P, N_BINS), np.int64)
    cal_conf = np.zeros((M, P, N_BINS), np.float64)
    brier_sum = np.zeros((M, P), np.float64)
    residuals: dict = {}
    floor_pairs: list = []

    # The walk only depends on the set of surviving picks; memoising on that set
    # keeps the 981-point fine curve affordable without changing what is computed.
    memo: dict = {}

    def walk_memo(p: int, surv: list[tuple[int, float]], tol: int) -> list[int]:
        key = (p, tuple(surv), tol)
        if key not in memo:
            memo[key] = walk(arrivals[p], surv, tol)
        return memo[key]

    for m in range(M):
        for p in range(P):
            arr = arrivals[p]
            other = 1 - p
            for t, theta in enumerate(grid):
                surv = survivors(m, p, theta)
                taken_by = walk_memo(p, surv, tol_ns)
                emitted[m, p, t] = len(surv)
                matched[m, p, t] = sum(1 for i in taken_by if i != -1)
                extra[m, p, t] = sum(1 for i in taken_by if i == -1)  # picks in no pair
                taken_arrivals = {i for i in taken_by if i != -1}
                unmatched_arrivals[m, p, t] = sum(1 for i in range(len(arr)) if i not in taken_arrivals)
                # Duplicates: extra (unmatched) picks within tol of at least one
                # arrival of the same phase, taken or not.
                duplicates[m, p, t] = sum(
                    1
                    for (q, _c), i in zip(surv, taken_by)
                    if i == -1 and any(abs(q - r) <= tol_ns for r in arr)
                )
                # Swapped: arrivals of this phase not matched at θ by this phase's
                # picks, with a pick of the other phase (same model) >= θ within tol.
                other_surv = survivors(m, other, theta)
                swapped[m, p, t] = sum(
                    1
                    for i, r in enumerate(arr)
                    if i not in taken_arrivals and any(abs(q - r) <= tol_ns for q, _c in other_surv)
                )
                # Onset residuals: a separate walk at residual_tol, also from scratch.
                taken_r = walk_memo(p, surv, residual_tol_ns)
                residuals[(m, p, t)] = sorted(
                    (q - arr[i], c) for (q, c), i in zip(surv, taken_r) if i != -1
                )
            for k, theta in enumerate(fine):
                surv = survivors(m, p, theta)
                taken_by = walk_memo(p, surv, tol_ns)
                fine_emitted[m, p, k] = len(surv)
                fine_matched[m, p, k] = sum(1 for i in taken_by if i != -1)
            # Calibration: every pick >= floor, hit = in a pair of the tol walk
            # over all picks >= floor.
            allp = picks[(m, p)]
            hits = walk_memo(p, allp, tol_ns)
            for (_q, c), i in zip(allp, hits):
                hit = 1 if i != -1 else 0
                b = calibration_bin(c)
                cal_n[m, p, b] += 1
                cal_hits[m, p, b] += hit
                cal_conf[m, p, b] += c
                brier_sum[m, p] += (c - hit) ** 2
            taken_r = walk_memo(p, allp, residual_tol_ns)
            for (q, c), i in zip(allp, taken_r):
                if i != -1:
                    floor_pairs.append((m, p, q - arr[i], c))

    return BruteStation(
        grid=grid,
        fine=fine,
        n_reference=n_reference,
        emitted=emitted,
        matched=matched,
        duplicates=duplicates,
        swapped=swapped,
        unmatched_arrivals=unmatched_arrivals,
        extra=extra,
        fine_emitted=fine_emitted,
        fine_matched=fine_matched,
        cal_n=cal_n,
        cal_hits=cal_hits,
        cal_conf=cal_conf,
        brier_sum=brier_sum,
        residuals=residuals,
        floor_pairs=sorted(floor_pairs),
    )


def score_station_with(options, *arrays, n_models: int) -> BruteStation:
    """:func:`score_station` with grid and tolerances read off an ``Options``-like object."""
    return score_station(
        *arrays,
        n_models=n_models,
        grid=list(options.grid),
        tol_ns=int(options.tol_ns),
        residual_tol_ns=int(options.residual_tol_ns),
    )


def ns(seconds) -> np.ndarray:
    """Seconds → int64 ns, rounded (0.3 s is 299999999.99999994 ns in float64)."""
    return np.round(np.asarray(seconds, dtype=np.float64) * 1e9).astype(np.int64)


# --------------------------------------------------------------------------
# Detection rates (SPEC §4), scalars
# --------------------------------------------------------------------------


def _ratio(num: int, den: int) -> float:
    # One correctly rounded division of two integers; NaN when den == 0.
    return NAN if den == 0 else int(num) / int(den)


def recall(matched: int, n_reference: int) -> float:
    return _ratio(matched, n_reference)


def precision_lb(matched: int, emitted: int, n_reference: int) -> float:
    """matched / emitted; NaN when nothing was emitted, and when there is no reference arrival (SPEC §4:
    nothing to bound)."""
    if n_reference == 0:
        return NAN
    return _ratio(matched, emitted)


def f1_lb(matched: int, n_reference: int, emitted: int) -> float:
    """2·matched / (n_reference + emitted); 0 when nothing matched; NaN when n_reference = 0."""
    if n_reference == 0:
        return NAN
    if matched == 0:
        return 0.0
    return (2 * int(matched)) / (int(n_reference) + int(emitted))


def extra_rate(emitted: int, matched: int, n_reference: int) -> float:
    return _ratio(emitted - matched, n_reference)


def duplicate_rate(duplicates: int, matched: int) -> float:
    return _ratio(duplicates, matched)


def swap_rate(swapped_p: int, swapped_s: int, n_reference_p: int, n_reference_s: int) -> float:
    return _ratio(swapped_p + swapped_s, n_reference_p + n_reference_s)


# --------------------------------------------------------------------------
# Onset time (SPEC §5): exact arithmetic on integer ns, one rounding at the end
# --------------------------------------------------------------------------

_NS = 10**9


def _exact_median(sorted_values: list) -> Fraction:
    n = len(sorted_values)
    mid = n // 2
    if n % 2 == 1:
        return Fraction(sorted_values[mid])
    # Even count: the mean of the two middle values.
    return Fraction(sorted_values[mid - 1] + sorted_values[mid], 2)


QUANTILE_NAMES = ("p10", "p90", "iqr")


def _exact_quantile(sorted_values: list, q: Fraction) -> Fraction:
    # SPEC §5: linear between order statistics at h = (n - 1) q (the median's convention at q = 1/2).
    h = (len(sorted_values) - 1) * q
    lo = math.floor(h)
    if h == lo:
        return Fraction(sorted_values[lo])
    return sorted_values[lo] + (h - lo) * (sorted_values[lo + 1] - sorted_values[lo])


def timing_stats(residual_ns: Sequence[int], tol: float) -> dict:
    """SPEC §5 statistics of a set of residuals given in integer ns; ``tol`` in seconds."""
    e = sorted(int(x) for x in residual_ns)
    n = len(e)
    out: dict = {"n_pairs": n}
    if n == 0:
        for name in TIMING_NAMES[1:] + QUANTILE_NAMES:
            out[name] = NAN
        return out
    out["p10"] = float(_exact_quantile(e, Fraction(1, 10)) / _NS)
    out["p90"] = float(_exact_quantile(e, Fraction(9, 10)) / _NS)
    out["iqr"] = float((_exact_quantile(e, Fraction(3, 4)) - _exact_quantile(e, Fraction(1, 4))) / _NS)
    abs_e = sorted(abs(x) for x in e)
    out["mae"] = float(Fraction(sum(abs_e), n * _NS))
    out["rmse"] = math.sqrt(Fraction(sum(x * x for x in e), n * _NS * _NS))
    out["medae"] = float(_exact_median(abs_e) / _NS)
    out["bias"] = float(_exact_median(e) / _NS)
    mean = Fraction(sum(e), n)
    out["residual_mean"] = float(mean / _NS)
    if n < 2:
        out["residual_std"] = NAN
    else:
        ss = sum((Fraction(x) - mean) ** 2 for x in e)
        out["residual_std"] = math.sqrt(ss / (n - 1) / (_NS * _NS))
    # Residuals in seconds are ns / 1e9 (SPEC §1); compare in seconds as SPEC §5 does.
    sec = [x / 1e9 for x in e]
    out["gross_error_rate"] = sum(1 for x in sec if abs(x) > tol) / n
    for name, w in WITHIN:
        out[name] = sum(1 for x in sec if abs(x) <= w) / n
    return out


# --------------------------------------------------------------------------
# Calibration (SPEC §6)
# --------------------------------------------------------------------------


def reliability(cal_n: Sequence[int], cal_conf: Sequence[float], cal_hits: Sequence[int], *, n_reference: int):
    """Per bin: n, mean_conf, observed_lb (NaN for empty bins; observed_lb NaN in every bin without reference
    arrivals, SPEC §4 — n and mean_conf are the model's own and stay)."""
    n = [int(x) for x in cal_n]
    mean_conf = [NAN if nb == 0 else float(c) / nb for nb, c in zip(n, cal_conf)]
    observed = [NAN if nb == 0 or n_reference == 0 else int(h) / nb for nb, h in zip(n, cal_hits)]
    return n, mean_conf, observed


def ece(cal_n: Sequence[int], cal_conf: Sequence[float], cal_hits: Sequence[int], *, n_reference: int) -> float:
    """Σ over non-empty bins of (n_b / N)·|mean_conf_b − observed_b|, in exact arithmetic; NaN without picks
    or without reference arrivals (SPEC §4)."""
    N = sum(int(x) for x in cal_n)
    if N == 0 or n_reference == 0:
        return NAN
    total = Fraction(0)
    for nb, c, h in zip(cal_n, cal_conf, cal_hits):
        nb = int(nb)
        if nb == 0:
            continue
        mean_conf = Fraction(float(c)) / nb
        observed = Fraction(int(h), nb)
        total += Fraction(nb, N) * abs(mean_conf - observed)
    return float(total)


def brier(brier_sum: float, n_total: int, *, n_reference: int) -> float:
    """mean((conf − hit)²); NaN without picks or without reference arrivals (SPEC §4)."""
    return NAN if n_total == 0 or n_reference == 0 else float(brier_sum) / int(n_total)


# --------------------------------------------------------------------------
# Curves and their readings (SPEC §7)
# --------------------------------------------------------------------------


def default_budget(n_reference: int, emitted_at_floor: Sequence[int]) -> int:
    """min(n_reference, the smallest emitted-at-floor over the dataset's models)."""
    return min([int(n_reference)] + [int(e) for e in emitted_at_floor])


def recall_at_budget(fine_emitted: Sequence[int], fine_matched: Sequence[int], n_reference: int, budget) -> float:
    """Recall linearly interpolated at ``budget`` on the (emitted, recall) points."""
    if n_reference == 0:
        return NAN
    # Equal emitted means the same surviving picks, hence the same matched: take once.
    points: dict[int, int] = {}
    for e, m in zip(fine_emitted, fine_matched):
        e, m = int(e), int(m)
        if e in points:
            assert points[e] == m, "equal emitted with different matched: not a prefix curve"
        points[e] = m
    xs = sorted(points)
    b = Fraction(budget)
    if not xs or b < xs[0] or b > xs[-1]:
        return NAN
    for x0, x1 in zip(xs, xs[1:] + [None]):
        if b == x0:
            return Fraction(points[x0], n_reference).__float__()
        if x1 is not None and x0 < b < x1:
            r0 = Fraction(points[x0], n_reference)
            r1 = Fraction(points[x1], n_reference)
            return float(r0 + (r1 - r0) * (b - x0) / (x1 - x0))
    raise AssertionError("unreachable")


def best_threshold(thresholds, f1, recall_, precision_):
    """The θ of highest f1 (lowest θ on ties, NaN ignored) and the readings there."""
    best = None
    for i in range(len(thresholds)):
        if math.isnan(f1[i]):
            continue
        # thresholds ascend; '>' keeps the first (lowest) θ among equal f1.
        if best is None or f1[i] > f1[best]:
            best = i
    if best is None:
        return (NAN, NAN, NAN, NAN)
    return (float(thresholds[best]), float(f1[best]), float(recall_[best]), float(precision_[best]))


def best_on_edge(thresholds, best, lowest_conf):
    """SPEC §7 as written: the best is the lowest or highest threshold searched, or below the lowest
    confidence the model emitted (``inf`` when it emitted nothing); False without a best (NaN)."""
    if math.isnan(best):
        return False
    return bool(best == thresholds[0] or best == thresholds[-1] or best < lowest_conf)


def average_precision(fine_emitted: Sequence[int], fine_matched: Sequence[int], n_reference: int) -> float:
    """Σ_k (recall_k − recall_{k+1})·precision_k over thresholds ascending, recall_{K+1} = 0."""
    if n_reference == 0:
        return NAN
    K = len(fine_emitted)
    matched = [int(m) for m in fine_matched] + [0]  # recall_{K+1} = 0
    total = Fraction(0)
    for k in range(K):
        if int(fine_emitted[k]) == 0:
            continue  # precision undefined; the term counts 0
        if matched[k] == matched[k + 1]:
            continue  # recall_k − recall_{k+1} = 0: the term is exactly 0 (skipped for speed only)
        recall_step = Fraction(matched[k] - matched[k + 1], n_reference)
        prec = Fraction(matched[k], int(fine_emitted[k]))
        total += recall_step * prec
    return float(total)
