"""A Dataset written into a Zarr v3 store: in-memory variables at once, Dask-backed ones a chunk range at a time.

The residual pairs of a run on a cluster stay there (:mod:`pickscale.engine.pairs`): Dask arrays of the
workers' results.  They are written here without ever being whole on the writing process: each is cut
into ranges of whole Zarr chunks of at most :data:`BLOCK_BYTES`, fetched one after the other from
wherever the data are (the cluster holding them, or any Dask scheduler) and written into their region.
The writing process is the one that opened the store, so a store in a local folder never needs the
workers to see that folder, and an Icechunk session is written by its owner alone.

Each Dask-backed variable gets the chunks Zarr gives the same array held in memory
(:func:`zarr_chunks`): a store's bytes do not depend on where its data were when it was written.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
import zarr

from ..results.variables import RANKED
from .at_once import write_at_once
from .codec import is_dask
from .segments import PAIR_PARTS, PairParts, link_chunks, pair_chunk_rows

__all__ = ["write_dataset", "start_dataset", "Pending", "zarr_chunks", "chunks_of", "rows_of_parts", "fetched_together",
           "BLOCK_BYTES"]

#: The most bytes of one variable fetched and written at a time (and held in transit here).
BLOCK_BYTES = 8 * 2**20
#: Dask-backed variables of at most this many bytes in all (an extension's new pairs, or every variable of a
#: Dataset) are fetched in one round trip.
_FETCH_TOGETHER_BYTES = 32 * 2**20


def zarr_chunks(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The chunks Zarr chooses for an array of ``shape`` and item size written without chunks given.

    Examples
    --------
    >>> zarr_chunks((5_000_000,), 8), zarr_chunks((10,), 1)
    ((78125,), (10,))
    """
    from zarr.core.chunk_grids import _guess_chunks

    return tuple(int(c) for c in _guess_chunks(tuple(shape), int(itemsize)))


def chunks_of(name: str, var: xr.Variable) -> tuple[int, ...]:
    """The Zarr chunks of variable ``name``: :func:`~pickscale.store.segments.pair_chunk_rows` for the residual
    pairs (an extension finds their stored chunks whole; their ranked copy in smaller ones, read a few at a
    time), what Zarr would choose for the rest."""
    if var.dims[:1] == ("pair",):
        return (pair_chunk_rows(var.shape[0], ranked=name in RANKED), *var.shape[1:])
    return zarr_chunks(var.shape, var.dtype.itemsize)


