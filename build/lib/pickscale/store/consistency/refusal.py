"""How a store that contradicts itself is refused: the message names the store, the variable, the first
offending cells and how many there are."""

from __future__ import annotations

import pathlib
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from pickscale import __version__
from pickscale.errors import StoreError

if TYPE_CHECKING:
    pass

#: How many offending cells a message shows.
_SHOWN = 3


def _edited(attrs: Mapping[str, Any]) -> str:
    """What the refusal means, and what to do."""
    written = attrs.get("pickscale_version")
    other = (f" (pickscale {written} wrote it, this is {__version__}: a metric whose rule changed since then "
             "differs from the stored one)") if written and written != __version__ else ""
    return (f"; the store was changed after it was written (its manifest written again to match), or written by a "
            f"faulty or other pickscale{other} — re-run `pickscale score` to write it again")


def _bad_attribute(store: pathlib.Path, attrs: Mapping[str, Any], name: str, what: str) -> StoreError:
    return StoreError(f"results store {store}: attribute {name!r} {what}{_edited(attrs)}")


def _bad_variable(store: pathlib.Path, ds: xr.Dataset, name: Hashable, what: str) -> StoreError:
    return StoreError(f"results store {store}: variable {name!r} {what}{_edited(ds.attrs)}")


def _label(ds: xr.Dataset, dim: str, index: int) -> str:
    if dim in ds.coords and ds[dim].ndim == 1 and ds[dim].dims == (dim,):
        value = ds[dim].values[index]
        if isinstance(value, np.datetime64):
            return f"{dim}={np.datetime_as_string(value, unit='s')}Z"
        if isinstance(value, (float, np.floating)):
            return f"{dim}={float(value)!r}"
        if isinstance(value, (int, np.integer)):
            return f"{dim}={int(value)}"
        return f"{dim}={str(value)!r}"
    return f"{dim} {index}"


def _refuse(store: pathlib.Path, ds: xr.Dataset, name: Hashable, bad: xr.DataArray | np.ndarray, what: str,
            dims: Sequence[Hashable] | None = None, offsets: Mapping[str, int] | None = None) -> None:
    """Raise naming ``name`` and the first cells where ``bad`` is True, if any is.

    ``offsets[dim]``: where ``bad`` starts along ``dim`` (a batch of a longer dimension), for the labels.
    """
    if isinstance(bad, xr.DataArray):
        labels, values = tuple(bad.dims), np.asarray(bad.values)
    else:
        values = np.asarray(bad)
        labels = tuple(dims or (f"axis {i}" for i in range(values.ndim)))
    if not values.any():
        return
    count = int(np.count_nonzero(values))
    first = np.argwhere(values)[:_SHOWN]
    at = offsets or {}
    cells = "; ".join(", ".join(_label(ds, str(d), int(i) + at.get(str(d), 0)) for d, i in zip(labels, cell))
                      or "the value"
                      for cell in first)
    more = " …" if count > _SHOWN else ""
    raise _bad_variable(store, ds, name, f"{what}: {count} cell(s) break it ({cells}{more})")
