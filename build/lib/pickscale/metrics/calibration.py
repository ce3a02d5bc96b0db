"""Calibration of SPEC §6: reliability bins, expected calibration error and Brier score.

A pick's outcome ``hit`` is 1 when it is in a pair of the detection matching
(``tol``).  Against a bulletin the observed frequency is a lower bound (an
unmatched pick may be a real, unmarked arrival), hence ``observed_lb``,
``ece_lb`` and ``brier_lb``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .detection import ratio, where_reference

__all__ = ["reliability", "ece", "brier"]


def _with_bin(n_reference: ArrayLike) -> NDArray[Any]:
    # n_reference has no bin axis: give it one to broadcast against the bins (the last axis).
    return np.asarray(n_reference)[..., None]


def reliability(cal_n: ArrayLike, cal_conf: ArrayLike, cal_hits: ArrayLike, n_reference: ArrayLike | None = None,
                ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """Per bin: ``n``, ``mean_conf`` = Σconf / n and ``observed_lb`` = Σhit / n.

    Empty bins have n = 0 and NaN elsewhere.  Perfect calibration:
    ``observed == mean_conf`` in every bin.  With ``n_reference`` (one per
    leading cell, no bin axis), ``observed_lb`` is NaN where it is 0 (SPEC §4):
    without reference arrivals no pick can be a hit.  ``n`` and ``mean_conf``
    are the model's own and stay.

    Examples
    --------
    >>> n, c, o = reliability([2, 0], [1.5, 0.0], [1, 0])
    >>> n.tolist(), c.tolist(), o.tolist()
    ([2, 0], [0.75, nan], [0.5, nan])
    >>> reliability([2, 0], [1.5, 0.0], [0, 0], n_reference=0)[2].tolist()
    [nan, nan]
    """
    n = np.asarray(cal_n, dtype=np.int64)
    observed = ratio(cal_hits, n)
    if n_reference is not None:
        observed = where_reference(observed, _with_bin(n_reference))
    return n, ratio(cal_conf, n), observed


def ece(cal_n: ArrayLike, cal_conf: ArrayLike, cal_hits: ArrayLike, n_reference: ArrayLike | None = None,
        ) -> NDArray[np.float64]:
    """Expected calibration error over the last (bin) axis.

    ``ece = Σ_b (n_b / N) · |mean_conf_b − observed_b|`` over non-empty bins;
    range [0, 1], perfect 0; NaN when N = 0, and, with ``n_reference`` (no bin
    axis), where it is 0 (SPEC §4).  References: Naeini et al. (2015), AAAI;
    Guo et al. (2017), ICML.

    Examples
    --------
    >>> round(float(ece([2, 2], [0.2, 1.8], [0, 2])), 12)
    0.1
    >>> float(ece([2, 2], [0.2, 1.8], [0, 0], n_reference=0))
    nan
    """
    n, mean_conf, observed = reliability(cal_n, cal_conf, cal_hits)
    total = n.sum(axis=-1)
    weight = ratio(n, total[..., None])
    term = np.where(n > 0, weight * np.abs(mean_conf - observed), 0.0)
    out = np.where(total == 0, np.nan, term.sum(axis=-1))
    return out if n_reference is None else where_reference(out, n_reference)


def brier(brier_sum: ArrayLike, n_total: ArrayLike, n_reference: ArrayLike | None = None) -> NDArray[np.float64]:
    """Brier score ``mean((conf − hit)²)``; range [0, 1], perfect 0; NaN without picks.

    With ``n_reference``, also NaN where it is 0 (SPEC §4): every hit would be 0
    for want of arrivals, not for the picks' sake.  Reference: Brier (1950),
    Monthly Weather Review.

    Examples
    --------
    >>> float(brier(0.5, 4))
    0.125
    >>> float(brier(0.5, 4, n_reference=0))
    nan
    """
    out = ratio(brier_sum, n_total)
    return out if n_reference is None else where_reference(out, n_reference)
