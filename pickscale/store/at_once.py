"""A Dataset in memory written into a Zarr v3 store in one pass: every array made and filled at once.

``Dataset.to_zarr`` makes a store's arrays one after the other, and each array costs three round trips to
Zarr's event-loop thread (create it, put its attributes, write its data).  A study's ~70 variables are
~230 round trips, the waiting between them more than half of writing a small study's store.  Here every
variable is encoded as ``to_zarr`` encodes it (xarray's own CF and Zarr encoders), and then all the arrays
are made, given their attributes and filled concurrently, in one round trip.  The bytes are the same:
every file of the store is the same file (``tests/store/test_at_once.py`` compares them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from .codec import is_dask

__all__ = ["write_at_once"]


def write_at_once(clean: xr.Dataset, store: Any, *, encoding: Mapping[Any, dict[str, Any]] | None = None,
                  compute: bool = True) -> None:
    """Write ``clean`` (as :func:`pickscale.store.codec.sanitise` returns it) into ``store``.

    What ``clean.to_zarr(store, mode="w", zarr_format=3, consolidated=False, encoding=encoding,
    compute=compute)`` writes, file for file: the store is emptied, the group's attributes set, and every
    variable and coordinate an array of the same metadata and chunks, filled with its data -- but for
    Dask-backed variables without ``compute``: their arrays are made, to be filled by the caller (their Dask
    chunks are then the Zarr chunks, as ``to_zarr`` requires).  On an error the arrays not yet made are not made.

    Examples
    --------
    >>> import numpy as np, xarray as xr, zarr
    >>> ds = xr.Dataset({"matched": ("phase", np.array([3, 4]))}, coords={"phase": np.array(["P", "S"], dtype="T")},
    ...                 attrs={"tol_s": 0.5})  # (text as sanitise leaves it: StringDType)
    >>> store = zarr.storage.MemoryStore()
    >>> write_at_once(ds, store)
    >>> xr.open_zarr(store, consolidated=False)["matched"].values.tolist()
    [3, 4]
    """
    from zarr.core.sync import sync

    arrays, attrs = _encoded(clean, encoding or {}, compute=compute)
    sync(_write(store, attrs, arrays))


def _encoded(clean: xr.Dataset, encoding: Mapping[Any, dict[str, Any]], *, compute: bool
             ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each array's arguments to Zarr's ``create_array`` and its data (None: left to fill), and the group's
    attributes: the steps of xarray's ``dump_to_store`` and ``ZarrStore.set_variables`` for a new store, in
    their order."""
    from xarray import conventions
    from xarray.backends.zarr import (
        FillValueCoder,
        encode_zarr_attr_value,
        encode_zarr_variable,
        extract_zarr_variable_encoding,
    )
    from xarray.coding.strings import check_vlen_dtype

    for var in clean.variables.values():
        if var.size == 0:  # (as to_zarr: empty arrays loaded)
            var.load()
    variables, attrs = conventions.encode_dataset_coordinates(clean)
    for name, enc in encoding.items():
        variables[name].encoding = enc
    arrays = []
    for name, var in variables.items():
        var = encode_zarr_variable(var, name=name, zarr_format=3)
        var_attrs = var.attrs.copy()
        fill_value = var.encoding.pop("fill_value", None)
        if fill_value is None and var.dtype.kind == "f":
            fill_value = np.nan  # xarray's default for floating point (Zarr's is 0)
        if "_FillValue" in var_attrs:
            fv = var_attrs.pop("_FillValue")
            if fv is not None:
                var_attrs["_FillValue"] = FillValueCoder.encode(fv, var.dtype)
        if "_FillValue" in var.encoding:
            if var.encoding["_FillValue"] is not None:
                raise ValueError("Zarr does not support _FillValue in encoding.")
            del var.encoding["_FillValue"]
        options = extract_zarr_variable_encoding(var, raise_on_invalid=name in encoding, name=name, zarr_format=3)
        options["config"] = {key: options.pop(key) for key in ("write_empty_chunks", "order") if key in options}
        options.pop("fill_value", None)
        arrays.append({"name": str(name), "shape": var.shape,
                       "dtype": str if check_vlen_dtype(var.dtype) is str else var.dtype,
                       "fill_value": fill_value, "dimension_names": var.dims, "overwrite": True,
                       "attributes": {key: encode_zarr_attr_value(value) for key, value in var_attrs.items()},
                       **options, "data": np.asarray(var.data) if compute or not is_dask(var.data) else None})
    return arrays, {key: encode_zarr_attr_value(value) for key, value in attrs.items()}


async def _write(store: Any, attrs: dict[str, Any], arrays: list[dict[str, Any]]) -> None:
    import zarr.api.asynchronous as zarr_async

    # The group's attributes last: Zarr reads the group's metadata back as it makes each array in it (is the
    # parent an array?), and a store's attributes can be large (an extended store's extent: ~0.4 MB of JSON,
    # parsed ~70 times). The same file in the end.
    group = await zarr_async.open_group(store=store, mode="w", zarr_format=3)

    async def one(spec: dict[str, Any]) -> None:
        data = spec.pop("data")
        array = await group.create_array(**spec)
        if data is not None:
            await array.setitem(tuple(slice(None) for _ in data.shape), data)

    try:
        # (a TaskGroup: the first error cancels the arrays not yet made, as to_zarr would stop there)
        async with asyncio.TaskGroup() as tasks:
            for spec in arrays:
                tasks.create_task(one(dict(spec)))
    except BaseExceptionGroup as group_error:
        raise group_error.exceptions[0] from None
    await group.update_attributes(attrs)

