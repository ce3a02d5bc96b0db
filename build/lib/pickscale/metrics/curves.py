"""Curves and their readings, SPEC §7: matched budget, own best threshold, average precision.

These read the fine curve (``emitted`` and ``matched`` at every ``k/1000``) or
the sweep grid of one (dataset, phase, model).
"""

from __future__ import annotations

from typing import SupportsInt

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .detection import ratio

__all__ = ["default_budget", "recall_at_budget", "recall_at_budget_along", "best_threshold", "best_threshold_along",
           "best_on_edge", "lowest_conf_bound", "average_precision"]

#: Elements of a curve array read at once by the ``*_along`` readings: their temporaries stay a few MB whatever
#: the number of curves (16,000 models give 32,000 fine curves of 1,000 points).
_BLOCK = 1 << 20


def default_budget(n_reference: SupportsInt, emitted_at_floor: ArrayLike) -> int:
    """Default matched budget: ``min(n_reference, min over models of emitted at the floor)``.

    As many picks as the analyst made arrivals, capped by what the least
    liberal model emits.

    Examples
    --------
    >>> default_budget(100, [250, 80, 400])
    80
    >>> default_budget(100, [250, 400])
    100
    """
    emitted = np.asarray(emitted_at_floor, dtype=np.int64)
    cap = int(emitted.min()) if emitted.size else 0
    return int(min(int(n_reference), cap))


def recall_at_budget(fine_emitted: ArrayLike, fine_matched: ArrayLike, n_reference: SupportsInt,
                     budget: float | None) -> float:
    """Recall read at ``budget`` picks on the fine curve, linearly interpolated.

    The curve's points ``(emitted_k, recall_k)`` are sorted by emitted, equal
    emitted taken once (equal emitted means the same surviving picks, so the
    same recall).  NaN when ``budget`` lies outside the curve's emitted range
    or n_reference = 0.  Range [0, 1], perfect 1.  At a matched budget a
    liberal model no longer gains recall by emitting more.

    Examples
    --------
    >>> float(recall_at_budget([10, 6, 2], [5, 4, 2], 10, 8))
    0.45
    >>> recall_at_budget([10, 6, 2], [5, 4, 2], 10, 12)
    nan
    """
    emitted = np.asarray(fine_emitted, dtype=np.int64)
    matched = np.asarray(fine_matched, dtype=np.int64)
    if int(n_reference) == 0 or emitted.size == 0 or budget is None or not np.isfinite(budget):
        return float("nan")
    x, first = np.unique(emitted, return_index=True)
    y = matched[first] / float(int(n_reference))  # a count: the same float either way
    if budget < x[0] or budget > x[-1]:
        return float("nan")
    return float(np.interp(float(budget), x.astype(np.float64), y))


