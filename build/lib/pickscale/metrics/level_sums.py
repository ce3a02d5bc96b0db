"""The additive facts of SPEC §5 per confidence level: counts and exact integer sums that add across parts.

A residual pair's *level* is the number of grid thresholds its confidence clears (the pairs at threshold ``j``
are those of level ``> j``).  Per level: the number of pairs, Σ|e| and Σ|e| over the negative residuals (so
Σe) and Σe² in integer nanoseconds, the pairs with ``|e| > tol`` and with ``|e| <= w`` for each bound of
``fraction_within``.  The sums are held as int64 sums of 16-bit limbs and of limb products (below 2^32 each, so
their sums over up to 2^31 pairs stay within int64) and become Python integers only when read: never rounded.
So the facts of any split of the pairs add up to the whole's exactly -- what lets the statistics of a stream
held by several tasks be combined (:mod:`pickscale.engine.ranged`).

Numpy only: the workers import this module.

Examples
--------
>>> a = level_sums(np.array([-3, 5]), np.array([1, 2]), 2, tol=0.5, within=(0.1,))
>>> b = level_sums(np.array([4]), np.array([2]), 2, tol=0.5, within=(0.1,))
>>> s = a + b
>>> s.at_threshold("count"), s.at_threshold("abs"), s.at_threshold("signed"), s.at_threshold("square")
([3, 2], [12, 9], [6, 9], [50, 41])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["LIMB_BITS", "LevelSums", "level_sums"]

#: Bits per limb: products of two limbs are below 2^32.
LIMB_BITS = 16
_MASK = (1 << LIMB_BITS) - 1


@dataclass
class LevelSums:
    """Per level (``n_levels + 1`` entries): ``count``; ``gross`` (|e| > tol); ``within`` (levels × bounds);
    ``linear[i]`` = Σ limb i of |e|; ``negative[i]`` the same over e < 0; ``square[(i, k)]`` = Σ limb i × limb k.
    Added with ``+`` (limbs missing on one side are zeros)."""

    count: np.ndarray
    gross: np.ndarray
    within: np.ndarray
    linear: dict[int, np.ndarray]
    negative: dict[int, np.ndarray]
    square: dict[tuple[int, int], np.ndarray]

    def __add__(self, other: LevelSums) -> LevelSums:
        def add(x: dict, y: dict) -> dict:
            return {key: x.get(key, 0) + y.get(key, 0) for key in sorted({*x, *y})}

        return LevelSums(self.count + other.count, self.gross + other.gross, self.within + other.within,
                         add(self.linear, other.linear), add(self.negative, other.negative),
                         add(self.square, other.square))

    def _per_level(self, name: str) -> list[int]:
        n = self.count.size
        if name == "count":
            return [int(v) for v in self.count]
        if name in ("abs", "negative"):
            limbs = self.linear if name == "abs" else self.negative
            return [sum(int(s[lv]) << (LIMB_BITS * i) for i, s in limbs.items()) for lv in range(n)]
        if name == "signed":
            return [a - 2 * b for a, b in zip(self._per_level("abs"), self._per_level("negative"))]
        if name == "square":
            return [sum((int(s[lv]) << (LIMB_BITS * (i + k))) * (1 if i == k else 2)
                        for (i, k), s in self.square.items()) for lv in range(n)]
        raise KeyError(name)

    def at_threshold(self, name: str) -> list[int]:
        """``name`` (``count``, ``abs`` = Σ|e|, ``signed`` = Σe, ``square`` = Σe²) over the pairs at each
        threshold ``j`` (those of level > j): exact Python integers."""
        values = self._per_level(name)
        out, running = [0] * (len(values) - 1), 0
        for lv in range(len(values) - 1, 0, -1):
            running += values[lv]
            out[lv - 1] = running
        return out


def _at(values: np.ndarray, level: np.ndarray, n: int) -> np.ndarray:
    """Σ values per level 0 … n − 1 (int64), the pairs sorted by level beforehand."""
    running = np.zeros(values.size + 1, dtype=np.int64)
    np.cumsum(values, out=running[1:])
    edges = np.searchsorted(level, np.arange(n + 1))
    return running[edges[1:]] - running[edges[:-1]]


def level_sums(e_ns: np.ndarray, level: np.ndarray, n_levels: int, *, tol: float,
               within: Sequence[float]) -> LevelSums:
    """The :class:`LevelSums` of residuals ``e_ns`` (integer ns) at levels ``level`` (0 … ``n_levels``).

    ``tol`` and ``within``: the bounds in seconds, compared as SPEC §5 compares them (|e| in seconds).
    """
    e_ns = np.asarray(e_ns, dtype=np.int64)
    level = np.asarray(level, dtype=np.int64)
    n = n_levels + 1
    # (levels fit 16 bits on any grid: a radix sort)
    order = np.argsort(level.astype(np.uint16) if n_levels < 2**16 else level, kind="stable")
    level = level[order]
    a = np.abs(e_ns[order])
    negative = e_ns[order] < 0
    a_s = a / 1e9
    count = np.bincount(level, minlength=n).astype(np.int64)
    gross = np.bincount(level[a_s > tol], minlength=n).astype(np.int64)
    inside = np.stack([np.bincount(level[a_s <= w], minlength=n) for w in within], axis=1).astype(np.int64) \
        if len(within) else np.zeros((n, 0), np.int64)
    n_limbs = max(1, -(-int(a.max()).bit_length() // LIMB_BITS)) if a.size else 1
    limbs = [(a >> (LIMB_BITS * i)) & _MASK for i in range(n_limbs)]
    return LevelSums(
        count=count, gross=gross, within=inside,
        linear={i: _at(limbs[i], level, n) for i in range(n_limbs)},
        negative={i: _at(np.where(negative, limbs[i], 0), level, n) for i in range(n_limbs)},
        square={(i, k): _at(limbs[i] * limbs[k], level, n) for i in range(n_limbs) for k in range(i, n_limbs)},
    )
