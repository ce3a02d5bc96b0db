"""Saving and reopening pickscale results as a Zarr v3 store.

A results store is a folder holding one ``xarray.Dataset`` in Zarr format 3
with consolidated metadata.  Two root attributes make a folder a *complete*
pickscale store:

``pickscale_complete``
    ``True``, written only after every array is on disk.
``pickscale_schema``
    the layout version (:data:`SCHEMA_VERSION`) that readers check.

plus ``pickscale_version`` (the package version that wrote it), which
:func:`save` adds when the dataset does not already carry it.

The package, one concept per module:

:mod:`~pickscale.store.schema`
    the layout version and the root attributes that make a folder a complete store;
:mod:`~pickscale.store.codec`
    the Dataset encoded for Zarr v3 (:func:`sanitise`) and decoded from a store's bytes;
:mod:`~pickscale.store.manifest`
    every file's size and SHA-256 (``pickscale-manifest.json``), and their check;
:mod:`~pickscale.store.paths`
    the target's checks and its hidden ``.<name>.<kind>-<pid>-<random>`` siblings;
:mod:`~pickscale.store.lease`
    who owns a lock or a temporary: host, boot id, pid and a lease renewed while its run lives;
:mod:`~pickscale.store.temporaries`
    the temporary siblings' leases (``<temporary>.lease``): claimed, dropped, judged stale;
:mod:`~pickscale.store.locks`
    the writer lock (:func:`reserved` holds it for a whole run);
:mod:`~pickscale.store.cleanup`
    what runs that died left behind (:func:`cleanup_stale`);
:mod:`~pickscale.store.writing`
    a Dataset written into a Zarr store: Dask-backed variables a chunk range at a time, or fetched together;
:mod:`~pickscale.store.at_once`
    a Dataset's arrays made (and filled) at once, the files ``to_zarr`` writes;
:mod:`~pickscale.store.publish`
    the atomic save (:func:`save`): written aside, checked in, renamed into place;
:mod:`~pickscale.store.read`
    the checked, consistent read (:func:`open_results`), retried when the store is replaced meanwhile;
:mod:`~pickscale.store.pair_rules`
    SPEC §15's checks of one batch of residual pairs (numpy only: run where the batch is read);
:mod:`~pickscale.store.pair_chunks`
    the residual pairs of an opened store, read where a task runs (a worker of an extension);
:mod:`~pickscale.store.consistency`
    what a results store must satisfy when it is opened (SPEC §15): counts within their bounds, derived
    metrics equal to what the counts give, options, extent and pairs well formed;
:mod:`~pickscale.store.remote`
    stores on object storage (``s3://``, ``gs://``, ``az://``; the extra ``pickscale[cloud]``): Icechunk
    repositories, one commit per save, earlier versions readable;
:mod:`~pickscale.store.buckets`
    where such a store lives: its URL and fsspec's ``storage_options`` as Icechunk's storage.

Example
-------
>>> import tempfile, pathlib, xarray as xr
>>> from pickscale.store import save, open_results
>>> ds = xr.Dataset({"n": ("model", [3, 0])}, coords={"model": ["EQT", "PhaseNet"]})
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> target = save(ds, folder / "results.zarr")
>>> open_results(target)["n"].values.tolist()
[3, 0]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .cleanup import cleanup_stale
    from .codec import sanitise
    from .locks import reserved
    from .manifest import MANIFEST
    from .publish import removed_later, save
    from .read import open_results, read_lazily
    from .schema import SCHEMA_VERSION, is_pickscale_store, read_root_attrs
    from .writing import fetched_together

# The names below are loaded on first use (PEP 562): a worker that reads a store's pairs
# (:mod:`~pickscale.store.pair_chunks`) or checks them (:mod:`~pickscale.store.pair_rules`) loads Zarr, not
# xarray, pandas' I/O or the rest of this package.
_LAZY = {
    "SCHEMA_VERSION": "schema",
    "MANIFEST": "manifest",
    "save": "publish",
    "open_results": "read",
    "read_lazily": "read",
    "removed_later": "publish",
    "cleanup_stale": "cleanup",
    "reserved": "locks",
    "sanitise": "codec",
    "is_pickscale_store": "schema",
    "read_root_attrs": "schema",
    "fetched_together": "writing",
}

__all__ = [
    "SCHEMA_VERSION",
    "MANIFEST",
    "save",
    "open_results",
    "read_lazily",
    "removed_later",
    "cleanup_stale",
    "reserved",
    "sanitise",
    "is_pickscale_store",
    "read_root_attrs",
    "fetched_together",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
