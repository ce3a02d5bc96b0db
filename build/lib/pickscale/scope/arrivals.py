"""The reference as buckets of stations: every per-arrival rule of SPEC §2 runs bucket by bucket, where they are.

A *bucket* holds every reference row of a range of stations (in code-point order; the ranges of the buckets
follow each other), in input order, with its row number in the whole reference (:data:`ROW`).  Every rule that
needs an arrival's neighbours — duplicates (same dataset, station, phase and time), a station's arrivals, its
quiet gaps — needs only its station's rows, so it runs on one bucket; what the client decides from is a summary
per (dataset, station) or per dataset, merged from the buckets' (the size of the result, not of the input).

:class:`Arrivals` keeps its buckets in this process (a small study, or a frame given in memory);
:class:`pickscale.engine.arrivals.ClusterArrivals` keeps them on the workers, persisted where they were made,
with the same methods: every rule has one implementation, whichever holds the buckets.

Imports numpy and pandas only (the functions run on the workers).

Examples
--------
>>> frame = pd.DataFrame({"dataset": ["d"] * 3, "station": ["B", "A", "B"], "phase": ["P"] * 3, "time": [1, 2, 3]})
>>> arrivals = Arrivals.of_frame(frame)
>>> arrivals.n_rows, arrivals.map(lambda b: len(b.frame))
(3, [3])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ROW", "Bucket", "Arrivals", "bucket_bounds", "split_rows", "join_pieces", "station_counts",
           "scored_frame"]

#: The column of a bucket's frame that holds each row's number in the whole reference (input order).
ROW = "row"


@dataclass
class Bucket:
    """The reference rows of a range of stations, in input order, and what SPEC §2 decided of each row.

    Attributes
    ----------
    frame
        The normalised rows (text columns ``Categorical``, ``time`` int64 ns, kept columns) and :data:`ROW`.
    considered
        Per row: not a later duplicate (and, with a coverage, inside its dataset's common coverage); None
        before SPEC §2 is applied.
    cells
        Per row: its coverage cell (−1: in no window), with a coverage; None otherwise.
    scored
        Per row: scored (considered, at a scored station, inside its dataset's span); None before.
    """

    frame: pd.DataFrame
    considered: np.ndarray | None = None
    cells: np.ndarray | None = None
    scored: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.frame)


class Arrivals:
    """The reference's buckets, held in this process: the methods run each function on every bucket, in order.

    The same methods on a cluster (:class:`pickscale.engine.arrivals.ClusterArrivals`) run each function in one
    task per bucket, where the bucket is; the functions, and so every rule, are the same.
    """

    def __init__(self, buckets: Sequence[Any], n_rows: int | None = None) -> None:
        self.buckets = list(buckets)
        self.n_rows = int(n_rows) if n_rows is not None else sum(len(b) for b in self.buckets)

    @classmethod
    def of_frame(cls, frame: pd.DataFrame) -> Arrivals:
        """A normalised frame in memory as one bucket (its rows numbered in order)."""
        frame = frame.reset_index(drop=True)
        rows = pd.DataFrame({ROW: np.arange(len(frame), dtype=np.int64)})
        return cls([Bucket(pd.concat([frame, rows], axis=1))])

    def map(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """``fn(bucket, *args)`` of every bucket, in bucket order (small results: summaries)."""
        return [fn(b, *args) for b in self.buckets]

    def transform(self, fn: Callable[..., Any], *args: Any) -> Arrivals:
        """New buckets ``fn(bucket, *args)``, kept where these are."""
        return Arrivals([fn(b, *args) for b in self.buckets], self.n_rows)

    def reduce(self, fn: Callable[..., Any], final: Callable[..., Any], *args: Any) -> Any:
        """``final(fn(b0, *args), fn(b1, *args), …)``: what ``fn`` gives may be large; ``final`` makes it small."""
        return final(*[fn(b, *args) for b in self.buckets])

    def stream(self, fn: Callable[..., Any], *args: Any) -> Iterator[Any]:
        """``fn(bucket, *args)`` of one bucket after the other, each made when it is asked for."""
        for b in self.buckets:
            yield fn(b, *args)

    def values(self) -> list[Any]:
        """The buckets themselves (the graph's inputs: objects here, futures on a cluster)."""
        return list(self.buckets)

    def frame(self) -> pd.DataFrame:
        """Every row of every bucket as one frame, in input order, without :data:`ROW` (for frames in memory)."""
        from ..io.text import concat_frames  # lazy: io/ imports pyarrow; only frames in memory need this

        frames = [b.frame for b in self.buckets]
        if not frames:
            return pd.DataFrame()
        whole = concat_frames(frames) if len(frames) > 1 else frames[0]
        order = np.argsort(whole[ROW].to_numpy(np.int64), kind="stable")
        return whole.iloc[order].drop(columns=[ROW]).reset_index(drop=True)


def scored_frame(bucket: Bucket) -> Bucket:
    """The bucket's scored rows alone (a copy), in input order."""
    assert bucket.scored is not None
    return Bucket(bucket.frame.loc[bucket.scored].reset_index(drop=True))


# ---------------------------------------------------------------------------------------------- making buckets


def station_counts(frame: pd.DataFrame) -> pd.Series:
    """Rows per station name (a part's share of the plan of buckets), by name in code-point order."""
    column = frame["station"]
    if isinstance(column.dtype, pd.CategoricalDtype):
        counts = np.bincount(column.cat.codes.to_numpy(np.int64), minlength=len(column.cat.categories))
        names = np.asarray(column.cat.categories.astype(object), dtype=object)
    else:
        codes, uniques = pd.factorize(column.astype(object))
        counts = np.bincount(np.asarray(codes, dtype=np.int64), minlength=len(uniques))
        names = np.asarray(uniques, dtype=object)
    keep = counts > 0
    return pd.Series(counts[keep].astype(np.int64), index=pd.Index(names[keep], dtype=object)).sort_index()


def bucket_bounds(counts: pd.Series, target_rows: int, *, at_least: int = 1) -> list[str]:
    """The first station of every bucket but the first: contiguous ranges of stations (code-point order) of
    about ``target_rows`` rows each (a station is never cut), at least ``at_least`` buckets where there are
    stations enough.

    Examples
    --------
    >>> bucket_bounds(pd.Series([5, 5, 5, 5], index=["A", "B", "C", "D"]), 10)
    ['C']
    """
    total = int(counts.sum())
    n = max(1, -(-total // max(int(target_rows), 1)), int(at_least))
    n = min(n, max(len(counts), 1))
    if n <= 1:
        return []
    cum = np.cumsum(counts.to_numpy(np.int64))
    # The bucket of a station: where its rows start, in shares of the total (every bucket holds a station).
    starts = cum - counts.to_numpy(np.int64)
    share = (starts * n) // max(total, 1)
    first = np.flatnonzero(np.r_[False, share[1:] != share[:-1]])
    return [str(s) for s in counts.index.to_numpy(object)[first]]


def split_rows(frame: pd.DataFrame, bounds: Sequence[str], offset: int) -> tuple[pd.DataFrame, ...]:
    """A part's rows cut into the buckets of ``bounds`` (:func:`bucket_bounds`), each in the part's order, with
    their row numbers (:data:`ROW`: ``offset`` + the row in the part)."""
    rows = pd.DataFrame({ROW: np.arange(offset, offset + len(frame), dtype=np.int64)})
    frame = pd.concat([frame.reset_index(drop=True), rows], axis=1)
    if not bounds:
        return (frame,)
    column = frame["station"]
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes, names = column.cat.codes.to_numpy(np.int64), np.asarray(column.cat.categories.astype(object))
    else:
        factor, uniques = pd.factorize(column.astype(object))
        codes, names = np.asarray(factor, dtype=np.int64), np.asarray(uniques, dtype=object)
    edges = np.asarray(list(bounds), dtype=object)
    of_name = np.array([np.searchsorted(edges, str(s), side="right") for s in names.tolist()], dtype=np.int64)
    which = of_name[codes] if codes.size else np.zeros(0, np.int64)
    order = np.argsort(which, kind="stable")
    cut = np.searchsorted(which[order], np.arange(len(bounds) + 2))
    return tuple(frame.iloc[order[cut[k]:cut[k + 1]]] for k in range(len(bounds) + 1))


def join_pieces(*pieces: pd.DataFrame) -> Bucket:
    """One bucket of its pieces (one per read part, in part order: the rows stay in input order)."""
    from ..io.text import concat_frames  # lazy: scope/ stays free of io/ where it can; a worker has it loaded

    frames = [p for p in pieces if len(p)] or list(pieces[:1])
    frame = concat_frames(frames) if len(frames) > 1 else frames[0].reset_index(drop=True)
    return Bucket(frame)


def replaced(bucket: Bucket, **changes: Any) -> Bucket:
    """The bucket with ``changes`` (its frame shared, not copied)."""
    return dataclasses.replace(bucket, **changes)
