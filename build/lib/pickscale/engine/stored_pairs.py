"""An extension's stored pairs, read, checked and sent to its cluster while the new inputs are scored.

An extension that appends its pairs (SPEC §11) times each merged stream from the stored pairs and the new
run's: it reads the stored pairs once, a batch at a time, checks each batch as it is read (SPEC §15,
:class:`~pickscale.store.consistency.PairCheck`) and sends each stream's share to the cluster.  None of that
depends on the new run, so :class:`StoredShares` does it on a thread of its own while the cluster scores the
new inputs -- a stretch when the client waits and, reading one file, one worker does too -- and the merge
then finds the shares where the stream tasks read them.  The shares are cut on the store's own coordinates
(its datasets and models) and mapped onto the merged ones when the merge asks (:meth:`StoredShares.result`):
the map is known only once the new run's coordinates are.

Only what a stream's statistics read is sent (``residual_ns`` and ``conf``, SPEC §5: 16 bytes a pair); the
stored pairs themselves stay in the store, whose chunks the saved extension links.

Examples
--------
>>> import pathlib, tempfile, pandas as pd, pickscale
>>> from pickscale.store import open_results
>>> ref = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "S"], "time": [10.0, 20.0]})
>>> picks = ref.assign(time=[10.1, 19.9], conf=[0.9, 0.8], model="m")
>>> target = pickscale.save(pickscale.score(ref, picks), pathlib.Path(tempfile.mkdtemp()) / "results.zarr")
>>> shares = StoredShares(open_results(target), target, client=None)
>>> got = shares.result(datasets=["all"], models=["a", "m"])  # the stored model "m" is the merged model 1
>>> sorted(got.shares), got.sizes
([2, 3], {2: 1, 3: 1})
>>> got.shares[2][0]["residual_ns"].tolist()
[100000000]
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import operator
import pathlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..results.extend import merged_index, stream_shares
from ..store.consistency import PairCheck, stored_options
from ..store.pair_chunks import PAIR_SOURCE, NotHere, PairSource
from .stored_batches import Merged, Report, read_and_cut, report_of

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["StoredShares", "Shares", "SHARE_COLUMNS", "stream_map", "merged_on_workers"]

#: What a stream's statistics read of each share (:func:`pickscale.engine.pairs.stream_statistics`).
SHARE_COLUMNS = ("residual_ns", "conf")


@dataclass(frozen=True)
class Shares:
    """The stored pairs of each merged stream: ``shares[stream]`` (each a dict of :data:`SHARE_COLUMNS`, or a
    future of one on the cluster) and ``sizes[stream]`` (its pairs)."""

    shares: dict[int, list[Any]]
    sizes: dict[int, int]


class StoredShares:
    """The stored pairs of ``stored`` (opened lazily from ``store``), cut into shares of their streams, checked
    as read (``store`` None: not checked, ``stored`` is not from a store), and put on ``client``'s cluster
    (None: kept here) -- on a thread started at once.

    :meth:`result` waits for them and raises what the thread raised (a :class:`~pickscale.errors.StoreError`
    of a stored pair that breaks SPEC §15); :meth:`cancel` stops the thread between batches (an extension
    refused meanwhile) and waits for it.
    """

    def __init__(self, stored: xr.Dataset, store: pathlib.Path | str | None, *, client: Any) -> None:
        self._stop = threading.Event()
        self._stored, self._store, self._client = stored, store, client
        self._got: Shares | None = None
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pickscale-stored-pairs")
        # (the caller's context too: its settings, e.g. a store on object storage's options)
        self._done = pool.submit(contextvars.copy_context().run, self._cut)
        pool.shutdown(wait=False)

    def _cut(self) -> None:
        stored, client = self._stored, self._client
        store = self._store  # (for messages only: a store on object storage keeps its URL, never a local path)
        check = None if store is None else PairCheck(store, stored, stored_options(store, stored.attrs))  # type: ignore[arg-type]
        source = stored.encoding.get(PAIR_SOURCE)
        try:
            if check is not None and client is not None and source is not None:
                try:
                    self._got = _on_workers(source, check, client, self._stop)
                    return
                except NotHere:  # (the workers cannot see the store's folder: read here, as below)
                    check = PairCheck(store, stored, stored_options(store, stored.attrs))  # type: ignore[arg-type]
            self._got = _here(stored, check, client, self._stop)
        except _Cancelled:
            return  # (nothing kept: the extension stopped)

    def result(self, *, datasets: list[str], models: list[str]) -> Shares:
        """The stored shares on the merged coordinates (``datasets``, ``models``: each of the store's names is
        in them, in the same order); given once (the stream tasks then hold the shares: freed once timed)."""
        self._done.result()
        got, self._got = self._got, None
        if got is None:
            raise RuntimeError("internal error: the stored shares were taken already")
        merged = stream_map(self._stored, datasets=datasets, models=models)
        return Shares(shares={merged(c): v for c, v in got.shares.items()},
                      sizes={merged(c): n for c, n in got.sizes.items()})

    def cancel(self) -> None:
        """Stop cutting (between shares) and wait for the thread; what it raised is dropped."""
        self._stop.set()
        concurrent.futures.wait([self._done])
        self._got = None


def stream_map(side: xr.Dataset, *, datasets: list[str], models: list[str]) -> Callable[[int], int]:
    """The merged stream code of each stream code of ``side`` (one side of an extension; codes
    ``(dataset · n_models + model) · 2 + phase`` on its coordinates, then on the merged ``datasets`` and
    ``models``, each of the side's names among them).

    >>> import xarray as xr
    >>> side = xr.Dataset(coords={"dataset": ["all"], "model": ["b", "d"]})
    >>> [stream_map(side, datasets=["all"], models=["a", "b", "c", "d"])(code) for code in range(4)]
    [2, 3, 6, 7]
    >>> stream_map(side, datasets=["all"], models=["b"])(1)  # ("d", present nowhere, has no pairs)
    1
    """
    # (a side's model present in none of its datasets has no pairs, and no place in the merged models)
    d_at = [{name: i for i, name in enumerate(datasets)}.get(str(d), -1) for d in side["dataset"].values]
    m_at = [{name: i for i, name in enumerate(models)}.get(str(m), -1) for m in side["model"].values]
    nm = side.sizes["model"]

    def merged(code: int) -> int:
        d, m, p = code // (2 * nm), (code // 2) % nm, code % 2
        if d_at[d] < 0 or m_at[m] < 0:
            raise RuntimeError("internal error: pairs of a dataset or model the merged results do not hold")
        return (d_at[d] * len(models) + m_at[m]) * 2 + p

    return merged


class _Cancelled(Exception):
    """The extension stopped before it merged: the thread's work is dropped."""


def _here(stored: xr.Dataset, check: PairCheck | None, client: Any, stop: threading.Event) -> Shares:
    """The stored pairs read here a batch at a time (:func:`~pickscale.results.extend.stream_shares`), each
    batch checked as read and each share sent to ``client``'s cluster (None: kept here)."""
    sizes: dict[int, int] = {}

    def put(share: dict[str, np.ndarray]) -> Any:
        if stop.is_set():
            raise _Cancelled()
        kept = {k: share[k] for k in SHARE_COLUMNS}
        size = int(kept["residual_ns"].size)
        # One future per share (a dict given to scatter would be scattered value by value).
        held = client.scatter([kept], hash=False)[0] if client is not None else kept
        sizes[id(held)] = size
        return held

    names = {k: [str(v) for v in stored[k].values] for k in ("dataset", "model", "station")}
    shares = stream_shares(stored, None, replaced={}, datasets=names["dataset"], models=names["model"],
                           stations=names["station"], put=put, check=None if check is None else check.add)
    if check is not None:
        check.finish()
    return Shares(shares=shares, sizes={code: sum(sizes[id(held)] for held in stream)
                                        for code, stream in shares.items()})


#: The most pairs one task reads, checks and cuts (whole chunks of the store, at least one; ~100 bytes a pair
#: meanwhile): as many tasks as the store has chunks of 2**18 pairs.
TASK_ROWS = 2**18


def _ranges(source: PairSource) -> list[tuple[int, int]]:
    """The pairs each task reads: whole chunks of the store, at most :data:`TASK_ROWS` (or one chunk)."""
    chunk, rows = source.chunk_rows, source.rows
    step = max(chunk * max(TASK_ROWS // chunk, 1), 1) if TASK_ROWS >= chunk else max(TASK_ROWS, 1)
    return [(lo, min(lo + step, rows)) for lo in range(0, rows, step)]


def _on_workers(source: PairSource, check: PairCheck, client: Any, stop: threading.Event,
                merged: Merged | None = None) -> Shares:
    """The stored pairs read, checked and cut where they are used: one task per range of pairs (:func:`_ranges`)
    reads its pairs from the store (:meth:`PairSource.read`, checked against the manifest), makes the checks of
    a batch (:meth:`PairRules.check`) and cuts it into its streams' shares, which stay on its worker; this
    process makes the checks across batches from what each task reports (its first and last pairs, its pairs
    per station and level: the size of the per-station results) and holds no pair.  Raises :class:`NotHere`
    when a worker cannot see the store's folder.  ``merged``: the streams and shares on the merged coordinates
    of an extension that merges every pair again (:class:`~pickscale.engine.stored_batches.Merged`)."""
    held: list[Any] = []  # (every future made here: let go on an error, which a caller may keep with its frames)
    try:
        return _checked_on_workers(source, check, client, stop, held, merged)
    except BaseException:
        held.clear()
        raise


def _checked_on_workers(source: PairSource, check: PairCheck, client: Any, stop: threading.Event,
                        held: list[Any], merged: Merged | None) -> Shares:
    rules = client.scatter(check.rules, broadcast=False, hash=False)
    tasks = [client.submit(read_and_cut, source, rules, lo, hi, merged, pure=False) for lo, hi in _ranges(source)]
    reports = [client.submit(report_of, task, pure=False) for task in tasks]
    held += [rules, *tasks, *reports]
    del rules
    facts: list[Report] = []
    for at in range(len(reports)):  # (in order: the first batch that breaks a rule is the one named)
        while True:
            if stop.is_set():
                raise _Cancelled()
            try:
                facts.append(reports[at].result(timeout=0.25))
                break
            except TimeoutError:
                continue
        check.take(facts[-1])
    if stop.is_set():
        raise _Cancelled()
    check.finish()
    shares: dict[int, list[Any]] = {}
    sizes: dict[int, int] = {}
    for at, report in enumerate(facts):
        for code, size in report.sizes.items():
            shares.setdefault(code, []).append(client.submit(operator.getitem, tasks[at], code, pure=False))
            sizes[code] = sizes.get(code, 0) + size
    return Shares(shares=dict(sorted(shares.items())), sizes=sizes)


def merged_on_workers(stored: xr.Dataset, store: Any, client: Any, *, replaced: Any, datasets: list[str],
                      models: list[str], stations: list[str]) -> Shares | None:
    """The stored pairs of an extension that merges every pair into one segment again (a stored model
    replaced), read, checked and cut on the merged coordinates by the workers (:func:`_on_workers`), the
    pairs of each replaced (dataset, model) left out; None when the workers cannot see the store's folder (or
    ``stored`` is not a store opened with its pairs left to read): the caller reads them."""
    source = stored.encoding.get(PAIR_SOURCE)
    if source is None or store is None or client is None:
        return None

    names = [str(v) for v in stored["dataset"].values], [str(v) for v in stored["model"].values]
    dropped = np.array([[model in replaced.get(name, ()) for model in names[1]] for name in names[0]], dtype=bool)
    merged = Merged(d_of=merged_index(names[0], datasets), m_of=merged_index(names[1], models),
                    s_of=merged_index(stored["station"].values, stations), dropped=dropped.reshape(len(names[0]), -1),
                    n_models=len(models))
    check = PairCheck(store, stored, stored_options(store, stored.attrs))
    try:
        return _on_workers(source, check, client, threading.Event(), merged)
    except NotHere:
        return None
