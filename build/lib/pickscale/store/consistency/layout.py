"""The layout: the coordinates the options give, every count variable they call for, labels unique and sorted."""

from __future__ import annotations

import pathlib

import numpy as np
import xarray as xr

from ...kernel import FIELDS, Kind
from ...kernel.rates import DAY_NS
from ...options import N_BINS, PHASES, Options
from ...results.assembly import _order
from ...results.rates import RATE_RUNS
from ...results.variables import RATE_COUNTS, RATE_VARIABLES, VARIABLES, declared_dims
from .refusal import _bad_variable, _refuse


def _count_names(options: Options) -> tuple[str, ...]:
    """The variables a run with ``options`` stores before deriving (what :func:`derive` reads)."""
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


#: Pick-rate variables of layouts no store is written in any more, and what they were (SPEC §20).
_EARLIER_RATES = {"rate_day": "the dense (dataset, model, rate_station, day) table of pick-rate days",
                  "rate_row_dataset": "a pick-rate row per day", "rate_row_model": "a pick-rate row per day",
                  "rate_row_station": "a pick-rate row per day", "rate_row_day": "a pick-rate row per day"}


def _check_rates(store: pathlib.Path, ds: xr.Dataset) -> None:
    """SPEC §20's counts, optional (a store written before pick rates has none): all or none, on their dims, of
    their types, on a sorted ``rate_station``, no pick-rate variable of another layout; the rate runs' indices
    in range, their first and last days UTC midnights, first <= last, the runs in canonical order (dataset,
    model, station, first day) and maximal (within a (dataset, model, station) none overlaps or touches the
    next); and the runs agreeing with ``rate_picks`` (a station-model with picks has a run, never more days
    than picks at the floor; every station a run)."""
    layout = ("results hold the days with a pick as maximal runs of consecutive UTC days (rate_run_dataset, "
              "rate_run_model, rate_run_station, rate_run_first, rate_run_last; SPEC §20)")
    for name in sorted(str(v) for v in ds.variables):
        if name.startswith("rate_") and name not in RATE_VARIABLES and name != "rate_station":
            what = _EARLIER_RATES.get(name)
            raise _bad_variable(store, ds, name, f"is {what} of an earlier layout: {layout}" if what else
                                f"is no pick-rate variable of this layout: {layout}")
    present = [name for name in RATE_COUNTS if name in ds.variables]
    if not present:
        return
    for name in RATE_COUNTS:
        if name not in ds.variables:
            raise _bad_variable(store, ds, name, f"is missing although {present[0]} is there (SPEC §20)")
        want, kind = RATE_VARIABLES[name].dims, "M" if name in RATE_RUNS[3:] else "iu"
        if ds[name].dims != want or ds[name].dtype.kind not in kind:
            raise _bad_variable(store, ds, name, f"is not {'times' if kind == 'M' else 'integers'} on dims {want}")
    _labels(store, ds, "rate_station")
    runs = ("rate_run",)
    sizes = {"rate_run_dataset": ds.sizes["dataset"], "rate_run_model": ds.sizes["model"],
             "rate_run_station": ds.sizes["rate_station"]}
    index = {}
    for name, size in sizes.items():
        index[name] = np.asarray(ds[name].values).astype(np.int64)
        into = name.removeprefix("rate_run_").replace("station", "rate_station")
        _refuse(store, ds, name, (index[name] < 0) | (index[name] >= size),
                f"must be an index in [0, {size}) (into the {into} coordinate)", dims=runs)
    ends = {}
    for name in RATE_RUNS[3:]:
        ns = np.asarray(ds[name].values).astype("datetime64[ns]").view(np.int64)
        _refuse(store, ds, name, (ns == np.iinfo(np.int64).min) | (ns % DAY_NS != 0),
                "must be a UTC midnight (a day with a pick)", dims=runs)
        ends[name] = ns // DAY_NS
    first, last = ends["rate_run_first"], ends["rate_run_last"]
    _refuse(store, ds, "rate_run_last", last < first, "must not be before the run's rate_run_first", dims=runs)
    d, m, s = (index[name] for name in RATE_RUNS[:3])
    if d.size > 1:
        undecided = np.ones(d.size - 1, dtype=bool)  # the same (dataset, model, station) so far
        wrong = np.zeros(d.size - 1, dtype=bool)
        for c in (d, m, s):
            wrong |= undecided & (c[:-1] > c[1:])
            undecided &= c[:-1] == c[1:]
        wrong |= undecided & (first[:-1] > first[1:])
        _refuse(store, ds, "rate_run_dataset", np.r_[False, wrong],
                "runs must be in canonical order (dataset, model, rate_station, first day)", dims=runs)
        _refuse(store, ds, "rate_run_first", np.r_[False, undecided & (first[1:] <= last[:-1])],
                "overlaps the run before it of the same (dataset, model, rate_station): each day is in one run",
                dims=runs)
        _refuse(store, ds, "rate_run_first", np.r_[False, undecided & (first[1:] == last[:-1] + 1)],
                "is the day after the run before it of the same (dataset, model, rate_station) ends: the runs "
                "are maximal, two runs that touch are one", dims=runs)
    # The runs against the picks: one pick at the floor at least on each day counted, and none without a day.
    dmts = ("dataset", "model", "phase", "threshold", "rate_station")
    picks = np.asarray(ds["rate_picks"].transpose(*dmts).values).astype(np.int64)
    nd, nm, n_stations = ds.sizes["dataset"], ds.sizes["model"], ds.sizes["rate_station"]
    _refuse(store, ds, "rate_picks", picks < 0, "must be >= 0", dims=dmts)
    if picks.shape[3] > 1:
        _refuse(store, ds, "rate_picks", np.diff(picks, axis=3) > 0,
                "must not increase with the threshold (picks with conf >= threshold)", dims=dmts)
    cell = (d * nm + m) * n_stations + s
    runs_at = np.bincount(cell, minlength=nd * nm * n_stations).reshape(nd, nm, n_stations)
    # Whole numbers (the runs checked: each at most ±106,752 days, none overlapping): summed exactly.
    days = np.bincount(cell, weights=(last - first + 1).astype(np.float64), minlength=nd * nm * n_stations)
    days = days.reshape(nd, nm, n_stations)
    at_floor = picks[:, :, :, 0, :].sum(axis=2) if picks.shape[3] else np.zeros_like(runs_at)
    by_key = ("dataset", "model", "rate_station")
    _refuse(store, ds, "rate_station", runs_at.sum(axis=(0, 1)) == 0,
            "holds a station no rate run names (the coordinate holds the stations with picks)", dims=("rate_station",))
    _refuse(store, ds, "rate_picks", (at_floor > 0) & (runs_at == 0),
            "has picks of a model at a station on no day (no rate run holds them)", dims=by_key)
    _refuse(store, ds, "rate_run_last", days > at_floor,
            "gives more days with a pick than picks at the floor (each day of a run is one pick at least)",
            dims=by_key)
