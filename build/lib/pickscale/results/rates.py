"""Pick rates in the results (SPEC §20): per station with picks, picks per day at each threshold.

Stored: ``rate_picks`` per (dataset, model, phase, threshold, ``rate_station``): the picks at or above each
grid threshold; and the **rate runs**, one per maximal run of consecutive UTC days on each of which the model
picked at the station (dimension ``rate_run``: ``rate_run_dataset``, ``rate_run_model``, ``rate_run_station``,
int32 indices into the coordinates, and ``rate_run_first``, ``rate_run_last``, the first and the last day's UTC
midnights, both included), sorted by (dataset, model, station, first day), neither overlapping nor touching.
A station picking every day is one run, a station picking on a few scattered days one run a day: never
stations × days.  Derived: ``rate_days`` (the runs' days per station, summed) and ``picks_per_day``.
``rate_station`` holds every station with a pick of a dataset and model of the results, also those without a
reference arrival (that the detection tables do not score).  Both combine exactly
(:mod:`pickscale.kernel.rates`), so :func:`pickscale.extend` merges them: picks add up, days unite (the runs'
union, coalesced).

Examples
--------
>>> import pickscale, pandas as pd
>>> ref = pd.DataFrame({"station": ["A"], "phase": "P", "time": ["2024-01-01T00:00:10Z"]})
>>> picks = pd.DataFrame({"station": ["A", "B", "B", "B"], "phase": "P", "conf": [0.9, 0.9, 0.4, 0.8],
...                       "time": ["2024-01-01T00:00:10Z", "2024-01-01T05:00:00Z", "2024-01-02T05:00:00Z",
...                                "2024-01-02T06:00:00Z"]})
>>> ds = pickscale.score(ref, picks, thresholds=[0.3, 0.5])
>>> one = ds.sel(dataset="all", model="model", phase="P", threshold=0.5)
>>> one.rate_picks.values.tolist(), one.rate_days.values.tolist(), one.picks_per_day.values.tolist()
([1, 2], [1, 2], [1.0, 1.0])
>>> ds.rate_run_station.values.tolist()  # A: day 1; B: days 1 to 2, one run
[0, 1]
>>> [str(d)[:10] for d in ds.rate_run_first.values], [str(d)[:10] for d in ds.rate_run_last.values]
(['2024-01-01', '2024-01-01'], ['2024-01-01', '2024-01-02'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..kernel.rates import DAY_NS, KEY, PickRates, coalesce_runs, in_key_order, merge_rates
from ..options import PHASES, Options
from .variables import RATE_ATTRS, RATE_COUNTS, RATE_VARIABLES, text

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["RATE_VARIABLES", "RATE_COUNTS", "RATE_ATTRS", "RATE_RUNS", "lay_out_rates", "derive_rates",
           "rates_of", "merged_rates", "pick_rates", "canonical_runs", "days_of", "rate_runs"]

_BY_STATION = RATE_VARIABLES["rate_picks"].dims
#: The stored rate runs (dimension ``rate_run``): the dataset, model and station indices, then the first and
#: the last day.
RATE_RUNS: tuple[str, ...] = tuple(name for name in RATE_COUNTS if RATE_VARIABLES[name].dims == ("rate_run",))
_INDICES = RATE_RUNS[:3]  # into the dataset, model and rate_station coordinates


def _midnights(day: np.ndarray) -> np.ndarray:
    return (np.asarray(day, dtype=np.int64) * DAY_NS).view("datetime64[ns]")


def canonical_runs(d: np.ndarray, m: np.ndarray, s: np.ndarray, first: np.ndarray, last: np.ndarray
                   ) -> dict[str, np.ndarray]:
    """The rate runs of the (dataset, model, station) given (indices) over days ``first`` to ``last`` (days since
    1970-01-01, both included) in their one canonical form: per (dataset, model, station) the union of the
    given runs as maximal runs (overlapping or touching runs joined), sorted by (dataset, model, station, first
    day): the stored variables of :data:`RATE_RUNS`.

    Examples
    --------
    >>> runs = canonical_runs(np.array([0, 0, 0, 0]), np.array([1, 0, 1, 1]), np.array([0, 2, 0, 0]),
    ...                       np.array([3, 5, 4, 9]), np.array([3, 6, 4, 9]))
    >>> runs["rate_run_model"].tolist(), runs["rate_run_station"].tolist()  # (m 0, s 2), (m 1, s 0) twice
    ([0, 1, 1], [2, 0, 0])
    >>> [str(d)[:10] for d in runs["rate_run_first"]], [str(d)[:10] for d in runs["rate_run_last"]]
    (['1970-01-06', '1970-01-04', '1970-01-10'], ['1970-01-07', '1970-01-05', '1970-01-10'])
    """
    d, m, s = (np.asarray(a, dtype=np.int64) for a in (d, m, s))
    first, last = np.asarray(first, np.int64), np.asarray(last, np.int64)
    up = (d[1:] - d[:-1], m[1:] - m[:-1], s[1:] - s[:-1])
    if not ((up[0] > 0) | ((up[0] == 0) & ((up[1] > 0) | ((up[1] == 0) & (up[2] >= 0))))).all():
        order = np.lexsort((s, m, d))  # (runs read back from a store are in this order already: no sort)
        d, m, s, first, last = d[order], m[order], s[order], first[order], last[order]
    new = np.r_[True, (d[1:] != d[:-1]) | (m[1:] != m[:-1]) | (s[1:] != s[:-1])] if d.size else np.zeros(0, bool)
    rank = np.cumsum(new) - 1  # the (dataset, model, station) in canonical order
    key, run_first, run_last = coalesce_runs(rank, first, last)
    at = np.flatnonzero(new)[key]
    return {"rate_run_dataset": d[at].astype(np.int32), "rate_run_model": m[at].astype(np.int32),
            "rate_run_station": s[at].astype(np.int32), "rate_run_first": _midnights(run_first),
            "rate_run_last": _midnights(run_last)}


def _runs(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The stored rate runs as int64 (dataset, model, station) indices and first and last days since
    1970-01-01."""
    d, m, s = (np.asarray(ds[name].values).astype(np.int64) for name in _INDICES)
    first, last = (np.asarray(ds[name].values).astype("datetime64[ns]").view(np.int64) // DAY_NS
                   for name in RATE_RUNS[3:])
    return d, m, s, first, last


