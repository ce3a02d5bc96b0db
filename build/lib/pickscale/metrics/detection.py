"""Detection rates of SPEC §4, from the additive counts at each threshold.

Every rate is NaN when its denominator is 0 — never silently 0.  ``_lb``
(lower bound) applies to every rate whose numerator or denominator involves
unmatched picks when the reference is not exhaustive: an unmatched pick may be
a real arrival the analyst never marked.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["recall", "precision", "f1", "extra_rate", "duplicate_rate", "swap_rate", "ratio", "where_reference"]


def ratio(numerator: ArrayLike, denominator: ArrayLike) -> NDArray[np.float64]:
    """``numerator / denominator`` in float64, NaN where the denominator is 0.

    Examples
    --------
    >>> ratio([1, 1], [2, 0]).tolist()
    [0.5, nan]
    """
    num = np.asarray(numerator, dtype=np.float64)
    den = np.asarray(denominator, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    return np.where(den == 0, np.nan, out)


def where_reference(value: ArrayLike, n_reference: ArrayLike) -> NDArray[np.float64]:
    """``value`` where there are reference arrivals, NaN where ``n_reference`` = 0 (SPEC §4).

    A (dataset, phase) without reference arrivals — a P-only bulletin's S — has
    nothing to score the picks against: an unmatched pick there is not a false
    pick but an unlabelled one, so a rate that reads the reference would be a
    bound of nothing.  ``n_reference`` broadcasts against ``value``.

    Examples
    --------
    >>> where_reference([0.0, 0.5], [0, 4]).tolist()
    [nan, 0.5]
    """
    values = np.asarray(value, dtype=np.float64)
    return np.where(np.asarray(n_reference) == 0, np.nan, values)


def recall(matched: ArrayLike, n_reference: ArrayLike) -> NDArray[np.float64]:
    """Fraction of reference arrivals recovered.

    ``recall = matched / n_reference``; range [0, 1], perfect 1; NaN when
    n_reference = 0.  Exact against a bulletin: every reference arrival either
    has a pick within ``tol`` or not.  Reference: Münchmeyer et al. (2022),
    doi:10.1029/2021JB023499.

    Examples
    --------
    >>> float(recall(3, 4))
    0.75
    """
    return ratio(matched, n_reference)


def precision(matched: ArrayLike, emitted: ArrayLike, n_reference: ArrayLike | None = None) -> NDArray[np.float64]:
    """``precision_lb = matched / emitted``; range [0, 1], perfect 1; NaN when nothing emitted.

    A lower bound against a bulletin (an unmatched pick may be a real,
    unmarked arrival); exact with ``--exhaustive``.  With ``n_reference``, also
    NaN where it is 0 (SPEC §4, :func:`where_reference`): without reference
    arrivals there is nothing to bound.

    Examples
    --------
    >>> float(precision(3, 6))
    0.5
    >>> precision([0, 3], [5, 6], n_reference=[0, 4]).tolist()
    [nan, 0.5]
    """
    out = ratio(matched, emitted)
    return out if n_reference is None else where_reference(out, n_reference)


def f1(matched: ArrayLike, n_reference: ArrayLike, emitted: ArrayLike) -> NDArray[np.float64]:
    """``f1_lb = 2·matched / (n_reference + emitted)``: harmonic mean of recall and precision_lb.

    Range [0, 1], perfect 1.  It is 0 when nothing matched (even when nothing
    was emitted) and NaN when n_reference = 0.

    Examples
    --------
    >>> f1([3, 0, 0], [4, 4, 0], [6, 0, 5]).tolist()
    [0.6, 0.0, nan]
    """
    n_ref = np.asarray(n_reference, dtype=np.float64)
    out = ratio(2.0 * np.asarray(matched, dtype=np.float64), n_ref + np.asarray(emitted, dtype=np.float64))
    return np.where(n_ref == 0, np.nan, out)


def extra_rate(emitted: ArrayLike, matched: ArrayLike, n_reference: ArrayLike) -> NDArray[np.float64]:
    """Unmatched picks per reference arrival: ``(emitted − matched) / n_reference``.

    Range [0, ∞), perfect 0; NaN when n_reference = 0.

    Examples
    --------
    >>> float(extra_rate(6, 3, 4))
    0.75
    """
    extra = np.asarray(emitted, dtype=np.float64) - np.asarray(matched, dtype=np.float64)
    return ratio(extra, n_reference)


def duplicate_rate(duplicates: ArrayLike, matched: ArrayLike) -> NDArray[np.float64]:
    """Second picks on recovered arrivals per matched pick: ``duplicates / matched``.

    Range [0, ∞), perfect 0; NaN when nothing matched.

    Examples
    --------
    >>> float(duplicate_rate(1, 4))
    0.25
    """
    return ratio(duplicates, matched)


def swap_rate(swapped_p: ArrayLike, swapped_s: ArrayLike, n_reference_p: ArrayLike,
              n_reference_s: ArrayLike) -> NDArray[np.float64]:
    """Arrivals found only by a pick of the other phase, over both phases.

    ``swap_rate = (swapped_P + swapped_S) / (n_reference_P + n_reference_S)``;
    range [0, 1], perfect 0; NaN when there are no arrivals.

    Examples
    --------
    >>> float(swap_rate(1, 2, 10, 20))
    0.1
    """
    num = np.asarray(swapped_p, dtype=np.float64) + np.asarray(swapped_s, dtype=np.float64)
    den = np.asarray(n_reference_p, dtype=np.float64) + np.asarray(n_reference_s, dtype=np.float64)
    return ratio(num, den)
