"""One stream's pairs held in *ranked runs* on disk: split_stream's answers, reading only the blocks asked for.

A results store keeps each (dataset, model, phase) stream's pairs cut into runs, each run *ranked* (residual
``e`` ascending, ties by level ascending) and described by a small block table (:func:`block_table`): per
block of :data:`~pickscale.metrics.split_stream.BLOCK` rows, its first residual and its rows per level.  A
:class:`RankedStream` answers what :mod:`pickscale.metrics.split_stream`'s functions answer of the
:class:`~pickscale.metrics.split_stream.PartFacts` of all the stream's pairs -- the same values, dtypes and
order -- from the tables, reading a block (the costly operation) only where a table cannot decide:

- ``count_below``: the blocks before the one a value falls in are whole (table), that one block is scanned;
- ``heavy_values`` / ``heavy_residues``: a value's (a residue's) pairs lie in the blocks whose value span
  holds it, so the tables bound its count; a sweep over the spans finds the values (residues) whose bound
  reaches the share, and only the blocks meeting them are read and counted -- none when nothing can reach it;
- ``value_counts`` / ``residue_facts``: exact counts, reading only the blocks whose value span can hold
  the value (residue): a block whose first value equals the next block's is all that value, unread.

Every block read is cached (read at most once per object); :attr:`RankedStream.blocks_read` counts them.

Numpy only: the workers import this module.

Examples
--------
A run of 7 pairs in blocks of 3 rows (its five 0s straddle a block boundary):

>>> e = np.array([-5, 0, 0, 0, 0, 0, 9]); level = np.array([1, 0, 2, 2, 2, 2, 1])
>>> first, counts = block_table(e, level, 2, block=3)
>>> first.tolist(), counts.tolist()
([-5, 0, 9], [[1, 1, 1], [0, 0, 3], [0, 1, 0]])
>>> stream = RankedStream([(first, counts)], lambda run, lo, hi: (e[lo:hi], level[lo:hi]), shared=1,
...                       bound=10, block=3)
>>> stream.n_shared, stream.count_below(np.array([[0, 0, -1], [1, 8, -1]])).tolist(), stream.blocks_read
(4, [5, 4], 1)
>>> stream.heavy_values(0.5).tolist(), stream.value_counts(np.array([0, 9])).tolist(), stream.blocks_read
([0], [4, 0], 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .grid import GRID_STEPS_NS
from .level_sums import LevelSums
from .split_stream import BLOCK

__all__ = ["BLOCK", "block_table", "RankedStream", "RankedMismatch"]

class RankedMismatch(ValueError):
    """A run's rows or block table are not what the rest of it says: a store not what it claims to be."""


#: Reads one run's rows ``[lo, hi)``: ``read(run, lo, hi) -> (e, level)``.
Reader = Callable[[int, int, int], tuple[np.ndarray, np.ndarray]]

_NONE = np.zeros(0, np.int64)
#: Rows of a sub-block of a read block: what a count scans (the block's sub-block table counts the rest).
_SUB = 128
#: The most cells a (queries or residues) × rows comparison holds at once.
_CELLS = 1 << 22


