"""SPEC §5, "Residuals on a grid", with windows (issue 25, item 7): where the picks and the arrivals sit in the
windows each model was run on -- the worked example, a gridded picker against an analyst's (off-grid) arrivals,
labels at a fixed offset, the rule on counts against the rule on values, and the real data."""

from __future__ import annotations

import warnings
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.metrics.grid import OFFSET_BINS, offset_bin, offset_grid, residual_grid
from pickscale.scope import Coverage

MS = 1_000_000
DATA = Path(__file__).resolve().parents[1] / "data"
START = pd.Timestamp("2024-01-01T00:00:00.013Z")


def _windows(n: int) -> pd.DataFrame:
    starts = [START + pd.Timedelta(seconds=60 * i) for i in range(n)]
    return pd.DataFrame({"station": "XX.A", "start": starts, "end": [s + pd.Timedelta(seconds=50) for s in starts]})


def _score(ref, picks, windows: pd.DataFrame | None, tmp_path: Path, **kw):
    coverage = None
    if windows is not None:
        coverage = tmp_path / "windows.csv"
        windows.assign(start=windows["start"].map(pd.Timestamp.isoformat),
                       end=windows["end"].map(pd.Timestamp.isoformat)).to_csv(coverage, index=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ds = pickscale.score(ref, picks, coverage=None if coverage is None else str(coverage), progress=False,
                             tol=0.5, **kw)
    return ds, [str(w.message) for w in seen]


def _stepped_against_an_analyst(n: int = 30):
    """SPEC's worked example: per window, ``stepped`` picks at 4.0, 4.1, 4.2 and 4.3 s from its start; the
    analyst's arrival 4.1 s plus 0–93 ms in, different in every window; ``free`` picks 11–47 ms off it."""
    windows = _windows(n)
    starts = list(windows["start"])
    arrivals = [s + pd.Timedelta(milliseconds=4100 + i * 31 % 94) for i, s in enumerate(starts)]
    ref = pd.DataFrame({"station": "XX.A", "phase": "P", "time": arrivals})
    stepped = pd.DataFrame({"model": "stepped", "station": "XX.A", "phase": "P", "conf": 0.9,
                            "time": [s + pd.Timedelta(milliseconds=k) for s in starts for k in (4000, 4100, 4200,
                                                                                               4300)]})
    free = pd.DataFrame({"model": "free", "station": "XX.A", "phase": "P", "conf": 0.9,
                         "time": [a + pd.Timedelta(milliseconds=11 + i * 7 % 37) for i, a in enumerate(arrivals)]})
    return windows, ref, pd.concat([stepped, free], ignore_index=True)


@pytest.mark.slow
def test_worked_example_gridded_picks_against_an_analyst(tmp_path):
    windows, ref, picks = _stepped_against_an_analyst()
    ds, said = _score(ref, picks, windows, tmp_path)
    flags = [f for f in ds.attrs["data_quality"] if f["flag"] != "concentrated"]
    assert flags == [{"flag": "pick_grid", "dataset": "all", "phase": "P", "model": "stepped", "step": 0.1,
                      "note": "100% of 120 picks congruent to +0.000 s modulo 0.1 s from the start of their window, "
                              "4 distinct values", "source": "windows"}]
    grid = [m for m in said if "picks at a fixed grid" in m]
    assert len(grid) == 1 and grid[0].startswith("stepped:") and "from the start of their windows" in grid[0]
    assert not any("fixed offset into windows" in m for m in said)
    # The residuals alone do not show it: the analyst's arrivals are off the grid.
    ds_plain, said_plain = _score(ref, picks, None, tmp_path)
    assert not [f for f in ds_plain.attrs["data_quality"] if f["flag"] != "concentrated"]
    assert not any("fixed grid" in m for m in said_plain)
    # The flag is a warning: not one number changes with the windows (every window holds every pick here).
    for name in ("recall", "matched", "median", "medae"):
        if name in ds:
            assert ds[name].equals(ds_plain[name]), name


@pytest.mark.slow
def test_labels_at_a_fixed_offset_and_on_a_grid(tmp_path):
    windows = _windows(25)
    starts = list(windows["start"])
    fixed = pd.DataFrame({"station": "XX.A", "phase": "P", "time": [s + pd.Timedelta(seconds=30) for s in starts]})
    # S labels at whole seconds (4 … 9 s): not one offset (at most 5 of 25), but all on the 0.5 s grid.
    whole = pd.DataFrame({"station": "XX.A", "phase": "S",
                          "time": [s + pd.Timedelta(seconds=35 + i % 6) for i, s in enumerate(starts)]})
    ref = pd.concat([fixed, whole], ignore_index=True)
    picks = ref.assign(model="m", conf=0.8, time=ref["time"] + pd.to_timedelta(
        [17 + 13 * i % 41 for i in range(len(ref))], unit="ms"))
    ds, said = _score(ref, picks, windows, tmp_path)
    offsets = {f["phase"]: f["note"] for f in ds.attrs["data_quality"] if f["flag"] == "reference_offset"}
    assert offsets == {"P": "100% of 25 arrivals at +30.000 s from the start of their window",
                       "S": "100% of 25 arrivals congruent to +0.000 s modulo 0.5 s from the start of their window, "
                            "6 distinct values"}
    assert sum("reference at a fixed offset into windows" in m for m in said) == 2
    assert not any(f["flag"] == "pick_grid" for f in ds.attrs["data_quality"])
    # 19 windows: too few arrivals to say.
    few = _windows(19)
    ds_few, _ = _score(ref.iloc[:19], picks.iloc[:19], few, tmp_path)
    assert not [f for f in ds_few.attrs["data_quality"] if f["flag"] == "reference_offset"]


@pytest.mark.slow
def test_the_flags_do_not_depend_on_the_partitioning(tmp_path):
    windows, ref, picks = _stepped_against_an_analyst()
    one, _ = _score(ref, picks, windows, tmp_path)
    shuffled = picks.sample(frac=1.0, random_state=3).reset_index(drop=True)
    many, _ = _score(ref, dd.from_pandas(shuffled, npartitions=4), windows, tmp_path)
    assert many.attrs["data_quality"] == one.attrs["data_quality"]
    assert many.attrs["coverage"]["placement"] == one.attrs["coverage"]["placement"]


@pytest.mark.slow
@given(offsets=st.lists(st.integers(-10**11, 10**11), min_size=0, max_size=60),
       step=st.sampled_from([50, 100, 200, 250, 500]), phase=st.integers(0, 999), k=st.integers(0, 80))
@settings(max_examples=150, deadline=None)
def test_the_rule_on_counts_is_the_rule_on_values_modulo_one_second(offsets, step, phase, k):
    """offset_grid of the per-millisecond counts equals residual_grid of the same offsets taken to the ms
    modulo 1 s -- with some offsets put on a grid so that both branches are exercised."""
    gridded = [(phase + step * j) * MS + 10**9 * j for j in range(k)]
    x = np.array(offsets + gridded, dtype=np.int64)
    counts = np.bincount(offset_bin(x), minlength=OFFSET_BINS)
    assert offset_grid(counts) == residual_grid(offset_bin(x) * MS)


@pytest.mark.slow
@given(windows=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 60), st.sampled_from(["A", "B"])),
                        min_size=1, max_size=12),
       times=st.lists(st.integers(-5, 270), min_size=1, max_size=30))
