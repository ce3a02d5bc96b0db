"""SPEC §5's statistics of one stream whose pairs are held in several parts: what each part knows, exactly.

A (dataset, model, phase) stream of residual pairs may be too large for one task (issue 22: ~100 bytes a pair
while it is sorted).  Its statistics are exact all the same, from facts each part computes on its own pairs:

- the additive ones (:class:`~pickscale.metrics.level_sums.LevelSums` per level of the grid, and per arrival
  group at the shared threshold): the parts' facts add up to the stream's;
- the order statistics (medians and quantiles) by *selection*: :func:`count_below` tells, for any value ``v``,
  how many of a part's pairs of level > j (of a group) lie at or below ``v``; summed over the parts it is the
  stream's count, and a binary search on ``v`` finds the stream's ``k``-th value exactly
  (:mod:`pickscale.engine.ranged` runs it);
- SPEC §5's most common residual and residual grid at the shared threshold, whose rules only fire for a value
  (a residue) holding a large share of the pairs: such a value holds at least that share in some part, so each
  part names its own (:func:`heavy_values`, :func:`heavy_residues`) and every part counts the candidates
  (:func:`value_counts`, :func:`residue_facts`): the stream's answer, exactly where a rule can fire.

Numpy only: the workers import this module.

Examples
--------
>>> part = facts_of(np.array([300, -100, 200]), np.array([0.9, 0.5, 0.2]), None, thresholds=[0.1, 0.6],
...                 threshold=0.1, tol=0.5, n_groups=0)
>>> count_below(part, np.array([[0, 250, -1], [1, 400, -1]])).tolist()   # (j, v, group): level > j, e <= v
[2, 1]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .grid import GRID_STEPS_NS
from .level_sums import LevelSums, level_sums
from .timing import WITHIN

__all__ = ["BLOCK", "FACTS_BLOCK", "PartFacts", "facts_of", "count_below", "heavy_values", "value_counts",
           "heavy_residues", "residue_facts"]

#: Rows per block of a store's ranked runs (SPEC §9): what one query reads and scans of a stored stream.
BLOCK = 1024
#: Rows per block of a part's count tables held in memory (:class:`PartFacts`): what one query scans -- smaller
#: than a stored block, as nothing is read (a query scans 128 rows, the table holds a 128th of the pairs' rows).
FACTS_BLOCK = 128


@dataclass
class PartFacts:
    """What a part of a stream knows: ``sums`` (grid levels), ``groups`` (per arrival group, level 1 = at the
    shared threshold), and its residuals sorted (``e``) with their levels and groups cut into blocks of
    :data:`FACTS_BLOCK` (``block_level``, ``block_group``: blocks × FACTS_BLOCK, −1 past the end);
    ``above[b, j]``: pairs of level > j in the blocks before block ``b``; ``above_group[b, g]``: those of group
    ``g`` at the shared threshold; ``shared``: the shared threshold's grid index."""

    sums: LevelSums
    groups: list[LevelSums]
    e: np.ndarray
    block_level: np.ndarray
    block_group: np.ndarray
    above: np.ndarray
    above_group: np.ndarray
    shared: int

    @property
    def n_shared(self) -> int:
        """Pairs at the shared threshold."""
        return int(self.above[-1, self.shared]) if self.above.shape[1] else 0

    def at_shared(self) -> np.ndarray:
        """The residuals at the shared threshold, ascending."""
        return self.e[self.block_level.ravel()[:self.e.size] > self.shared]