def block_table(e: np.ndarray, level: np.ndarray, n_levels: int, *, block: int = BLOCK) -> tuple[np.ndarray,
                                                                                                 np.ndarray]:
    """The block table of one ranked run.

    Parameters
    ----------
    e : ndarray of int
        The run's residuals (integer ns), ascending.
    level : ndarray of int
        Each pair's level (``0 … n_levels``), ascending within equal residuals.
    n_levels : int
        ``T``, the thresholds of the grid.
    block : int, optional
        Rows per block (:data:`BLOCK`; smaller in tests).

    Returns
    -------
    first : ndarray of int64, shape (blocks,)
        ``e[k · block]``.
    counts : ndarray of int64, shape (blocks, n_levels + 1)
        The rows of block ``k`` of each level.

    Raises
    ------
    ValueError
        If the run is not ranked or a level is outside ``0 … n_levels``.

    Examples
    --------
    >>> first, counts = block_table(np.array([1, 2, 2, 3, 7]), np.array([0, 0, 1, 1, 0]), 1, block=2)
    >>> first.tolist(), counts.tolist()
    ([1, 2, 7], [[2, 0], [0, 2], [1, 0]])
    """
    e = np.asarray(e, dtype=np.int64)
    lv = np.asarray(level, dtype=np.int64)
    if e.shape != lv.shape or e.ndim != 1:
        raise ValueError(f"e and level must be 1-d of one length; got shapes {e.shape} and {lv.shape}")
    if block < 1:
        raise ValueError(f"block must be positive; got {block}")
    if lv.size and (lv.min() < 0 or lv.max() > n_levels):
        raise ValueError(f"levels must lie in 0 … {n_levels}")
    step, rise = np.diff(e), np.diff(lv)
    if ((step < 0) | ((step == 0) & (rise < 0))).any():
        raise ValueError("the run is not ranked (e ascending, ties by level ascending)")
    n_blocks = -(-e.size // block)
    width = n_levels + 1
    rows = np.arange(e.size, dtype=np.int64) // block
    counts = np.bincount(rows * width + lv, minlength=n_blocks * width).astype(np.int64).reshape(n_blocks, width)
    return e[::block].copy(), counts


class RankedStream:
    """One stream held in ranked runs, answering what :mod:`~pickscale.metrics.split_stream`'s functions answer
    of a ``PartFacts`` of all its pairs, reading blocks on demand.

    Parameters
    ----------
    runs : sequence of (first, counts)
        Each run's :func:`block_table` (``counts`` int64 or int32; every run the same ``T + 1`` columns).
    read : callable
        ``read(run, lo, hi) -> (e, level)``: rows ``[lo, hi)`` of run ``run`` (called once per block, on
        block boundaries: ``lo = k · block``, ``hi = min(lo + block, n)``).
    shared : int
        The shared threshold's grid index: the pairs "at the shared threshold" are those of level > shared.
    bound : int
        The residual bound (``residual_tol`` in ns): every ``|e| <= bound``.
    sums : LevelSums, optional
        The stream's additive facts, kept as :attr:`sums` (not used here).
    block : int, optional
        Rows per block (:data:`BLOCK`).

    Attributes
    ----------
    sums : LevelSums or None
        As given.

    Notes
    -----
    The blocks read stay cached for the object's life (each read once): a stream whose every block was needed
    ends up held whole.  Every block read is checked against its table (first value, order, level counts,
    bound) and a mismatch raises ValueError: a store unlike its tables must never answer wrongly.

    Examples
    --------
    Two runs in blocks of 2 rows; the pairs at or below 0 of level > 0 are the first run's block 0, whole by its
    table (unread), and what its block 1 and the second run's block 0 hold (read):

    >>> data = [(np.array([0, 0, 0, 0, 3, 4]), np.ones(6, int)), (np.array([0, 2]), np.array([0, 1]))]
    >>> runs = [block_table(e, level, 1, block=2) for e, level in data]
    >>> s = RankedStream(runs, lambda r, lo, hi: (data[r][0][lo:hi], data[r][1][lo:hi]), shared=0, bound=5,
    ...                  block=2)
    >>> s.count_below(np.array([[0, 0, -1]])).tolist(), s.blocks_read
    ([4], 2)
    >>> s.heavy_values(0.5).tolist(), s.blocks_read  # 0 holds 4 of the 7 pairs at level > 0
    ([0], 3)
    """

    def __init__(self, runs: Sequence[tuple[np.ndarray, np.ndarray]], read: Reader, *, shared: int, bound: int,
                 sums: LevelSums | None = None, block: int = BLOCK) -> None:
        if block < 1:
            raise ValueError(f"block must be positive; got {block}")
        self.sums = sums
        self._read = read
        self._shared = int(shared)
        self._bound = int(bound)
        self._block = int(block)
        self._first: list[np.ndarray] = []
        self._n: list[int] = []
        # _above[r][b, j]: rows of level > j in the blocks before block b − 1 of run r (rows 0 and 1 are zero),
        # so that "the blocks before kb" is _above[r][kb + 1] and "through kb" _above[r][kb + 2], kb = −1 too.
        self._above: list[np.ndarray] = []
        widths = set()
        for first, counts in runs:
            first = np.asarray(first, dtype=np.int64)
            counts = np.asarray(counts, dtype=np.int64)
            if counts.ndim != 2 or first.shape != counts.shape[:1]:
                raise RankedMismatch(f"a run's first and counts disagree: shapes {first.shape}, {counts.shape}")
            # (The spans of the blocks, [first[k], first[k + 1]] and the last up to bound, rest on these.)
            if (np.diff(first) < 0).any() or (first.size and max(-first[0], first[-1]) > self._bound):
                raise RankedMismatch("a run's first values must ascend within [-bound, bound]")
            n = int(counts.sum())
            if counts.shape[0] != -(-n // self._block):
                raise RankedMismatch(f"a run of {n} rows has {counts.shape[0]} blocks of {self._block}")
            widths.add(counts.shape[1])
            above = np.zeros((counts.shape[0] + 2, counts.shape[1] - 1), np.int64)
            # Σ over levels > j, then over the blocks: as split_stream's PartFacts.above.
            np.cumsum(np.cumsum(counts[:, :0:-1], axis=1)[:, ::-1], axis=0, out=above[2:])
            self._first.append(first)
            self._n.append(n)
            self._above.append(above)
        if len(widths) > 1:
            raise RankedMismatch(f"the runs' counts have different numbers of levels: {sorted(widths)}")
        #: T, the grid's thresholds (0 without runs).
        self._levels = widths.pop() - 1 if widths else 0
        self._cache: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._slots: dict[tuple[int, int], int] = {}
        self._slabs: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._used: dict[int, int] = {}

    # -- what the tables tell ------------------------------------------------------------------------------------

    @property
    def n_shared(self) -> int:
        """Pairs at the shared threshold."""
        if not 0 <= self._shared < self._levels:
            return 0
        return sum(int(above[-1, self._shared]) for above in self._above)

    @property
    def blocks_read(self) -> int:
        """How many distinct (run, block) have been read."""
        return len(self._cache)

    def _tables(self, r: int, j: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Run ``r``'s block ``kb`` holding the rows ``<= v`` that end there (−1: none), the rows of level > j
        in the blocks before it (all ``<= v``: the blocks after ``kb`` start above ``v``, and block ``kb`` starts
        at or below it, so every row before it is too) and in block ``kb`` itself."""
        kb = np.searchsorted(self._first[r], v, side="right") - 1
        above = self._above[r]
        before = above[kb + 1, j]
        return kb, before, above[kb + 2, j] - before

    # -- reading -------------------------------------------------------------------------------------------------

    def _get(self, r: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Block ``k`` of run ``r`` (read once, checked against its table: a store that is not what its table
        says must fail loudly, never answer wrongly)."""
        key = (r, k)
        got = self._cache.get(key)
        if got is not None:
            return got
        lo = k * self._block
        hi = min(lo + self._block, self._n[r])
        e_raw, lv_raw = self._read(r, lo, hi)
        e = np.asarray(e_raw, dtype=np.int64)
        lv = np.asarray(lv_raw, dtype=np.int64)
        if e.shape != (hi - lo,) or lv.shape != (hi - lo,):
            raise RankedMismatch(f"run {r} rows {lo}…{hi}: read {e.shape[0]} residuals and {lv.shape[0]} levels")
        step = np.diff(e)
        if (e[0] != self._first[r][k] or (step < 0).any() or np.abs(e).max() > self._bound
                or lv.min() < 0 or lv.max() > self._levels):
            raise RankedMismatch(f"run {r} rows {lo}…{hi} are not what its block table says (first, order, bound)")
        suffix = np.cumsum(np.bincount(lv, minlength=self._levels + 1)[:0:-1])[::-1]
        if not np.array_equal(suffix, self._above[r][k + 2] - self._above[r][k + 1]):
            raise RankedMismatch(f"run {r} rows {lo}…{hi}: levels differ from its block table")
        self._cache[key] = (e, lv)
        return e, lv

    def _rows(self, r: int, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows of run ``r``'s ``blocks`` (ascending, distinct) end to end -- ascending too, as the run is
        -- and where each block starts in them (one more entry: the end)."""
        got = [self._get(r, int(k)) for k in blocks]
        starts = np.zeros(len(got) + 1, np.int64)
        np.cumsum([g[0].size for g in got], out=starts[1:])
        if not got:
            return _NONE, _NONE, starts
        return np.concatenate([g[0] for g in got]), np.concatenate([g[1] for g in got]), starts

    def _scan(self, r: int, kb: np.ndarray, v: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The rows of level > j and ``e <= v`` in block ``kb`` of run ``r``, each query's block read: its rows
        before ``v`` placed by one search a block, then counted by the block's sub-block table (:meth:`_slot`)
        and a scan of at most :data:`_SUB` rows -- not of the whole block, for every threshold asked."""
        blocks, which = np.unique(kb, return_inverse=True)
        slots = np.array([self._slot(r, int(k)) for k in blocks], np.int64)
        p = np.zeros(v.size, np.int64)
        for i, k in enumerate(blocks.tolist()):
            at = which == i
            p[at] = np.searchsorted(self._cache[(r, k)][0], v[at], side="right")
        levels, above = self._slabs[r]
        slot = slots[which]
        sb = p // _SUB
        full = above[slot, sb, j]
        rows = levels[slot, np.minimum(sb, levels.shape[1] - 1)]
        hit = (np.arange(_SUB) < (p - sb * _SUB)[:, None]) & (rows > j[:, None])
        return (full + hit.sum(axis=1)).astype(np.int64)

    def _slot(self, r: int, k: int) -> int:
        """Where block ``k`` of run ``r`` (:meth:`_get`) is in the run's slabs: its levels in sub-blocks of
        :data:`_SUB` rows (−1 past the end) and, at each sub-block's start, its rows of level > j for every
        threshold j -- made once a block, a few kB, in arrays grown by doubling (no stacking per count)."""
        key = (r, k)
        if key in self._slots:
            return self._slots[key]
        _, lv = self._get(r, k)
        n_sub, width = -(-self._block // _SUB), max(self._levels, 1)
        levels, above = self._slabs.get(r, (np.zeros((0, n_sub, _SUB), np.int16),
                                            np.zeros((0, n_sub + 1, width), np.int64)))
        slot = self._used.get(r, 0)
        if slot >= levels.shape[0]:  # (room for twice as many)
            grow = max(4, 2 * levels.shape[0])
            levels = np.concatenate([levels, np.full((grow - levels.shape[0], n_sub, _SUB), -1, np.int16)])
            above = np.concatenate([above, np.zeros((grow - above.shape[0], n_sub + 1, width), np.int64)])
        padded = np.full(n_sub * _SUB, -1, np.int16)
        padded[:lv.size] = lv
        levels[slot] = padded.reshape(n_sub, _SUB)
        counts = (levels[slot][:, :, None] > np.arange(width)[None, None, :]).sum(axis=1)
        above[slot, 0] = 0
        np.cumsum(counts, axis=0, out=above[slot, 1:])
        self._slabs[r] = (levels, above)
        self._slots[key], self._used[r] = slot, slot + 1
        return slot

    def _count(self, j: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Exact: the pairs of level > j with ``e <= v``, per query (j in 0 … T − 1)."""
        total = np.zeros(v.size, np.int64)
        for r in range(len(self._first)):
            if not self._first[r].size:
                continue
            kb, before, inside = self._tables(r, j, v)
            total += before
            need = inside > 0  # (a block with no such row is whole or empty: no read)
            if need.any():
                total[need] += self._scan(r, kb[need], v[need], j[need])
        return total

    def _spans(self) -> tuple[np.ndarray, ...]:
        """Every block holding pairs at the shared threshold, of every run: (run, block, first value, last value
        at most, shared pairs).  A block's rows lie in ``[first[k], first[k + 1]]`` (the last block's up to
        ``bound``): the next block starts at or above them all."""
        j = self._shared
        parts = []
        for r, first in enumerate(self._first):
            rows = np.diff(self._above[r][1:, j])
            k = np.flatnonzero(rows)
            top = np.append(first[1:], self._bound)
            parts.append((np.full(k.size, r, np.int64), k, first[k], top[k], rows[k]))
        if not parts:
            return (_NONE,) * 5
        return tuple(np.concatenate(column) for column in zip(*parts))

    def _heavy(self, floor: float, step: int) -> tuple[np.ndarray, np.ndarray]:
        """The keys (residuals with ``step`` 0, else residues modulo ``step``) held by at least ``floor`` pairs
        at the shared threshold, and their counts: exact, reading only the blocks the tables cannot rule out.

        A key's pairs lie in the blocks whose span holds it, so the shared pairs of those blocks bound its
        count: a sweep over the spans finds the keys whose bound reaches ``floor`` (intervals), and only the
        blocks meeting them are read -- a block all one value (it starts with the next block's first value)
        not even those: its table counts it."""
        run, block, low, high, rows = self._spans()
        whole = low == high
        if step:
            # A span's residues: an arc of the circle [0, step), or all of it, or two pieces where it wraps.
            full = high - low + 1 >= step
            start = np.mod(low, step)
            end = start + (high - low)
            arcs = [(np.where(full, 0, start), np.where(full, step - 1, np.minimum(end, step - 1)))]
            wraps = ~full & (end >= step)
            arcs.append((np.where(wraps, 0, 1), np.where(wraps, end - step, 0)))  # (empty [1, 0] if none)
        else:
            arcs = [(low, high)]
        starts, ends = _at_least(np.concatenate([a for a, _ in arcs]), np.concatenate([b for _, b in arcs]),
                                 np.concatenate([rows] * len(arcs)), floor)
        meets = np.zeros(run.size, bool)
        for a, b in arcs:
            meets |= _meets(starts, ends, a, b)
        keys, weights = [low[meets & whole]], [rows[meets & whole]]
        read = meets & ~whole
        for r in np.unique(run[read]):
            e, lv, _ = self._rows(int(r), block[read & (run == r)])
            keys.append(e[lv > self._shared])
            weights.append(np.ones(keys[-1].size, np.int64))
        key = np.concatenate(keys)
        if step:
            key = np.mod(key, step)
        weight = np.concatenate(weights)
        # (A read block holds keys outside the intervals too: those may have pairs in unread blocks.)
        inside = _meets(starts, ends, key, key)
        found, which = np.unique(key[inside], return_inverse=True)
        counts = np.zeros(found.size, np.int64)
        np.add.at(counts, which, weight[inside])
        return found, counts

    # -- split_stream's answers ----------------------------------------------------------------------------------

    def count_below(self, queries: np.ndarray) -> np.ndarray:
        """For each query ``(j, v, g)``: the stream's pairs with ``e <= v`` of level > j (int64; ``g`` must be
        −1: ranked runs hold no arrival groups) -- :func:`~pickscale.metrics.split_stream.count_below`."""
        q = np.asarray(queries, dtype=np.int64).reshape(-1, 3)
        if (q[:, 2] != -1).any():
            raise ValueError("ranked runs hold no arrival groups: every query's g must be -1")
        if not q.size or not sum(self._n):
            return np.zeros(len(q), np.int64)
        j, v = q[:, 0], q[:, 1]
        if ((j < 0) | (j >= self._levels)).any():
            raise ValueError(f"thresholds j must lie in 0 … {self._levels - 1}")
        return self._count(j, v)

    def value_counts(self, values: np.ndarray) -> np.ndarray:
        """How many of the stream's pairs at the shared threshold equal each of ``values`` (int64, the shape of
        ``values``) -- :func:`~pickscale.metrics.split_stream.value_counts`."""
        v = np.asarray(values, dtype=np.int64)
        out = np.zeros(v.shape, np.int64)
        if not v.size or not self.n_shared:
            return out
        flat = v.ravel()
        j = np.full(flat.size, self._shared, np.int64)
        # Count(v) − count(v − 1); below −bound nothing lies (and v − 1 cannot wrap).
        inside = np.flatnonzero((flat >= -self._bound) & (flat <= self._bound))
        got = self._count(j[inside], flat[inside]) - self._count(j[inside], flat[inside] - 1)
        out.ravel()[inside] = got
        return out

    def heavy_values(self, share: float) -> np.ndarray:
        """The residuals at the shared threshold that hold at least ``share`` of the stream's pairs there
        (ascending int64) -- :func:`~pickscale.metrics.split_stream.heavy_values`."""
        floor = share * max(self.n_shared, 1)
        if not self.n_shared or not floor <= self.n_shared:  # (no value holds more than all: nan neither)
            return _NONE.copy()
        values, counts = self._heavy(floor, 0)
        return values[counts >= floor]

    def heavy_residues(self, share: float) -> dict[int, list[int]]:
        """Per step of :data:`~pickscale.metrics.grid.GRID_STEPS_NS`, the residues that hold at least ``share``
        of the stream's pairs at the shared threshold (ascending) --
        :func:`~pickscale.metrics.split_stream.heavy_residues`."""
        out: dict[int, list[int]] = {step: [] for step in GRID_STEPS_NS}
        floor = share * max(self.n_shared, 1)
        if not self.n_shared or not floor <= self.n_shared:
            return out
        for step in GRID_STEPS_NS:
            residues, counts = self._heavy(floor, step)
            out[step] = [int(r) for r in residues[counts >= floor]]
        return out

    def residue_facts(self, candidates: dict[int, list[int]]) -> dict[tuple[int, int], tuple[int, np.ndarray]]:
        """For each step's candidate residue: how many of the stream's pairs at the shared threshold have it, and
        their distinct residuals (ascending int64) -- :func:`~pickscale.metrics.split_stream.residue_facts`."""
        out: dict[tuple[int, int], tuple[int, np.ndarray]] = {}
        for step, residues in candidates.items():
            # (A residue outside [0, step) is no residual's: np.mod's are there.)
            valid = np.unique(np.array([int(r) for r in residues if 0 <= r < step], dtype=np.int64))
            found = self._residues(int(step), valid) if self.n_shared else {}
            for r in residues:
                count, distinct = found.get(int(r), (0, _NONE))
                out[(step, r)] = (count, distinct.copy())
        return out

    def _residues(self, step: int, residues: np.ndarray) -> dict[int, tuple[int, np.ndarray]]:
        """Exact (count, distinct residuals) at the shared threshold of each residue (ascending, in [0, step))
        that has any, reading only the blocks whose value span ``[first[k], first[k + 1]]`` (the last: up to
        ``bound``) holds a residual of such a residue, and not all one value (a block starting with the next
        one's first value is all that value: counted from its table)."""
        run, block, low, high, rows = self._spans()
        held = np.zeros(run.size, bool)
        for part in _chunks(residues.size, run.size):
            held |= _holds(residues[part], step, low, high).any(axis=0)
        whole = held & (low == high)
        read = held & ~whole
        values, weights = [low[whole]], [rows[whole]]
        for r in np.unique(run[read]):
            e, lv, _ = self._rows(int(r), block[read & (run == r)])
            values.append(e[lv > self._shared])
            weights.append(np.ones(values[-1].size, np.int64))
        v, w = np.concatenate(values), np.concatenate(weights)
        mod = np.mod(v, step)
        order = np.lexsort((v, mod))
        v, w, mod = v[order], w[order], mod[order]
        left = np.searchsorted(mod, residues, side="left")
        right = np.searchsorted(mod, residues, side="right")
        running = np.zeros(w.size + 1, np.int64)
        np.cumsum(w, out=running[1:])
        counts = running[right] - running[left]
        return {int(res): (int(c), np.unique(v[a:b])) for res, c, a, b in zip(residues, counts, left, right) if c}


def _holds(residues: np.ndarray, step: int, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """residues × spans: whether ``[low, high]`` holds a value of each residue modulo ``step``."""
    smallest = low[None, :] + np.mod(residues[:, None] - low[None, :], step)
    return smallest <= high[None, :]


def _chunks(n: int, width: int) -> list[slice]:
    """Slices of ``range(n)`` of at most :data:`_CELLS` cells of ``width`` each."""
    size = max(1, _CELLS // max(width, 1))
    return [slice(a, a + size) for a in range(0, n, size)]


def _at_least(low: np.ndarray, high: np.ndarray, weight: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """The integers covered by intervals ``[low, high]`` of total ``weight`` at least ``floor`` (> 0 when
    ``floor`` is not): sorted disjoint intervals ``[starts, ends]``."""
    keep = low <= high
    at = np.concatenate([low[keep], high[keep] + 1])
    step = np.concatenate([weight[keep], -weight[keep]])
    edges, which = np.unique(at, return_inverse=True)
    total = np.zeros(edges.size, np.int64)
    np.add.at(total, which, step)
    # The weight covering [edges[i], edges[i + 1] - 1]; past the last edge, none.
    covered = np.cumsum(total)[:-1]
    hit = (covered >= floor) & (covered > 0)
    return edges[:-1][hit], edges[1:][hit] - 1


def _meets(starts: np.ndarray, ends: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Whether each ``[low, high]`` meets one of the sorted disjoint intervals ``[starts, ends]``."""
    if not starts.size:
        return np.zeros(low.shape, bool)
    i = np.searchsorted(ends, low, side="left")  # the first interval not wholly below low
    return (i < starts.size) & (starts[np.minimum(i, starts.size - 1)] <= high) & (low <= high)
