"""The layout: the coordinates the options give, every count variable they call for, labels unique and sorted."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from .refusal import _bad_variable

if TYPE_CHECKING:
    from ...options import Options


def _count_names(options: Options) -> tuple[str, ...]:
    """The variables a run with ``options`` stores before deriving (what :func:`derive` reads)."""
    from ...results.assembly import _order

    return _order(options)


def _coordinate(store: pathlib.Path, ds: xr.Dataset, name: str, want: np.ndarray | None, said: str) -> None:
    """The coordinate ``name`` must be ``want`` exactly (``None``: it must be absent)."""
    have = ds.coords.get(name)
    if want is None:
        if have is not None:
            raise _bad_variable(store, ds, name, f"is a coordinate although {said}")
        return
    if have is None:
        raise _bad_variable(store, ds, name, f"is missing: {said}")
    values = np.asarray(have.values)
    if values.shape != want.shape or not (values == want).all():
        shown = ", ".join(map(str, values.tolist()[:8])) + (" …" if values.size > 8 else "")
        wanted = ", ".join(map(str, want.tolist()[:8])) + (" …" if want.size > 8 else "")
        raise _bad_variable(store, ds, name, f"holds [{shown}] but {said}: [{wanted}]")


def _labels(store: pathlib.Path, ds: xr.Dataset, name: str) -> None:
    """A label coordinate (dataset, model, station) must be unique and in code-point order."""
    if name not in ds.coords:
        raise _bad_variable(store, ds, name, "is missing: results carry the coordinate")
    values = [str(v) for v in np.asarray(ds[name].values).ravel()]
    if any(b <= a for a, b in zip(values, values[1:])):
        raise _bad_variable(store, ds, name, "is not unique and in code-point order, as results lay their labels")


def _check_layout(store: pathlib.Path, ds: xr.Dataset, options: Options) -> None:
    from ...kernel import FIELDS, Kind
    from ...options import N_BINS, PHASES
    from ...results.variables import VARIABLES, declared_dims

    for name in ("dataset", "model", "station"):
        _labels(store, ds, name)
    grid = np.asarray(options.grid, dtype=np.float64)
    stored = set(np.asarray(ds["threshold"].values, dtype=np.float64).tolist()) if "threshold" in ds.coords else set()
    for theta in (options.phase_thresholds if "threshold" in ds.coords else ()):  # each phase's (SPEC §2)
        if theta not in stored:
            raise _bad_variable(
                store, ds, "threshold", f"does not hold the shared threshold {theta!r} of attrs['options'] "
                "(a shared threshold off the store's grid: the tables are read there)")
    _coordinate(store, ds, "threshold", grid, "attrs['options'] give this threshold grid")
    _coordinate(store, ds, "fine_threshold", np.asarray(options.fine, dtype=np.float64),
                "the fine curve of attrs['options'] (k/1000 from the floor) is")
    _coordinate(store, ds, "bin", np.arange(N_BINS, dtype=np.int64), "the calibration bins are")
    _coordinate(store, ds, "phase", np.asarray(PHASES, dtype=object).astype(str), "the phases are")
    _coordinate(store, ds, "tol", None if options.tols is None else np.asarray(options.tols, dtype=np.float64),
                "attrs['options'] give these tols" if options.tols is not None else "attrs['options'] give no tols")
    groups = None if options.group_by is None else np.asarray(list(options.group_labels or ()), dtype=str)
    _coordinate(store, ds, "group", groups,
                "attrs['options'] give these group_labels" if groups is not None else "attrs['options'] give no "
                "group_by")
    if options.time_bin is None and "time_bin" in ds.coords:
        raise _bad_variable(store, ds, "time_bin", "is a coordinate although attrs['options'] give no time_bin")
    if options.time_bin is not None:
        if "time_bin" not in ds.coords:
            raise _bad_variable(store, ds, "time_bin", f"is missing: attrs['options'] give time_bin "
                                f"{options.time_bin!r}")
        starts = np.asarray(ds["time_bin"].values)
        if starts.dtype.kind != "M" or (starts.size > 1 and not (np.diff(starts) > np.timedelta64(0)).all()):
            raise _bad_variable(store, ds, "time_bin", "is not strictly ascending times (the starts of the bins)")
    if "model_b" in ds.coords:
        _coordinate(store, ds, "model_b", np.asarray([str(v) for v in ds["model"].values]), "it repeats the models, as")

    for name in _count_names(options):
        if name not in ds.variables:
            raise _bad_variable(store, ds, name, "is missing: the options the store was scored with call for it")
        want = declared_dims(name)  # (SPEC §19's event counts are declared apart)
        if ds[name].dims != want:
            raise _bad_variable(store, ds, name, f"has dims {ds[name].dims}, not {want}")
        kind = ds[name].dtype.kind
        expected = ("b" if name in ("model_present", "station_scored") else
                    "f" if name in ("residual", "pair_conf") or FIELDS.get(name) is Kind.DERIVED else "iu")
        if kind not in expected:
            raise _bad_variable(store, ds, name, f"is of type {ds[name].dtype}, where results hold "
                                f"{'booleans' if expected == 'b' else 'floats' if expected == 'f' else 'integers'}")
    for name in ("cal_conf_limbs", "conf_sq_sums", "hit_conf_limbs"):  # optional: stores before exact sums
        if name in ds.variables and (ds[name].dims != VARIABLES[name].dims or ds[name].dtype.kind not in "iu"):
            raise _bad_variable(store, ds, name, f"is not integers on dims {VARIABLES[name].dims}")
    _check_rates(store, ds)


def _check_rates(store: pathlib.Path, ds: xr.Dataset) -> None:
    """SPEC §20's counts, optional (a store written before pick rates has none): both or neither, on their
    dims, of their types, on a sorted ``rate_station`` and ascending ``day``."""
    from ...results.variables import RATE_COUNTS, RATE_VARIABLES

    present = [name for name in RATE_COUNTS if name in ds.variables]
    if not present:
        return
    for name in RATE_COUNTS:
        if name not in ds.variables:
            raise _bad_variable(store, ds, name, f"is missing although {present[0]} is there (SPEC §20)")
        want, kind = RATE_VARIABLES[name].dims, "b" if name == "rate_day" else "iu"
        if ds[name].dims != want or ds[name].dtype.kind not in kind:
            raise _bad_variable(store, ds, name, f"is not {'booleans' if kind == 'b' else 'integers'} on dims {want}")
    _labels(store, ds, "rate_station")
    days = np.asarray(ds["day"].values)
    if days.dtype.kind != "M" or (days.size > 1 and not (np.diff(days) > np.timedelta64(0)).all()):
        raise _bad_variable(store, ds, "day", "is not strictly ascending times (the UTC days with a pick)")