def fetched_together(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with its Dask-backed variables computed, in one round trip, when they are small enough to be
    fetched together to be written (at most :data:`_FETCH_TOGETHER_BYTES` in all: the residual pairs of ~10^7
    picks), as :func:`start_dataset` would fetch them; else (or an extension's pairs, made of parts) ``ds``.

    The command fetches them once, before the store is written: the store writes them, and the tables and
    figures read them, from memory -- not fetched to be written and then read back from the store.

    Examples
    --------
    >>> import dask.array as da, xarray as xr
    >>> ds = fetched_together(xr.Dataset({"x": ("pair", da.arange(4, chunks=2))}))
    >>> type(ds["x"].data).__name__, ds["x"].values.tolist()
    ('ndarray', [0, 1, 2, 3])
    """
    lazy = [name for name, var in ds.variables.items() if is_dask(var.data)]
    if (not lazy or PAIR_PARTS in ds.encoding
            or sum(ds[name].nbytes for name in lazy) > _FETCH_TOGETHER_BYTES):
        return ds
    out = ds.copy()
    for name, values in zip(lazy, _compute_all([ds[name].data for name in lazy])):
        out[name] = ds[name].variable.copy(data=values)
    return out


def write_dataset(clean: xr.Dataset, store: Any, *, parts: PairParts | None = None,
                  target: pathlib.Path | None = None) -> list[str]:
    """Write ``clean`` (as :func:`pickscale.store.codec.sanitise` returns it) to ``store`` (a path or a Zarr store).

    ``parts``: how an extended Dataset's pairs are made (:class:`~pickscale.store.segments.PairParts`): the
    stored rows are read here and the new ones fetched from wherever they are, a block at a time; with
    ``target`` (the local store that ``store``, a folder, will replace) the stored chunks that do not change
    are linked from it, not written.  Returns the store-relative paths of the files so linked.

    Examples
    --------
    >>> import tempfile, dask.array as da, xarray as xr, zarr
    >>> ds = xr.Dataset({"x": ("pair", da.arange(10, chunks=3)), "y": ("phase", [1, 2])})
    >>> path = tempfile.mkdtemp()
    >>> write_dataset(ds, path)
    []
    >>> zarr.open_group(path)["x"][:].tolist(), zarr.open_group(path)["x"].chunks
    ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], (10,))
    """
    pending = start_dataset(clean, store, parts=parts, linking=target is not None)
    return pending.fill(store, target) if pending is not None else []


def start_dataset(clean: xr.Dataset, store: Any, *, parts: PairParts | None = None,
                  linking: bool = False) -> Pending | None:
    """Write ``clean`` to ``store``, but for the data of its large Dask-backed variables: those are
    :class:`Pending` (their arrays made, to be filled by :meth:`Pending.fill`, into ``store`` or a copy of its
    files); None when everything is written.  ``linking``: an extension's stored chunks may be linked (then
    its pairs are always left pending)."""
    from_parts = [name for name in (parts.new if parts is not None else ()) if is_dask(clean[name].data)]
    lazy = [name for name in clean.data_vars
            if is_dask(clean[name].data) and clean[name].ndim and name not in from_parts]
    encoding = {name: {"chunks": chunks_of(str(name), clean[name].variable)} for name in clean.data_vars
                if clean[name].dims[:1] == ("pair",)}
    linking = linking and parts is not None and parts.links
    if sum(clean[name].nbytes for name in (*lazy, *from_parts)) <= _FETCH_TOGETHER_BYTES and not linking:
        # Small enough to hold at once (every small study; the pairs of 10^7 picks): fetched in one round trip
        # (each is ~0.1 s on a cluster, whatever its size) and written in one pass, not a region write per
        # variable -- the same bytes, since the chunks are the same.
        clean = clean.copy()
        new = [parts.new[name] for name in from_parts] if parts is not None else []
        new_names = [name for name, data in zip(from_parts, new) if is_dask(data)]
        got = _compute_all([clean[name].data for name in lazy] + [data for data in new if is_dask(data)])
        for name, values in zip(lazy, got):
            clean[name] = clean[name].variable.copy(data=values)
        fetched = dict(zip(new_names, got[len(lazy):]))
        for name in from_parts:
            assert parts is not None
            values = _from_parts(parts, str(name), fetched.get(name))(0, clean[name].shape[0])
            clean[name] = clean[name].variable.copy(data=values)
        write_at_once(clean, store, encoding=encoding)  # (what to_zarr writes, in one round trip)
        return None
    fetching = None
    if parts is not None:
        # An extension's new rows, when small enough to hold together (a month of pairs next to years): fetched
        # in one round trip, not one per variable -- started now, so that the cluster computes them while the
        # arrays are made here.
        new = [n for n in from_parts if is_dask(parts.new[n])]
        if sum(parts.new[n].nbytes for n in new) <= _FETCH_TOGETHER_BYTES:
            fetching = _Fetching(new, [parts.new[n] for n in new])
    chunked = clean.copy()
    for name in (*lazy, *from_parts):
        var = clean[name].variable
        chunked[name] = var.chunk(dict(zip(var.dims, chunks_of(str(name), var))))
    # Every in-memory variable and every array's metadata now; the Dask-backed data by Pending.fill.
    write_at_once(chunked, store, encoding=encoding, compute=False)  # (as to_zarr(compute=False), in one round trip)
    return Pending(chunked, [*lazy, *from_parts], set(from_parts), parts, fetching)


class _Fetching:
    """Dask arrays being computed together (by the client of their futures, else when :meth:`result` asks)."""

    def __init__(self, names: list[Any], arrays: list[Any]) -> None:
        self.names, self.arrays = names, arrays
        self.client = _client_of_any(arrays)
        self.futures = self.client.compute(arrays) if self.client is not None and arrays else None

    def result(self) -> dict[Any, np.ndarray]:
        """Each array's values, by name."""
        if self.futures is None or self.client is None:
            return dict(zip(self.names, _compute_all(self.arrays)))
        return dict(zip(self.names, (np.asarray(a) for a in self.client.gather(self.futures))))


