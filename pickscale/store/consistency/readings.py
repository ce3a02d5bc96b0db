"""Every derived variable equal, bit for bit, to what the stored counts give; the intervals within their bounds
(SPEC §12)."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from ...metrics.flags import FLAG_NAMES
from ...results.bootstrap import DIFFERENCES, INTERVAL_METRICS
from ...results.derived import derive, stored_statistics
from ...results.variables import OPTIONAL_VARIABLES, RATE_COUNTS, metric_name
from .layout import _count_names
from .refusal import _bad_variable, _refuse

if TYPE_CHECKING:
    from ...options import Options

#: Derived variables added after stores were first written: a store without one opens (it was written before
#: the variable existed; every reader derives it from what the store keeps, as :mod:`pickscale.report.tables`
#: derives ``best_on_edge`` from ``best_threshold`` and the grid); a store with one has it checked as any other.
ADDED_LATER = frozenset({"best_on_edge", *FLAG_NAMES, "residual_sums"})

#: Detection rates of SPEC §4: their bootstrap intervals (symmetric bootstrap-t, clipped to the stations' own
#: rates) lie in [0, 1].
_RATE_INTERVALS = ("recall", "precision_lb", "f1_lb")


def _differ(stored: np.ndarray, derived: np.ndarray) -> np.ndarray:
    """Where the stored values differ from the derived ones, exactly (NaN equals NaN)."""
    if stored.dtype.kind == "f" or derived.dtype.kind == "f":
        return ~((stored == derived) | (np.isnan(stored) & np.isnan(derived)))
    return stored != derived


def _check_derived(store: pathlib.Path, ds: xr.Dataset, options: Options, *, pairs: bool = True) -> None:
    """Every derived variable is what :func:`~pickscale.results.derived.derive` gives from the stored counts.

    Why compare rather than derive on opening: the store stays the record (a plain ``xr.open_zarr`` reads
    the same numbers a report prints), and a store that says two things is a fault to name, not to paper
    over.  The derivation is deterministic (integer counts; float sums over stations in the stored order; the
    pairs' integer residuals ``round(residual * 1e9)``, which is exact for ``|residual| <= 1e6`` s), so the
    comparison is exact: a difference of one unit in the last place is a difference.

    Without ``pairs`` (a store opened lazily: the pairs are read when used) the timing readings are taken as
    stored, and every other reading is compared.
    """
    # (SPEC §20's counts are optional: a store written before pick rates has none, nor their readings)
    names = [name for name in (*_count_names(options), *RATE_COUNTS) if name in ds.variables]
    counts = ds[names].copy(deep=False)
    counts.attrs = {}  # not a run: derive adds no warnings (the store's are in its attributes already)
    derived = derive(counts, options=options, statistics=None if pairs else stored_statistics(ds, options))
    for name in derived.data_vars:
        if name in counts.data_vars or (name in ADDED_LATER and name not in ds.variables):
            continue
        if name not in ds.variables:
            raise _bad_variable(store, ds, name, "is missing: results hold every metric their counts give")
        stored, want = ds.variables[name], derived.variables[name]
        if stored.dims != want.dims:
            raise _bad_variable(store, ds, name, f"has dims {stored.dims}, not {want.dims}")
        if stored.dtype.kind != want.dtype.kind:  # (best_on_edge: booleans, "b")
            raise _bad_variable(store, ds, name, f"is of type {stored.dtype}, where the counts give {want.dtype}")
        differ = _differ(np.asarray(stored.values), np.asarray(want.values))
        _refuse(store, ds, name, differ, "must equal what the stored counts give (SPEC §4–§7, §10, §13, §14)",
                dims=want.dims)
    for dim in derived.coords:  # coordinates the derivation makes (``budget``, ``within``)
        if dim in ds.dims and dim not in counts.coords:
            have, want_values = np.asarray(ds[dim].values), np.asarray(derived[dim].values)
            if have.shape != want_values.shape or not (have == want_values).all():
                raise _bad_variable(store, ds, dim, f"holds {have.tolist()}, but the options give "
                                    f"{want_values.tolist()}")


def _check_intervals(store: pathlib.Path, ds: xr.Dataset, options: Options) -> None:
    """SPEC §12's intervals, which cannot be drawn again cheaply: what any interval of them must be."""
    lb = lambda name: metric_name(name, options.exhaustive)  # noqa: E731
    canonical = {lb(name): name for name in OPTIONAL_VARIABLES}
    metrics = [*INTERVAL_METRICS, "recall_at_budgets", *(f"{m}_diff" for m in DIFFERENCES)]
    for metric in metrics:
        lo_name, hi_name = lb(f"{metric}_lo"), lb(f"{metric}_hi")
        if lo_name not in ds and hi_name not in ds:
            continue
        for name, other in ((lo_name, hi_name), (hi_name, lo_name)):
            want = OPTIONAL_VARIABLES[canonical[name]].dims
            if name not in ds:
                raise _bad_variable(store, ds, name, f"is missing although {other} is stored: an interval has "
                                    "both ends")
            if ds[name].dims != want or ds[name].dtype.kind != "f":
                raise _bad_variable(store, ds, name, f"is not floats on dims {want}")
        lo, hi = ds[lo_name], ds[hi_name]
        _refuse(store, ds, lo_name, lo > hi, f"must be <= {hi_name} (the lower end of an interval)")
        if metric in _RATE_INTERVALS:  # an interval of a rate, within the stations' own rates
            for name, end in ((lo_name, lo), (hi_name, hi)):
                _refuse(store, ds, name, (end < 0) | (end > 1), "must lie in [0, 1] (an interval of a rate)")
        if metric == "recall_diff":
            for name, end in ((lo_name, lo), (hi_name, hi)):
                _refuse(store, ds, name, (end < -1) | (end > 1), "must lie in [-1, 1] (a difference of recalls)")
        if metric in INTERVAL_METRICS and lb(metric) in ds:
            estimate = ds[lb(metric)]
            if "threshold" in estimate.dims:  # SPEC §12: at the shared threshold
                estimate = options.at_shared(estimate, drop=True)
            for name, end in ((lo_name, lo), (hi_name, hi)):
                _refuse(store, ds, name, estimate.isnull() & end.notnull(),
                        f"must be NaN where {lb(metric)} is NaN (SPEC §12)")