def facts_of(residual_ns: np.ndarray, conf: np.ndarray, group: np.ndarray | None, *, thresholds: np.ndarray,
             threshold: float, tol: float, n_groups: int) -> PartFacts:
    """The :class:`PartFacts` of some pairs of one stream (any order; ``thresholds`` ascending, the shared
    ``threshold`` on them; ``group``: each pair's arrival group, or None)."""
    e = np.asarray(residual_ns, dtype=np.int64)
    grid = np.asarray(thresholds, dtype=np.float64)
    level = np.searchsorted(grid, np.asarray(conf, dtype=np.float64), side="right").astype(np.int64)
    shared = int(np.searchsorted(grid, threshold, side="left"))
    g = np.zeros(e.size, np.int64) if group is None else np.asarray(group, dtype=np.int64)
    sums = level_sums(e, level, grid.size, tol=tol, within=WITHIN)
    groups = [level_sums(e, ((g == k) & (level > shared)).astype(np.int64), 1, tol=tol, within=WITHIN)
              for k in range(n_groups)]
    order = np.argsort(e, kind="stable")
    e, level, g = e[order], level[order], g[order]
    n_blocks = -(-e.size // FACTS_BLOCK)
    block = np.arange(e.size, dtype=np.int64) // FACTS_BLOCK
    width = grid.size + 1
    counts = np.bincount(block * width + level, minlength=n_blocks * width).reshape(n_blocks, width)
    above = np.zeros((n_blocks + 1, grid.size), np.int64)
    np.cumsum(np.cumsum(counts[:, :0:-1], axis=1)[:, ::-1], axis=0, out=above[1:])
    in_group = np.zeros((n_blocks + 1, n_groups), np.int64)
    if n_groups:
        at = level > shared
        by = np.bincount(block[at] * n_groups + g[at], minlength=n_blocks * n_groups).reshape(n_blocks, n_groups)
        np.cumsum(by, axis=0, out=in_group[1:])
    padded_level = np.full(n_blocks * FACTS_BLOCK, -1, np.int16)
    padded_level[:e.size] = level
    padded_group = np.full(n_blocks * FACTS_BLOCK, -1, np.int32)
    padded_group[:e.size] = g
    return PartFacts(sums, groups, e, padded_level.reshape(n_blocks, FACTS_BLOCK),
                     padded_group.reshape(n_blocks, FACTS_BLOCK), above, in_group, shared)


def count_below(part: PartFacts, queries: np.ndarray) -> np.ndarray:
    """For each query ``(j, v, g)``: the part's pairs with ``e <= v`` of level > j (``g = -1``), or of group ``g``
    at the shared threshold (``j`` is then the shared threshold's index); int64."""
    q = np.asarray(queries, dtype=np.int64).reshape(-1, 3)
    if not q.size or not part.e.size:
        return np.zeros(len(q), np.int64)
    j, v, g = q[:, 0], q[:, 1], q[:, 2]
    width = part.block_level.shape[1]
    p = np.searchsorted(part.e, v, side="right")  # the pairs at or below v: the first p
    b = p // width
    grouped = g >= 0
    full = np.where(grouped, part.above_group[b, np.maximum(g, 0)] if part.above_group.shape[1] else 0,
                    part.above[b, np.minimum(j, part.above.shape[1] - 1)])
    # The rest of the last block: its first p - b·width pairs, scanned.
    row = np.minimum(b, part.block_level.shape[0] - 1)
    lv, gr = part.block_level[row], part.block_group[row]
    inside = np.arange(width) < (p - b * width)[:, None]
    hit = inside & (lv > j[:, None]) & (~grouped[:, None] | (gr == g[:, None]))
    return (full + hit.sum(axis=1)).astype(np.int64)


def heavy_values(part: PartFacts, share: float) -> np.ndarray:
    """The residuals at the shared threshold that hold at least ``share`` of this part's pairs there."""
    values, counts = np.unique(part.at_shared(), return_counts=True)
    return values[counts >= share * max(part.n_shared, 1)] if values.size else values


def value_counts(part: PartFacts, values: np.ndarray) -> np.ndarray:
    """How many of this part's pairs at the shared threshold equal each of ``values``."""
    x = part.at_shared()
    values = np.asarray(values, dtype=np.int64)
    return (np.searchsorted(x, values, side="right") - np.searchsorted(x, values, side="left")).astype(np.int64)


def heavy_residues(part: PartFacts, share: float) -> dict[int, list[int]]:
    """Per step of :data:`~pickscale.metrics.grid.GRID_STEPS_NS`, the residues that hold at least ``share`` of
    this part's pairs at the shared threshold."""
    x = part.at_shared()
    out: dict[int, list[int]] = {}
    for step in GRID_STEPS_NS:
        residues, counts = np.unique(np.mod(x, step), return_counts=True)
        out[step] = [int(r) for r in residues[counts >= share * max(x.size, 1)]] if x.size else []
    return out


def residue_facts(part: PartFacts, candidates: dict[int, list[int]]) -> dict[tuple[int, int], tuple[int, np.ndarray]]:
    """For each step's candidate residue: how many of this part's pairs at the shared threshold have it, and
    their distinct residuals."""
    x = part.at_shared()
    out = {}
    for step, residues in candidates.items():
        mod = np.mod(x, step)
        for r in residues:
            members = x[mod == r]
            out[(step, r)] = (int(members.size), np.unique(members))
    return out
