"""Onset-time statistics of SPEC §5, from the residuals of the ``residual_tol`` matching.

Residuals are pick − arrival, computed as an integer nanosecond difference and
only then converted to float64 seconds.  Every statistic is computed on the
residuals sorted ascending, so the result is the same whatever order the pairs
arrived in (SPEC §9); medians are exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .grid import GRID_NAMES, residual_grid
from .level_sums import LevelSums, encode, level_sums, sum_terms
from .ranks import nested_order_statistics

__all__ = ["TIMING_NAMES", "QUANTILE_NAMES", "GROUP_NAMES", "WITHIN", "ALONG", "timing_stats", "timing_sweep",
           "residual_quantile", "pair_statistics", "residual_mode", "CONCENTRATED_SHARE", "CONCENTRATED_RATIO",
           "CONCENTRATED_MIN_PAIRS", "concentrated", "lay_out", "levels_of", "SUM_TERMS"]

#: The bounds (s) of ``fraction_within``: the labels of its dim ``within``.
WITHIN: tuple[float, ...] = (0.1, 0.25, 0.5)
#: The statistics, in table order.  ``fraction_within`` is one array along ``within`` (:data:`WITHIN`, its
#: last axis; :data:`ALONG`); every other statistic is one number.
TIMING_NAMES: tuple[str, ...] = (
    "n_pairs", "mae", "rmse", "medae", "bias", "residual_mean", "residual_std", "gross_error_rate", "fraction_within",
)
#: The statistics with an axis of their own, last: its dim and its labels.
ALONG: dict[str, tuple[str, tuple[float, ...]]] = {"fraction_within": ("within", WITHIN)}
#: The residual quantiles of the timing table (SPEC §5): the 10th and 90th percentiles of e and its
#: interquartile range p75 − p25.  Not in the sweep table (its columns are :data:`TIMING_NAMES`).
QUANTILE_NAMES: tuple[str, ...] = ("p10", "p90", "iqr")
#: The statistics per group of arrivals (SPEC §14): those of the sweep, without the quantiles.
GROUP_NAMES: tuple[str, ...] = TIMING_NAMES
#: The labels of ``residual_sums``' last axis (dim ``residual_term``): per level, the counts and the exact sums
#: the statistics are made of (:func:`pickscale.metrics.level_sums.encode`), kept so that they merge exactly.
SUM_TERMS: tuple[str, ...] = sum_terms(WITHIN)


#: The quantiles of e each set needs (percent): the median (bias) and those of :data:`QUANTILE_NAMES`.
_PERCENTS = (10, 25, 75, 90)


def _quantile_x100(x_ns: NDArray[np.int64], percent: int) -> int:
    """100 × the ``percent``-th percentile (in ns) of sorted integers: ``100·x[lo] + r·(x[lo+1] − x[lo])``.

    Linear interpolation between order statistics (Hyndman & Fan type 7, numpy's ``"linear"``) at
    ``h = (n − 1)·percent/100``, with ``h`` split exactly in integers (``lo = h`` rounded down, ``r/100`` its
    fraction): the result is an exact integer, divided once (correctly rounded) by the caller.
    """
    h100 = (x_ns.size - 1) * percent
    lo, r = divmod(h100, 100)
    base = 100 * int(x_ns[lo])
    return base if r == 0 else base + r * (int(x_ns[lo + 1]) - int(x_ns[lo]))


def residual_quantile(residual_ns: ArrayLike, percent: int) -> float:
    """The ``percent``-th percentile of residuals (integer ns, any order), in seconds; NaN when empty.

    SPEC §5: linear interpolation between the sorted residuals ``x_0 <= … <= x_{n-1}`` at
    ``h = (n − 1)·percent/100`` — ``x_lo + (h − lo)·(x_{lo+1} − x_lo)`` with ``lo = floor(h)`` (numpy's
    default ``"linear"`` method; at 50 it is the median of SPEC §5, the mean of the two middle values of
    an even count).  Computed exactly on integer nanoseconds and rounded once.

    Examples
    --------
    >>> e = [-300_000_000, -100_000_000, 0, 200_000_000, 900_000_000]
    >>> residual_quantile(e, 10), residual_quantile(e, 90), residual_quantile(e, 50)
    (-0.22, 0.62, 0.0)
    """
    x = np.sort(np.asarray(residual_ns, dtype=np.int64))
    if x.size == 0:
        return float("nan")
    return _quantile_x100(x, int(percent)) / 10**11


def _ranks(n: int) -> list[int]:
    """The order statistics (0-based ranks) a set of ``n`` residuals needs: its median's and its quantiles'."""
    out = {(n - 1) // 2, n // 2}
    for percent in _PERCENTS:
        lo, r = divmod((n - 1) * percent, 100)
        out.update((lo, lo + 1) if r else (lo,))
    return sorted(out)


def order_queries(sums: LevelSums) -> list[tuple[str, int, int]]:
    """The order statistics the statistics of every threshold need: ``(kind, j, rank)``, ``kind`` ``"e"``
    (of e: the quantiles and bias) or ``"a"`` (of |e|: medae), ``j`` a threshold whose set of pairs differs
    from the one before (the others read the same statistics), ``rank`` 0-based among the pairs of level > j."""
    n_at = sums.at_threshold("count")
    out = []
    for j in _sets(n_at):
        n = n_at[j]
        out += [("e", j, r) for r in _ranks(n)]
        out += [("a", j, r) for r in sorted({(n - 1) // 2, n // 2})]
    return out


def _sets(n_at: list[int]) -> list[int]:
    """The thresholds whose set of pairs is not empty and not the one of the threshold before."""
    return [j for j in range(len(n_at)) if n_at[j] and (j == 0 or n_at[j] != n_at[j - 1])]


def finish(sums: LevelSums, values: dict[tuple[str, int, int], int]) -> dict[str, NDArray[Any]]:
    """SPEC §5 statistics (and :data:`QUANTILE_NAMES`) at every threshold from the pairs' :class:`LevelSums` and
    the order statistics :func:`order_queries` asks for (``values[(kind, j, rank)]``, integer ns).

    The means are exact: the quotient of exact integers rounded once (rmse and residual_std: the square root of
    the exactly rounded mean square and variance).
    """
    n_at = sums.at_threshold("count")
    T = len(n_at)
    out: dict[str, NDArray[Any]] = {name: np.full((T, *_along(name)), np.nan) for name in TIMING_NAMES + QUANTILE_NAMES}
    out["n_pairs"] = np.array(n_at, dtype=np.int64)
    sets = _sets(n_at)
    if not sets:
        return out
    abs_sum, signed, square = sums.at_threshold("abs"), sums.at_threshold("signed"), sums.at_threshold("square")
    gross = np.cumsum(sums.gross[:0:-1])[::-1]
    within = np.cumsum(sums.within[:0:-1], axis=0)[::-1]
    rows: dict[int, dict[str, float]] = {}
    for j in sets:
        n, s_abs, s_e, s_sq = n_at[j], abs_sum[j], signed[j], square[j]
        lo, hi = (n - 1) // 2, n // 2
        rows[j] = {
            "mae": s_abs / (n * 10**9),
            "rmse": math.sqrt(s_sq / (n * 10**18)),
            "residual_mean": s_e / (n * 10**9),
            "residual_std": math.sqrt((n * s_sq - s_e * s_e) / (n * (n - 1) * 10**18)) if n >= 2 else np.nan,
            # SPEC §5: the median of an even count is the mean of the two middle values (in seconds).
            "bias": _median(values[("e", j, lo)], values[("e", j, hi)], n),
            "medae": _median(values[("a", j, lo)], values[("a", j, hi)], n),
        }
        x100 = {}
        for percent in _PERCENTS:
            q_lo, r = divmod((n - 1) * percent, 100)
            base = 100 * values[("e", j, q_lo)]
            x100[percent] = base if r == 0 else base + r * (values[("e", j, q_lo + 1)] - values[("e", j, q_lo)])
        rows[j].update(p10=x100[10] / 10**11, p90=x100[90] / 10**11, iqr=(x100[75] - x100[25]) / 10**11)
    current: dict[str, float] = {}
    for j in range(T):
        if not n_at[j]:
            continue
        current = rows.get(j, current)  # (the set of the last threshold that dropped a pair)
        for name, value in current.items():
            out[name][j] = value
        out["gross_error_rate"][j] = gross[j] / n_at[j]
        out["fraction_within"][j] = within[j] / n_at[j]
    return out


def _sweep(e_ns: NDArray[np.int64], level: NDArray[np.int64], n_levels: int, tol: float,
           sums: LevelSums | None = None) -> dict[str, NDArray[Any]]:
    """SPEC §5 statistics (and :data:`QUANTILE_NAMES`) of the pairs of level > j, for every j < ``n_levels``:
    :func:`finish` of their :class:`LevelSums` (``sums``, when already made) and of the order statistics read
    from one sort of e and one of |e| (:func:`nested_order_statistics`)."""
    if sums is None:
        sums = level_sums(e_ns, level, n_levels, tol=tol, within=WITHIN)
    queries = order_queries(sums)
    values: dict[tuple[str, int, int], int] = {}
    for kind, x in (("e", e_ns), ("a", np.abs(e_ns))):
        mine = [q for q in queries if q[0] == kind]
        if not mine:
            continue
        # (the order among equal values does not matter: only values are read)
        order = np.argsort(x, kind="quicksort")
        at = nested_order_statistics(level[order], n_levels, np.array([q[1] for q in mine], dtype=np.int64),
                                     np.array([q[2] for q in mine], dtype=np.int64))
        values.update(zip(mine, (int(v) for v in x[order][at])))
    return finish(sums, values)


def _median(lo_ns: int, hi_ns: int, n: int) -> float:
    """The median (s) of a set whose middle order statistics are ``lo_ns`` and ``hi_ns`` (equal for odd ``n``)."""
    if n % 2:
        return lo_ns / 1e9
    return (lo_ns / 1e9 + hi_ns / 1e9) / 2.0


def timing_stats(residual_ns: ArrayLike, *, tol: float) -> dict[str, Any]:
    """SPEC §5 onset-time statistics of one set of residuals.

    Parameters
    ----------
    residual_ns
        Residuals (pick − arrival) in integer nanoseconds, any order.
    tol
        Detection tolerance in seconds: ``gross_error_rate`` is the fraction
        with ``abs(e) > tol`` (strictly).

    Returns
    -------
    dict
        ``n_pairs`` (int); ``mae`` = mean |e|; ``rmse`` = sqrt(mean e²); ``medae`` =
        median |e|; ``bias`` = median e (early < 0 < late); ``residual_mean`` = mean e;
        ``residual_std`` (ddof = 1, NaN when n_pairs < 2); ``gross_error_rate``;
        ``fraction_within`` = the fractions with |e| <= 0.1, 0.25, 0.5 s (inclusive), an array along
        :data:`WITHIN`; ``p10``, ``p90`` = 10th and 90th percentiles of e and
        ``iqr`` = p75 − p25 (:func:`residual_quantile`).  All in seconds or
        fractions; NaN when n_pairs = 0.  The means are exact (sums in integer ns, each quotient rounded
        once), so they do not depend on the order of the pairs, and ten residuals of 0.1 s have a mae of
        exactly 0.1.  Perfect: 0 for the errors, 1 for ``fraction_within``.  Reference:
        Münchmeyer et al. (2022) for MAE/RMSE/outlier fractions.

    Examples
    --------
    >>> s = timing_stats([-100_000_000, 100_000_000, 300_000_000, 600_000_000], tol=0.5)
    >>> round(s["mae"], 3), round(s["bias"], 3), s["gross_error_rate"], s["fraction_within"].tolist()
    (0.275, 0.2, 0.25, [0.5, 0.5, 0.75])
    >>> timing_stats([100_000_000] * 10, tol=0.5)["mae"]
    0.1
    """
    e_ns = np.asarray(residual_ns, dtype=np.int64)
    swept = _sweep(e_ns, np.ones(e_ns.size, dtype=np.int64), 1, float(tol))
    out: dict[str, Any] = {name: swept[name][0] for name in TIMING_NAMES + QUANTILE_NAMES}
    out["n_pairs"] = int(out["n_pairs"])
    for name in out:
        if name not in ALONG and name != "n_pairs":
            out[name] = float(out[name])
    return out


def timing_sweep(residual_ns: ArrayLike, conf: ArrayLike, thresholds: ArrayLike, *,
                 tol: float) -> dict[str, NDArray[Any]]:
    """SPEC §5 statistics (and :data:`QUANTILE_NAMES`) at every threshold: over the pairs with ``conf >= θ``.

    Each pair is given the number of thresholds its confidence clears; the exact sums are kept per such
    level and the order statistics of every threshold's set read from one sort
    (:func:`pickscale.metrics.ranks.nested_order_statistics`), so the cost is that of sorting the pairs,
    not thresholds × pairs.  Each statistic is an array along the thresholds (``fraction_within``:
    thresholds × :data:`WITHIN`).

    Examples
    --------
    >>> out = timing_sweep([100_000_000, -200_000_000], [0.9, 0.4], [0.3, 0.5, 0.95], tol=0.5)
    >>> out["n_pairs"].tolist(), out["mae"].round(3).tolist(), out["fraction_within"].shape
    ([2, 1, 0], [0.15, 0.1, nan], (3, 3))
    """
    residual_ns = np.asarray(residual_ns, dtype=np.int64)
    conf = np.asarray(conf, dtype=np.float64)
    thresholds = np.asarray(thresholds, dtype=np.float64)
    rank = np.argsort(thresholds, kind="stable")
    level = levels_of(conf, thresholds[rank])
    swept = _sweep(residual_ns, level, thresholds.size, float(tol))
    back = np.argsort(rank, kind="stable")
    return {name: values[back] for name, values in swept.items()}


def levels_of(conf: ArrayLike, grid: NDArray[np.float64]) -> NDArray[np.int64]:
    """Each pair's level on the ascending thresholds ``grid``: conf >= θ_j exactly when more than j of them
    are <= conf.

    Examples
    --------
    >>> levels_of([0.1, 0.5, 0.95], np.array([0.3, 0.5, 0.9])).tolist()
    [0, 2, 3]
    """
    return np.searchsorted(grid, np.asarray(conf, dtype=np.float64), side="right").astype(np.int64)


def _along(name: str) -> tuple[int, ...]:
    """The shape of one value of statistic ``name``: ``(len(WITHIN),)`` for ``fraction_within``, else ``()``."""
    return (len(ALONG[name][1]),) if name in ALONG else ()


#: SPEC §5, "Concentrated residuals": flagged when the most common residual holds more than this share of the
#: pairs at the shared threshold …
CONCENTRATED_SHARE = 0.2
#: … and at least this many times as many pairs as the next most common residual (a spike, not the peak of
#: a tight distribution on a sample grid) …
CONCENTRATED_RATIO = 3
#: … among at least this many pairs.
CONCENTRATED_MIN_PAIRS = 20


def residual_mode(residual_ns: ArrayLike) -> dict[str, int]:
    """The most common residual (integer ns; the smallest of equally common ones) and how often it and the
    next most common one occur (SPEC §5, "Concentrated residuals").

    Examples
    --------
    >>> residual_mode([0, 0, 0, 10_000_000, -10_000_000, 0, 10_000_000])
    {'n': 7, 'residual_ns': 0, 'count': 4, 'second': 2}
    """
    values, counts = np.unique(np.asarray(residual_ns, dtype=np.int64), return_counts=True)
    if not values.size:
        return {"n": 0, "residual_ns": 0, "count": 0, "second": 0}
    top = int(np.argmax(counts))  # the first of the largest counts: the smallest such value
    rest = np.delete(counts, top)
    return {"n": int(counts.sum()), "residual_ns": int(values[top]), "count": int(counts[top]),
            "second": int(rest.max()) if rest.size else 0}


def concentrated(mode: dict[str, int]) -> bool:
    """Whether residuals with this :func:`residual_mode` are concentrated on one value (SPEC §5).

    Examples
    --------
    >>> concentrated({"n": 100, "residual_ns": 0, "count": 72, "second": 5})
    True
    >>> concentrated({"n": 100, "residual_ns": 0, "count": 40, "second": 24})  # a tight peak on a 10 ms grid
    False
    """
    return (mode["n"] >= CONCENTRATED_MIN_PAIRS and mode["count"] > CONCENTRATED_SHARE * mode["n"]
            and mode["count"] >= CONCENTRATED_RATIO * mode["second"])


def pair_statistics(residual_ns: ArrayLike, conf: ArrayLike, group: ArrayLike, *, thresholds: ArrayLike, tol: float,
                    threshold: float, n_groups: int) -> dict[str, Any]:
    """The statistics of one stream's pairs (one dataset, model and phase): SPEC §5 and §14.

    ``"sweep"``: :func:`timing_sweep` at every threshold; ``"mode"``: :func:`residual_mode` of the pairs at
    ``conf >= threshold``; ``"grid"``: :func:`pickscale.metrics.grid.residual_grid` of the same pairs;
    ``"by_group"``: with ``n_groups``, the
    :data:`GROUP_NAMES` of the pairs at ``conf >= threshold`` whose arrival is in each group (``group``:
    the arrival group's code, 0 … n_groups − 1), as (n_groups,) arrays (``fraction_within``: n_groups ×
    :data:`WITHIN`; NaN, n_pairs = 0, for a group without pairs); empty without groups.  Pairs in any order.

    Examples
    --------
    >>> out = pair_statistics([100_000_000, -200_000_000, 300_000_000], [0.9, 0.4, 0.8], [0, 1, 0],
    ...                       thresholds=[0.3, 0.5], tol=0.5, threshold=0.5, n_groups=2)
    >>> out["sweep"]["n_pairs"].tolist(), out["by_group"]["n_pairs"].tolist(), out["by_group"]["mae"].round(3).tolist()
    ([3, 2], [2, 0], [0.2, nan])
    """
    residual_ns = np.asarray(residual_ns, dtype=np.int64)
    conf = np.asarray(conf, dtype=np.float64)
    keep = conf >= threshold
    grid = np.sort(np.asarray(thresholds, dtype=np.float64))
    level = levels_of(conf, grid)
    sums = level_sums(residual_ns, level, grid.size, tol=tol, within=WITHIN)
    swept = _sweep(residual_ns, level, grid.size, float(tol), sums)
    back = np.argsort(np.argsort(np.asarray(thresholds, dtype=np.float64), kind="stable"), kind="stable")
    out: dict[str, Any] = {"sweep": {name: values[back] for name, values in swept.items()},
                           "mode": residual_mode(residual_ns[keep]), "grid": residual_grid(residual_ns[keep]),
                           "sums": encode(sums), "by_group": {}}
    if not n_groups:
        return out
    codes, res = np.asarray(group)[keep], residual_ns[keep]
    by_group = {name: np.full((n_groups, *_along(name)), np.nan) for name in GROUP_NAMES}
    by_group["n_pairs"] = np.zeros(n_groups, dtype=np.int64)
    for g in np.unique(codes):
        one = timing_stats(res[codes == g], tol=tol)
        for name in GROUP_NAMES:
            by_group[name][int(g)] = one[name]
    out["by_group"] = by_group
    return out


def lay_out(streams: dict[tuple[int, int, int], dict[str, Any]], *, shape: tuple[int, int], n_thresholds: int,
            n_groups: int, grouped: bool) -> dict[str, dict[str, NDArray[Any]]]:
    """Each stream's :func:`pair_statistics` placed on (dataset, model, phase[, threshold | group]).

    ``streams[(d, m, p)]``; ``shape`` = (datasets, models).  Where a stream has no pairs: NaN, n_pairs = 0 (and
    a mode of 0 pairs).  ``by_group`` is empty unless ``grouped``.  ``fraction_within`` has the axis
    ``within`` (:data:`ALONG`) last.

    Examples
    --------
    >>> one = pair_statistics([0, 0], [0.9, 0.9], [0, 0], thresholds=[0.5], tol=0.5, threshold=0.5, n_groups=0)
    >>> out = lay_out({(0, 1, 0): one}, shape=(1, 2), n_thresholds=1, n_groups=0, grouped=False)
    >>> out["sweep"]["n_pairs"][0, :, 0, 0].tolist(), out["mode"]["count"][0, :, 0].tolist()
    ([0, 2], [0, 2])
    """
    nd, nm = shape
    sweep = {name: np.full((nd, nm, 2, n_thresholds, *_along(name)), np.nan) for name in TIMING_NAMES + QUANTILE_NAMES}
    sweep["n_pairs"] = np.zeros((nd, nm, 2, n_thresholds), dtype=np.int64)
    by_group: dict[str, NDArray[Any]] = {}
    if grouped:
        by_group = {name: np.full((nd, nm, 2, n_groups, *_along(name)), np.nan) for name in GROUP_NAMES}
        by_group["n_pairs"] = np.zeros((nd, nm, 2, n_groups), dtype=np.int64)
    mode = {name: np.zeros((nd, nm, 2), dtype=np.int64) for name in ("n", "residual_ns", "count", "second")}
    grid = {name: np.zeros((nd, nm, 2), dtype=np.int64) for name in GRID_NAMES}  # SPEC §5, on a grid
    sums = {"residual_sums": np.zeros((nd, nm, 2, n_thresholds + 1, len(SUM_TERMS)), dtype=np.int64)}
    for (d, m, p), one in streams.items():
        for name, values in one["sweep"].items():
            sweep[name][d, m, p] = values
        for name, values in one["by_group"].items():
            by_group[name][d, m, p] = values
        for name, value in one["mode"].items():
            mode[name][d, m, p] = value
        for name, value in one.get("grid", {}).items():
            grid[name][d, m, p] = value
        if "sums" in one:
            sums["residual_sums"][d, m, p] = one["sums"]
    return {"sweep": sweep, "by_group": by_group, "mode": mode, "grid": grid, "sums": sums}
