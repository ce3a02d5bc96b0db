"""Bytes of the pick-rate days (issue 22, item 4; SPEC §20): runs of consecutive days, against day rows and dense.

A catalogue of ``--stations`` stations over ``--days`` days and ``--models`` models in which each station picks
on a share of the days (per station and model, a share drawn log-uniformly, one to a few picks on each day picked,
the days independent; or every day) is scored by :func:`pickscale.score` and saved.  Reported:

* *runs*: the stored rate days as the results hold them, ``rate_run_dataset``, ``rate_run_model``,
  ``rate_run_station`` (int32), ``rate_run_first`` and ``rate_run_last`` (datetime64[ns]): 28 bytes a maximal
  run of consecutive days picked, in memory, and the bytes of their Zarr arrays on disk;
* *day rows*: the layout before, one row per (dataset, model, station, day) picked (``rate_row_dataset``,
  ``rate_row_model``, ``rate_row_station`` int32, ``rate_row_day`` datetime64[ns]: 20 bytes a row), expanded from
  the same runs and written by the same :func:`pickscale.store.save`;
* *dense*: the layout before that, ``rate_day`` (dataset, model, ``rate_station``, ``day``) bool and the ``day``
  coordinate, built from the same days;
* all three extrapolated to the issue's 75,000 stations × 10 years × 10 models at this catalogue's share of days
  picked: dense and day rows in proportion to the cells and the days picked; runs, where days are picked at
  random, in proportion to the runs per station-model-day (a run of random days is as long whatever the span),
  and where every day is picked, one run per station and model (whatever the span).

Run: ``python benchmarks/rate_days.py [--stations 500] [--days 365] [--models 3] [--write]``; ~30 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from record import write_block  # noqa: E402

MARK = "<!-- rate_days -->"
MB = 2**20
DAY_NS = 86_400 * 10**9
RUNS = ("rate_run_dataset", "rate_run_model", "rate_run_station", "rate_run_first", "rate_run_last")
ROWS = ("rate_row_dataset", "rate_row_model", "rate_row_station", "rate_row_day")
#: The day rows' attributes as that layout wrote them (so that their bytes on disk are those it stored).
ROW_ATTRS = {
    "rate_row_dataset": {"long_name": "dataset of rate row", "units": "1", "description": (
        "Index into the dataset coordinate of each rate row: one row per (dataset, model, rate_station, UTC day) "
        "on which the model has a pick (any phase, at or above the floor) at the station, each once, sorted by "
        "(dataset, model, station, day) (SPEC §20).")},
    "rate_row_model": {"long_name": "model of rate row", "units": "1",
                       "description": "Index into the model coordinate of each rate row (SPEC §20)."},
    "rate_row_station": {"long_name": "station of rate row", "units": "1",
                         "description": "Index into the rate_station coordinate of each rate row (SPEC §20)."},
    "rate_row_day": {"long_name": "UTC day of rate row", "description": (
        "The UTC day (its midnight) of each rate row: a day on which the model has a pick at the station "
        "(SPEC §20).")},
}
#: The issue's shape: 75,000 stations × 10 years × 10 models (one dataset).
BIG_STATIONS, BIG_DAYS, BIG_MODELS = 75_000, 3_652, 10


def catalogue(stations: int, days: int, models: int, low: float, high: float, seed: int = 0
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Reference and picks: every (station, model) picks on a share of the days drawn log-uniformly in
    ``[low, high]`` (each day independently), 1 + Poisson(1.5) picks on each such day."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2024-01-01", tz="UTC").value
    share = np.exp(rng.uniform(np.log(low), np.log(high), (stations, models)))
    active = rng.random((stations, models, days)) < share[..., None]
    s, m, d = np.nonzero(active)
    per_day = 1 + rng.poisson(1.5, s.size)
    s, m, d = (np.repeat(a, per_day) for a in (s, m, d))
    names = np.array([f"XX.S{i:05d}" for i in range(stations)], dtype=object)
    picks = pd.DataFrame({
        "station": names[s], "model": np.array([f"model{i}" for i in range(models)], dtype=object)[m],
        "phase": np.array(["P", "S"], dtype=object)[rng.integers(0, 2, s.size)],
        "time": pd.to_datetime(t0 + d * DAY_NS + rng.integers(0, DAY_NS, s.size), utc=True),
        "conf": rng.uniform(0.05, 1.0, s.size)})
    first = picks.drop_duplicates("station").head(50)  # a few arrivals, on picks (scored stations)
    reference = first[["station", "phase", "time"]].reset_index(drop=True)
    return reference, picks


def folder_bytes(store: Path, names: tuple[str, ...]) -> int:
    return sum(f.stat().st_size for name in names for f in (store / name).rglob("*") if f.is_file())


def measure(stations: int, days: int, models: int, low: float, high: float) -> dict:
    """Score one catalogue; the rate days' bytes as runs, as day rows and dense, in memory and on disk."""
    import warnings

    import xarray as xr

    import pickscale
    from pickscale.errors import PickscaleWarning
    from pickscale.kernel.rates import expand_runs
    from pickscale.store import save

    reference, picks = catalogue(stations, days, models, low, high)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PickscaleWarning)
        ds = pickscale.score(reference, picks, progress=False)
    seconds = time.perf_counter() - started
    n_runs = ds.sizes["rate_run"]
    # The day rows, expanded from the runs (the layout before: one row per day picked).
    d, m, s = (ds[name].values.astype(np.int64) for name in RUNS[:3])
    first, last = (ds[name].values.view(np.int64) // DAY_NS for name in RUNS[3:])
    run, day = expand_runs(np.arange(n_runs), first, last)
    rows = xr.Dataset({"rate_row_dataset": ("rate_row", d[run].astype(np.int32)),
                       "rate_row_model": ("rate_row", m[run].astype(np.int32)),
                       "rate_row_station": ("rate_row", s[run].astype(np.int32)),
                       "rate_row_day": ("rate_row", (day * DAY_NS).view("datetime64[ns]"))})
    for name in ROWS:
        rows[name].attrs.update(ROW_ATTRS[name])
    n_rows = rows.sizes["rate_row"]
    # The dense layout, built from the same days: a bool per (dataset, model, station, day with a pick).
    all_days = np.unique(day)
    dense = np.zeros((ds.sizes["dataset"], ds.sizes["model"], ds.sizes["rate_station"], all_days.size), bool)
    dense[d[run], m[run], s[run], np.searchsorted(all_days, day)] = True
    day_coord = (all_days * DAY_NS).view("datetime64[ns]")
    assert int(dense.sum()) == n_rows and (dense.sum(axis=-1) == ds["rate_days"].values).all()
    with tempfile.TemporaryDirectory() as tmp:
        store = save(ds, Path(tmp) / "runs.zarr")
        runs_disk, picks_disk = folder_bytes(store, RUNS), folder_bytes(store, ("rate_picks",))
        rows_disk = folder_bytes(save(rows, Path(tmp) / "rows.zarr"), ROWS)
        old = xr.Dataset({"rate_day": (("dataset", "model", "rate_station", "day"), dense)},
                         coords={"day": day_coord})
        dense_disk = folder_bytes(save(old, Path(tmp) / "dense.zarr"), ("rate_day", "day"))
    return {"picks": len(picks), "runs": n_runs, "rows": n_rows, "cells": dense.size, "seconds": seconds,
            "station_models": int((ds["rate_days"].values > 0).sum()),
            "dense_mem": dense.nbytes + day_coord.nbytes, "rows_mem": sum(rows[name].nbytes for name in ROWS),
            "runs_mem": sum(ds[name].nbytes for name in RUNS), "dense_disk": dense_disk, "rows_disk": rows_disk,
            "runs_disk": runs_disk, "picks_mem": ds["rate_picks"].nbytes, "picks_disk": picks_disk,
            "thresholds": ds.sizes["threshold"]}


#: The shares of the days a station and model pick on, (low, high), log-uniform: a network of temporary
#: deployments and quiet stations; a mix; every station picking every day (a continuously running picker on a
#: permanent network: the day rows' worst case, the runs' best).
SHARES = ((0.0003, 0.03), (0.003, 0.3), (1.0, 1.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stations", type=int, default=500)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="record the numbers in benchmarks/README.md")
    args = parser.parse_args()
    big_cells = BIG_STATIONS * BIG_DAYS * BIG_MODELS
    table = ["| days picked (per station and model) | picks | station-model-days picked (day rows) | runs | "
             "in memory: dense | day rows | runs | on disk: dense | day rows | runs | 75,000 st. × 10 y × 10 "
             "models: dense | day rows | runs |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    last = {}
    for low, high in SHARES:
        r = last = measure(args.stations, args.days, args.models, low, high)
        share = r["rows"] / r["cells"]
        every_day = low == high == 1
        # Runs at the shape: one per station and model where every day is picked; else the runs per
        # station-model-day of this catalogue (random days: a run is as long whatever the span).
        big_runs = BIG_STATIONS * BIG_MODELS if every_day else big_cells * r["runs"] / r["cells"]
        what = "every day" if every_day else f"{low:.2%}–{high:.0%}, log-uniform"
        table.append(
            f"| {what} | {r['picks']:,} | {r['rows']:,} ({share:.1%}) | {r['runs']:,} | "
            f"{r['dense_mem'] / MB:,.2f} MB | {r['rows_mem'] / MB:,.2f} MB | {r['runs_mem'] / MB:,.2f} MB | "
            f"{r['dense_disk'] / 1024:,.0f} kB | {r['rows_disk'] / 1024:,.0f} kB | {r['runs_disk'] / 1024:,.0f} kB | "
            f"{(big_cells + BIG_DAYS * 8) / 2**30:,.2f} GB | {big_cells * share * 20 / 2**30:,.2f} GB | "
            f"{big_runs * 28 / 2**30:,.3f} GB |")
        print(table[-1], f"(scored in {r['seconds']:.1f} s)", flush=True)
    body = "\n".join([
        f"`python benchmarks/rate_days.py` ({platform.machine()}, {os.cpu_count()} cores): {args.stations:,} "
        f"stations × {args.days} days × {args.models} models, one catalogue per share of the days each station "
        "and model picks on (the days independent; 1 + Poisson(1.5) picks on each). Runs: the stored layout, "
        "one row per maximal run of consecutive days picked (3 × int32 + 2 × datetime64[ns], 28 bytes); day "
        "rows: the layout before, one row per day picked (3 × int32 + datetime64[ns], 20 bytes), expanded from "
        "the same runs; dense: the `rate_day` bool (dataset, model, rate_station, day) with its `day` "
        "coordinate; all three saved by the same `pickscale.store.save`. The last three columns scale each to "
        "the issue's shape at the same share (computed: the runs of random days in proportion to the "
        "station-model-days, those of a station picking every day one per station and model). Never more runs "
        "than day rows: where stations pick on scattered days most runs are one day (28 bytes against 20: at "
        "most 1.4× the day rows in memory; 1.5–1.6× on disk here, two arrays of days compressing less than "
        "one), and a station picking every day is one run, whatever the span: the day rows' worst case (20× the "
        f"dense table) is now the smallest, 1/{last['rows_mem'] / last['runs_mem']:,.0f} of the day rows in "
        "memory here. `rate_picks` (unchanged; stations × 2 phases × "
        f"{last['thresholds']} thresholds int64): {last['picks_mem'] / MB:,.2f} MB in memory here.",
        "",
        *table,
    ])
    print(body)
    if args.write:
        write_block(MARK, body, heading="Pick-rate days: runs, day rows and dense (issue 22, item 4)")


if __name__ == "__main__":
    main()