@dataclass
class Pending:
    """The large Dask-backed variables of a store whose arrays are made but not yet filled."""

    chunked: xr.Dataset
    names: list[Any]
    from_parts: set[Any]
    parts: PairParts | None
    fetching: _Fetching | None = None

    def fill(self, store: Any, target: pathlib.Path | None = None) -> list[str]:
        """Write their data into ``store``, a range of whole chunks of at most :data:`BLOCK_BYTES` at a time;
        with ``target``, link an extension's unchanged stored chunks from it (their paths returned)."""
        linked: list[str] = []
        group = zarr.open_group(store, mode="r+", zarr_format=3)
        fetched = self.fetching.result() if self.fetching is not None else {}
        for name in self.names:
            var = self.chunked[name].variable
            dim, rows = var.dims[0], var.data.chunks[0][0]
            row_bytes = var.dtype.itemsize * int(np.prod(var.shape[1:], dtype=np.int64))
            step = rows * max(1, BLOCK_BYTES // max(1, rows * row_bytes))
            start = 0
            if name in self.from_parts:
                assert self.parts is not None
                read = _from_parts(self.parts, str(name), fetched.get(name))
                whole = self.parts.linkable(str(name), target, rows) if target is not None else 0
                if whole:
                    linked += link_chunks(target, pathlib.Path(store), str(name), whole)  # type: ignore[arg-type]
                    start = whole * rows
            else:
                compute = _computer(var.data)
                read = lambda a, b, data=var.data, compute=compute: compute(data[a:b])  # noqa: B023
            # Plain numbers go straight into their Zarr array (no encoding: the bytes xarray writes), anything
            # else through xarray's region write.
            array = group[str(name)] if var.dtype.kind in "biuf" and not var.encoding else None
            for a in range(start, var.shape[0], step):
                b = min(a + step, var.shape[0])
                block = read(a, b)
                if isinstance(array, zarr.Array):
                    array[a:b] = block
                else:
                    xr.Dataset({name: (var.dims, block, var.attrs)}).to_zarr(
                        store, region={str(dim): slice(a, b)}, zarr_format=3, consolidated=False)
                del block
        return linked


def _from_parts(parts: PairParts, name: str, fetched: np.ndarray | None = None) -> Any:
    """Rows ``a:b`` of an extended pair variable: its stored rows read here, its new rows fetched (or taken
    from ``fetched``, every new row already here)."""
    new = parts.new[name] if fetched is None else fetched
    compute = _computer(new) if is_dask(new) else np.asarray
    if parts.rows == 0 and not is_dask(new):
        return lambda a, b: np.asarray(new[a:b])

    return lambda a, b: _joined(parts, name, a, b, lambda x, y: np.asarray(compute(new[x:y])))


def rows_of_parts(parts: PairParts, names: Sequence[str], lo: int, hi: int) -> dict[str, np.ndarray]:
    """Rows ``lo … hi − 1`` of the extended pair variables ``names``: the stored rows read here, the new rows of
    every name fetched together (one round trip for those on a cluster)."""
    a, b = max(lo, parts.rows) - parts.rows, hi - parts.rows
    lazy = [name for name in names if b > 0 and is_dask(parts.new[name])]
    fetched = dict(zip(lazy, _compute_all([parts.new[name][a:b] for name in lazy])))

    def fresh(name: str) -> Callable[[int, int], np.ndarray]:
        return lambda x, y: fetched[name] if name in fetched else np.asarray(parts.new[name][x:y])

    return {name: _joined(parts, name, lo, hi, fresh(name)) for name in names}


def _joined(parts: PairParts, name: str, a: int, b: int, fresh: Callable[[int, int], np.ndarray]) -> np.ndarray:
    """Rows ``a:b`` of ``name``: the stored ones read here, the new ones ``fresh(x, y)`` (rows of the new segment)."""
    pieces = []
    if a < parts.rows:
        pieces.append(parts.stored_rows(name, a, min(b, parts.rows)))
    if b > parts.rows:
        pieces.append(fresh(max(a, parts.rows) - parts.rows, b - parts.rows))
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def _compute_all(arrays: list[Any]) -> list[np.ndarray]:
    """``arrays`` computed together (one graph, one round trip), as :func:`_computer` computes one."""
    if not arrays:
        return []
    client = _client_of_any(arrays)
    if client is not None:
        return [np.asarray(a) for a in client.compute(arrays, sync=True)]
    import dask  # lazy: only a Dask-backed Dataset reaches here, and dask is then imported already

    return [np.asarray(a) for a in dask.compute(*arrays)]


def _client_of(array: Any) -> Any:
    """The client of the futures ``array`` is made of, or None (Dask's default scheduler computes it)."""
    try:
        from distributed import Future
    except ImportError:  # (distributed is a dependency; a Dask-only environment still writes)
        return None
    for value in dict(array.__dask_graph__()).values():
        if isinstance(value, Future):
            return value.client
    return None


def _client_of_any(arrays: list[Any]) -> Any:
    """The client of the futures any of ``arrays`` is made of (an array of stored rows alone has none), or None."""
    return next((c for c in map(_client_of, arrays) if c is not None), None)


def _computer(array: Any) -> Any:
    """How to compute slices of ``array``: by the client of the futures it is made of, else by Dask's default."""
    client = _client_of(array)
    if client is not None:
        return lambda part: np.asarray(client.compute(part, sync=True))
    return lambda part: np.asarray(part.compute())

