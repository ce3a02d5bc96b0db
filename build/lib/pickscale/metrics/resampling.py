"""Bootstrap over stations: intervals of the SPEC metrics, vectorised over draws (SPEC §12).

A draw resamples the S scored stations of a dataset with replacement: its
weights are the multinomial counts ``w`` (S of them, summing to S) of how
often each station was drawn.  A metric of a draw is the metric of the
weighted station totals ``W @ counts`` (draws × stations times stations ×
cells), computed with the same kernels as the estimate — no re-scoring, no
loop over draws.  Integer weights make each draw exactly the metric of the
resampled set of stations.

A metric that is a ratio of station sums gets the symmetric bootstrap-t
interval (:func:`studentized_interval`, Hall 1988): its draws studentized by
the ratio's delta-method standard error, recomputed in each draw from three
more weighted sums; the others the percentile interval
(:func:`percentile_interval`).

The kernels here are pure numpy; :mod:`pickscale.results.bootstrap` applies
them to a results Dataset.
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .calibration import ece
from .detection import f1, precision, recall

__all__ = [
    "dataset_generator",
    "station_weights",
    "weighted",
    "percentile_interval",
    "linear_quantile",
    "ratio_t_draws",
    "studentized_interval",
    "detection_draws",
    "mae_draws",
    "ece_draws",
    "grid_recall_at_budget",
]


def dataset_generator(seed: int, dataset: str) -> np.random.Generator:
    """The generator of one dataset's draws (SPEC §12): ``default_rng([seed, *sha256(name in UTF-8)])``.

    Its entropy is ``seed`` followed by the 32 bytes of the SHA-256 digest of the dataset's name in
    UTF-8, each byte an integer 0–255: a dataset's draws depend on the seed and its own name only —
    never on the other datasets, their order, or the process (no ``hash()``, salted per process).

    Examples
    --------
    >>> a = dataset_generator(0, "ds1").integers(0, 2**32, 3)
    >>> b = np.random.default_rng([0, *hashlib.sha256("ds1".encode("utf-8")).digest()]).integers(0, 2**32, 3)
    >>> bool((a == b).all()), bool((a == dataset_generator(0, "ds2").integers(0, 2**32, 3)).all())
    (True, False)
    """
    digest = hashlib.sha256(str(dataset).encode("utf-8")).digest()
    return np.random.default_rng([int(seed), *digest])


def station_weights(n_stations: int, draws: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """``draws × n_stations`` multinomial counts: how often each station is drawn, each row summing to S.

    Examples
    --------
    >>> w = station_weights(3, 4, np.random.default_rng(0))
    >>> w.shape, w.sum(axis=1).tolist()
    ((4, 3), [3, 3, 3, 3])
    >>> station_weights(1, 2, np.random.default_rng(0)).tolist()
    [[1], [1]]
    """
    if n_stations == 0:
        return np.zeros((draws, 0), dtype=np.int64)
    p = np.full(n_stations, 1.0 / n_stations)
    return rng.multinomial(n_stations, p, size=draws).astype(np.int64)


def weighted(weights: NDArray[np.integer], counts: ArrayLike) -> NDArray[np.float64]:
    """Station totals of every draw: ``weights @ counts`` over the first (station) axis of ``counts``.

    ``counts`` has shape ``(S, ...)``; the result ``(draws, ...)`` in float64 (exact for integer
    counts while the totals stay below 2**53).

    Examples
    --------
    >>> weighted(np.array([[2, 0], [1, 1]]), np.array([[1, 10], [3, 30]])).tolist()
    [[2.0, 20.0], [4.0, 40.0]]
    """
    c = np.asarray(counts, dtype=np.float64)
    flat = c.reshape(c.shape[0], -1)
    out = np.asarray(weights, dtype=np.float64) @ flat
    return out.reshape((weights.shape[0], *c.shape[1:]))


def percentile_interval(draws: ArrayLike, estimate: ArrayLike, full: ArrayLike,
                        level: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The percentile interval of ``draws`` (first axis), placed at ``estimate``.

    ``lo, hi`` = numpy's ``"linear"`` quantiles of the draws at ``(1 − level)/2`` and
    ``(1 + level)/2``, over the draws where the metric is defined (NaN draws left out), each moved by
    ``estimate − full``: ``full`` is the same estimator at the observed stations (every weight 1).
    Where the estimator is the estimate's own (the detection rates) the move is exactly 0; for MAE and
    ``ece_lb`` it is a rounding difference; for ``recall_at_budget`` the fine curve's estimate minus the
    grid's (SPEC §12).  NaN where the estimate is NaN or no draw is defined.

    Examples
    --------
    >>> lo, hi = percentile_interval(np.array([0.1, 0.2, 0.3, 0.4, 0.5]), 0.3, 0.3, 0.5)
    >>> float(lo), float(hi)
    (0.2, 0.4)
    """
    x = np.asarray(draws, dtype=np.float64)
    est = np.asarray(estimate, dtype=np.float64)
    shift = est - np.asarray(full, dtype=np.float64)
    qs = [(1.0 - level) / 2.0, (1.0 + level) / 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells: NaN, said in the docstring
        q = np.nanquantile(x, qs, axis=0, method="linear") if x.shape[0] else np.full((2, *x.shape[1:]), np.nan)
    # x + 0.0 is x: where the estimator is the estimate's own, the quantiles are kept bit for bit.
    shift = np.where(np.isnan(shift), 0.0, shift)
    lo, hi = q[0] + shift, q[1] + shift
    bad = np.isnan(est)
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


def linear_quantile(x: ArrayLike, q: float) -> NDArray[np.float64]:
    """The ``q`` quantile of ``x`` over its first axis, NaN left out, by linear interpolation (SPEC §12).

    With the n defined values sorted, ``x₍₀₎ ≤ … ≤ x₍ₙ₋₁₎``: ``h = (n − 1) q``, ``j = ⌊h⌋``, ``g = h − j``;
    the quantile is ``x₍ⱼ₎`` where ``g = 0`` or ``x₍ⱼ₊₁₎ = x₍ⱼ₎``, else ``x₍ⱼ₎ + g (x₍ⱼ₊₁₎ − x₍ⱼ₎)`` (Hyndman
    & Fan's type 7, numpy's ``"linear"``); ``+inf`` values are ordered last (and give ``+inf`` next to
    them).  NaN where no value is defined.

    Examples
    --------
    >>> linear_quantile(np.array([0.0, 10.0, 20.0, 30.0, np.nan]), 0.5).tolist()
    15.0
    >>> linear_quantile(np.array([[1.0, 0.0], [np.inf, np.nan]]), 0.5).tolist()
    [inf, 0.0]
    """
    v = np.sort(np.asarray(x, dtype=np.float64), axis=0)  # NaN last
    n = (~np.isnan(v)).sum(axis=0)
    h = np.maximum(n - 1, 0) * float(q)
    j = np.floor(h).astype(np.int64)
    g = h - j
    lo = np.take_along_axis(v, j[None], axis=0)[0]
    hi = np.take_along_axis(v, np.minimum(j + 1, np.maximum(n - 1, 0))[None], axis=0)[0]
    with np.errstate(invalid="ignore"):
        out = np.where((g == 0) | (hi == lo), lo, lo + g * (hi - lo))
    return np.where(n == 0, np.nan, out)


def ratio_t_draws(weights: NDArray[np.integer], numerator: ArrayLike,
                  denominator: ArrayLike) -> dict[str, NDArray[np.float64]]:
    """The ratio of station sums, its delta-method standard error and the studentized draws (SPEC §12).

    ``numerator`` a, ``denominator`` b: ``(S, ...)`` per-station counts (broadcasting).  At the observed
    stations: ``ratio`` R̂ = Σa / Σb, residuals rᵢ = aᵢ − R̂ bᵢ, ``se`` = √(Σ rᵢ²) / Σb.  In a draw with
    weights w: R(w) = Σ wa / Σ wb, se(w) = √(Σ wᵢ (aᵢ − R(w) bᵢ)²) / Σ wb (computed as
    √(Σ w r² − 2δ Σ w r b + δ² Σ w b²) / Σ wb, δ = R(w) − R̂), and ``t`` = δ / se(w): 0 where δ = 0,
    ±inf where se(w) = 0 < |δ|, NaN where Σ wb = 0.  ``low``, ``high``: the least and the greatest
    station ratio aᵢ / bᵢ (over bᵢ > 0), between which every R(w) lies.

    Examples
    --------
    >>> out = ratio_t_draws(np.array([[1, 1], [2, 0]]), np.array([1, 0]), np.array([2, 2]))
    >>> float(out["ratio"]), round(float(out["se"]), 6), out["t"].tolist(), float(out["low"]), float(out["high"])
    (0.25, 0.176777, [0.0, inf], 0.0, 0.5)
    """
    a = np.asarray(numerator, dtype=np.float64)
    b = np.asarray(denominator, dtype=np.float64)
    a, b = np.broadcast_arrays(a, b)
    total_b = b.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r_hat = np.where(total_b == 0, np.nan, a.sum(axis=0) / total_b)
        r = a - r_hat * b
        se = np.sqrt((r * r).sum(axis=0)) / total_b
        per_station = np.where(b > 0, a / b, np.nan)
    defined = b > 0
    low = np.where(defined.any(axis=0), np.where(defined, per_station, np.inf).min(axis=0), np.nan)
    high = np.where(defined.any(axis=0), np.where(defined, per_station, -np.inf).max(axis=0), np.nan)
    a_w, b_w = weighted(weights, a), weighted(weights, b)
    r0 = np.where(np.isnan(r), 0.0, r)
    rr, rb, bb = weighted(weights, r0 * r0), weighted(weights, r0 * b), weighted(weights, b * b)
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = a_w / b_w - r_hat
        var = np.maximum(rr - 2.0 * delta * rb + delta * delta * bb, 0.0)
        t = delta / (np.sqrt(var) / b_w)
    t = np.where(delta == 0, 0.0, t)
    t = np.where(b_w == 0, np.nan, t)
    return {"ratio": r_hat, "se": se, "t": t, "low": low, "high": high}


def studentized_interval(weights: NDArray[np.integer], numerator: ArrayLike, denominator: ArrayLike,
                         estimate: ArrayLike, level: float, *, scale: float = 1.0, defined: ArrayLike | None = None,
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The symmetric bootstrap-t interval of a ratio of station sums (SPEC §12; Hall 1988).

    ``R̂ ± q · se``, with ``q`` the ``level`` quantile (:func:`linear_quantile`) of ``|t|`` over the
    draws (:func:`ratio_t_draws`; only where ``defined``, ``(draws, ...)``, is true: the draws where the
    metric is defined), each end clipped to the station ratios' range ``[low, high]``; then times
    ``scale`` and moved by ``estimate − scale · R̂`` (exactly 0 when the estimate is the ratio itself).
    Zero width where ``se = 0``; NaN where the estimate or R̂ is NaN or no draw is defined.

    Examples
    --------
    >>> w = np.array([[1, 1, 1, 1], [2, 1, 0, 1], [0, 1, 2, 1], [1, 0, 1, 2]])
    >>> lo, hi = studentized_interval(w, np.array([3, 1, 0, 2]), np.array([4, 2, 1, 3]), 0.6, 0.5)
    >>> round(float(lo), 6), round(float(hi), 6)
    (0.520796, 0.679204)
    """
    out = ratio_t_draws(weights, numerator, denominator)
    t = np.abs(out["t"])
    if defined is not None:
        t = np.where(np.asarray(defined, dtype=bool), t, np.nan)
    q = linear_quantile(t, level) if t.shape[0] else np.full(t.shape[1:], np.nan)
    r_hat, se = out["ratio"], out["se"]
    with np.errstate(invalid="ignore"):
        half = np.where(se == 0, 0.0, q * se)
    lo = np.minimum(np.maximum(r_hat - half, out["low"]), out["high"])
    hi = np.maximum(np.minimum(r_hat + half, out["high"]), out["low"])
    est = np.asarray(estimate, dtype=np.float64)
    shift = est - scale * r_hat
    bad = np.isnan(est) | np.isnan(r_hat) | np.isnan(q)
    # x + 0.0 is x: where the estimate is the ratio itself, the ends are kept bit for bit.
    return np.where(bad, np.nan, lo * scale + shift), np.where(bad, np.nan, hi * scale + shift)


def detection_draws(weights: NDArray[np.integer], matched: ArrayLike, emitted: ArrayLike,
                    n_reference: ArrayLike) -> dict[str, NDArray[np.float64]]:
    """recall, precision_lb and f1_lb of every draw from per-station counts.

    ``matched``, ``emitted``: ``(S, ...)``; ``n_reference``: ``(S, ...)`` broadcasting against them.

    Examples
    --------
    >>> w = np.array([[1, 1], [2, 0]])
    >>> out = detection_draws(w, np.array([1, 3]), np.array([2, 4]), np.array([2, 4]))
    >>> out["recall"].tolist(), out["precision_lb"].tolist()
    ([0.6666666666666666, 0.5], [0.6666666666666666, 0.5])
    """
    m, e, n = weighted(weights, matched), weighted(weights, emitted), weighted(weights, n_reference)
    n = np.broadcast_to(n, m.shape)
    # A draw without arrivals of the phase has nothing to bound (SPEC §4): NaN, left out of the quantiles.
    return {"recall": recall(m, n), "precision_lb": precision(m, e, n), "f1_lb": f1(m, n, e)}


def mae_draws(weights: NDArray[np.integer], abs_sum_ns: ArrayLike, n_pairs: ArrayLike) -> NDArray[np.float64]:
    """MAE (s) of every draw: the pairs' |e| weighted by their station's multiplicity.

    ``abs_sum_ns``: per station the sum of |e| in integer ns; ``n_pairs``: the pairs per station.

    Examples
    --------
    >>> mae_draws(np.array([[1, 1], [0, 2]]), np.array([100_000_000, 500_000_000]), np.array([1, 2])).round(12).tolist()
    [0.2, 0.25]
    """
    total, n = weighted(weights, abs_sum_ns), weighted(weights, n_pairs)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = total / 1e9 / n
    return np.where(n == 0, np.nan, out)


def ece_draws(weights: NDArray[np.integer], cal_n: ArrayLike, cal_conf: ArrayLike, cal_hits: ArrayLike,
              n_reference: ArrayLike | None = None) -> NDArray[np.float64]:
    """``ece_lb`` of every draw from the per-station calibration bins (``(S, ..., bin)``); with
    ``n_reference`` (``(S, ...)``, no bin axis), NaN in a draw without reference arrivals (SPEC §4).

    Examples
    --------
    >>> w = np.array([[1, 1]])
    >>> round(float(ece_draws(w, np.array([[2, 0], [0, 2]]), np.array([[0.2, 0], [0, 1.8]]),
    ...                        np.array([[0, 0], [0, 2]]))[0]), 12)
    0.1
    """
    n = None if n_reference is None else weighted(weights, n_reference)
    return ece(weighted(weights, cal_n), weighted(weights, cal_conf), weighted(weights, cal_hits), n)


def grid_recall_at_budget(emitted: ArrayLike, matched: ArrayLike, n_reference: ArrayLike,
                          budget: ArrayLike) -> NDArray[np.float64]:
    """SPEC §7's reading of recall at ``budget`` picks, on the sweep grid instead of the fine curve.

    ``emitted``, ``matched``: ``(..., T)`` totals at the grid thresholds (ascending θ, so emitted does
    not increase); ``n_reference``, ``budget``: ``(...)``.  The points (emitted_t, recall_t), sorted by
    emitted, linearly interpolated at ``budget``; NaN outside the emitted range or when n_reference = 0.
    Equal emitted means the same surviving picks, so the same recall: repeats need no care.

    Examples
    --------
    >>> float(grid_recall_at_budget(np.array([10, 6, 2]), np.array([5, 4, 2]), 10, 8))
    0.45
    >>> grid_recall_at_budget(np.array([10, 6, 2]), np.array([5, 4, 2]), 10, 12)
    array(nan)
    """
    x = np.asarray(emitted, dtype=np.float64)[..., ::-1]  # ascending emitted
    y = np.asarray(matched, dtype=np.float64)[..., ::-1]
    b = np.asarray(budget, dtype=np.float64)
    n = np.asarray(n_reference, dtype=np.float64)
    x, y = np.broadcast_arrays(x, y)
    b, n = np.broadcast_arrays(b, n)
    b = np.broadcast_to(b, x.shape[:-1])
    n = np.broadcast_to(n, x.shape[:-1])
    t = x.shape[-1]
    k = np.clip((x < b[..., None]).sum(axis=-1), 0, t - 1)  # first point with emitted >= budget
    km = np.clip(k - 1, 0, t - 1)
    xk, yk = np.take_along_axis(x, k[..., None], -1)[..., 0], np.take_along_axis(y, k[..., None], -1)[..., 0]
    xm, ym = np.take_along_axis(x, km[..., None], -1)[..., 0], np.take_along_axis(y, km[..., None], -1)[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        between = ym + (b - xm) * (yk - ym) / (xk - xm)
        value = np.where(xk == b, yk, between) / n
    inside = (b >= x[..., 0]) & (b <= x[..., -1]) & (n > 0)
    return np.where(inside, value, np.nan)
