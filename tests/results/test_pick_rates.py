"""SPEC §20 pick rates in the results: the worked example, every pick whatever the scope (against a brute force,
in any partitioning and on a cluster), the store, extend (equal to one run), the CLI, the table and the figure."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.cli import main
from pickscale.report.figures.rates import has_rates, rate_rows
from pickscale.results.rates import pick_rates

T0 = pd.Timestamp("2024-01-01", tz="UTC")  # day 1 of the worked example
COLUMNS = ["dataset", "model", "phase", "station", "threshold", "days", "picks", "picks_per_day", "scored",
           "n_reference"]


def _at(day: int, clock: str) -> pd.Timestamp:
    return T0 + pd.Timedelta(days=day - 1) + pd.Timedelta(clock)


def _spec_case() -> tuple[pd.DataFrame, pd.DataFrame]:
    """SPEC §20's worked example: A has one P arrival (picked), B none (picked five times over three days)."""
    arrival = _at(1, "10:00:00")
    ref = pd.DataFrame({"station": ["A"], "phase": ["P"], "time": [arrival]})
    picks = pd.DataFrame([
        ("A", "P", arrival, 0.9),
        ("B", "P", _at(1, "05:00:00"), 0.9), ("B", "P", _at(1, "07:00:00"), 0.4), ("B", "P", _at(2, "05:00:00"), 0.8),
        ("B", "S", _at(2, "23:59:59.999999999"), 0.6), ("B", "S", _at(3, "00:00:00"), 0.2),
    ], columns=["station", "phase", "time", "conf"]).assign(model="m")
    return ref, picks


def test_spec_worked_example() -> None:
    ref, picks = _spec_case()
    ds = pickscale.score(ref, picks, rate_thresholds=[0.5], progress=False)
    table = pickscale.tables(ds)["pick_rates"]
    assert table.columns.tolist() == COLUMNS
    rows = [tuple(r) for r in table.itertuples(index=False)]
    assert rows == [
        ("all", "m", "P", "A", 0.3, 1, 1, 1.0, True, 1), ("all", "m", "P", "A", 0.5, 1, 1, 1.0, True, 1),
        ("all", "m", "P", "B", 0.3, 3, 3, 1.0, False, 0), ("all", "m", "P", "B", 0.5, 3, 2, 2 / 3, False, 0),
        ("all", "m", "S", "A", 0.3, 1, 0, 0.0, True, 0), ("all", "m", "S", "A", 0.5, 1, 0, 0.0, True, 0),
        ("all", "m", "S", "B", 0.3, 3, 1, 1 / 3, False, 0), ("all", "m", "S", "B", 0.5, 3, 1, 1 / 3, False, 0),
    ]
    assert int(ds.rate_days.sel(dataset="all", model="m", rate_station="B")) == 3
    assert [str(d)[:10] for d in ds["day"].values] == ["2024-01-01", "2024-01-02", "2024-01-03"]
    # The detection tables are those of A alone: B's picks change no other number.
    alone = pickscale.score(ref, picks[picks.station == "A"], rate_thresholds=[0.5], progress=False)
    for name in ("detection", "timing", "calibration", "reliability", "phase_quality", "sweep"):
        assert pickscale.tables(ds)[name].equals(pickscale.tables(alone)[name]), name
    # The rate thresholds join the grid (SPEC §2), as the shared threshold does.
    assert 0.5 in ds["threshold"].values and 0.55 in pickscale.score(ref, picks, rate_thresholds=[0.55],
                                                                     progress=False)["threshold"].values


def test_every_pick_counts_whatever_the_scope() -> None:
    """Picks outside the scored span, at a station without arrivals and of the reference's other dataset-less
    stations all count; below the floor none does."""
    ref, picks = _spec_case()
    far = pd.DataFrame([("A", "P", _at(40, "12:00:00"), 0.5), ("C", "S", _at(3, "01:00:00"), 0.01)],
                       columns=["station", "phase", "time", "conf"]).assign(model="m")
    ds = pickscale.score(ref, pd.concat([picks, far], ignore_index=True), progress=False)
    a = ds.sel(dataset="all", model="m", rate_station="A")
    assert int(a.rate_days) == 2 and int(a.rate_picks.sel(phase="P", threshold=0.3)) == 2
    assert "C" not in ds["rate_station"].values  # its one pick is below the floor (0.02)


