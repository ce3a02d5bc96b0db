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

from typing import Any

import numpy as np
import xarray as xr

__all__ = ["write_dataset", "zarr_chunks", "BLOCK_BYTES"]

#: The most bytes of one variable fetched and written at a time.
BLOCK_BYTES = 32 * 2**20


def zarr_chunks(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The chunks Zarr chooses for an array of ``shape`` and item size written without chunks given.

    Examples
    --------
    >>> zarr_chunks((5_000_000,), 8), zarr_chunks((10,), 1)
    ((78125,), (10,))
    """
    from zarr.core.chunk_grids import _guess_chunks

    return tuple(int(c) for c in _guess_chunks(tuple(shape), int(itemsize)))


def write_dataset(clean: xr.Dataset, store: Any) -> None:
    """Write ``clean`` (as :func:`pickscale.store.codec.sanitise` returns it) to ``store`` (a path or a Zarr store).

    Examples
    --------
    >>> import tempfile, dask.array as da, xarray as xr, zarr
    >>> ds = xr.Dataset({"x": ("pair", da.arange(10, chunks=3)), "y": ("phase", [1, 2])})
    >>> path = tempfile.mkdtemp()
    >>> write_dataset(ds, path)
    >>> zarr.open_group(path)["x"][:].tolist(), zarr.open_group(path)["x"].chunks
    ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], (10,))
    """
    lazy = [name for name in clean.data_vars if _is_dask(clean[name].data) and clean[name].ndim]
    if sum(clean[name].nbytes for name in lazy) <= BLOCK_BYTES:
        # Small enough to hold at once (every small study): fetched in one round trip and written in one pass,
        # not a region write per variable — the same bytes, since arrays in memory get zarr_chunks anyway.
        clean = clean.copy()
        for name, values in zip(lazy, _compute_all([clean[name].data for name in lazy])):
            clean[name] = clean[name].variable.copy(data=values)
        clean.to_zarr(store, mode="w", zarr_format=3, consolidated=False)
        return
    chunked = clean.copy()
    for name in lazy:
        var = clean[name].variable
        chunked[name] = var.chunk(dict(zip(var.dims, zarr_chunks(var.shape, var.dtype.itemsize))))
    # Every in-memory variable and every array's metadata now; the Dask-backed data below.
    chunked.to_zarr(store, mode="w", zarr_format=3, consolidated=False, compute=False)
    for name in lazy:
        var = chunked[name].variable
        dim, rows = var.dims[0], var.data.chunks[0][0]
        row_bytes = var.dtype.itemsize * int(np.prod(var.shape[1:], dtype=np.int64))
        step = rows * max(1, BLOCK_BYTES // max(1, rows * row_bytes))
        compute = _computer(var.data)
        for start in range(0, var.shape[0], step):
            stop = min(start + step, var.shape[0])
            block = compute(var.data[start:stop])
            xr.Dataset({name: (var.dims, block, var.attrs)}).to_zarr(
                store, region={str(dim): slice(start, stop)}, zarr_format=3, consolidated=False)
            del block


def _compute_all(arrays: list[Any]) -> list[np.ndarray]:
    """``arrays`` computed together (one graph, one round trip), as :func:`_computer` computes one."""
    if not arrays:
        return []
    client = _client_of(arrays[0])
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


def _computer(array: Any) -> Any:
    """How to compute slices of ``array``: by the client of the futures it is made of, else by Dask's default."""
    client = _client_of(array)
    if client is not None:
        return lambda part: np.asarray(client.compute(part, sync=True))
    return lambda part: np.asarray(part.compute())


def _is_dask(data: Any) -> bool:
    return type(data).__module__.startswith("dask.")
