"""Curves and their readings, SPEC §7: matched budget, own best threshold, average precision.

These read the fine curve (``emitted`` and ``matched`` at every ``k/1000``) or
the sweep grid of one (dataset, phase, model).
"""

from __future__ import annotations

from typing import SupportsInt

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .detection import ratio

__all__ = ["default_budget", "recall_at_budget", "best_threshold", "best_on_edge", "lowest_conf_bound",
           "average_precision"]


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
    emitted = np.asarray(fine_emitted, dtype=np.float64)
    matched = np.asarray(fine_matched, dtype=np.float64)
    n_ref = np.asarray(n_reference, dtype=np.float64)
    rec = ratio(matched, n_ref[..., None])
    nxt = np.concatenate([rec[..., 1:], np.zeros_like(rec[..., :1])], axis=-1)
    prec = np.where(emitted > 0, ratio(matched, emitted), 0.0)
    terms = np.where(emitted > 0, (rec - nxt) * prec, 0.0)
    return np.where(n_ref == 0, np.nan, terms.sum(axis=-1))
