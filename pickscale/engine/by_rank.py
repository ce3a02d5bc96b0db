"""A stored stream timed by rank where the task runs: its ranked runs' blocks read there, never every pair.

An extension of a store that keeps its pairs ranked (SPEC §9, §11) times each stream with pairs on both sides
from the store's exact sums, its runs' block tables (a 1,024th of its rows, read with the store) and the blocks
its searches reach (:class:`~pickscale.metrics.ranked_runs.RankedStream`), with the new run's pairs.  On a
cluster that is one task per stream (:func:`stream_by_rank`), on the worker that holds the new run's stream: it
reads the blocks from the store's folder (:class:`~pickscale.store.pair_chunks.PairSource`, every chunk file
checked against the manifest the store was opened with) and combines them with the new pairs there, in one task
-- no round trip per step of the searches.  A worker that cannot see the folder raises
:class:`~pickscale.store.pair_chunks.NotHere`, and the client times the stream itself, reading the blocks from the
Dataset it opened (:class:`RankedRows` of its variables).

Loaded on workers: numpy and Zarr only (no xarray).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..metrics.level_sums import decode
from ..metrics.ranked_runs import RankedStream
from ..metrics.timing import WITHIN
from ..options import Options
from ..store.pair_chunks import PairSource
from . import ranged

__all__ = ["RankedRows", "ranked_stream", "stream_by_rank"]

#: The ranked copy's variables (SPEC §9).
_NAMES = ("ranked_residual", "ranked_level")


class RankedRows:
    """Rows of a store's ranked copy, read a chunk of ``rows`` at a time (the least a read decodes; a few kept
    while their neighbours are asked for, never the store) by ``read(lo, hi)`` -> (residuals, levels)."""

    KEEP = 8

    def __init__(self, read: Callable[[int, int], tuple[np.ndarray, np.ndarray]], rows: int) -> None:
        self.read, self.rows = read, max(int(rows), 1)
        self.kept: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _chunk(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        if k not in self.kept:
            if len(self.kept) >= self.KEEP:
                self.kept.pop(next(iter(self.kept)))
            e, level = self.read(k * self.rows, (k + 1) * self.rows)
            self.kept[k] = (np.asarray(e, dtype=np.int64), np.asarray(level, dtype=np.int64))
        return self.kept[k]

    def __call__(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        # Each chunk's part of rows lo … hi − 1, copied out (a block kept by its reader must not keep its whole
        # chunk alive).
        parts = [(self._chunk(k), max(lo - k * self.rows, 0), min(hi - k * self.rows, self.rows))
                 for k in range(lo // self.rows, -(-hi // self.rows))]
        e = np.concatenate([got[0][a:b] for got, a, b in parts])
        level = np.concatenate([got[1][a:b] for got, a, b in parts])
        return e, level


def ranked_stream(tables: Sequence[tuple[np.ndarray, np.ndarray]], starts: Sequence[int], rows: RankedRows,
                  kept_sums: np.ndarray, *, shared: int, bound: int) -> RankedStream:
    """The :class:`RankedStream` of a stored stream: its runs' block ``tables``, the row each run ``starts`` at in
    the store, its rows read by ``rows``, its exact sums as the store keeps them (``residual_sums``' cell)."""
    def read(run: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        return rows(starts[run] + lo, starts[run] + hi)

    return RankedStream(tables, read, shared=shared, bound=bound, sums=decode(kept_sums, n_within=len(WITHIN)))


def stream_by_rank(tables: Sequence[tuple[np.ndarray, np.ndarray]], starts: Sequence[int], source: PairSource,
                   kept_sums: np.ndarray, *held: Any, options: Options, phase: int) -> dict[str, Any]:
    """One merged stream's statistics (:func:`pickscale.engine.ranged.statistics`' form), as a task: its stored
    runs read by rank from ``source``'s folder (:class:`~pickscale.store.pair_chunks.NotHere` where it cannot be
    seen) and the new run's pairs ``held`` (its stream tasks' results)."""
    def read(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        got = source.read(_NAMES, lo, min(hi, source.rows))
        return got["ranked_residual"], got["ranked_level"]

    shared = int(np.searchsorted(options.grid, options.threshold_of(phase), side="left"))
    rows = RankedRows(read, source.chunk_rows_of("ranked_residual"))
    stored = ranked_stream(tables, starts, rows, kept_sums, shared=shared, bound=options.residual_tol_ns)
    parts = [stored, *(ranged.part_of(h, options=options, phase=phase) for h in held)]
    return ranged.statistics({phase: parts}, None, options=options)[phase]