def recall_at_budget_along(fine_emitted: ArrayLike, fine_matched: ArrayLike, n_reference: ArrayLike,
                           budget: ArrayLike) -> NDArray[np.float64]:
    """:func:`recall_at_budget` of every curve at once: the fine curves on the last axis, the rest broadcast.

    The same number as :func:`recall_at_budget` for each curve, bit for bit
    (the interpolation is ``np.interp``'s, on the two points around
    ``budget``: the largest distinct emitted at or below it and the smallest
    above, each with the matched count of its first point), without a Python
    step per curve.  NaN where :func:`recall_at_budget` is NaN (``budget``
    NaN included).

    Parameters
    ----------
    fine_emitted, fine_matched
        Counts on the fine curve, shape ``(..., F)``.
    n_reference, budget
        Broadcast against the leading axes ``(...)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(...)``, float64.

    Examples
    --------
    >>> recall_at_budget_along([[10, 6, 2], [10, 6, 2]], [[5, 4, 2], [5, 4, 2]], 10, [8, 12]).tolist()
    [0.45, nan]
    """
    emitted = np.asarray(fine_emitted, dtype=np.int64)
    matched = np.asarray(fine_matched, dtype=np.int64)
    n_ref, b = np.asarray(n_reference, dtype=np.int64), np.asarray(budget, dtype=np.float64)
    shape = np.broadcast_shapes(emitted.shape[:-1], matched.shape[:-1], n_ref.shape, b.shape)
    n_points = emitted.shape[-1]
    out = np.full(shape, np.nan)
    if n_points == 0 or out.size == 0:
        return out
    # One row per curve (views where the inputs have the full shape, as the results' fine curves do).
    emitted = np.broadcast_to(emitted, (*shape, n_points)).reshape(-1, n_points)
    matched = np.broadcast_to(matched, (*shape, n_points)).reshape(-1, n_points)
    n_ref, b = np.broadcast_to(n_ref, shape).ravel(), np.broadcast_to(b, shape).ravel()
    flat = out.reshape(-1)
    step = max(1, _BLOCK // n_points)
    for lo in range(0, flat.size, step):
        rows = slice(lo, lo + step)
        flat[rows] = _recall_at_budget_rows(emitted[rows], matched[rows], n_ref[rows], b[rows])
    return out


def _recall_at_budget_rows(emitted: NDArray[np.int64], matched: NDArray[np.int64], n_ref: NDArray[np.int64],
                           budget: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`recall_at_budget_along` of 2-D rows: ``np.interp`` on each row's sorted distinct emitted."""
    out = np.full(budget.shape, np.nan)
    at = budget[:, None]
    # NaN outside the curve's emitted range (NaN budgets compare False everywhere: outside too).
    inside = (n_ref != 0) & (emitted.min(axis=1) <= budget) & (budget <= emitted.max(axis=1))
    if not inside.any():
        return out
    # The points around the budget: x0 the largest distinct emitted <= budget, x1 the smallest above.
    x0 = np.where(emitted <= at, emitted, np.iinfo(np.int64).min).max(axis=1)
    x1 = np.where(emitted > at, emitted, np.iinfo(np.int64).max).min(axis=1)
    between = inside & (x0 != budget)  # else np.interp gives y0 (budget on a point, or on the last one)
    x1 = np.where(between, x1, x0)
    # Each with the matched count of its first point (np.unique's return_index: equal emitted taken once).
    rows, n = np.arange(budget.size), n_ref.astype(np.float64)
    first0, first1 = np.argmax(emitted == x0[:, None], axis=1), np.argmax(emitted == x1[:, None], axis=1)
    x0f, x1f = x0.astype(np.float64), x1.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):  # rows not between (or outside): discarded below
        y0, y1 = matched[rows, first0] / n, matched[rows, first1] / n
        slope = (y1 - y0) / (x1f - x0f)
        value = slope * (budget - x0f) + y0  # np.interp's own expression, in the same order
    out[inside] = np.where(between, value, y0)[inside]
    return out


def best_threshold(thresholds: ArrayLike, f1: ArrayLike, recall: ArrayLike,
                   precision: ArrayLike) -> tuple[float, float, float, float]:
    """Each model's own best threshold on the sweep grid: the highest ``f1_lb``.

    The lowest such θ on ties; NaN rows ignored; all NaN when every f1 is NaN.
    Returns ``(best_threshold, f1_at_best, recall_at_best, precision_at_best)``.

    Examples
    --------
    >>> best_threshold([0.1, 0.2, 0.3], [0.5, 0.7, 0.7], [0.9, 0.8, 0.6], [0.3, 0.6, 0.8])
    (0.2, 0.7, 0.8, 0.6)
    """
    f1 = np.asarray(f1, dtype=np.float64)
    valid = ~np.isnan(f1)
    if not valid.any():
        return (np.nan, np.nan, np.nan, np.nan)
    best = int(np.argmax(np.where(valid, f1, -np.inf)))  # argmax: first (lowest θ) on ties
    return (
        float(np.asarray(thresholds, dtype=np.float64)[best]),
        float(f1[best]),
        float(np.asarray(recall, dtype=np.float64)[best]),
        float(np.asarray(precision, dtype=np.float64)[best]),
    )


def best_threshold_along(thresholds: ArrayLike, f1: ArrayLike, recall: ArrayLike, precision: ArrayLike,
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """:func:`best_threshold` of every curve at once: the sweep grid on the last axis, the rest broadcast.

    The same four numbers as :func:`best_threshold` for each curve (the
    highest ``f1_lb``, the lowest θ on ties, NaN rows ignored, all NaN when
    every f1 is NaN), each an array of the leading shape.

    Examples
    --------
    >>> best, f1_at, recall_at, precision_at = best_threshold_along(
    ...     [0.1, 0.2, 0.3], [[0.5, 0.7, 0.7], [np.nan] * 3], [0.9, 0.8, 0.6], [0.3, 0.6, 0.8])
    >>> best.tolist(), f1_at.tolist(), recall_at.tolist(), precision_at.tolist()
    ([0.2, nan], [0.7, nan], [0.8, nan], [0.6, nan])
    """
    grid = np.asarray(thresholds, dtype=np.float64)
    f = np.asarray(f1, dtype=np.float64)
    r, p = np.asarray(recall, dtype=np.float64), np.asarray(precision, dtype=np.float64)
    shape = np.broadcast_shapes(grid.shape, f.shape, r.shape, p.shape)
    if shape[-1] == 0:
        empty = np.full(shape[:-1], np.nan)
        return empty, empty.copy(), empty.copy(), empty.copy()
    valid = ~np.isnan(f)
    best = np.argmax(np.where(valid, f, -np.inf), axis=-1)  # argmax: first (lowest θ) on ties
    best = np.broadcast_to(best[..., None], (*shape[:-1], 1))
    found = np.broadcast_to(valid.any(axis=-1), shape[:-1])

    def at_best(values: NDArray[np.float64]) -> NDArray[np.float64]:
        picked = np.take_along_axis(np.broadcast_to(values, shape), best, axis=-1)[..., 0]
        return np.where(found, picked, np.nan)

    return at_best(grid), at_best(f), at_best(r), at_best(p)


def best_on_edge(thresholds: ArrayLike, best: ArrayLike) -> NDArray[np.bool_]:
    """SPEC §7: the own best threshold is the lowest or the highest threshold searched.

    ``best`` is :func:`best_threshold`'s first value, any shape; False where it
    is NaN (no best threshold: nothing is on an edge).  The third case of
    SPEC §7 -- the best below the lowest confidence the model emitted -- needs
    no test of its own: below that confidence every threshold keeps every
    pick, so the counts and f1 are equal there and the tie rule (the lowest
    θ) has already chosen ``thresholds[0]``.

    Examples
    --------
    >>> best_on_edge([0.1, 0.2, 0.3], [0.1, 0.2, 0.3, np.nan]).tolist()
    [True, False, True, False]
    """
    grid = np.asarray(thresholds, dtype=np.float64)
    b = np.asarray(best, dtype=np.float64)
    return (b == grid[0]) | (b == grid[-1])  # NaN compares False: no best, no edge


def lowest_conf_bound(thresholds: ArrayLike, emitted: ArrayLike, fine_thresholds: ArrayLike,
                      fine_emitted: ArrayLike) -> float:
    """What the counts say of the lowest confidence a model emitted: every pick has ``conf >=`` this.

    The highest threshold of the grid or the fine curve at which ``emitted``
    still equals ``emitted`` at the floor (``thresholds[0]``): no pick lies
    below it, and at the next threshold of either one at least one pick is
    lost, so the lowest confidence lies within one step (0.001 on the fine
    curve) above it.  NaN when the model emitted nothing.  Exact without a
    count of its own: the run keeps no minimum confidence, and needs none
    (SPEC §7).

    Examples
    --------
    >>> float(lowest_conf_bound([0.02, 0.04, 0.06], [5, 5, 3], [0.05, 0.051, 0.052], [5, 4, 4]))
    0.05
    >>> lowest_conf_bound([0.02, 0.04], [0, 0], [0.02], [0])
    nan
    """
    grid, e = np.asarray(thresholds, dtype=np.float64), np.asarray(emitted, dtype=np.int64)
    fine, fe = np.asarray(fine_thresholds, dtype=np.float64), np.asarray(fine_emitted, dtype=np.int64)
    total = int(e[0])
    if total == 0:
        return float("nan")
    # Both curves are non-increasing in θ: the thresholds keeping every pick are a prefix of each.
    keep = np.concatenate([grid[e == total], fine[fe == total]])
    return float(keep.max())


def average_precision(fine_emitted: ArrayLike, fine_matched: ArrayLike, n_reference: ArrayLike) -> NDArray[np.float64]:
    """Average precision ``ap_lb`` over the fine curve (last axis, thresholds ascending).

    ``ap = Σ_k (recall_k − recall_{k+1}) · precision_k`` with
    ``recall_{K+1} = 0`` and terms with ``emitted_k = 0`` counting 0; NaN when
    n_reference = 0.  Range [0, 1], perfect 1.  A threshold-free summary of the
    precision–recall trade-off, as in PASCAL VOC / COCO detection benchmarks.

    Examples
    --------
    >>> float(average_precision([4, 2, 0], [2, 2, 0], 4))
    0.5
    """
    emitted = np.asarray(fine_emitted)
    matched = np.asarray(fine_matched)
    n_ref = np.asarray(n_reference, dtype=np.float64)
    lead = np.broadcast_shapes(emitted.shape[:-1], matched.shape[:-1], n_ref.shape)
    k = emitted.shape[-1]
    rows = int(np.prod(lead, dtype=np.int64))
    if rows * k <= _AP_BLOCK:
        return _average_precision(emitted, matched, n_ref)
    # Many curves (16,000 models × 981 fine thresholds: 32 M values, ~10 temporaries of 256 MB each): a block of
    # curves at a time. Each curve's value is computed by the same operations on the same numbers, and its sum
    # runs along its own row either way: the same bits as all at once.
    e2 = np.broadcast_to(emitted, (*lead, k)).reshape(rows, k)
    m2 = np.broadcast_to(matched, (*lead, k)).reshape(rows, k)
    n2 = np.broadcast_to(n_ref, lead).reshape(rows)
    out = np.empty(rows, dtype=np.float64)
    step = max(1, _AP_BLOCK // max(k, 1))
    for start in range(0, rows, step):
        stop = start + step
        out[start:stop] = _average_precision(e2[start:stop], m2[start:stop], n2[start:stop])
    return out.reshape(lead)


#: Values of the fine curves :func:`average_precision` works on at once (a few MB per temporary).
_AP_BLOCK = 1 << 19


def _average_precision(fine_emitted: ArrayLike, fine_matched: ArrayLike, n_ref: NDArray[np.float64]
                       ) -> NDArray[np.float64]:
    emitted = np.asarray(fine_emitted, dtype=np.float64)
    matched = np.asarray(fine_matched, dtype=np.float64)
    rec = ratio(matched, n_ref[..., None])
    nxt = np.concatenate([rec[..., 1:], np.zeros_like(rec[..., :1])], axis=-1)
    prec = np.where(emitted > 0, ratio(matched, emitted), 0.0)
    terms = np.where(emitted > 0, (rec - nxt) * prec, 0.0)
    return np.where(n_ref == 0, np.nan, terms.sum(axis=-1))
