"""Reading a results store back, checked and consistent.

A reader racing ``save(..., overwrite=True)`` could read the metadata of one
store and chunks of the next.  :func:`open_results` therefore reads every
file of the store into memory once, checks every byte against the manifest
(so all of them come from the one store the manifest describes), and builds
the dataset from those bytes: the result is loaded, not lazy, and nothing is
read from the folder afterwards.  When the check fails because the store was
replaced meanwhile (the folder at the path, or its manifest, changed), the
read is retried, a few times; a check that fails on a folder that did not
change means the store is damaged.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import json
import os
import pathlib
import time
from typing import Any

import xarray as xr

from pickscale.errors import StoreError

from .checked import CheckedStore, Deferred, store_identity
from .codec import dataset_from_files
from .consistency import check_results
from .manifest import MANIFEST, check_manifest, read_manifest
from .pair_chunks import PAIR_SOURCE, pair_source
from .paths import PathLike, describe, local_store_path, siblings
from .remote import check_remote, is_remote, open_lazily, open_remote
from .schema import check_pickscale_attrs, read_root_meta, root_attrs

__all__ = ["open_results", "open_checking", "read_lazily"]

#: How many times :func:`open_results` reads a store that is replaced while being read.
_READ_ATTEMPTS = 5


def open_results(path: PathLike, *, version: str | None = None,
                 storage_options: dict[str, Any] | None = None, lazy: bool = True) -> xr.Dataset:
    """Read a complete pickscale results store, checked: everything in memory but the residual pairs.

    The store is checked before it is opened: it must exist, be a Zarr v3
    store, carry the completeness marker written at the end of
    :func:`~pickscale.store.save`, have this version's store schema, name the pickscale
    version that wrote it, and hold exactly the files listed in its
    ``pickscale-manifest.json``, each with the SHA-256 it was written with
    (the root ``zarr.json`` -- attributes, options, consolidated metadata --
    included).  A store copied only in part would otherwise read its missing
    chunks as NaN or 0, and a flipped bit could turn 0.63 into -3.6e163.

    Every file is read once into memory and checked, and the dataset is
    decoded from exactly those bytes, so the result is one store -- never a
    mixture of the store being replaced by ``save(..., overwrite=True)`` (or
    ``pickscale score --overwrite``) and its successor.  If the store is
    replaced while being read, the read is retried (up to 5 attempts).

    The residual pairs (the variables of dimension ``pair``: ``residual``,
    ``pair_*``) are the part of results that grows with the data; by default
    (``lazy``) they are read when used, a chunk at a time -- a notebook that
    slices one model's residuals reads those chunks only -- and each chunk
    file is checked against the manifest the store was opened with as it is
    read (its size is checked on opening): a chunk that differs, because the
    store was replaced or damaged since, is a ``StoreError``, never other
    numbers.  What lazy opening does not check (SPEC §15): the pairs'
    agreement with the rest of the store (indices in range, canonical order,
    the timing readings they give), which needs every pair; ``lazy=False``
    reads everything and checks that too.
    Reading whole is the price of that guarantee: results hold counts and
    metrics, small next to the catalogue, but the per-station counts grow
    with the stations (10^5 stations, 3 models, 1 M pairs: about 250 MB on
    disk, 2.1 GB loaded; checking the hashes takes 0.7 s of the 8 s read).
    For lazy access to a store nobody is rewriting, ``xarray.open_zarr``
    works too, without these checks.

    Parameters
    ----------
    path : str or os.PathLike
        The store folder written by :func:`~pickscale.store.save` (or ``pickscale score``),
        or the URL of a store on object storage (``s3://bucket/run/results.zarr``, with
        the extra ``pickscale[cloud]``): one snapshot of it is read.
    version : str, optional
        A store on object storage only: the version to read (as listed by
        :func:`pickscale.store.remote.versions`); default the latest.
    storage_options : dict, optional
        A URL only: fsspec's options for it, as for :func:`~pickscale.store.save`;
        default the environment's.
    lazy : bool, default True
        A local store: the residual pairs read when used (above); False: read
        whole, and checked whole.  A store on object storage is read whole.

    Returns
    -------
    xarray.Dataset
        The results, loaded (NumPy-backed) but for the pairs when ``lazy``:
        ``.load()`` reads those.  Loaded, it is detached from the folder:
        overwriting or deleting the store afterwards does not change it (the
        pairs not loaded yet then fail to read, with a ``StoreError``).  Text
        coordinates are NumPy ``StringDType``, as in the Dataset
        :func:`pickscale.score` returns and as plain ``xr.open_zarr`` gives them.

    Raises
    ------
    StoreError
        When the path does not exist, is not a Zarr v3 store, is not a
        pickscale store, is incomplete (the run writing it did not finish),
        was written with another store schema (an earlier pickscale's store
        must be written again by ``pickscale score``), is damaged (its
        manifest is missing or unreadable, or files are missing, changed or
        not listed in it: the message names them), was replaced while
        being read on every attempt, or -- a store of results -- contradicts
        itself although every hash matches (an edited value or attribute with
        its manifest written again: counts that break SPEC's invariants,
        a metric other than its counts give, options or an ``extent`` that
        do not parse, pair indices out of range; SPEC §15,
        :mod:`pickscale.store.consistency`): the message names the variable
        or attribute and the first offending cells.

    Examples
    --------
    >>> import tempfile, pathlib, xarray as xr
    >>> from pickscale.store import save
    >>> ds = xr.Dataset({"emitted": ("phase", [5, 7])}, coords={"phase": ["P", "S"]})
    >>> target = save(ds, pathlib.Path(tempfile.mkdtemp()) / "results.zarr")
    >>> res = open_results(target).load()
    >>> res["emitted"].sel(phase="S").item()
    7

    Results, with their pairs read when used:

    >>> import pandas as pd, pickscale
    >>> ref = pd.DataFrame({"station": ["A", "B"], "phase": ["P", "P"], "time": [10.0, 20.0]})
    >>> picks = ref.assign(time=[10.1, 19.8], conf=[0.9, 0.8], model=["m", "n"])
    >>> target = save(pickscale.score(ref, picks), pathlib.Path(tempfile.mkdtemp()) / "results.zarr")
    >>> res = open_results(target)
    >>> res.residual.variable._in_memory, res.recall.variable._in_memory
    (False, True)
    >>> res.residual.where(res.pair_model == 1, drop=True).values.round(3).tolist()
    [-0.2]
    """
    if is_remote(path) or version is not None:
        return _open_version(path, version, storage_options)
    store = local_store_path(path, what="results store")
    ds, lazily = _snapshot_dataset(store, lazy=lazy)
    # The manifest catches accidents, not edits: the numbers must also agree with each other.
    check_results(store, ds, pairs=not lazily)
    return ds


def open_checking(path: PathLike) -> tuple[xr.Dataset, concurrent.futures.Future[None]]:
    """:func:`open_results` (its pairs read when used) of a store whose numbers are checked against each other
    (SPEC §15) on a thread of its own: the Dataset, and that check (its ``result()`` raises the
    :class:`~pickscale.errors.StoreError` :func:`open_results` would).

    For a caller with other work to do meanwhile (``extend`` scores its new inputs): every file is read and
    checked against the manifest before this returns, but nothing the Dataset holds is to be trusted until
    the check is done.  A store on object storage is opened and checked before this returns.

    Examples
    --------
    >>> import tempfile, pathlib, xarray as xr
    >>> from pickscale.store import save
    >>> target = save(xr.Dataset({"emitted": ("phase", [5, 7])}), pathlib.Path(tempfile.mkdtemp()) / "r.zarr")
    >>> ds, checking = open_checking(target)
    >>> checking.result(), ds["emitted"].values.tolist()
    (None, [5, 7])
    """
    checking: concurrent.futures.Future[None] = concurrent.futures.Future()
    if is_remote(path):
        ds = open_results(path)
        checking.set_result(None)
        return ds, checking
    store = local_store_path(path, what="results store")
    ds, _ = _snapshot_dataset(store, lazy=True)
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pickscale-store-check")
    checking = pool.submit(contextvars.copy_context().run, check_results, store, ds, pairs=False)
    pool.shutdown(wait=False)
    return ds, checking


def _snapshot_dataset(store: pathlib.Path, *, lazy: bool) -> tuple[xr.Dataset, bool]:
    """The Dataset of one snapshot of ``store`` whose every byte matched its manifest (:func:`open_results`), and
    whether its pairs are left to read."""
    for attempt in range(_READ_ATTEMPTS):
        try:
            files, deferred = _checked_snapshot(store, lazy=lazy)
        except _Replaced:
            time.sleep(0.005 * 2**attempt)
            continue
        ds = dataset_from_files(store, files, deferred=deferred)
        if deferred is not None and deferred.entries:
            # (how a task elsewhere reads the pairs as this opening would: pickscale.engine.stored_pairs)
            names = [prefix.removesuffix("/c/") for prefix in _pair_chunks(files["zarr.json"])]
            ds.encoding[PAIR_SOURCE] = pair_source(store, files, deferred, names)
        return ds, deferred is not None
    if not os.path.lexists(store):
        raise StoreError(f"no results store at {store}: the path does not exist")
    raise StoreError(
        f"could not read results store {store}: it was replaced while it was being read, "
        f"{_READ_ATTEMPTS} times in a row (is `pickscale score --overwrite` writing it again and "
        "again?); try again once that run has finished"
    )


def _open_version(path: PathLike, version: str | None, storage_options: dict[str, Any] | None) -> xr.Dataset:
    """A store on object storage (:mod:`.remote`), at its latest version or at ``version``."""
    if not is_remote(path):
        raise StoreError(f"results store {path}: a local store has one version; version= is for stores on "
                         "object storage (s3://…)")
    return open_remote(check_remote(os.fspath(path)), version=version, storage_options=storage_options)


class _Replaced(Exception):
    """The store was replaced (or its manifest changed) while it was being read: read again."""


def _checked_snapshot(store: pathlib.Path, *, lazy: bool = False) -> tuple[dict[str, bytes], Deferred | None]:
    """Every file of the store (relative path -> bytes), checked against its manifest; with ``lazy``,
    the pair variables' chunk files left to read when used (their sizes checked), as a :class:`Deferred`.

    Raises StoreError when the store is not a complete pickscale store of this
    schema or is damaged, and :class:`_Replaced` when a check failed because
    the store was replaced while it was being read.
    """
    before = store_identity(store)
    if before is None:
        if siblings(store, "old"):  # a save is between its two renames: the new store comes next
            raise _Replaced()
        raise StoreError(f"no results store at {store}: the path does not exist")
    deferred = None
    try:
        root = read_root_meta(store)
        check_pickscale_attrs(store, root_attrs(store, root))
        later = _pair_chunks(root) if lazy else ()
        files, sizes = _read_files(store, later=later)
        files["zarr.json"] = root
        listed = check_manifest(store, files, sizes=sizes)
        if sizes:
            deferred = Deferred(store, {rel: listed[rel] for rel in sizes}, identity=before, identify=store_identity)
    except (StoreError, OSError) as exc:
        if store_identity(store) != before:
            raise _Replaced() from exc
        if not isinstance(exc, StoreError):  # (a StoreError is an OSError too)
            raise StoreError(f"could not read results store {store}: {describe(exc)}") from exc
        raise
    # Every byte matched the manifest: whatever happened to the folder meanwhile,
    # these files are the one store that manifest describes (and the deferred ones are checked when read).
    return files, deferred


#: The dimension of the variables read when used (:func:`open_results`): the residual pairs.
LAZY_DIMENSION = "pair"


def _pair_chunks(root: bytes) -> tuple[str, ...]:
    """The folder prefixes (``residual/c/``) of the chunks of the variables of dimension ``pair``."""
    try:
        arrays = json.loads(root)["consolidated_metadata"]["metadata"]
    except (ValueError, KeyError, TypeError):
        return ()  # (no consolidated metadata: the manifest or opening names what is wrong)
    return tuple(f"{name}/c/" for name, meta in sorted(arrays.items())
                 if isinstance(meta, dict) and meta.get("dimension_names") == [LAZY_DIMENSION])


def _read_files(store: pathlib.Path, *, later: tuple[str, ...] = ()) -> tuple[dict[str, bytes], dict[str, int]]:
    """Relative path -> bytes of every file of a store but its root ``zarr.json``, and relative path -> size
    of those under the prefixes ``later`` (not read)."""

    def fail(exc: OSError) -> None:
        raise exc

    out, sizes = {}, {}
    for folder, dirs, names in os.walk(store, onerror=fail):
        dirs.sort()
        for name in sorted(names):
            path = pathlib.Path(folder, name)
            rel = path.relative_to(store).as_posix()
            if rel == "zarr.json":
                continue
            if rel.startswith(later):
                sizes[rel] = path.stat().st_size
            else:
                out[rel] = path.read_bytes()
    return out, sizes


def read_lazily(ds: xr.Dataset, path: PathLike, *, version: str | None = None,
                storage_options: dict[str, Any] | None = None) -> xr.Dataset:
    """``ds`` with each Dask-backed variable replaced by the same variable of the store just saved from it, lazily.

    The residual pairs of a run on a cluster stay there (:mod:`pickscale.engine.pairs`) until the store
    is written; once the cluster is let go, the tables and figures read what they need of them from the
    store, a chunk at a time.  Meant for the writer of the store: the numbers are not checked again, as
    :func:`open_results` checks them, but every chunk of the pairs is read through the manifest written with
    them -- the Dataset outlives the writer's lock (:func:`pickscale.extend` returns it), and a store replaced
    since (another extension, an overwrite) or removed is then a :class:`~pickscale.errors.StoreError`, never
    another store's pairs or Zarr's fill values.  ``ds`` unchanged when nothing in it is Dask-backed.

    Examples
    --------
    >>> import tempfile, pathlib, dask.array as da, xarray as xr
    >>> from pickscale.store import save
    >>> ds = xr.Dataset({"x": ("pair", da.arange(4, chunks=2)), "y": ("phase", [1, 2])})
    >>> target = save(ds, pathlib.Path(tempfile.mkdtemp()) / "results.zarr")
    >>> back = read_lazily(ds, target)
    >>> back.x.values.tolist(), back.y is ds.y or back.y.values.tolist()
    ([0, 1, 2, 3], [1, 2])
    """
    lazy = [name for name in ds.data_vars if type(ds[name].data).__module__.startswith("dask.")]
    if not lazy:
        return ds
    if is_remote(path):
        if version is None:
            raise StoreError(f"results store {path}: read_lazily needs the version just saved")
        stored = open_lazily(os.fspath(path), version=version, storage_options=storage_options)
    else:
        target = local_store_path(path, what="results store")
        pairs = [name for name in lazy if ds[name].dims[:1] == (LAZY_DIMENSION,)]
        out = {name: variable for name, variable in _as_written(target).variables.items() if name in pairs}
        if len(pairs) < len(lazy):  # (anything else Dask-backed: not what the store reads when used)
            stored = xr.open_zarr(target, consolidated=True, zarr_format=3, chunks={})
            out.update({name: stored[name].variable for name in lazy if name not in pairs})
        return ds.assign(out)
    return ds.assign({name: stored[name].variable for name in lazy})


def _as_written(store: pathlib.Path) -> xr.Dataset:
    """``store`` as just written, nothing read: its pair variables read when used, each chunk file checked
    against the manifest written with it (and the store's identity then), as :func:`open_results` reads them."""
    identity = store_identity(store)
    root = read_root_meta(store)
    listed = read_manifest(store, (store / MANIFEST).read_bytes())
    later = _pair_chunks(root)
    deferred = Deferred(store, {rel: entry for rel, entry in listed.items() if rel.startswith(later)},
                        identity=identity, identify=store_identity)
    return xr.open_zarr(CheckedStore({"zarr.json": root}, deferred), consolidated=True, zarr_format=3, chunks=None)