@settings(max_examples=150, deadline=None)
def test_window_start_is_the_latest_start_holding_the_time(windows, times):
    """Against a brute force: the start of the latest-starting window of the station that holds the time."""
    frame = pd.DataFrame({"station": [w[2] for w in windows], "start": [w[0] for w in windows],
                          "end": [w[0] + w[1] for w in windows]})
    cov = Coverage.from_windows(frame)
    for station in ("A", "B"):
        t = np.array(times, dtype=np.int64)
        codes = np.zeros(t.size, dtype=np.int64)
        cells = cov.cells(np.array([""], object), np.array([station], object), codes, codes, t)
        for time, cell in zip(t.tolist(), cells.tolist()):
            holding = [s for s, length, st_ in windows if st_ == station and s <= time <= s + length]
            assert bool(cov.held(np.array([cell]))[0]) == bool(holding)
            if holding:
                assert cov.offsets(np.array([cell]), np.array([time]))[0] == time - max(holding)


@pytest.mark.slow
def test_paired_windows_with_its_windows():
    folder = DATA / "paired_windows"
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        ds = pickscale.score(str(folder / "reference.csv"), str(folder / "picks.csv"),
                             coverage=str(folder / "windows.csv"), progress=False)
    flags = {(f["flag"], f["dataset"], f["phase"], f["model"]) for f in ds.attrs["data_quality"]
             if f["flag"] != "concentrated"}
    datasets = ("ncedc_deepdenoiser_ponly", "ncedc_phasenet", "stead_ta109c")
    gpd = "GPD(model_pol_best)"
    assert flags == ({("pick_grid", d, p, gpd) for d in datasets for p in ("P", "S")}
                     | {("reference_offset", d, "P", "") for d in datasets})
    notes = {f["dataset"]: f["note"] for f in ds.attrs["data_quality"] if f["flag"] == "reference_offset"}
    assert notes["ncedc_phasenet"] == "100% of 154 arrivals at +30.000 s from the start of their window"
    assert notes["stead_ta109c"].startswith("100% of 50 arrivals congruent to +0.000 s modulo 0.5 s")
    assert all(f["source"] == "windows" for f in ds.attrs["data_quality"] if f["flag"] != "concentrated")


@pytest.mark.slow
def test_a_store_keeps_the_placement_and_says_the_same(tmp_path):
    windows, ref, picks = _stepped_against_an_analyst()
    ds, _ = _score(ref, picks, windows, tmp_path)
    store = pickscale.save(ds, tmp_path / "results.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = pickscale.open_results(store)
    assert back.attrs["coverage"]["placement"] == ds.attrs["coverage"]["placement"]
    assert back.attrs["data_quality"] == ds.attrs["data_quality"]