def _brute(picks: pd.DataFrame, grid: np.ndarray) -> dict:
    out = {}
    times = pd.to_datetime(picks["time"], utc=True).dt.tz_localize(None).astype("datetime64[ns]")
    day = times.astype("int64") // (86_400 * 10**9)
    for (model, station), rows in picks.assign(day=day).groupby(["model", "station"]):
        rows = rows[rows.conf >= grid[0]]
        if not len(rows):
            continue
        days = rows["day"].nunique()
        for p, phase in enumerate(("P", "S")):
            conf = rows.conf[rows.phase == phase].to_numpy()
            out[(model, station)] = out.get((model, station), ()) + tuple(
                (p, float(theta), int((conf >= theta).sum()), days) for theta in grid)
    return out


def _from_results(ds) -> dict:
    out = {}
    for m in ds["model"].values:
        for s in ds["rate_station"].values:
            one = ds.sel(dataset="all", model=m, rate_station=s)
            days = int(one.rate_days)
            if not days:
                continue
            out[(str(m), str(s))] = tuple(
                (p, float(theta), int(one.rate_picks.sel(phase=phase, threshold=theta)), days)
                for p, phase in enumerate(("P", "S")) for theta in ds["threshold"].values)
    return out


def _random_picks(seed: int, n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    stations = np.array(["X.A", "X.B", "X.C", "X.D"])
    picks = pd.DataFrame({
        "station": stations[rng.integers(0, 4, n)], "phase": np.array(["P", "S"])[rng.integers(0, 2, n)],
        "time": T0 + pd.to_timedelta(rng.integers(0, 5 * 86_400 * 10**9, n), unit="ns"),
        "conf": rng.choice([0.01, 0.1, 0.3, 0.5, 0.9], n), "model": np.array(["m", "n"])[rng.integers(0, 2, n)]})
    # Every model picks at a scored station; arrivals on both sides of a quiet cut at 84 h.
    sure = pd.DataFrame({"station": "X.A", "phase": "P", "time": [T0 + pd.Timedelta(hours=30)] * 2, "conf": 0.9,
                         "model": ["m", "n"]})
    ref = pd.DataFrame({"station": ["X.A", "X.B", "X.A", "X.B"], "phase": ["P", "S", "P", "S"],
                        "time": [T0 + pd.Timedelta(hours=h) for h in (30, 30, 108, 108)]})
    return ref, pd.concat([sure, picks], ignore_index=True)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 120), parts=st.integers(1, 5))
def test_rates_equal_a_brute_force_in_any_partitioning(seed: int, n: int, parts: int) -> None:
    ref, picks = _random_picks(seed, n)
    grid = [0.1, 0.3, 0.5]
    one = pickscale.score(ref, picks, thresholds=grid, progress=False)
    shuffled = picks.sample(frac=1, random_state=seed)
    many = pickscale.score(ref, dd.from_pandas(shuffled, npartitions=parts), thresholds=grid, progress=False)
    assert _from_results(one) == _brute(picks, np.asarray(one["threshold"].values))
    for name in ("rate_picks", "rate_day", "picks_per_day"):
        assert one[name].equals(many[name]), name
    assert pickscale.tables(one)["pick_rates"].equals(pickscale.tables(many)["pick_rates"])


@pytest.mark.cluster
def test_rates_on_a_cluster_equal_the_local_run() -> None:
    from tests.helpers.checks import start_cluster

    ref, picks = _random_picks(3, 400)
    local = pickscale.score(ref, picks, progress=False)
    cluster, client = start_cluster(2)
    try:
        far = pickscale.score(ref, dd.from_pandas(picks, npartitions=4), client=client, progress=False)
    finally:
        client.close()
        cluster.close()
    for name in ("rate_picks", "rate_day", "rate_days", "picks_per_day"):
        assert local[name].equals(far[name]), name


