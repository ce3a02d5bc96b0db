"""Order statistics of nested subsets of one sorted array, for many subsets and ranks at once.

SPEC §5 reads exact medians and quantiles of the residuals at every threshold of the grid: the pairs at a
higher threshold are a subset of those at a lower one.  Each pair gets a *level* (how many thresholds its
confidence clears), so the pairs at threshold ``j`` are those of level ``> j``.  With the residuals sorted
once, the ``k``-th smallest residual at threshold ``j`` is the ``k``-th element of level ``> j`` in that
order.  Masking the array once per threshold costs thresholds × pairs; here the array is cut into blocks
of :data:`BLOCK` elements, each block's elements are counted per level once (a blocks × levels table), and
a query reads that table to find its block, then scans that one block: pairs + queries × :data:`BLOCK`.

This module is imported by workers: numpy only.

Examples
--------
>>> level = np.array([2, 0, 1, 2, 1])          # the levels of a sorted array's five elements
>>> nested_order_statistics(level, 3, np.array([0, 0, 1]), np.array([0, 2, 1])).tolist()
[0, 3, 3]
"""

from __future__ import annotations

import numpy as np

__all__ = ["BLOCK", "nested_order_statistics"]

#: Elements per block: what one query scans.
BLOCK = 1024


def nested_order_statistics(level: np.ndarray, n_levels: int, j: np.ndarray, k: np.ndarray, *,
                            block: int = BLOCK) -> np.ndarray:
    """Positions of the ``k[q]``-th (0-based) element of level ``> j[q]``, for every query ``q``.

    Parameters
    ----------
    level
        The level of each element of a sorted array, integers in ``[0, n_levels]``.
    n_levels
        The highest level.
    j, k
        The queries: ``0 <= j[q] < n_levels`` and ``0 <= k[q] <`` the number of elements of level ``> j[q]``.

    Returns
    -------
    numpy.ndarray
        int64 positions into the array, one per query.

    Examples
    --------
    >>> level = np.array([1, 0, 1, 1])
    >>> nested_order_statistics(level, 1, np.array([0, 0, 0]), np.array([0, 1, 2]), block=2).tolist()
    [0, 2, 3]
    """
    level = np.asarray(level, dtype=np.int64)
    j, k = np.asarray(j, dtype=np.int64), np.asarray(k, dtype=np.int64)
    if not j.size:
        return np.zeros(0, dtype=np.int64)
    n = level.size
    n_blocks = -(-n // block)
    width = n_levels + 1
    # counts[b, l]: the elements of block b at level l; above[b, j]: those of level > j.
    counts = np.bincount(np.arange(n, dtype=np.int64) // block * width + level,
                         minlength=n_blocks * width).reshape(n_blocks, width)
    above = np.cumsum(counts[:, :0:-1], axis=1)[:, ::-1]
    before = np.cumsum(above, axis=0)  # through block b, inclusive
    # The block holding each query's element: the first whose running count passes k.
    at = np.empty(j.size, dtype=np.int64)
    for one in np.unique(j):
        mine = j == one
        at[mine] = np.searchsorted(before[:, one], k[mine], side="right")
    skipped = np.where(at > 0, before[np.maximum(at - 1, 0), j], 0)
    # Within the block: the (k − skipped)-th element of level > j.
    padded = np.full(n_blocks * block, -1, dtype=np.int64)
    padded[:n] = level
    rows = padded.reshape(n_blocks, block)[at] > j[:, None]
    inside = np.argmax(np.cumsum(rows, axis=1) > (k - skipped)[:, None], axis=1)
    return at * block + inside
