"""Pick rates in the results (SPEC §20): per station with picks, picks per day at each threshold.

Stored per (dataset, model, …, ``rate_station``): ``rate_picks`` (per phase and grid threshold: the picks at or
above it) and ``rate_day`` (per ``day``: whether the model picked at the station that UTC day).  Derived:
``rate_days`` (the days with a pick) and ``picks_per_day``.  ``rate_station`` holds every station with a pick
of a dataset and model of the results, also those without a reference arrival (that the detection tables do
not score); ``day`` every UTC day with a pick.  Both combine exactly (:mod:`pickscale.kernel.rates`), so
:func:`pickscale.extend` merges them: picks add up, days unite.

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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..kernel.rates import DAY_NS, KEY, PickRates, in_key_order, merge_rates
from ..options import PHASES, Options
from .variables import RATE_ATTRS, RATE_COUNTS, RATE_VARIABLES, text

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["RATE_VARIABLES", "RATE_COUNTS", "RATE_ATTRS", "lay_out_rates", "derive_rates", "rates_of",
           "merged_rates", "pick_rates"]

_BY_STATION = RATE_VARIABLES["rate_picks"].dims


def lay_out_rates(rates: PickRates | None, datasets: Sequence[str], models: Sequence[str], options: Options
                  ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The stored pick-rate variables on the results' datasets and models, and the coordinates ``rate_station``
    and ``day``; the picks of another dataset or model are not laid out (SPEC §20)."""
    d_index = {d: i for i, d in enumerate(datasets)}
    m_index = {m: i for i, m in enumerate(models)}
    g = options.grid.size
    if rates is None or not len(rates.keys):
        keys = pd.DataFrame({k: np.zeros(0, object) for k in KEY})
        at, day_key, day = np.zeros((0, 2, g), np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    else:
        keys, at, day_key, day = rates.keys, rates.at, rates.day_key, rates.day
    di = np.array([d_index.get(d, -1) for d in keys["dataset"]], dtype=np.int64)
    mi = np.array([m_index.get(m, -1) for m in keys["model"]], dtype=np.int64)
    kept = (di >= 0) & (mi >= 0)
    stations = sorted(set(keys["station"].to_numpy(object)[kept].tolist()))
    s_index = {s: i for i, s in enumerate(stations)}
    si = np.array([s_index.get(s, -1) for s in keys["station"]], dtype=np.int64)
    day_kept = kept[day_key]
    days = np.unique(day[day_kept])
    picks = np.zeros((len(datasets), len(models), 2, g, len(stations)), np.int64)
    rows = np.flatnonzero(kept)
    picks[di[rows], mi[rows], :, :, si[rows]] = at[rows]
    picked = np.zeros((len(datasets), len(models), len(stations), days.size), bool)
    k = day_key[day_kept]
    picked[di[k], mi[k], si[k], np.searchsorted(days, day[day_kept])] = True
    data = {"rate_picks": picks, "rate_day": picked}
    coords = {"rate_station": text(stations), "day": (days * DAY_NS).view("datetime64[ns]")}
    return data, coords


def derive_rates(ds: xr.Dataset) -> dict[str, xr.DataArray]:
    """SPEC §20's readings from the stored counts: ``rate_days`` and ``picks_per_day`` (plain arithmetic)."""
    days = ds["rate_day"].sum("day").astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_day = ds["rate_picks"] / days.where(days > 0)
    return {"rate_days": days, "picks_per_day": per_day.transpose(*_BY_STATION).astype(np.float64)}


def rates_of(ds: xr.Dataset, *, drop_models: Mapping[str, Sequence[str]] | None = None) -> PickRates | None:
    """The pick rates of a results Dataset (a store's or a run's) as counts, less ``drop_models[d]`` of each
    dataset ``d``; None when it has none (a store written before pick rates)."""
    if "rate_picks" not in ds:
        return None
    picks = np.asarray(ds["rate_picks"].transpose(*_BY_STATION).values, dtype=np.int64)
    picked = np.asarray(ds["rate_day"].transpose("dataset", "model", "rate_station", "day").values, dtype=bool)
    days = np.asarray(ds["day"].values).astype("datetime64[ns]").view(np.int64) // DAY_NS
    datasets = [str(d) for d in ds["dataset"].values]
    models = [str(m) for m in ds["model"].values]
    stations = [str(s) for s in ds["rate_station"].values]
    dropped = {d: set(v) for d, v in (drop_models or {}).items()}
    d, m, s = np.nonzero(picked.any(axis=-1))  # a (dataset, model, station) with picks has a day
    keep = np.array([models[mm] not in dropped.get(datasets[dd], ()) for dd, mm in zip(d, m)], dtype=bool)
    d, m, s = d[keep], m[keep], s[keep]
    keys = pd.DataFrame({"dataset": np.array([datasets[i] for i in d], object),
                         "station": np.array([stations[i] for i in s], object),
                         "model": np.array([models[i] for i in m], object)})
    at = picks[d, m, :, :, s] if d.size else np.zeros((0, 2, picks.shape[3]), np.int64)
    row, col = np.nonzero(picked[d, m, s]) if d.size else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    # In the kernel's key order (dataset, station, model), as a run's rates come.
    return in_key_order(keys, at, row.astype(np.int64), days[col].astype(np.int64))


def merged_rates(stored: xr.Dataset, new: xr.Dataset, *, replaced: Mapping[str, Sequence[str]] | None = None
                 ) -> PickRates | None:
    """The pick rates of an extension (:func:`pickscale.extend`): the store's (less its ``replaced`` models) and
    the new run's, merged exactly (their picks are of other models or of stretches that do not overlap); None
    when either has none: a store written before pick rates is extended without them (SPEC §20)."""
    a, b = rates_of(stored, drop_models=replaced), rates_of(new)
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
    picked = np.asarray(ds["rate_day"].transpose("dataset", "model", "rate_station", "day").values, dtype=bool)
    days = picked.sum(axis=-1)
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
