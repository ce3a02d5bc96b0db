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

__all__ = ["LIMB_BITS", "LevelSums", "level_sums", "SUM_DIGITS", "sum_terms", "encode", "decode"]

#: Bits per limb: products of two limbs are below 2^32.
LIMB_BITS = 16
_MASK = (1 << LIMB_BITS) - 1
#: Digits (base 2^:data:`_DIGIT_BITS`) of each exact sum as the results keep it (:func:`encode`): 124 bits,
#: room for Σe² of 2^31 pairs of residuals up to 2^46 ns (19 hours).
SUM_DIGITS = 4
_DIGIT_BITS = 31


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


def sum_terms(within: Sequence[float]) -> tuple[str, ...]:
    """The labels of :func:`encode`'s last axis: the counts, then each exact sum's digits (least first).

    Examples
    --------
    >>> sum_terms((0.1,))[:4], len(sum_terms((0.1, 0.25, 0.5)))
    (('count', 'gross', 'within_0.1', 'abs_0'), 17)
    """
    return ("count", "gross", *(f"within_{w:g}" for w in within),
            *(f"{name}_{i}" for name in ("abs", "negative", "square") for i in range(SUM_DIGITS)))


def encode(sums: LevelSums) -> np.ndarray:
    """``sums`` as the results keep them: per level, the counts and each exact sum (Σ|e|, Σ|e| over e < 0,
    Σe², ns) in :data:`SUM_DIGITS` digits of 31 bits -- one form for one total, however the pairs were
    split into parts, so that results merged from parts are the same bytes as one run's (int64, levels ×
    :func:`sum_terms`).

    Examples
    --------
    >>> a = level_sums(np.array([-3, 5]), np.array([1, 2]), 2, tol=0.5, within=(0.1,))
    >>> b = level_sums(np.array([4]), np.array([2]), 2, tol=0.5, within=(0.1,))
    >>> (encode(a + b) == encode(level_sums(np.array([-3, 5, 4]), np.array([1, 2, 2]), 2, tol=0.5,
    ...                                      within=(0.1,)))).all()
    np.True_
    >>> decode(encode(a + b), n_within=1).at_threshold("square")
    [50, 41]
    """
    big = [sums._per_level(name) for name in ("abs", "negative", "square")]
    digits = [[(v >> (_DIGIT_BITS * i)) & ((1 << _DIGIT_BITS) - 1) for i in range(SUM_DIGITS)]
              for values in big for v in values]
    if any(v >> (_DIGIT_BITS * SUM_DIGITS) for values in big for v in values):
        raise OverflowError("a residual sum does not fit the results' exact form (2^124)")
    n = sums.count.size
    wide = np.asarray(digits, dtype=np.int64).reshape(3, n, SUM_DIGITS).transpose(1, 0, 2).reshape(n, -1)
    return np.concatenate([sums.count[:, None], sums.gross[:, None], sums.within.reshape(n, -1), wide],
                          axis=1).astype(np.int64)


def decode(kept: np.ndarray, *, n_within: int) -> LevelSums:
    """The :class:`LevelSums` of :func:`encode`'s form (``n_within``: the bounds of ``within``)."""
    kept = np.asarray(kept, dtype=np.int64)
    count, gross, within = kept[:, 0], kept[:, 1], kept[:, 2:2 + n_within]
    wide = kept[:, 2 + n_within:].reshape(kept.shape[0], 3, SUM_DIGITS)
    # Each digit (< 2^31) becomes two 16-bit limbs at its place; the square's go on the diagonal limb pairs,
    # which :meth:`LevelSums._per_level` weighs by 2^(32 i).
    half = _DIGIT_BITS * SUM_DIGITS
    total = [[sum(int(wide[lv, t, i]) << (_DIGIT_BITS * i) for i in range(SUM_DIGITS)) for lv in range(kept.shape[0])]
             for t in range(3)]
    n_limbs = -(-half // LIMB_BITS)
    linear = {i: np.array([(v >> (LIMB_BITS * i)) & _MASK for v in total[0]], np.int64) for i in range(n_limbs)}
    negative = {i: np.array([(v >> (LIMB_BITS * i)) & _MASK for v in total[1]], np.int64) for i in range(n_limbs)}
    square = {(i, i): np.array([(v >> (2 * LIMB_BITS * i)) & ((1 << 2 * LIMB_BITS) - 1) for v in total[2]],
                               np.int64) for i in range(-(-half // (2 * LIMB_BITS)))}
    return LevelSums(count=count.copy(), gross=gross.copy(), within=within.copy(), linear=linear,
                     negative=negative, square=square)
