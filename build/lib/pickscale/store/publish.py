"""Saving a results Dataset as a Zarr v3 store, atomically.

:func:`save` never writes into the target itself.  It writes a hidden
sibling ``.<name>.tmp-<pid>-<random>``, marks it complete, consolidates its
metadata once, lists every file in the manifest (:mod:`.manifest`), and only
then renames it into place, so the folder at the target is always either the
previous store or the new one, never a half-written mixture.  A Dataset of at
most :data:`IN_MEMORY_BYTES` (every small study) is built as a Zarr store in
memory and then written file by file into the temporary: the same files, in a
fraction of the time Zarr takes making each array in a folder.  The writer
lock (:mod:`.locks`) lets only one run at a time write a given target; what a
run that died leaves behind is cleared by
:func:`~pickscale.store.cleanup_stale`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import os
import pathlib
import shutil
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import xarray as xr
import zarr

from pickscale.errors import StoreError

from . import temporaries
from .cleanup import remove_dead_siblings
from .codec import sanitise
from .locks import HELD, acquire_lock, confirm_held, release_lock
from .manifest import linked_entries, write_manifest
from .paths import PathLike, check_parent, check_replaceable, describe, fsync_dir, local_store_path, sibling
from .remote import check_remote, is_remote, save_remote
from .schema import COMPLETE, SCHEMA, SCHEMA_VERSION
from .segments import PAIR_PARTS, PairParts
from .writing import Pending, start_dataset, write_dataset

__all__ = ["save", "removed_later", "IN_MEMORY_BYTES"]

#: A Dataset of at most this many bytes is built as a store in memory, then written as files.
IN_MEMORY_BYTES = 32 * 2**20


def save(ds: xr.Dataset, path: PathLike, *, overwrite: bool = False,
         storage_options: dict[str, Any] | None = None) -> pathlib.Path | str:
    """Write a results dataset to a Zarr v3 store, atomically.

    The dataset is first cleaned for Zarr v3 (text as NumPy ``StringDType``,
    attributes as plain JSON, no inherited encodings; see *Notes*), written
    to a hidden temporary folder next to ``path``, marked complete, and then
    renamed into place.  If anything fails, the temporary folder is removed
    and whatever was at ``path`` before is left untouched.

    Parameters
    ----------
    ds : xarray.Dataset
        The results.  NumPy- or Dask-backed; Dask arrays are computed while
        writing.  The caller's dataset is never modified.
    path : str or os.PathLike
        The store folder to create, conventionally ending in ``.zarr``.  Its
        parent folder must exist and be writable.  Or, with the extra
        ``pickscale[cloud]``, a URL of object storage (``s3://bucket/run/results.zarr``):
        the store is then an Icechunk repository and each save a new version
        of it (:mod:`pickscale.store.remote`).
    overwrite : bool, default False
        Replace an existing pickscale store at ``path``.  A path holding
        anything that is not a pickscale store is never replaced.
    storage_options : dict, optional
        A URL only: fsspec's options for it (s3fs's ``endpoint_url``, ``key``,
        ``secret``, ``anon``; gcsfs's ``token``; adlfs's ``account_name``,
        ``account_key``, ``sas_token``), as for the inputs of
        :func:`pickscale.score` (:mod:`pickscale.store.buckets`); default the
        environment's.

    Returns
    -------
    pathlib.Path or str
        The absolute path of the written store (a URL: the URL).

    Raises
    ------
    StoreError
        When ``path`` exists and ``overwrite`` is False; when ``path`` exists
        and is not a pickscale store; when the parent folder is missing or not
        writable; when another run is writing the same store; when the
        dataset cannot be stored (an attribute that is not JSON, text with
        missing values); or when writing fails (the message names the cause).

    Notes
    -----
    Cleaning done before writing, on a copy:

    * text variables and coordinates (NumPy ``<U``, ``object`` arrays of
      ``str``, pandas string dtypes) become NumPy ``StringDType``, which Zarr
      v3 stores as variable-length UTF-8 and gives back as such; fixed-width
      ``<U`` arrays have no Zarr v3 specification and ``None`` would silently
      become ``""``, so text with missing values is refused;
    * attributes of the dataset and of every variable become plain JSON:
      NumPy scalars and arrays turn into Python numbers and lists, NaN and
      infinities into ``None``, paths and datetimes into strings;
    * every variable's ``encoding`` is dropped (chunking or codecs inherited
      from another store could conflict with the new one), and Dask chunks
      that Zarr cannot store (uneven chunks) are made regular.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np, xarray as xr
    >>> ds = xr.Dataset(
    ...     {"matched": (("model", "station"), np.array([[2, 0]], dtype=np.int64))},
    ...     coords={"model": ["PhaseNet(190703-214543)"], "station": ["Zürich", "BFO"]},
    ...     attrs={"tol_s": np.float64(0.5)},
    ... )
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "results.zarr"
    >>> save(ds, target).name
    'results.zarr'
    >>> save(ds, target, overwrite=True).name
    'results.zarr'
    """
    if is_remote(path):
        url = check_remote(os.fspath(path))
        save_remote(ds, url, overwrite=overwrite, storage_options=storage_options)
        return url
    parts = ds.encoding.get(PAIR_PARTS)  # an extension's pairs: the stored ones, then the new segment
    target = local_store_path(path, what="results store")
    check_parent(target)
    check_replaceable(target, overwrite)
    clean = sanitise(ds)  # before taking the lock: a bad dataset fails fast

    # Under reserved(), this process already holds the lock for the whole run.
    lock = None if target in HELD else acquire_lock(target)
    try:
        # The state may have changed while we were waiting for nothing: check again.
        check_replaceable(target, overwrite)
        remove_dead_siblings(target, kinds=("tmp",))
        tmp = sibling(target, "tmp")
        _claim(tmp, target)  # before the temporary: another host sees whose it is, and until when
        try:
            _write_complete_store(clean, tmp, target, parts)
            confirm_held(target)  # a lease that ran out meanwhile: another run may be writing
            _move_into_place(tmp, target)
        except BaseException:
            if os.path.lexists(tmp):
                _remove_temporary(tmp)
            raise
        finally:
            temporaries.drop(tmp)
    finally:
        if lock is not None:
            release_lock(lock)
    fsync_dir(target.parent)
    return target


def _claim(path: pathlib.Path, target: pathlib.Path) -> None:
    """The lease of a temporary sibling (:func:`.temporaries.claim`); a failure is a StoreError."""
    try:
        temporaries.claim(path)
    except OSError as exc:
        raise StoreError(f"could not write results to {target}: {describe(exc)}; nothing was changed at the "
                         "target") from exc


def _write_complete_store(clean: xr.Dataset, tmp: pathlib.Path, target: pathlib.Path,
                          parts: PairParts | None = None) -> None:
    """Write ``clean`` to ``tmp``, mark it complete and consolidate; clean up on failure.

    ``parts``: an extension's pairs (:class:`~pickscale.store.segments.PairParts`); the whole chunks of the
    stored ones that do not change are linked from the store at ``target``, with the SHA-256 its manifest
    lists for them (they are the same files).
    """
    try:
        # Zarr makes each array by several round trips to its event-loop thread (create, attributes,
        # chunks: ~200 for a study's ~70 variables), each a few milliseconds into files and a fraction of
        # one into memory: the store is built in memory and its files written after (the same bytes) -- all
        # of it for a small Dataset; else every array's metadata and the in-memory variables, the large
        # Dask-backed ones (the residual pairs) then filled into the folder a chunk range at a time.
        linking = parts is not None and parts.links
        files: dict[str, Any] = {}
        pending = _complete_store(clean, zarr.storage.MemoryStore(store_dict=files), parts,
                                  whole=clean.nbytes <= IN_MEMORY_BYTES and not linking, linking=linking)
        _write_files(tmp, files)
        del files
        known = {}
        if pending is not None:
            # (an extension's unchanged stored chunks linked from the store it replaces)
            linked = pending.fill(tmp, target if linking else None)
            known = linked_entries(target, linked) if linked else {}
        # Last, so that consolidating does not list it as a would-be Zarr node.
        write_manifest(tmp, known=known)
    except BaseException as exc:
        _remove_temporary(tmp)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise StoreError(
            f"could not write results to {target}: {describe(exc)}; "
            "nothing was changed at the target"
        ) from exc


def _complete_store(clean: xr.Dataset, store: Any, parts: PairParts | None = None, *, whole: bool,
                    linking: bool) -> Pending | None:
    """``clean`` written to ``store``, marked complete and consolidated; what is left to fill (``whole``:
    nothing; else the large Dask-backed variables, :func:`~pickscale.store.writing.start_dataset`)."""
    if whole:
        write_dataset(clean, store, parts=parts)
        pending = None
    else:
        pending = start_dataset(clean, store, parts=parts, linking=linking)
    group = zarr.open_group(store, mode="r+", zarr_format=3)
    group.attrs.update({COMPLETE: True, SCHEMA: SCHEMA_VERSION})
    with warnings.catch_warnings():
        # "Consolidated metadata is not part of the Zarr v3 specification":
        # known and intended (xarray reads it), not something for users.
        warnings.filterwarnings("ignore", message="Consolidated metadata", category=UserWarning)
        zarr.consolidate_metadata(store, zarr_format=3)
    return pending


def _write_files(folder: pathlib.Path, files: dict[str, Any]) -> None:
    """The files of a store built in memory (``{key: zarr Buffer}``), at the paths Zarr's ``LocalStore`` gives
    the same keys.

    A study's store is a few hundred folders and files (every array a folder, its chunks under ``c/``), and
    on some file systems each one made takes a fraction of a millisecond of waiting, not of work: the
    folders of one depth, then the files, are made by a few threads at once.
    """
    folder.mkdir()
    keys = sorted(files)
    folders: set[str] = set()
    for key in keys:
        parent = key.rpartition("/")[0]
        while parent and parent not in folders:
            folders.add(parent)
            parent = parent.rpartition("/")[0]

    def make(name: str) -> None:
        folder.joinpath(*name.split("/")).mkdir()

    def write(key: str) -> None:
        folder.joinpath(*key.split("/")).write_bytes(files[key].to_bytes())

    pool = concurrent.futures.ThreadPoolExecutor(_WRITERS, thread_name_prefix="pickscale-store-files")
    try:
        for depth in sorted({name.count("/") for name in folders}):
            # (every folder of a depth made before the next depth's)
            _all_done(pool.submit(make, name) for name in sorted(folders) if name.count("/") == depth)
        _all_done(pool.submit(write, key) for key in keys)
    finally:
        pool.shutdown(cancel_futures=True)  # after an error, nothing more is written (the temporary goes)


def _all_done(futures: Iterable[concurrent.futures.Future[None]]) -> None:
    """Wait for ``futures``; after an error, those not started are cancelled and the first error (in their
    order) is raised once those running have finished."""
    futures = list(futures)
    concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
    for future in futures:
        future.cancel()  # (a no-op on those done or running)
    for future in futures:
        error = None if future.cancelled() else future.exception()
        if error is not None:
            raise error


#: Threads making a small store's folders and files (:func:`_write_files`).
_WRITERS = 8


def _remove_temporary(tmp: pathlib.Path, *, settle_s: float = 2.0) -> None:
    """Remove a half-written store, also when Zarr is still writing into it.

    Zarr writes chunks from its own event-loop thread: when Ctrl-C stops the
    main thread, the chunk writes already under way still finish, and can
    recreate folders that ``rmtree`` just removed.  So the folder is removed
    again until it stays gone (what is still left after ``settle_s`` carries
    this process's pid and :func:`~pickscale.store.cleanup_stale` removes it later).
    """
    deadline = time.monotonic() + settle_s
    gone_since = None
    while time.monotonic() < deadline:
        if os.path.lexists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
            gone_since = None
        elif gone_since is None:
            gone_since = time.monotonic()
        elif time.monotonic() - gone_since >= 0.25:
            return
        time.sleep(0.02)


def _move_into_place(tmp: pathlib.Path, target: pathlib.Path) -> None:
    """Rename the finished store to the target, swapping out a previous store."""
    if not os.path.lexists(target):
        _rename_or_fail(tmp, target, target, tmp, "nothing was changed at the target")
        return
    old = sibling(target, "old")
    _claim(old, target)
    try:
        _rename_or_fail(target, old, target, tmp, "the previous store is unchanged")
        try:
            os.rename(tmp, target)
        except BaseException as exc:
            try:
                os.rename(old, target)  # put the previous store back
                kept = "the previous store is back in place"
            except OSError:
                kept = f"the previous store is kept at {old}"
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise StoreError(f"could not move the new results into {target}: {describe(exc)}; {kept}") from exc
        # The new store is in place; a failure to delete the old one only leaves
        # a hidden sibling that cleanup_stale removes once this run is gone.
        later = _DEFERRED.get()
        if later is not None:
            later.append(_removal(old))  # (its lease dropped once it is gone)
            return
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        temporaries.drop(old)
        raise
    temporaries.drop(old)


#: Within :func:`removed_later`: the threads removing the stores this thread's saves replaced.
_DEFERRED: contextvars.ContextVar[list[threading.Thread] | None] = contextvars.ContextVar("deferred", default=None)


def _removal(old: pathlib.Path) -> threading.Thread:
    def remove() -> None:
        try:
            shutil.rmtree(old, ignore_errors=True)
        finally:
            temporaries.drop(old)

    thread = threading.Thread(target=remove, name="pickscale-remove-replaced", daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def removed_later() -> Iterator[None]:
    """Within it, a save that replaces a local store removes the replaced one in the background (its many files
    take a while to delete on some file systems); each is gone when the context ends.  The store is in place,
    and complete, as soon as :func:`save` returns; the replaced one is only garbage (what a run that died
    leaves of it, :func:`~pickscale.store.cleanup_stale` removes)."""
    threads: list[threading.Thread] = []
    token = _DEFERRED.set(threads)
    try:
        yield
    finally:
        _DEFERRED.reset(token)
        for thread in threads:
            thread.join()


def _rename_or_fail(
    src: pathlib.Path, dst: pathlib.Path, target: pathlib.Path, tmp: pathlib.Path, kept: str
) -> None:
    """``os.rename``; on failure remove the new store and raise StoreError."""
    try:
        os.rename(src, dst)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StoreError(f"could not move the new results into {target}: {describe(exc)}; {kept}") from exc
