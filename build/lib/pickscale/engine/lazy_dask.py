"""xarray's check for Dask arrays without importing ``dask.array`` (issue 27: ~0.3–0.5 s of a small study).

xarray asks, for every variable it builds, whether the data are a Dask array; the first time it asks, it
imports ``dask.array`` to learn its type (and with it scipy: ~0.3–0.5 s, a third of a 140-pick study).  A
run on Dask's local scheduler never makes a Dask array: :func:`install` gives xarray a Dask entry whose array
type is read from ``sys.modules`` when asked — ``dask.array.Array`` once ``dask.array`` is imported, else no
type (no object can be an instance of a class that is not loaded yet) — so every answer is the one xarray's
own entry would give, without the import.  Nothing is changed when xarray already holds its entry (it
asked before), or when its internals are not what this expects (another xarray version).

Examples
--------
>>> install()
>>> import sys, xarray as xr
>>> from xarray.namedarray.pycompat import array_type
>>> "dask.array" in sys.modules or array_type("dask") == ()
True
>>> import dask.array as da
>>> array_type("dask") == (da.Array,) and xr.DataArray(da.zeros(3)).chunks == ((3,),)
True
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["install"]


def install() -> None:
    """Give xarray the lazy Dask entry (see the module), unless it holds one already."""
    try:
        import dask
        from packaging.version import Version
        from xarray.namedarray import pycompat

        cache = pycompat._cached_duck_array_modules
        base = pycompat.DuckArrayModule
    except (ImportError, AttributeError):  # another xarray: leave it as it is
        return
    if "dask" in cache or not isinstance(cache, dict):
        return

    class _LazyDask(base):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:  # (not the base's: that imports dask.array)
            self.module = dask
            self.version = Version(dask.__version__)
            self.available = True

        @property
        def type(self) -> tuple[Any, ...]:
            array = sys.modules.get("dask.array")
            kind = getattr(array, "Array", None) if array is not None else None
            return (kind,) if isinstance(kind, type) else ()

    cache["dask"] = _LazyDask()
