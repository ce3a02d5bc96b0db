"""Onset-time statistics of SPEC §5, from the residuals of the ``residual_tol`` matching.

Residuals are pick − arrival, computed as an integer nanosecond difference and
only then converted to float64 seconds.  Every statistic is computed on the
residuals sorted ascending, so the result is the same whatever order the pairs
arrived in (SPEC §9); medians are exact.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TIMING_NAMES", "WITHIN", "timing_stats", "timing_sweep"]

#: Tolerances (s) of the ``within_*`` fractions.
WITHIN: tuple[float, ...] = (0.1, 0.25, 0.5)
#: The statistics, in table order.
TIMING_NAMES: tuple[str, ...] = (
    "n", "mae", "rmse", "medae", "bias", "mean", "std", "gross_error_rate",
) + tuple(f"within_{w:g}" for w in WITHIN)


def _median_sorted(x: np.ndarray) -> float:
    # SPEC §5: the median of an even count is the mean of the two middle values.
    n = x.size
    half = n // 2
    if n % 2:
        return float(x[half])
    return float((x[half - 1] + x[half]) / 2.0)


def _stats_sorted(e: np.ndarray, a: np.ndarray, tol: float) -> dict[str, float]:
    """Statistics of residuals ``e`` (sorted ascending) with ``a = sorted(abs(e))``."""
    n = e.size
    if n == 0:
        out = dict.fromkeys(TIMING_NAMES, np.nan)
        out["n"] = 0
        return out
    out = {
        "n": n,
        "mae": float(np.sum(a) / n),
        "rmse": float(np.sqrt(np.sum(e * e) / n)),
        "medae": _median_sorted(a),
        "bias": _median_sorted(e),
        "mean": float(np.sum(e) / n),
        "std": float(np.std(e, ddof=1)) if n >= 2 else np.nan,
        # a is sorted: counts are searchsorted positions.
        "gross_error_rate": float(n - np.searchsorted(a, tol, side="right")) / n,
    }
    for w in WITHIN:
        out[f"within_{w:g}"] = float(np.searchsorted(a, w, side="right")) / n
    return out


def timing_stats(residual_ns, *, tol: float) -> dict[str, float]:
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
        ``n`` (int); ``mae`` = mean |e|; ``rmse`` = sqrt(mean e²); ``medae`` =
        median |e|; ``bias`` = median e (early < 0 < late); ``mean``; ``std``
        (ddof = 1, NaN when n < 2); ``gross_error_rate``; ``within_0.1``,
        ``within_0.25``, ``within_0.5`` = fraction with |e| <= 0.1, 0.25, 0.5 s
        (inclusive).  All in seconds or fractions; NaN when n = 0.  Perfect:
        0 for the errors, 1 for the ``within_*`` fractions.  Reference:
        Münchmeyer et al. (2022) for MAE/RMSE/outlier fractions.

    Examples
    --------
    >>> s = timing_stats([-100_000_000, 100_000_000, 300_000_000, 600_000_000], tol=0.5)
    >>> round(s["mae"], 3), round(s["bias"], 3), s["gross_error_rate"], s["within_0.1"]
    (0.275, 0.2, 0.25, 0.5)
    """
    e = np.sort(np.asarray(residual_ns, dtype=np.int64)) / 1e9
    return _stats_sorted(e, np.sort(np.abs(e)), float(tol))


def timing_sweep(residual_ns, conf, thresholds, *, tol: float) -> dict[str, np.ndarray]:
    """SPEC §5 statistics at every threshold: over the pairs whose pick has ``conf >= θ``.

    One sort serves every threshold: masking a sorted array keeps it sorted.

    Examples
    --------
    >>> out = timing_sweep([100_000_000, -200_000_000], [0.9, 0.4], [0.3, 0.5, 0.95], tol=0.5)
    >>> out["n"].tolist(), out["mae"].round(3).tolist()
    ([2, 1, 0], [0.15, 0.1, nan])
    """
    residual_ns = np.asarray(residual_ns, dtype=np.int64)
    conf = np.asarray(conf, dtype=np.float64)
    by_e = np.lexsort((conf, residual_ns))
    e_sorted, e_conf = residual_ns[by_e] / 1e9, conf[by_e]
    abs_ns = np.abs(residual_ns)
    by_a = np.lexsort((conf, abs_ns))
    a_sorted, a_conf = abs_ns[by_a] / 1e9, conf[by_a]
    rows = []
    for theta in np.asarray(thresholds, dtype=np.float64):
        rows.append(_stats_sorted(e_sorted[e_conf >= theta], a_sorted[a_conf >= theta], float(tol)))
    out = {name: np.array([r[name] for r in rows], dtype=np.float64) for name in TIMING_NAMES}
    out["n"] = out["n"].astype(np.int64)
    return out
