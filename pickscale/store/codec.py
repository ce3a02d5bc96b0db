"""How a results Dataset is encoded for Zarr v3, and decoded from the bytes of a store.

Encoding (:func:`sanitise`) makes a copy that Zarr v3 stores and reopens
faithfully: text as NumPy ``StringDType``, attributes as plain
JSON, no inherited encodings, regular Dask chunks.  Decoding
(:func:`dataset_from_files`) builds a loaded Dataset from the checked bytes
of a store held in memory, text as NumPy ``StringDType`` (as results hold it).

Examples
--------
>>> import numpy as np, xarray as xr
>>> sanitise(xr.Dataset(attrs={"tol_s": np.float64(0.5)})).attrs["tol_s"]
0.5
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import pathlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from pickscale import __version__
from pickscale.errors import StoreError

from ..results.variables import text
from .checked import CheckedStore, Deferred
from .manifest import MANIFEST
from .paths import describe
from .schema import MARKERS, VERSION

__all__ = ["sanitise", "dataset_from_files"]


def sanitise(ds: xr.Dataset) -> xr.Dataset:
    """Return a copy of ``ds`` that Zarr v3 stores and reopens faithfully.

    See the *Notes* of :func:`pickscale.store.save` for what changes.  The completeness
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
    (StringDType(), None)
    """
    if not isinstance(ds, xr.Dataset):
        raise StoreError(f"can only save an xarray.Dataset, not {type(ds).__name__}")
    attrs = _json_attrs(ds.attrs, "the dataset")
    for key in MARKERS:
        attrs.pop(key, None)
    attrs.setdefault(VERSION, __version__)
    coords = {name: _clean_variable(name, ds.variables[name]) for name in ds.coords}
    data_vars = {name: _clean_variable(name, ds.variables[name]) for name in ds.data_vars}
    return xr.Dataset(data_vars=data_vars, coords=coords, attrs=attrs)


def _clean_variable(name: Any, var: xr.Variable) -> xr.Variable:
    """A fresh Variable (no encoding) with JSON attrs, str text and regular chunks."""
    data = _text_as_strings(name, var)
    attrs = _json_attrs(var.attrs, f"variable {name!r}")
    clean = xr.Variable(var.dims, data, attrs=attrs)
    return _regular_chunks(clean)


def _text_as_strings(name: Any, var: xr.Variable) -> Any:
    """The variable's data, with any kind of text turned into NumPy ``StringDType`` (as results hold it)."""
    if isinstance(var.dtype, np.dtype) and var.dtype.kind not in "UTO":
        return var.data  # numbers, bools, times: untouched (and still lazy)
    # Text is loaded here even when Dask-backed: xarray would load it anyway
    # to infer its on-disk type (and then compute it again).
    values = np.asarray(var.values)  # also turns pandas extension arrays into NumPy
    if values.dtype.kind == "O":
        _check_text(values, what=str(name))
    return text(values.ravel()).reshape(values.shape) if values.dtype.kind in "UTO" else values


def _check_text(block: np.ndarray, what: str) -> None:
    """Refuse an object array holding anything but ``str`` (None, NaN)."""
    for value in block.flat:
        if not isinstance(value, str):
            # Zarr's variable-length text codec would store None as "" silently.
            raise StoreError(
                f"variable {what!r} holds {value!r} ({type(value).__name__}) where text is "
                "expected; pickscale stores text as str only (write missing names as '')"
            )


def _regular_chunks(var: xr.Variable) -> xr.Variable:
    """Zarr needs equal chunks (the last may be smaller); fix uneven Dask chunks."""
    if not is_dask(var.data):
        return var
    uneven = {
        dim: max(sizes)
        for dim, sizes in zip(var.dims, var.data.chunks)
        if len(sizes) > 1 and (len(set(sizes[:-1])) > 1 or sizes[-1] > sizes[0])
    }
    return var.chunk(uneven) if uneven else var


def is_dask(data: Any) -> bool:
    """Whether ``data`` is a Dask array (told by its type's module: Dask need not be imported to ask)."""
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


def dataset_from_files(store: pathlib.Path, files: Mapping[str, bytes], *,
                       deferred: Deferred | None = None) -> xr.Dataset:
    """Decode the checked bytes of a store (held in memory) into a loaded Dataset.

    ``deferred``: files left to read when used (checked then); the variables whose chunks they are stay
    lazy (xarray's lazily indexed arrays: a slice reads the chunks it needs).
    """
    memory = CheckedStore({rel: data for rel, data in files.items() if rel != MANIFEST},
                          deferred or Deferred(store, {}, identity=None))
    try:
        ds = xr.open_zarr(memory, consolidated=True, zarr_format=3, chunks=None)
        lazy = {rel.split("/c/", 1)[0] for rel in (deferred.entries if deferred else ())}
        for name, variable in ds.variables.items():
            if name not in lazy:
                variable.load()
    except StoreError:
        raise
    except Exception as exc:  # an unknown codec, metadata Zarr refuses, ...
        raise StoreError(f"could not open results store {store}: {describe(exc)}") from exc
    return _decoded_text(ds)


def _decoded_text(ds: xr.Dataset) -> xr.Dataset:
    """Text as NumPy ``StringDType``, as results hold it (:func:`pickscale.results.variables.text`).

    Zarr v3 already gives text back so; this makes sure of it whatever a Zarr version decodes it to.
    """
    def is_text(v: xr.Variable) -> bool:
        return v.dtype.kind == "U" or (v.dtype.kind == "O" and v.size > 0 and isinstance(v.values.flat[0], str))

    def as_text(v: xr.Variable) -> tuple[Any, ...]:
        return v.dims, text(v.values.ravel()).reshape(v.shape), v.attrs

    coords = {n: as_text(v) for n, v in ds.coords.variables.items() if is_text(v)}
    data = {n: as_text(ds.variables[n]) for n in ds.data_vars if is_text(ds.variables[n])}
    if coords:
        ds = ds.assign_coords(coords)
    if data:
        ds = ds.assign(data)
    return ds
