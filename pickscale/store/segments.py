"""The residual pairs of an extended store: the stored segments, then the new one, appended (SPEC §11, §15).

A run writes its pairs as one *segment* in the canonical order of SPEC §9.  An extension appends the new
run's pairs as a segment of their own after the stored ones (``attrs["pair_segments"]``: each segment's
length), so the stored pairs are neither sorted again nor rewritten: their timing statistics are merged
(:mod:`pickscale.engine.pairs`), and their chunk files -- whole chunks of :func:`pair_chunk_rows` rows, the
same for every pair variable and whatever wrote them -- are linked into the new store, not copied.  What is
written is the new segment, the last stored chunk it completes, and the variables whose stored values
change: the pairs' indices where the merged coordinates put a dataset, model or station before a stored
one (:class:`PairParts`).

Examples
--------
>>> pair_chunk_rows(140), pair_chunk_rows(5_000_000)
(140, 262144)
>>> segments_of({"pair_segments": [3, 2]}, 5), segments_of({}, 4)
([3, 2], [4])
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["PAIR_CHUNK_ROWS", "RANKED_CHUNK_ROWS", "SEGMENTS", "PAIR_PARTS", "PairParts", "pair_chunk_rows",
           "segments_of", "link_chunks"]

#: Rows of a pair variable's Zarr chunk once a store holds this many pairs (fewer: one chunk of all of them).
PAIR_CHUNK_ROWS = 2**18
#: The same of the ranked copy (``ranked_residual``, ``ranked_level``; SPEC §9): an extension reads a few of its
#: blocks of 1,024 rows a stream, and a chunk is the least a read decodes -- with 2^18 rows, every chunk of a
#: stream of 4·10^6 pairs is reached; with 2^14, a sixth of them (a tenth of a stream 16 times that size).
RANKED_CHUNK_ROWS = 2**14
#: The root attribute listing the segments' lengths (absent: one segment, every pair).
SEGMENTS = "pair_segments"
#: Where an extended Dataset carries its :class:`PairParts` (``ds.encoding``): read by :func:`pickscale.store.save`.
PAIR_PARTS = "pickscale_pair_parts"


def pair_chunk_rows(n: int, *, ranked: bool = False) -> int:
    """The Zarr chunk (rows) of a pair variable of a store with ``n`` pairs (``ranked``: of the ranked copy):
    fixed once stores are large, so that an extension finds the stored chunks whole."""
    rows = RANKED_CHUNK_ROWS if ranked else PAIR_CHUNK_ROWS
    return rows if n >= rows else max(int(n), 1)


def segments_of(attrs: Mapping[str, Any], n_pairs: int) -> list[int]:
    """The segments' lengths of a store's pairs (a store without the attribute holds one segment)."""
    found = attrs.get(SEGMENTS)
    return [int(v) for v in found] if isinstance(found, list) else ([n_pairs] if n_pairs else [])


@dataclass(frozen=True)
class PairParts:
    """How an extended Dataset's pair variables are made: ``rows`` stored pairs, then the new segment's.

    ``stored[name]``: the stored variable's values (lazily read from the store, or NumPy) and the lookup
    table that maps its indices onto the merged coordinates (None: unchanged); ``new[name]``: the new
    segment's values (NumPy, or Dask arrays of the cluster's results), already on the merged coordinates;
    ``store``: the local store the stored values come from (None: elsewhere), whose whole chunks of an
    unchanged variable are linked into a store saved in its place.
    """

    rows: int
    stored: Mapping[str, tuple[Any, np.ndarray | None]]
    new: Mapping[str, Any]
    store: pathlib.Path | None = None
    chunk_rows: Mapping[str, int] = field(default_factory=dict)

    @property
    def links(self) -> bool:
        """Whether a save in the place of :attr:`store` may link whole stored chunks (a store that large)."""
        return self.store is not None and self.rows >= PAIR_CHUNK_ROWS

    def stored_rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Stored rows ``start:stop`` of ``name`` on the merged coordinates (read here, never on a cluster)."""
        values, lut = self.stored[name]
        block = np.asarray(values[start:stop])
        return block if lut is None else lut[block].astype(block.dtype, copy=False)

    def linkable(self, name: str, target: pathlib.Path, rows: int) -> int:
        """How many whole stored chunks of ``name`` can be linked into a store at ``target`` whose chunks are
        ``rows`` long: those of an unchanged variable of the store being replaced, cut the same way."""
        if self.store is None or os.path.abspath(self.store) != os.path.abspath(target):
            return 0
        if self.stored[name][1] is not None or self.chunk_rows.get(name) != rows:
            return 0
        return self.rows // rows


def link_chunks(source: pathlib.Path, folder: pathlib.Path, name: str, count: int) -> list[str]:
    """Hard-link chunks ``0 … count − 1`` of variable ``name`` from store ``source`` into ``folder``; the
    store-relative paths of those linked.  Zarr writes a chunk as a new file (never in place), so the two
    stores never share a file that one of them changes."""
    made = []
    (folder / name / "c").mkdir(parents=True, exist_ok=True)
    for i in range(count):
        rel = f"{name}/c/{i}"
        try:
            os.link(source / rel, folder / rel)
        except FileNotFoundError:
            continue  # a chunk of fill values only: Zarr writes no file for it, in either store
        made.append(rel)
    return made