def days_of(ds: xr.Dataset) -> np.ndarray:
    """``(dataset, model, rate_station)`` int64: the UTC days with a pick, the days of the rate runs summed
    (``last - first + 1`` each)."""
    nd, nm, ns = ds.sizes["dataset"], ds.sizes["model"], ds.sizes["rate_station"]
    d, m, s, first, last = _runs(ds)
    # Whole numbers far below 2**53 (at most ±106,752 days a run): summed exactly in float64.
    days = np.bincount((d * nm + m) * ns + s, weights=(last - first + 1).astype(np.float64), minlength=nd * nm * ns)
    return days.astype(np.int64).reshape(nd, nm, ns)


def rate_runs(ds: xr.Dataset) -> pd.DataFrame:
    """The stored rate runs, labelled: ``dataset``, ``model``, ``station``, ``first`` and ``last`` (UTC
    midnights, both included) and ``days``, in their stored order (the days with a pick, as runs)."""
    d, m, s, first, last = _runs(ds)
    labels = {dim: np.array([str(v) for v in ds[dim].values], dtype=object)
              for dim in ("dataset", "model", "rate_station")}
    return pd.DataFrame({"dataset": labels["dataset"][d], "model": labels["model"][m],
                         "station": labels["rate_station"][s],
                         "first": pd.to_datetime(first * DAY_NS, utc=True),
                         "last": pd.to_datetime(last * DAY_NS, utc=True), "days": last - first + 1})


