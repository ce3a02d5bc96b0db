"""The reference on the workers: read in tasks, cut into buckets of stations there, and kept there.

The read tasks' normalised parts stay where they were read; each part's rows are cut by station into the
buckets of a plan decided from the parts' station counts (contiguous ranges of station names of about
:data:`BUCKET_ROWS` rows, :func:`pickscale.scope.arrivals.bucket_bounds`) and each bucket is joined from its
share of every part, in part order (so its rows stay in input order) and persisted.  The client receives the
parts' reports (what reading did) and the station counts, merged on the workers: nothing per arrival.

:class:`ClusterArrivals` runs the rules of :mod:`pickscale.scope.rows` (and the engine's: groups, events, the
plan's cuts, the exchange's codes) in one task per bucket, on the worker that holds it; without a cluster the
buckets are made and kept in this process (:class:`pickscale.scope.arrivals.Arrivals`), by the same functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
from dask import delayed

from ..io import Normalised
from ..scope.arrivals import Arrivals, bucket_bounds, join_pieces, split_rows, station_counts
from .graph import compute, persist, tree_reduce, wait_for
from .parts import Failure, report_of

__all__ = ["BUCKET_ROWS", "ClusterArrivals", "read_reference", "ReferenceRead"]

#: Reference rows a bucket holds, about (a station is never cut): the unit of every per-arrival task.
BUCKET_ROWS = 1_000_000


class ClusterArrivals(Arrivals):
    """Buckets persisted on the workers (futures); each method runs one task per bucket, where it is."""

    def __init__(self, buckets: list[Any], client: Any, n_rows: int) -> None:
        super().__init__(buckets, n_rows)
        self.client = client

    def _tasks(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> list[Any]:
        # One copy of each argument in the graph, not one per task.  Keys of their own (not content hashes):
        # a key another graph holds too (the run's plan) could be released there while this one waits for it.
        shared = [delayed(a, pure=False, traverse=False) for a in args]
        return [delayed(fn, pure=False)(b, *shared) for b in self.buckets]

    def map(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        return compute(self._tasks(fn, args), self.client, label="reference", progress=False)

    def transform(self, fn: Callable[..., Any], *args: Any) -> ClusterArrivals:
        from distributed import futures_of  # lazy: a cluster's module, on a cluster only

        made = persist(self._tasks(fn, args), self.client)
        # Made before these buckets may be let go: on a cluster, a bucket released while a task still waits
        # for it is lost (the graph that names it does not keep it there).
        for future in futures_of(made):
            wait_for(future)
        return ClusterArrivals(made, self.client, self.n_rows)

    def reduce(self, fn: Callable[..., Any], final: Callable[..., Any], *args: Any) -> Any:
        return compute([delayed(final)(*self._tasks(fn, args))], self.client, label="reference", progress=False)[0]

    def stream(self, fn: Callable[..., Any], *args: Any) -> Iterator[Any]:
        # Computed together, fetched one after the other: this process holds one bucket's result at a time.
        futures = self.client.compute(self._tasks(fn, args), retries=3)
        for i in range(len(futures)):
            future, futures[i] = futures[i], None
            yield future.result()

    def frame(self) -> pd.DataFrame:
        return Arrivals(compute([delayed(b) for b in self.buckets], self.client, label="reference",
                                progress=False)).frame()


class ReferenceRead:
    """The read reference: the parts' reports (or their input errors), their rows, and their station counts."""

    def __init__(self, parts: list[Any], outlines: list[Any], counts: pd.Series, client: Any) -> None:
        self.parts, self.outlines, self.counts, self.client = parts, outlines, counts, client

    @property
    def failures(self) -> list[Any]:
        return [o for o in self.outlines if isinstance(o, Failure)]

    def report(self) -> Normalised:
        """What reading did (:meth:`Normalised.combine` of the parts' reports, without their rows)."""
        return report_of(Normalised.combine([o[0] for o in self.outlines]))

    def buckets(self, *, n_workers: int = 1) -> Arrivals:
        """The reference cut into buckets of stations, kept where they are made (the read parts let go)."""
        sizes = [int(o[1]) for o in self.outlines]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        bounds = bucket_bounds(self.counts, BUCKET_ROWS, at_least=n_workers if self.client is not None else 1)
        k = len(bounds) + 1
        parts, self.parts = self.parts, []
        if self.client is None:  # in this process: the same functions, called here
            pieces = [split_rows(p.frame, bounds, int(offsets[i])) for i, p in enumerate(parts)]
            del parts
            buckets = [join_pieces(*[s[j] for s in pieces]) for j in range(k)]
            return Arrivals(buckets, int(offsets[-1]))
        shared = delayed(bounds, pure=False, traverse=False)
        splits = [delayed(_split, nout=k, pure=False)(p, shared, int(offsets[i])) for i, p in enumerate(parts)]
        joined = [delayed(join_pieces, pure=False)(*[s[j] for s in splits]) if k > 1
                  else delayed(join_pieces, pure=False)(*splits) for j in range(k)]
        futures = persist(joined, self.client)
        return ClusterArrivals(futures, self.client, int(offsets[-1]))


def _split(part: Normalised, bounds: list[str], offset: int) -> Any:
    pieces = split_rows(part.frame, bounds, offset)
    return pieces if len(pieces) > 1 else pieces[0]


def _outline(part: Normalised | Failure) -> Any:
    """A read part without its rows: (its report, its number of rows), or its input error."""
    if isinstance(part, Failure):
        return part
    return report_of(part), len(part.frame)


def _counts(part: Normalised | Failure) -> pd.Series:
    if isinstance(part, Failure):
        return pd.Series(np.zeros(0, np.int64), index=pd.Index([], dtype=object))
    return station_counts(part.frame)


def merge_counts(*counts: pd.Series) -> pd.Series:
    """Station counts of several parts, added (a node of the reduction tree)."""
    if len(counts) <= 1:
        return counts[0] if counts else _counts(Failure(""))
    joined = pd.concat(counts)
    return joined.groupby(level=0, sort=True).sum().astype(np.int64)


def read_reference(parts: list[Any], client: Any) -> ReferenceRead:
    """Read the reference's parts (kept where they are read) and bring back their reports and station counts."""
    if client is None:
        values = compute(parts, None, label="reading reference", progress=False)
        outlines = [_outline(p) for p in values]
        counts = merge_counts(*[_counts(p) for p in values]) if values else _counts(Failure(""))
        return ReferenceRead(values, outlines, counts, None)
    read = persist(parts, client)
    found = compute([delayed(_outline)(p) for p in read]
                    + [tree_reduce([delayed(_counts)(p) for p in read], merge_counts)], client,
                    label="reading reference", progress=False)
    return ReferenceRead(read, found[:-1], found[-1], client)
