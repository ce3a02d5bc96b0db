"""Event detection (SPEC §19) from each event's K highest detection levels: numpy, broadcasting.

``levels`` has the phase axis and the rank axis last (``(..., 2, K)``: per phase the K highest levels,
descending).  An arrival is matched at grid threshold index ``t`` exactly when its level is ``> t``.

Examples
--------
Three events, one model, K = 4 (the hand-worked case of SPEC §19): 5, 4 and 3 of five P arrivals matched
at the shared threshold (grid index 0), all of them at levels 1 or 2:

>>> lv = np.zeros((3, 2, 4), np.int16)
>>> lv[0, 0] = [2, 2, 1, 1]; lv[1, 0] = [2, 1, 1, 1]; lv[2, 0] = [2, 1, 1, 0]
>>> detected_curve(lv, 4, 2).tolist()
[[True, False], [True, False], [False, False]]
>>> detected_shared(lv, 4, (0, 0)).tolist()
[True, True, False]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["kth_level", "detected_curve", "count_curve", "detected_shared", "count_detected"]


def kth_level(levels: np.ndarray, k: int) -> np.ndarray:
    """The ``k``-th highest level over both phases (``(...)``): the event is detected at ``t`` when it is ``> t``.

    The K highest of the union of two phases' K highest are the K highest of all the event's arrivals.
    """
    # (levels fit int16, and so do their negatives: no wider copy of every event's levels)
    shape = np.shape(levels)
    flat = np.asarray(levels).reshape(*shape[:-2], shape[-2] * shape[-1])
    if k <= 0 or flat.shape[-1] < k:
        return np.zeros(flat.shape[:-1], np.int64)
    return -np.partition(-flat, k - 1, axis=-1)[..., k - 1].astype(np.int64)


def detected_curve(levels: np.ndarray, k: int, n_thresholds: int) -> np.ndarray:
    """``(..., T)`` booleans: detected at each grid threshold (one θ for both phases, as every curve)."""
    return kth_level(levels, k)[..., None] > np.arange(n_thresholds)


def count_curve(levels: np.ndarray, k: int, n_thresholds: int, scored: np.ndarray, group: np.ndarray | None,
                n_groups: int) -> np.ndarray:
    """:func:`count_detected` of :func:`detected_curve`, from a histogram of each event's K-th level: the events
    detected at threshold ``t`` are those whose K-th level is ``> t`` (no events × thresholds table).

    ``levels`` (dataset, event, model, 2, K).  Returns (dataset, model, T), or (dataset, model, T, group).

    Examples
    --------
    >>> lv = np.zeros((1, 3, 1, 2, 4), np.int16)
    >>> lv[0, 0, 0, 0] = [2, 2, 1, 1]; lv[0, 1, 0, 0] = [2, 1, 1, 1]; lv[0, 2, 0, 0] = [2, 1, 1, 0]
    >>> count_curve(lv, 4, 2, np.ones((1, 3), bool), None, 0).tolist()
    [[[2, 0]]]
    """
    kth = np.minimum(kth_level(levels, k), n_thresholds)  # (dataset, event, model): detected at t < kth
    nd, ne, nm = kth.shape
    g = np.zeros((nd, ne), np.int64) if group is None else np.where(group >= 0, group, n_groups)
    width = n_groups + 1 if group is not None else 1
    # One histogram bin per (dataset, model, group, K-th level), each scored event counted once.
    key = ((np.arange(nd)[:, None, None] * nm + np.arange(nm)[None, None, :]) * width + g[:, :, None]) \
        * (n_thresholds + 1) + kth
    hist = np.bincount(key[np.broadcast_to(scored[:, :, None], key.shape)],
                       minlength=nd * nm * width * (n_thresholds + 1)).reshape(nd, nm, width, n_thresholds + 1)
    # detected at t: K-th level > t, i.e. the levels t + 1 … T summed
    above = np.cumsum(hist[..., :0:-1], axis=-1)[..., ::-1]  # (dataset, model, group, T)
    above = np.moveaxis(above, 2, -1)
    return above[..., 0].astype(np.int64) if group is None else above[..., :n_groups].astype(np.int64)


def detected_shared(levels: np.ndarray, k: int, indices: Sequence[int]) -> np.ndarray:
    """``(...)`` booleans: detected at the shared threshold, each phase's arrivals at that phase's (SPEC §2).

    ``indices``: the grid index of P's and of S's threshold.  Each phase's count of matched arrivals among its
    K highest levels is that count capped at K, and a sum of two counts capped at K reaches K exactly when the
    uncapped sum does: exact.
    """
    lv = np.asarray(levels)
    n = (lv[..., 0, :] > indices[0]).sum(axis=-1) + (lv[..., 1, :] > indices[1]).sum(axis=-1)
    return n >= k


def count_detected(detected: np.ndarray, scored: np.ndarray, group: np.ndarray | None, n_groups: int) -> np.ndarray:
    """Events detected, summed over the event axis (axis 1 of ``(dataset, event, ...)``), per group when given.

    ``scored`` (dataset, event): the event has a scored arrival (only those count); ``group`` (dataset, event)
    its group code (−1: none).  Returns ``(dataset, ...)``, or ``(dataset, ..., group)``.
    """
    extra = (1,) * (detected.ndim - 2)
    ok = detected & scored.reshape(scored.shape + extra)
    if group is None:
        return ok.sum(axis=1).astype(np.int64)
    member = group[..., None] == np.arange(n_groups)  # (dataset, event, group)
    member = member.reshape(member.shape[:2] + extra + (n_groups,))
    return (ok[..., None] & member).sum(axis=1).astype(np.int64)