def lay_out_rates(rates: PickRates | None, datasets: Sequence[str], models: Sequence[str], options: Options
                  ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The stored pick-rate variables on the results' datasets and models (``rate_picks`` and the rate runs),
    and the coordinate ``rate_station``; the picks of another dataset or model are not laid out (SPEC §20)."""
    d_index = {d: i for i, d in enumerate(datasets)}
    m_index = {m: i for i, m in enumerate(models)}
    g = options.grid.size
    if rates is None or not len(rates.keys):
        keys = pd.DataFrame({k: np.zeros(0, object) for k in KEY})
        at = np.zeros((0, 2, g), np.int64)
        run_key, run_first, run_last = (np.zeros(0, np.int64),) * 3
    else:
        keys, at, run_key, run_first, run_last = rates.keys, rates.at, rates.run_key, rates.run_first, rates.run_last
    di = np.array([d_index.get(d, -1) for d in keys["dataset"]], dtype=np.int64)
    mi = np.array([m_index.get(m, -1) for m in keys["model"]], dtype=np.int64)
    kept = (di >= 0) & (mi >= 0)
    stations = sorted(set(keys["station"].to_numpy(object)[kept].tolist()))
    s_index = {s: i for i, s in enumerate(stations)}
    si = np.array([s_index.get(s, -1) for s in keys["station"]], dtype=np.int64)
    picks = np.zeros((len(datasets), len(models), 2, g, len(stations)), np.int64)
    rows = np.flatnonzero(kept)
    picks[di[rows], mi[rows], :, :, si[rows]] = at[rows]
    run_kept = kept[run_key]
    k = run_key[run_kept]
    data = {"rate_picks": picks, **canonical_runs(di[k], mi[k], si[k], run_first[run_kept], run_last[run_kept])}
    return data, {"rate_station": text(stations)}


def derive_rates(ds: xr.Dataset) -> dict[str, xr.DataArray]:
    """SPEC §20's readings from the stored counts: ``rate_days`` (the days of the rate runs per station, summed)
    and ``picks_per_day`` (plain arithmetic)."""
    import xarray as xr

    days = days_of(ds)
    picks = np.asarray(ds["rate_picks"].transpose(*_BY_STATION).values)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_day = picks / np.where(days > 0, days, np.nan)[:, :, None, None, :]
    coords = {name: ds[name] for name in _BY_STATION if name in ds.coords}
    by_key = _BY_STATION[:2] + _BY_STATION[-1:]
    return {"rate_days": xr.DataArray(days, dims=by_key, coords={k: v for k, v in coords.items() if k in by_key}),
            "picks_per_day": xr.DataArray(per_day.astype(np.float64), dims=_BY_STATION, coords=coords)}


def rates_of(ds: xr.Dataset, *, drop_models: Mapping[str, Sequence[str]] | None = None) -> PickRates | None:
    """The pick rates of a results Dataset (a store's or a run's) as counts, less ``drop_models[d]`` of each
    dataset ``d``; None when it has none (a store written before pick rates).  The days stay runs."""
    if "rate_picks" not in ds:
        return None
    picks = np.asarray(ds["rate_picks"].transpose(*_BY_STATION).values, dtype=np.int64)
    datasets = [str(d) for d in ds["dataset"].values]
    models = [str(m) for m in ds["model"].values]
    stations = [str(s) for s in ds["rate_station"].values]
    dropped = np.zeros((len(datasets), len(models)), dtype=bool)
    for name, names in (drop_models or {}).items():
        if name in datasets:
            dropped[datasets.index(name), [i for i, model in enumerate(models) if model in set(names)]] = True
    d, m, s, first, last = _runs(ds)
    keep = ~dropped[d, m]
    d, m, s, first, last = d[keep], m[keep], s[keep], first[keep], last[keep]
    # A (dataset, model, station) with picks has a run: the keys are the runs' distinct (d, m, s).
    cell, run_key = np.unique((d * len(models) + m) * len(stations) + s, return_inverse=True)
    kd, km, ks = cell // (len(models) * len(stations)), (cell // len(stations)) % len(models), cell % len(stations)
    keys = pd.DataFrame({"dataset": np.array([datasets[i] for i in kd], object),
                         "station": np.array([stations[i] for i in ks], object),
                         "model": np.array([models[i] for i in km], object)})
    at = picks[kd, km, :, :, ks]
    # In the kernel's key order (dataset, station, model), as a run's rates come.
    return in_key_order(keys, at, run_key.astype(np.int64).ravel(), first, last)


def merged_rates(stored: xr.Dataset, new: xr.Dataset, *, replaced: Mapping[str, Sequence[str]] | None = None,
                 stored_rates: tuple[PickRates | None] | None = None) -> PickRates | None:
    """The pick rates of an extension (:func:`pickscale.extend`): the store's (less its ``replaced`` models) and
    the new run's, merged exactly (their picks are of other models or of stretches that do not overlap): picks
    added, the days united as runs (the union of both sides' runs, touching ones joined: interval arithmetic,
    no day listed, never laid out densely); None when either has none: a store written before pick rates is
    extended without them (SPEC §20).  ``stored_rates``: ``(rates_of(stored, drop_models=replaced),)``,
    built beforehand."""
    a = rates_of(stored, drop_models=replaced) if stored_rates is None else stored_rates[0]
    b = rates_of(new)
    return None if a is None or b is None else merge_rates([a, b])


def pick_rates(ds: xr.Dataset) -> pd.DataFrame:
    """SPEC §20's ``pick_rates`` table: per (dataset, model, phase, station, threshold) with picks of the model
    at the station, at each phase's shared threshold and at ``rate_thresholds``: ``days``, ``picks``,
    ``picks_per_day``, and whether the detection tables score the station (``scored``) with its scored
    arrivals of the phase (``n_reference``; 0 where the bulletin has none there)."""
    options = Options.from_attrs(ds.attrs["options"])
    columns = ["dataset", "model", "phase", "station", "threshold", "days", "picks", "picks_per_day", "scored",
               "n_reference"]
    if "rate_picks" not in ds:
        return pd.DataFrame({c: [] for c in columns})
    grid = np.asarray(ds["threshold"].values, dtype=np.float64)
    picks = np.asarray(ds["rate_picks"].transpose(*_BY_STATION).values, dtype=np.int64)
    days = days_of(ds)
    datasets = [str(d) for d in ds["dataset"].values]
    models = [str(m) for m in ds["model"].values]
    stations = np.array([str(s) for s in ds["rate_station"].values], dtype=object)
    scored, n_ref = _scored(ds, datasets, stations)
    rows = []
    for d in sorted(range(len(datasets)), key=datasets.__getitem__):
        for m in sorted(range(len(models)), key=models.__getitem__):
            present = np.flatnonzero(days[d, m] > 0)
            for p, phase in enumerate(PHASES):
                wanted = sorted({options.threshold_of(phase), *(options.rate_thresholds or ())})
                for s in present[np.argsort(stations[present].astype(str), kind="stable")]:
                    for theta in wanted:
                        g = int(np.flatnonzero(grid == theta)[0])
                        n = int(picks[d, m, p, g, s])
                        rows.append((datasets[d], models[m], phase, stations[s], float(theta), int(days[d, m, s]),
                                     n, n / int(days[d, m, s]), bool(scored[d, s]), int(n_ref[d, p, s])))
    return pd.DataFrame(rows, columns=columns).astype(
        {"days": np.int64, "picks": np.int64, "picks_per_day": np.float64, "scored": bool, "n_reference": np.int64,
         "threshold": np.float64})


def _scored(ds: xr.Dataset, datasets: list[str], stations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per (dataset, rate station): whether the detection tables score it, and its scored arrivals per phase."""
    scored = np.zeros((len(datasets), stations.size), bool)
    n_ref = np.zeros((len(datasets), 2, stations.size), np.int64)
    if "station" not in ds.dims or not ds.sizes["station"]:
        return scored, n_ref
    names = np.array([str(s) for s in ds["station"].values], dtype=object)
    order = np.argsort(names.astype(str))
    where = np.searchsorted(names[order].astype(str), stations.astype(str))
    where = np.minimum(where, names.size - 1)
    found = names[order][where] == stations
    column = order[where]
    station_scored = np.asarray(ds["station_scored"].transpose("dataset", "station").values, dtype=bool)
    reference = np.asarray(ds["n_reference"].transpose("dataset", "phase", "station").values, dtype=np.int64)
    scored[:, found] = station_scored[:, column[found]]
    n_ref[:, :, found] = reference[:, :, column[found]]
    return scored, n_ref
