"""SPEC §15/§20: a store whose pick-rate runs are malformed is refused on opening, naming the variable and the
runs (the adversary edits the arrays and writes the manifest again, as in test_consistency.py); so is a store of
an earlier pick-rate layout (dense days, or a row per day).  (The file keeps its name from that layout.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr

import pickscale
from pickscale.errors import StoreError
from pickscale.results.rates import RATE_RUNS
from pickscale.store import open_results, save
from pickscale.store.consistency import check_results
from pickscale.store.manifest import write_manifest
from tests.helpers.stores import edit_array

T0 = pd.Timestamp("2024-01-01", tz="UTC")
REFERENCE = pd.DataFrame({"station": ["A", "B"], "phase": "P", "time": [T0 + pd.Timedelta(hours=h) for h in (1, 2)]})
PICKS = pd.DataFrame({
    "model": ["m", "m", "m", "m", "m", "m", "n", "n", "n"], "station": ["A", "B", "C", "C", "C", "C", "A", "A", "B"],
    "phase": "P", "conf": 0.9, "time": [T0 + pd.Timedelta(hours=h) for h in (1, 2, 30, 31, 75, 100, 1, 25, 50)]})
DAY = np.timedelta64(1, "D").astype("timedelta64[ns]")


def day(n: int) -> np.datetime64:
    """The midnight of day ``n`` of the fixture (day 1: 2024-01-01)."""
    return np.datetime64("2024-01-01", "ns") + (n - 1) * DAY


@pytest.fixture(scope="module")
def results() -> xr.Dataset:
    return pickscale.score(REFERENCE, PICKS, progress=False)


@pytest.fixture
def store(results, tmp_path) -> Path:
    return save(results, tmp_path / "results.zarr")




def edit_days(name: str, row: int, n: int) -> Callable[[Path], None]:
    """Set the first or last day of run ``row`` to day ``n``, through the encoded array (whole days since the
    array's ``units``)."""
    def change(store: Path) -> None:
        array = zarr.open_array(store / name, mode="r+", zarr_format=3)
        since = np.datetime64(array.attrs["units"].removeprefix("days since ")[:10], "ns")
        values = array[...]
        values[row] = (day(n) - since) // DAY
        array[...] = values
        write_manifest(store)
    return change


def edit(name: str, change: Callable[[np.ndarray], None]) -> Callable[[Path], None]:
    return lambda store: edit_array(store, name, change)


def test_the_runs_of_the_fixture(results):
    # (m, A, day 1), (m, B, day 1), (m, C, day 2), (m, C, days 4–5), (n, A, days 1–2), (n, B, day 3)
    assert results["rate_run_model"].values.tolist() == [0, 0, 0, 0, 1, 1]
    assert results["rate_run_station"].values.tolist() == [0, 1, 2, 2, 0, 1]
    assert results["rate_run_first"].values.tolist() == [day(n).astype(np.int64) for n in (1, 1, 2, 4, 1, 3)]
    assert results["rate_run_last"].values.tolist() == [day(n).astype(np.int64) for n in (1, 1, 2, 5, 2, 3)]
    assert results["rate_days"].sel(dataset="all").values.tolist() == [[1, 1, 3], [2, 1, 0]]


@pytest.mark.slow
def test_an_untouched_store_opens(store, results):
    back = open_results(store, lazy=False)
    for name in RATE_RUNS:
        assert back[name].equals(results[name]), name


#: edit -> what the message must say
EDITS: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "station index out of range": (edit("rate_run_station", lambda v: v.__setitem__(2, 3)),
                                   ("'rate_run_station'", "[0, 3)", "rate_station coordinate", "rate_run 2")),
    "negative model index": (edit("rate_run_model", lambda v: v.__setitem__(0, -1)), ("'rate_run_model'", "[0, 2)")),
    "dataset index out of range": (edit("rate_run_dataset", lambda v: v.__setitem__(5, 1)),
                                   ("'rate_run_dataset'", "[0, 1)", "rate_run 5")),
    "runs out of order": (edit("rate_run_station", lambda v: v.__setitem__(slice(0, 2), [1, 0])),
                          ("'rate_run_dataset'", "canonical order", "rate_run 1")),
    "first days out of order": (edit_days("rate_run_first", 3, 1),  # (m, C): day 2, then days 1–5
                                ("'rate_run_dataset'", "canonical order", "first day", "rate_run 3")),
    "overlapping runs": (edit_days("rate_run_last", 2, 4),  # (m, C): days 2–4, then 4–5
                         ("'rate_run_first'", "overlaps the run before it", "rate_run 3")),
    "a run twice": (edit("rate_run_station", lambda v: v.__setitem__(1, 0)),  # (m, A): day 1, day 1
                    ("'rate_run_first'", "overlaps the run before it", "rate_run 1")),
    "touching runs": (edit_days("rate_run_last", 2, 3),  # (m, C): days 2–3, then 4–5: one run
                      ("'rate_run_first'", "the day after the run before it", "maximal", "rate_run 3")),
    "first after last": (edit_days("rate_run_first", 3, 6),  # (m, C): days 6–5
                         ("'rate_run_last'", "must not be before", "rate_run 3")),
    "more days than picks": (edit_days("rate_run_last", 0, 3),  # (m, A): days 1–3, one pick
                             ("'rate_run_last'", "more days with a pick than picks at the floor",
                              "model='m', rate_station='A'")),
    "picks on no day": (edit("rate_run_station", lambda v: v.__setitem__(5, 2)),
                        ("'rate_picks'", "on no day", "model='n', rate_station='B'")),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(EDITS))
