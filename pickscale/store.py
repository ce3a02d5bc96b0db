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

How a save stays safe
---------------------
:func:`save` never writes into the target itself.  It writes a hidden
sibling ``.<name>.tmp-<pid>-<random>``, marks it complete, consolidates its
metadata once, and only then renames it into place, so the folder at the
target is always either the previous store or the new one, never a
half-written mixture.  A lock file
``.<name>.lock`` (created exclusively, holding the writer's pid) lets only one
run at a time write a given target.  When a run dies, its temporary siblings
and lock stay behind; the lock is taken over by the next run and
:func:`cleanup_stale` removes the siblings.

The lock and the pid checks assume every writer of a folder runs on the same
machine (pids mean nothing across hosts on a shared file system).

``pickscale score`` holds the lock for its whole run (:func:`reserved`), so a
second run aimed at the same folder stops before computing, and the tables
and figures next to the store always come from the run that wrote it.

Before the rename, :func:`save` lists every file of the new store -- the
root ``zarr.json`` (root attributes, the options, and the consolidated
metadata of every array) included -- with its size and SHA-256 in
``pickscale-manifest.json`` (written in one canonical JSON form, so that any
change to the manifest itself shows too).  A store of this schema without a
readable manifest is damaged.  This matters because Zarr silently reads a
missing chunk as its fill value, and a flipped bit in a compressed chunk can
decode to a wildly wrong number.

How a read stays consistent
---------------------------
A reader racing ``save(..., overwrite=True)`` could read the metadata of one
store and chunks of the next.  :func:`open_results` therefore reads every
file of the store into memory once, checks every byte against the manifest
(so all of them come from the one store the manifest describes), and builds
the dataset from those bytes: the result is loaded, not lazy, and nothing is
read from the folder afterwards.  When the check fails because the store was
replaced meanwhile (the folder at the path, or its manifest, changed), the
read is retried, a few times; a check that fails on a folder that did not
change means the store is damaged.

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

import contextlib
import datetime as _dt
import hashlib
import json
import math
import os
import pathlib
import re
import secrets
import shutil
import socket
import stat as _stat
import time
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import xarray as xr
import zarr

from pickscale import __version__
from pickscale.errors import StoreError

__all__ = ["SCHEMA_VERSION", "save", "open_results", "cleanup_stale", "reserved"]
# ``sanitise`` is public too (tests and notebooks compare against it) but not re-exported.

#: Layout version of the results store; bumped when the store's layout changes.
#: 2: the manifest holds a SHA-256 of every file, root ``zarr.json`` included, and is required
#: (schema 1 listed sizes only, without the root metadata; such stores are refused: re-run score).
SCHEMA_VERSION: int = 2

_COMPLETE = "pickscale_complete"
_SCHEMA = "pickscale_schema"
_VERSION = "pickscale_version"
_MARKERS = (_COMPLETE, _SCHEMA)
#: Every file of the store (root ``zarr.json`` included) with its size and
#: SHA-256, written last, before the store is moved into place;
#: :func:`open_results` checks every byte read against it.
MANIFEST = "pickscale-manifest.json"
_MANIFEST_FORMAT = 2
#: How many times :func:`open_results` reads a store that is replaced while being read.
_READ_ATTEMPTS = 5

# A lock that holds no readable pid yet (its writer is between creating and
# writing it) is treated as held for this long before it counts as stale.
_EMPTY_LOCK_GRACE_S = 30.0

PathLike = str | os.PathLike[str]

# Targets whose lock this process holds for a whole run (see :func:`reserved`):
# target path -> lock file.
_HELD: dict[pathlib.Path, pathlib.Path] = {}


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------


def save(ds: xr.Dataset, path: PathLike, *, overwrite: bool = False) -> pathlib.Path:
    """Write a results dataset to a Zarr v3 store, atomically.

    The dataset is first cleaned for Zarr v3 (text as Python ``str`` objects,
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
        parent folder must exist and be writable.
    overwrite : bool, default False
        Replace an existing pickscale store at ``path``.  A path holding
        anything that is not a pickscale store is never replaced.

    Returns
    -------
    pathlib.Path
        The absolute path of the written store.

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

    * text variables and coordinates (NumPy ``<U``, NumPy ``StringDType``,
      pandas string dtypes) become ``object`` arrays of Python ``str``, which
      Zarr v3 stores as variable-length UTF-8; fixed-width ``<U`` arrays have
      no Zarr v3 specification and ``None`` would silently become ``""``, so
      text with missing values is refused;
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
    target = _absolute(path)
    _check_parent(target)
    _check_replaceable(target, overwrite)
    clean = sanitise(ds)  # before taking the lock: a bad dataset fails fast

    # Under reserved(), this process already holds the lock for the whole run.
    lock = None if target in _HELD else _acquire_lock(target)
    try:
        # The state may have changed while we were waiting for nothing: check again.
        _check_replaceable(target, overwrite)
        _remove_dead_siblings(target, kinds=("tmp",))
        tmp = _sibling(target, "tmp")
        _write_complete_store(clean, tmp, target)
        _move_into_place(tmp, target)
    finally:
        if lock is not None:
            _release_lock(lock)
    _fsync_dir(target.parent)
    return target


@contextlib.contextmanager
def reserved(path: PathLike) -> Iterator[pathlib.Path]:
    """Hold the writer lock of a store for a whole run, not just while saving.

    ``pickscale score`` reserves its target before it starts computing, so a
    second run aimed at the same folder fails at once with a clear message
    instead of computing for an hour and then racing the first run (its
    tables and figures would be mixed with the first run's).  Inside the
    block, :func:`save` and :func:`cleanup_stale` of this process use the
    lock held here.

    Parameters
    ----------
    path : str or os.PathLike
        The store path, as passed to :func:`save`.  Its parent folder must
        exist and be writable.

    Yields
    ------
    pathlib.Path
        The absolute store path.

    Raises
    ------
    StoreError
        When the folder is missing or not writable, or another run holds
        the lock.

    Examples
    --------
    >>> import tempfile, pathlib, xarray as xr
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "results.zarr"
    >>> with reserved(target):
    ...     _ = save(xr.Dataset({"n": ("x", [1])}), target)
    >>> sorted(p.name for p in target.parent.iterdir())
    ['results.zarr']
    """
    target = _absolute(path)
    _check_parent(target)
    if target in _HELD:
        raise StoreError(f"cannot reserve {target}: this process has already reserved it")
    lock = _acquire_lock(target)
    _HELD[target] = lock
    try:
        yield target
    finally:
        _HELD.pop(target, None)
        _release_lock(lock)


def open_results(path: PathLike) -> xr.Dataset:
    """Read a complete pickscale results store into memory, checked.

    The store is checked before it is opened: it must exist, be a Zarr v3
    store, carry the completeness marker written at the end of
    :func:`save`, have this version's store schema, name the pickscale
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
    Reading whole is the price of that guarantee: results hold counts and
    metrics, small next to the catalogue, but the per-station counts grow
    with the stations (10^5 stations, 3 models, 1 M pairs: about 250 MB on
    disk, 2.1 GB loaded; checking the hashes takes 0.7 s of the 8 s read).
    For lazy access to a store nobody is rewriting, ``xarray.open_zarr``
    works too, without these checks.

    Parameters
    ----------
    path : str or os.PathLike
        The store folder written by :func:`save` (or ``pickscale score``).

    Returns
    -------
    xarray.Dataset
        The results, loaded (NumPy-backed; ``.load()`` is a no-op), detached
        from the folder: overwriting or deleting the store afterwards does not
        change it.  Text comes back as ``object`` arrays of Python ``str`` (as
        it was saved); plain ``xr.open_zarr`` gives NumPy ``StringDType``
        instead.

    Raises
    ------
    StoreError
        When the path does not exist, is not a Zarr v3 store, is not a
        pickscale store, is incomplete (the run writing it did not finish),
        was written with another store schema (an earlier pickscale's store
        must be written again by ``pickscale score``), is damaged (its
        manifest is missing or unreadable, or files are missing, changed or
        not listed in it: the message names them), or was replaced while
        being read on every attempt.

    Examples
    --------
    >>> import tempfile, pathlib, xarray as xr
    >>> ds = xr.Dataset({"emitted": ("phase", [5, 7])}, coords={"phase": ["P", "S"]})
    >>> target = save(ds, pathlib.Path(tempfile.mkdtemp()) / "results.zarr")
    >>> res = open_results(target).load()
    >>> res["emitted"].sel(phase="S").item()
    7
    """
    store = _absolute(path)
    for attempt in range(_READ_ATTEMPTS):
        try:
            files = _checked_snapshot(store)
        except _Replaced:
            time.sleep(0.005 * 2**attempt)
            continue
        return _dataset_from_snapshot(store, files)
    if not os.path.lexists(store):
        raise StoreError(f"no results store at {store}: the path does not exist")
    raise StoreError(
        f"could not read results store {store}: it was replaced while it was being read, "
        f"{_READ_ATTEMPTS} times in a row (is `pickscale score --overwrite` writing it again and "
        "again?); try again once that run has finished"
    )


def cleanup_stale(path: PathLike) -> list[pathlib.Path]:
    """Remove temporary siblings of a store left behind by runs that died.

    A run that is killed while saving leaves ``.<name>.tmp-<pid>-<random>``
    (a half-written store) or ``.<name>.old-<pid>-<random>`` (the previous
    store, about to be deleted) next to the target.  Those whose pid no
    longer runs on this machine are removed; those of running processes are
    left alone.  If the run died between moving the previous store aside and
    moving the new one in, so that the target is missing, the newest such
    previous store is put back at the target instead of being deleted.

    Parameters
    ----------
    path : str or os.PathLike
        The store path, as passed to :func:`save`.  It need not exist.

    Returns
    -------
    list of pathlib.Path
        The siblings removed (not including a previous store put back).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> cleanup_stale(pathlib.Path(tempfile.mkdtemp()) / "results.zarr")
    []
    """
    target = _absolute(path)
    if not target.parent.is_dir():
        return []
    if target in _HELD:  # reserved by this process: we are the lock holder
        if not os.path.lexists(target):
            _restore_newest_old(target)
        return _remove_dead_siblings(target, kinds=("tmp", "old"))
    try:
        lock = _acquire_lock(target)
    except StoreError:
        # A live run is saving: its own siblings carry its live pid and are
        # kept; dead previous stores are kept too, as the target may be
        # missing for a moment and only the lock holder may restore.
        return _remove_dead_siblings(target, kinds=("tmp",))
    try:
        if not os.path.lexists(target):
            _restore_newest_old(target)
        return _remove_dead_siblings(target, kinds=("tmp", "old"))
    finally:
        _release_lock(lock)


# --------------------------------------------------------------------------
# sanitising the dataset
# --------------------------------------------------------------------------


def sanitise(ds: xr.Dataset) -> xr.Dataset:
    """Return a copy of ``ds`` that Zarr v3 stores and reopens faithfully.

    See the *Notes* of :func:`save` for what changes.  The completeness
    markers are removed (they are written only once the store is complete)
    and ``pickscale_version`` is added when missing.

    Parameters
    ----------
    ds : xarray.Dataset
        Any results dataset; it is not modified.

    Returns
    -------
    xarray.Dataset
        A new dataset sharing the caller's NumPy/Dask data where no
        conversion was needed.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset(coords={"phase": np.array(["P", "S"])}, attrs={"x": np.nan})
    >>> clean = sanitise(ds)
    >>> clean["phase"].dtype, clean.attrs["x"]
    (dtype('O'), None)
    """
    if not isinstance(ds, xr.Dataset):
        raise StoreError(f"can only save an xarray.Dataset, not {type(ds).__name__}")
    attrs = _json_attrs(ds.attrs, "the dataset")
    for key in _MARKERS:
        attrs.pop(key, None)
    attrs.setdefault(_VERSION, __version__)
    coords = {name: _clean_variable(name, ds.variables[name]) for name in ds.coords}
    data_vars = {name: _clean_variable(name, ds.variables[name]) for name in ds.data_vars}
    return xr.Dataset(data_vars=data_vars, coords=coords, attrs=attrs)


def _clean_variable(name: Any, var: xr.Variable) -> xr.Variable:
    """A fresh Variable (no encoding) with JSON attrs, str text and regular chunks."""
    data = _text_as_object(name, var)
    attrs = _json_attrs(var.attrs, f"variable {name!r}")
    clean = xr.Variable(var.dims, data, attrs=attrs)
    return _regular_chunks(clean)


def _text_as_object(name: Any, var: xr.Variable) -> Any:
    """The variable's data, with any kind of text turned into object-dtype ``str``."""
    if isinstance(var.dtype, np.dtype) and var.dtype.kind not in "UTO":
        return var.data  # numbers, bools, times: untouched (and still lazy)
    # Text is loaded here even when Dask-backed: xarray would load an object
    # array anyway to infer its on-disk type (and then compute it again).
    values = np.asarray(var.values)  # also turns pandas extension arrays into NumPy
    if values.dtype.kind in "UT":
        return values.astype(object)  # elements become Python str
    if values.dtype.kind == "O":
        return _checked_text(values, what=str(name))
    return values


def _checked_text(block: np.ndarray, what: str) -> np.ndarray:
    """Object array as plain ``str``; anything else (None, NaN) is refused."""
    out = np.empty(block.shape, dtype=object)
    for index, value in np.ndenumerate(block):
        if not isinstance(value, str):
            # Zarr's variable-length text codec would store None as "" silently.
            raise StoreError(
                f"variable {what!r} holds {value!r} ({type(value).__name__}) where text is "
                "expected; pickscale stores text as str only (write missing names as '')"
            )
        out[index] = str(value)  # np.str_ -> str, so values reopen identically
    return out


def _regular_chunks(var: xr.Variable) -> xr.Variable:
    """Zarr needs equal chunks (the last may be smaller); fix uneven Dask chunks."""
    if not _is_dask(var.data):
        return var
    uneven = {
        dim: max(sizes)
        for dim, sizes in zip(var.dims, var.data.chunks)
        if len(sizes) > 1 and (len(set(sizes[:-1])) > 1 or sizes[-1] > sizes[0])
    }
    return var.chunk(uneven) if uneven else var


def _is_dask(data: Any) -> bool:
    return type(data).__module__.startswith("dask.")


def _json_attrs(attrs: Mapping[Any, Any], owner: str) -> dict[str, Any]:
    """Attributes as plain JSON (a new dict), or StoreError naming the bad one."""
    return {
        _json_key(key, owner): _json_value(value, f"attribute {key!r} of {owner}")
        for key, value in attrs.items()
    }


def _json_key(key: Any, where: str) -> str:
    if isinstance(key, str):
        return str(key)
    raise StoreError(f"cannot store attribute key {key!r} of {where}: keys must be str")


def _json_value(value: Any, where: str) -> Any:
    """One attribute value as JSON: numbers, str, bool, None, lists and dicts."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        # JSON has no NaN or infinity; Zarr would write non-standard tokens.
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return str(value)
    if isinstance(value, np.ndarray):
        return _json_value(value.tolist(), where)
    if isinstance(value, Mapping):
        return {_json_key(k, where): _json_value(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v, where) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, np.datetime64):
        return str(np.datetime_as_string(value))
    raise StoreError(
        f"cannot store {where}: {type(value).__name__} values are not JSON; "
        "use numbers, str, bool, None, lists or dicts"
    )


# --------------------------------------------------------------------------
# writing and moving into place
# --------------------------------------------------------------------------


def _write_complete_store(clean: xr.Dataset, tmp: pathlib.Path, target: pathlib.Path) -> None:
    """Write ``clean`` to ``tmp``, mark it complete and consolidate; clean up on failure."""
    try:
        clean.to_zarr(tmp, mode="w", zarr_format=3, consolidated=False)
        group = zarr.open_group(tmp, mode="r+", zarr_format=3)
        group.attrs.update({_COMPLETE: True, _SCHEMA: SCHEMA_VERSION})
        with warnings.catch_warnings():
            # "Consolidated metadata is not part of the Zarr v3 specification":
            # known and intended (xarray reads it), not something for users.
            warnings.filterwarnings("ignore", message="Consolidated metadata", category=UserWarning)
            zarr.consolidate_metadata(tmp, zarr_format=3)
        # Last, so that consolidating does not list it as a would-be Zarr node.
        _write_manifest(tmp)
    except BaseException as exc:
        _remove_temporary(tmp)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise StoreError(
            f"could not write results to {target}: {_describe(exc)}; "
            "nothing was changed at the target"
        ) from exc


def _remove_temporary(tmp: pathlib.Path, *, settle_s: float = 2.0) -> None:
    """Remove a half-written store, also when Zarr is still writing into it.

    Zarr writes chunks from its own event-loop thread: when Ctrl-C stops the
    main thread, the chunk writes already under way still finish, and can
    recreate folders that ``rmtree`` just removed.  So the folder is removed
    again until it stays gone (what is still left after ``settle_s`` carries
    this process's pid and :func:`cleanup_stale` removes it later).
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


def _write_manifest(store: pathlib.Path) -> None:
    """Record every file of a freshly written store with its size and SHA-256 (fsynced).

    The root ``zarr.json`` is listed like every other file; only the manifest
    itself is not.  It is written in one canonical form (:func:`_manifest_text`),
    so that a reader can tell a manifest changed after it was written.
    """
    files = {}
    for folder, dirs, names in os.walk(store):
        dirs.sort()
        for name in sorted(names):
            path = pathlib.Path(folder, name)
            rel = path.relative_to(store).as_posix()
            if rel == MANIFEST:
                continue
            digest = hashlib.sha256()
            size = 0
            with open(path, "rb") as f:
                while block := f.read(1 << 20):
                    digest.update(block)
                    size += len(block)
            files[rel] = {"sha256": digest.hexdigest(), "size": size}
    # A random id: every save's manifest differs, so a reader can tell a replaced store.
    text = _manifest_text({"pickscale_manifest": _MANIFEST_FORMAT, "store_id": secrets.token_hex(8),
                           "files": files})
    with open(store / MANIFEST, "w", encoding="ascii") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _manifest_text(manifest: Mapping[str, Any]) -> str:
    """The one text form of a manifest: sorted keys, one-space indent, ASCII, final newline."""
    return json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


class _Replaced(Exception):
    """The store was replaced (or its manifest changed) while it was being read: read again."""


def _identity(store: pathlib.Path) -> tuple[Any, ...] | None:
    """What changes when a save swaps another store in: the folder's inode and the manifest's bytes."""
    try:
        st = os.stat(store)
    except OSError:
        return None
    try:
        manifest = (store / MANIFEST).read_bytes()
    except OSError:
        manifest = None
    return (st.st_dev, st.st_ino, _stat.S_IFMT(st.st_mode), manifest)


def _checked_snapshot(store: pathlib.Path) -> dict[str, bytes]:
    """Every file of the store (relative path -> bytes), checked against its manifest.

    Raises StoreError when the store is not a complete pickscale store of this
    schema or is damaged, and :class:`_Replaced` when a check failed because
    the store was replaced while it was being read.
    """
    before = _identity(store)
    if before is None:
        if _siblings(store, "old"):  # a save is between its two renames: the new store comes next
            raise _Replaced()
        raise StoreError(f"no results store at {store}: the path does not exist")
    try:
        root = _read_root_meta(store)
        _check_pickscale_attrs(store, _root_attrs(store, root))
        files = _read_files(store)
        files["zarr.json"] = root
        _check_manifest(store, files)
    except (StoreError, OSError) as exc:
        if _identity(store) != before:
            raise _Replaced() from exc
        if not isinstance(exc, StoreError):  # (a StoreError is an OSError too)
            raise StoreError(f"could not read results store {store}: {_describe(exc)}") from exc
        raise
    # Every byte matched the manifest: whatever happened to the folder meanwhile,
    # these files are the one store that manifest describes.
    return files


def _read_files(store: pathlib.Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file of a store but its root ``zarr.json``."""

    def fail(exc: OSError) -> None:
        raise exc

    out = {}
    for folder, dirs, names in os.walk(store, onerror=fail):
        dirs.sort()
        for name in sorted(names):
            path = pathlib.Path(folder, name)
            rel = path.relative_to(store).as_posix()
            if rel != "zarr.json":
                out[rel] = path.read_bytes()
    return out


def _damaged(store: pathlib.Path, what: str) -> StoreError:
    return StoreError(
        f"results store {store} is damaged: {what}; it was probably copied or synced only in part, or "
        "changed on disk since it was written — copy it again, or re-run `pickscale score`"
    )


def _read_manifest(store: pathlib.Path, raw: bytes | None) -> dict[str, dict[str, Any]]:
    """The ``files`` of a manifest, or the StoreError saying what is wrong with it."""
    if raw is None:
        raise _damaged(store, f"its manifest {MANIFEST} is missing (every store pickscale writes lists its "
                              "files there; without it nothing shows whether they are complete and unchanged)")
    if not raw.strip():
        raise _damaged(store, f"its manifest {MANIFEST} cannot be read (it is empty)")
    try:
        text = raw.decode("ascii")
        manifest = json.loads(text)
        if not isinstance(manifest, dict) or manifest.get("pickscale_manifest") != _MANIFEST_FORMAT:
            raise ValueError(f"it is not a pickscale manifest of format {_MANIFEST_FORMAT}")
        files = manifest["files"]
        if not isinstance(files, dict):
            raise ValueError("its 'files' is not a mapping")
        for rel, entry in files.items():
            if rel.startswith("/") or ".." in rel.split("/") or rel == MANIFEST:
                raise ValueError(f"{rel!r} is not a path inside the store")
            if (not isinstance(entry, dict) or sorted(entry) != ["sha256", "size"]
                    or type(entry["size"]) is not int or not isinstance(entry["sha256"], str)):
                raise ValueError(f"its entry for {rel!r} is not a size and a sha256")
        if _manifest_text(manifest) != text:
            raise ValueError("it is not in the form pickscale wrote it in, so it was changed")
    except (ValueError, KeyError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
        raise _damaged(store, f"its manifest {MANIFEST} cannot be read ({exc})") from None
    return files


def _check_manifest(store: pathlib.Path, files: Mapping[str, bytes]) -> None:
    """Refuse a store whose files differ from those its manifest lists (names, sizes, SHA-256)."""
    listed = _read_manifest(store, files.get(MANIFEST))
    bad = []
    for rel, entry in listed.items():
        data = files.get(rel)
        if data is None:
            bad.append(f"{rel} is missing")
        elif len(data) != entry["size"]:
            bad.append(f"{rel} has {len(data)} bytes, not {entry['size']}")
        elif hashlib.sha256(data).hexdigest() != entry["sha256"]:
            bad.append(f"{rel} has changed (its SHA-256 differs)")
    bad += [f"{rel} is not in the manifest (an extra file)" for rel in files if rel != MANIFEST and rel not in listed]
    if bad:
        shown = "; ".join(bad[:3]) + (" …" if len(bad) > 3 else "")
        total = len(set(listed) | set(files) - {MANIFEST})
        raise _damaged(store, f"{len(bad)} of its {total} files are missing, changed or not in its manifest "
                              f"{MANIFEST} ({shown})")


def _dataset_from_snapshot(store: pathlib.Path, files: Mapping[str, bytes]) -> xr.Dataset:
    """Decode the checked bytes of a store (held in memory) into a loaded Dataset."""
    from zarr.core.buffer import default_buffer_prototype

    buffer = default_buffer_prototype().buffer
    memory = zarr.storage.MemoryStore(
        {rel: buffer.from_bytes(data) for rel, data in files.items() if rel != MANIFEST}, read_only=True
    )
    try:
        ds = xr.open_zarr(memory, consolidated=True, zarr_format=3, chunks=None).load()
    except Exception as exc:  # an unknown codec, metadata Zarr refuses, ...
        raise StoreError(f"could not open results store {store}: {_describe(exc)}") from exc
    return _strings_as_object(ds)


def _move_into_place(tmp: pathlib.Path, target: pathlib.Path) -> None:
    """Rename the finished store to the target, swapping out a previous store."""
    if not os.path.lexists(target):
        _rename_or_fail(tmp, target, target, tmp, "nothing was changed at the target")
        return
    old = _sibling(target, "old")
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
        raise StoreError(f"could not move the new results into {target}: {_describe(exc)}; {kept}") from exc
    # The new store is in place; a failure to delete the old one only leaves
    # a hidden sibling that cleanup_stale removes once this process is gone.
    shutil.rmtree(old, ignore_errors=True)


def _rename_or_fail(
    src: pathlib.Path, dst: pathlib.Path, target: pathlib.Path, tmp: pathlib.Path, kept: str
) -> None:
    """``os.rename``; on failure remove the new store and raise StoreError."""
    try:
        os.rename(src, dst)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StoreError(f"could not move the new results into {target}: {_describe(exc)}; {kept}") from exc


def _fsync_dir(folder: pathlib.Path) -> None:
    """Best effort: make the renames durable across a power cut."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------
# checks on paths and stores
# --------------------------------------------------------------------------


def _absolute(path: PathLike) -> pathlib.Path:
    # abspath, not resolve: a symlinked target is replaced as a link, and
    # siblings are created next to the name the user gave.
    return pathlib.Path(os.path.abspath(os.fspath(path)))


def _check_parent(target: pathlib.Path) -> None:
    parent = target.parent
    if not parent.is_dir():
        raise StoreError(f"cannot save results to {target}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StoreError(f"cannot save results to {target}: the folder {parent} is not writable")


def _check_replaceable(target: pathlib.Path, overwrite: bool) -> None:
    """Refuse an existing target unless it is our store and overwrite is set."""
    if not os.path.lexists(target):
        return
    if not _is_pickscale_store(target):
        raise StoreError(
            f"refusing to write results to {target}: it exists and is not a pickscale "
            "results store, so pickscale will not replace it (even with overwrite); "
            "choose another path or remove it yourself"
        )
    if not overwrite:
        raise StoreError(
            f"results store {target} already exists; pass overwrite=True to replace it"
        )


def _is_pickscale_store(path: pathlib.Path) -> bool:
    """A Zarr v3 group whose root attributes carry a pickscale key."""
    try:
        attrs = _read_root_attrs(path)
    except StoreError:
        return False
    return any(key in attrs for key in (_VERSION, *_MARKERS))


def _read_root_attrs(store: pathlib.Path) -> dict[str, Any]:
    """Root attributes of a Zarr v3 group, read straight from ``zarr.json``."""
    return _root_attrs(store, _read_root_meta(store))


def _read_root_meta(store: pathlib.Path) -> bytes:
    """The bytes of a Zarr v3 store's root ``zarr.json``, or StoreError saying what the path is."""
    if not store.is_dir():
        raise StoreError(f"{store} is not a Zarr store: it is a file, not a folder")
    meta_file = store / "zarr.json"
    if not meta_file.is_file():
        if (store / ".zgroup").is_file() or (store / ".zarray").is_file():
            raise StoreError(f"{store} is a Zarr v2 store; pickscale results are Zarr v3 stores")
        raise StoreError(f"{store} is not a Zarr store (it has no zarr.json)")
    try:
        return meta_file.read_bytes()
    except OSError as exc:
        raise StoreError(
            f"{store} is not a readable Zarr store: {meta_file} could not be read ({exc})"
        ) from exc


def _root_attrs(store: pathlib.Path, raw: bytes) -> dict[str, Any]:
    """The attributes in the bytes of a root ``zarr.json``."""
    meta_file = store / "zarr.json"
    try:
        meta = json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError included
        raise StoreError(
            f"{store} is not a readable Zarr store: {meta_file} could not be read ({exc})"
        ) from exc
    if not isinstance(meta, dict) or meta.get("node_type") != "group":
        raise StoreError(f"{store} is not a Zarr group, so it is not a pickscale results store")
    attrs = meta.get("attributes") or {}
    return attrs if isinstance(attrs, dict) else {}


def _check_pickscale_attrs(store: pathlib.Path, attrs: Mapping[str, Any]) -> None:
    if not any(key in attrs for key in (_VERSION, *_MARKERS)):
        raise StoreError(f"{store} is not a pickscale store (a Zarr store without pickscale attributes)")
    if attrs.get(_COMPLETE) is not True:
        raise StoreError(
            f"incomplete store {store}: a run that wrote it did not finish — re-run `pickscale score`"
        )
    schema = attrs.get(_SCHEMA)
    if type(schema) is not int or schema != SCHEMA_VERSION:
        earlier = " (an earlier pickscale wrote it)" if type(schema) is int and schema < SCHEMA_VERSION else ""
        raise StoreError(
            f"{store} has store schema {schema!r}{earlier}, but this pickscale ({__version__}) reads "
            f"schema {SCHEMA_VERSION}; re-run `pickscale score` to rewrite it"
        )
    if _VERSION not in attrs:
        raise StoreError(f"{store} is not a pickscale store (no {_VERSION!r} attribute)")


def _strings_as_object(ds: xr.Dataset) -> xr.Dataset:
    """Zarr gives text back as NumPy StringDType; return it as saved (object str)."""
    coords = {n: v.astype(object) for n, v in ds.coords.variables.items() if v.dtype.kind == "T"}
    data = {n: ds.variables[n].astype(object) for n in ds.data_vars if ds.variables[n].dtype.kind == "T"}
    if coords:
        ds = ds.assign_coords(coords)
    if data:
        ds = ds.assign(data)
    return ds


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# --------------------------------------------------------------------------
# siblings and the lock
# --------------------------------------------------------------------------


def _sibling(target: pathlib.Path, kind: str) -> pathlib.Path:
    """A fresh hidden sibling name, ``.<name>.<kind>-<pid>-<random>``."""
    return target.parent / f".{target.name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"


def _siblings(target: pathlib.Path, kind: str) -> list[tuple[pathlib.Path, int]]:
    """Existing ``.<name>.<kind>-<pid>-<random>`` siblings with their pid."""
    pattern = re.compile(re.escape(f".{target.name}.{kind}-") + r"(\d+)-[0-9a-f]+")
    found = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return []
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match:
            found.append((pathlib.Path(entry.path), int(match.group(1))))
    return found


def _remove_dead_siblings(target: pathlib.Path, kinds: tuple[str, ...]) -> list[pathlib.Path]:
    removed = []
    for kind in kinds:
        for sibling, pid in _siblings(target, kind):
            if _pid_running(pid):
                continue
            _remove_path(sibling)
            if not os.path.lexists(sibling):
                removed.append(sibling)
    return sorted(removed)


def _restore_newest_old(target: pathlib.Path) -> None:
    """Put back the previous store a dead run moved aside before dying."""
    dead = [(p.stat().st_mtime, p) for p, pid in _siblings(target, "old") if not _pid_running(pid)]
    candidates = [p for _, p in sorted(dead, reverse=True) if _is_pickscale_store(p)]
    if candidates:
        os.rename(candidates[0], target)


def _remove_path(path: pathlib.Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass


def _pid_running(pid: int) -> bool:
    """Whether a process with this pid runs on this machine (zombies do not count)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    except OSError:
        return False
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): trust kill()
    # The state follows the parenthesised command name, which may hold spaces.
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _lock_path(target: pathlib.Path) -> pathlib.Path:
    return target.parent / f".{target.name}.lock"


def _acquire_lock(target: pathlib.Path) -> pathlib.Path:
    """Create the lock file exclusively, taking over a lock whose owner died."""
    lock = _lock_path(target)
    content = f"{os.getpid()} {socket.gethostname()}\n".encode()
    for _attempt in range(5):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            _take_over_if_stale(lock, target)
            continue
        except OSError as exc:
            raise StoreError(
                f"cannot save results to {target}: cannot create the lock file {lock} "
                f"({_describe(exc)}); is the folder writable?"
            ) from exc
        try:
            os.write(fd, content)
        finally:
            os.close(fd)
        return lock
    raise StoreError(f"cannot save results to {target}: could not take the lock file {lock}; try again")


def _read_lock(lock: pathlib.Path) -> tuple[int | None, str | None, float]:
    """The pid and host in a lock file, and its age in seconds."""
    try:
        text = lock.read_text(encoding="utf-8", errors="replace")
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return None, None, math.inf
    parts = text.split()
    pid = int(parts[0]) if parts and parts[0].isdigit() else None
    host = parts[1] if len(parts) > 1 else None
    return pid, host, age


def _take_over_if_stale(lock: pathlib.Path, target: pathlib.Path) -> None:
    """Remove ``lock`` if its owner is dead; raise StoreError if it is alive."""
    try:
        pid, host, age = _read_lock(lock)
    except OSError as exc:  # e.g. another user's lock this account may not read
        raise StoreError(
            f"cannot save results to {target}: the lock file {lock} is in the way and cannot be read "
            f"({_describe(exc)}){_owner_note(lock)}; if no pickscale run is writing {target}, delete "
            f"{lock} (or ask its owner to), or choose another output folder"
        ) from None
    if age == math.inf:
        return  # vanished meanwhile: just try to create it again
    other_host = host is not None and host != socket.gethostname()
    empty_and_young = pid is None and age < _EMPTY_LOCK_GRACE_S
    if other_host or empty_and_young or (pid is not None and _pid_running(pid)):
        who = f"pid {pid}" if pid is not None else "a process"
        where = f" on {host}" if other_host else ""
        raise StoreError(
            f"cannot save results to {target}: another pickscale run ({who}{where}) is writing it "
            f"right now (lock file {lock}); wait for it to finish, or delete the lock file if "
            "that run no longer exists"
        )
    # Stale.  Move it aside under a unique name rather than unlinking, then
    # check we moved the lock we judged: another run may have replaced it.
    aside = _sibling(target, "stalelock")
    try:
        os.rename(lock, aside)
    except FileNotFoundError:
        return
    except OSError as exc:  # a sticky folder (like /tmp) and a lock of another user, a read-only folder
        raise StoreError(_stuck_lock_message(lock, target, pid, exc)) from None
    moved_pid, _, _ = _read_lock(aside)
    if moved_pid == pid:
        aside.unlink(missing_ok=True)
        return
    # We took a fresh lock of a live run: give it back (link fails if a third
    # run already made a new one, which then holds the lock instead).
    try:
        os.link(aside, lock)
    except OSError:
        pass
    aside.unlink(missing_ok=True)
    raise StoreError(
        f"cannot save results to {target}: another pickscale run is writing it right now "
        f"(lock file {lock}); wait for it to finish"
    )


def _owner_note(lock: pathlib.Path) -> str:
    """``"; it belongs to another user, x"`` when another user owns ``lock``, else ``""``."""
    try:
        uid = lock.stat().st_uid
    except OSError:
        return ""
    if uid == os.geteuid():
        return ""
    try:
        import pwd

        name = pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        name = f"uid {uid}"
    return f"; it belongs to another user, {name}"


def _stuck_lock_message(lock: pathlib.Path, target: pathlib.Path, pid: int | None, exc: OSError) -> str:
    """Why a stale lock cannot be taken over, and how to clear it."""
    run = f"pid {pid}" if pid is not None else "that never wrote its pid"
    try:
        sticky = bool(os.stat(lock.parent).st_mode & _stat.S_ISVTX)
    except OSError:
        sticky = False
    why = (f"the folder {lock.parent} has the sticky bit (like /tmp), so only the lock file's owner, the "
           "folder's owner or root may remove it" if sticky else f"it cannot be removed ({_describe(exc)})")
    return (
        f"cannot save results to {target}: the lock file {lock} is in the way: it was left by a pickscale "
        f"run that no longer runs ({run}){_owner_note(lock)}, and {why}; delete {lock} (ask its owner or an "
        "administrator to), or choose another output folder"
    )


def _release_lock(lock: pathlib.Path) -> None:
    pid, _, _ = _read_lock(lock)
    if pid == os.getpid():
        lock.unlink(missing_ok=True)