def test_store_round_trip_report_and_extend_equal_one_run(tmp_path) -> None:
    ref, picks = _random_picks(5, 300)
    one = pickscale.score(ref, picks, progress=False)
    pickscale.save(pickscale.score(ref, picks[picks.model == "m"], progress=False), tmp_path / "a.zarr")
    back = pickscale.open_results(tmp_path / "a.zarr", lazy=False)
    assert back.rate_day.dtype == bool and back["day"].dtype.kind == "M"
    pickscale.extend(tmp_path / "a.zarr", ref, picks[picks.model == "n"], progress=False)
    merged = pickscale.open_results(tmp_path / "a.zarr", lazy=False)
    assert pickscale.tables(merged)["pick_rates"].equals(pickscale.tables(one)["pick_rates"])
    # A later stretch (a quiet gap between: no arrival near the cut), days united, picks added.
    cut = T0 + pd.Timedelta(hours=84)
    early, before = picks.time < cut, ref.time < cut
    pickscale.save(pickscale.score(ref[before], picks[early], progress=False), tmp_path / "b.zarr")
    pickscale.extend(tmp_path / "b.zarr", ref[~before], picks[~early], progress=False)
    stretch = pickscale.open_results(tmp_path / "b.zarr", lazy=False)
    for name in ("rate_picks", "rate_day", "picks_per_day"):
        assert stretch[name].equals(one[name]), name
    assert pickscale.tables(stretch)["pick_rates"].equals(pickscale.tables(one)["pick_rates"])


def test_a_store_without_pick_rates_opens_and_extends_without_them(tmp_path) -> None:
    ref, picks = _random_picks(7, 200)
    old = pickscale.score(ref, picks[picks.model == "m"], progress=False)
    old = old.drop_vars(["rate_picks", "rate_day", "rate_days", "picks_per_day", "rate_station", "day"])
    pickscale.save(old, tmp_path / "old.zarr")
    back = pickscale.open_results(tmp_path / "old.zarr", lazy=False)
    assert "rate_picks" not in back and "pick_rates" not in pickscale.tables(back)
    pickscale.extend(tmp_path / "old.zarr", ref, picks[picks.model == "n"], progress=False)
    assert "rate_picks" not in pickscale.open_results(tmp_path / "old.zarr", lazy=False)


def test_cli_writes_the_table_and_the_figure_and_report_rewrites_them(tmp_path) -> None:
    ref, picks = _spec_case()
    ref.to_csv(tmp_path / "ref.csv", index=False)
    picks.to_csv(tmp_path / "picks.csv", index=False)
    args = ["score", "--reference", str(tmp_path / "ref.csv"), "--picks", str(tmp_path / "picks.csv"), "--quiet"]
    assert main([*args, "--out", str(tmp_path / "a"), "--rate-thresholds", "0.5"]) == 0
    lines = (tmp_path / "a" / "pick_rates.csv").read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS)
    assert lines[4] == "all,m,P,B,0.5,3,2,0.6666666666666666,False,0"
    png = tmp_path / "a" / "figures" / "pick_rates.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["report", str(tmp_path / "a" / "results.zarr"), "--out", str(tmp_path / "c"), "--quiet"]) == 0
    assert (tmp_path / "c" / "pick_rates.csv").read_bytes() == (tmp_path / "a" / "pick_rates.csv").read_bytes()
    assert (tmp_path / "c" / "figures" / "pick_rates.png").exists()
    # A bad value: exit 2, nothing written.
    assert main([*args, "--out", str(tmp_path / "d"), "--rate-thresholds", "1.5"]) == 2
    assert not (tmp_path / "d" / "results.zarr").exists()


def test_figure_rows_busiest_first_and_one_station_has_no_figure() -> None:
    ref, picks = _spec_case()
    ds = pickscale.score(ref, picks, progress=False)
    panels, _ = rate_rows(ds)
    # Equal rates in station order; A has no S arrival.
    assert [(p.phase, p.stations, p.scored) for p in panels] == [("P", ["A", "B"], [True, False]),
                                                                 ("S", ["B", "A"], [False, False])]
    assert panels[0].rate["m"].tolist() == [1.0, 1.0]
    assert has_rates(ds) and not has_rates(pickscale.score(ref, picks[picks.station == "A"], progress=False))


def test_table_of_results_without_rates_is_empty_with_its_columns() -> None:
    ref, picks = _spec_case()
    ds = pickscale.score(ref, picks, progress=False).drop_vars(["rate_picks", "rate_day"])
    assert pick_rates(ds).columns.tolist() == COLUMNS and pick_rates(ds).empty