def test_a_malformed_run_is_refused_on_opening(case, store):
    change, needles = EDITS[case]
    change(store)
    for lazy in (False, True):
        with pytest.raises(StoreError) as info:
            open_results(store, lazy=lazy)
        message = str(info.value)
        assert str(store) in message and "re-run `pickscale score`" in message
        for needle in needles:
            assert needle in message, (needle, message)


def _refused(ds: xr.Dataset, *needles: str) -> None:
    with pytest.raises(StoreError) as info:
        check_results(Path("x.zarr"), ds)
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))


def test_what_else_the_check_refuses(results):
    for name in ("rate_run_first", "rate_run_last"):
        ds = results.copy(deep=True)
        ds[name].values[0] += np.timedelta64(1, "h")
        _refused(ds, f"'{name}'", "UTC midnight", "rate_run 0")
        ds = results.copy(deep=True)
        ds[name].values[4] = np.datetime64("NaT")
        _refused(ds, f"'{name}'", "UTC midnight", "rate_run 4")
    _refused(results.drop_vars("rate_run_last"), "'rate_run_last'", "is missing although rate_picks is there")
    as_float = results.assign(rate_run_station=results["rate_run_station"].astype(np.float64))
    _refused(as_float, "'rate_run_station'", "not integers on dims ('rate_run',)")
    as_int = results.assign(rate_run_first=results["rate_run_first"].astype(np.int64))
    _refused(as_int, "'rate_run_first'", "not times on dims ('rate_run',)")
    # More days than picks at the floor: a run of a (model, station) whose picks were taken away.
    fewer = results.copy(deep=True)
    fewer["rate_picks"].loc[{"dataset": "all", "model": "n", "rate_station": "B"}] = 0
    _refused(fewer, "'rate_run_last'", "more days with a pick than picks at the floor", "model='n', rate_station='B'")
    # A station that no run names.
    extra = results.copy(deep=True)
    extra["rate_run_station"].values[2:4] = 1  # (m, B) on days 1, 3, 5: C on none
    extra["rate_run_first"].values[2:4] = [day(3), day(5)]
    extra["rate_run_last"].values[2:4] = [day(3), day(5)]
    _refused(extra, "'rate_station'", "no rate run names", "rate_station='C'")


def test_earlier_and_unknown_layouts_are_refused(results):
    """The dense days and the rows of a day each are named as earlier layouts; any other pick-rate variable is
    refused as unknown, the message saying what results hold."""
    dense = results.assign(rate_day=(("dataset", "model", "rate_station", "day"), np.zeros((1, 2, 3, 4), bool)))
    _refused(dense, "'rate_day'", "dense", "earlier layout")
    rows = results.drop_vars(list(RATE_RUNS)).assign(
        rate_row_dataset=("rate_row", np.zeros(8, np.int32)), rate_row_model=("rate_row", np.zeros(8, np.int32)),
        rate_row_station=("rate_row", np.zeros(8, np.int32)),
        rate_row_day=("rate_row", np.full(8, np.datetime64("2024-01-01", "ns"))))
    _refused(rows, "'rate_row_dataset'", "a pick-rate row per day of an earlier layout")
    _refused(results.assign(rate_spans=("rate_run", np.zeros(6, np.int64))), "'rate_spans'",
             "no pick-rate variable of this layout", "rate_run_first, rate_run_last")
