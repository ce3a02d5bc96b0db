"""Calibration of SPEC §6: reliability bins, expected calibration error and Brier score.

A pick's outcome ``hit`` is 1 when it is in a pair of the detection matching
(``tol``).  Against a bulletin the observed frequency is a lower bound (an
unmatched pick may be a real, unmarked arrival), hence ``observed_lb``,
``ece_lb`` and ``brier_lb``.
"""

from __future__ import annotations

import numpy as np

from .detection import ratio

__all__ = ["reliability", "ece", "brier"]


def reliability(cal_n, cal_conf, cal_hits) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per bin: ``n``, ``mean_conf`` = Σconf / n and ``observed_lb`` = Σhit / n.

    Empty bins have n = 0 and NaN elsewhere.  Perfect calibration:
    ``observed == mean_conf`` in every bin.

    Examples
    --------
    >>> n, c, o = reliability([2, 0], [1.5, 0.0], [1, 0])
    >>> n.tolist(), c.tolist(), o.tolist()
    ([2, 0], [0.75, nan], [0.5, nan])
    """
    n = np.asarray(cal_n, dtype=np.int64)
    return n, ratio(cal_conf, n), ratio(cal_hits, n)


def ece(cal_n, cal_conf, cal_hits) -> np.ndarray:
    """Expected calibration error over the last (bin) axis.

    ``ece = Σ_b (n_b / N) · |mean_conf_b − observed_b|`` over non-empty bins;
    range [0, 1], perfect 0; NaN when N = 0.  References: Naeini et al. (2015),
    AAAI; Guo et al. (2017), ICML.

    Examples
    --------
    >>> round(float(ece([2, 2], [0.2, 1.8], [0, 2])), 12)
    0.1
    """
    n, mean_conf, observed = reliability(cal_n, cal_conf, cal_hits)
    total = n.sum(axis=-1)
    weight = ratio(n, total[..., None])
    term = np.where(n > 0, weight * np.abs(mean_conf - observed), 0.0)
    return np.where(total == 0, np.nan, term.sum(axis=-1))


def brier(brier_sum, n_total) -> np.ndarray:
    """Brier score ``mean((conf − hit)²)``; range [0, 1], perfect 0; NaN without picks.

    Reference: Brier (1950), Monthly Weather Review.

    Examples
    --------
    >>> float(brier(0.5, 4))
    0.125
    """
    return ratio(brier_sum, n_total)
