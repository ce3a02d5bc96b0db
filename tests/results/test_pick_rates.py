"""SPEC §20 pick rates in the results: the worked example, every pick whatever the scope (against a brute force,
in any partitioning and on a cluster), the days as maximal runs (worked by hand, against a brute force), the store,
extend (equal to one run, byte for byte), the CLI, the table and the figure.

The property tests over whole runs of ``pickscale.score`` run a few examples on the quick path and many more
marked ``slow`` (the same check); the runs' interval arithmetic alone is checked on many examples, quickly."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pickscale
from pickscale.cli import main
from pickscale.kernel.rates import DAY_NS, coalesce_runs, expand_runs
from pickscale.report.figures.rates import has_rates, rate_rows
from pickscale.results.rates import RATE_RUNS, canonical_runs, pick_rates, rate_runs
from pickscale.results.variables import RATE_VARIABLES
from tests.helpers.examples import examples

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


@pytest.mark.slow
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
    # The rate runs: A on day 1; B on days 1 to 3, one run.
    assert _runs(ds) == [("all", "m", "A", "2024-01-01", "2024-01-01"), ("all", "m", "B", "2024-01-01", "2024-01-03")]
    # The detection tables are those of A alone: B's picks change no other number.
    alone = pickscale.score(ref, picks[picks.station == "A"], rate_thresholds=[0.5], progress=False)
    for name in ("detection", "timing", "calibration", "reliability", "phase_quality", "sweep"):
        assert pickscale.tables(ds)[name].equals(pickscale.tables(alone)[name]), name
    # The rate thresholds join the grid (SPEC §2), as the shared threshold does.
    assert 0.5 in ds["threshold"].values and 0.55 in pickscale.score(ref, picks, rate_thresholds=[0.55],
                                                                     progress=False)["threshold"].values


@pytest.mark.slow
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


def _date(day: int) -> str:
    return str(np.datetime64(day, "D"))


def _runs(ds) -> list[tuple[str, str, str, str, str]]:
    """The stored rate runs as (dataset, model, station, first UTC date, last UTC date), in their stored order."""
    labels = {dim: [str(v) for v in ds[dim].values] for dim in ("dataset", "model", "rate_station")}
    return [(labels["dataset"][d], labels["model"][m], labels["rate_station"][s], str(first)[:10], str(last)[:10])
            for d, m, s, first, last in zip(*(ds[name].values for name in RATE_RUNS))]


def _maximal_runs(days: set[int]) -> list[tuple[int, int]]:
    """A set of days as its maximal runs, by brute force: a run starts on a day whose day before is not in the
    set and goes on while the next day is."""
    runs = []
    for first in sorted(days):
        if first - 1 in days:
            continue
        last = first
        while last + 1 in days:
            last += 1
        runs.append((first, last))
    return runs


def _brute_runs(picks: pd.DataFrame, floor: float) -> list[tuple[str, str, str, str, str]]:
    """SPEC §20's runs by brute force: the maximal runs of the distinct UTC days of the picks at the floor, per
    (model, station), sorted."""
    kept = picks[picks.conf >= floor]
    times = pd.to_datetime(kept["time"], utc=True, format="ISO8601").dt.tz_localize(None)
    day = times.astype("datetime64[ns]").astype("int64")
    days: dict[tuple[str, str], set[int]] = {}
    for m, s, d in zip(kept.model, kept.station, day // DAY_NS):
        days.setdefault((str(m), str(s)), set()).add(int(d))
    return sorted(("all", m, s, _date(a), _date(b)) for (m, s), ds in days.items() for a, b in _maximal_runs(ds))


def _random_picks(seed: int, n: int, days: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    stations = np.array(["X.A", "X.B", "X.C", "X.D"])
    picks = pd.DataFrame({
        "station": stations[rng.integers(0, 4, n)], "phase": np.array(["P", "S"])[rng.integers(0, 2, n)],
        "time": T0 + pd.to_timedelta(rng.integers(0, days * 86_400 * 10**9, n), unit="ns"),
        "conf": rng.choice([0.01, 0.1, 0.3, 0.5, 0.9], n), "model": np.array(["m", "n"])[rng.integers(0, 2, n)]})
    # Every model picks at a scored station; arrivals on both sides of a quiet cut at 84 h.
    sure = pd.DataFrame({"station": "X.A", "phase": "P", "time": [T0 + pd.Timedelta(hours=30)] * 2, "conf": 0.9,
                         "model": ["m", "n"]})
    ref = pd.DataFrame({"station": ["X.A", "X.B", "X.A", "X.B"], "phase": ["P", "S", "P", "S"],
                        "time": [T0 + pd.Timedelta(hours=h) for h in (30, 30, 108, 108)]})
    return ref, pd.concat([sure, picks], ignore_index=True)


def _rates_equal_a_brute_force(seed: int, n: int, parts: int, days: int) -> None:
    ref, picks = _random_picks(seed, n, days)
    grid = [0.1, 0.3, 0.5]
    one = pickscale.score(ref, picks, thresholds=grid, progress=False)
    shuffled = picks.sample(frac=1, random_state=seed)
    many = pickscale.score(ref, dd.from_pandas(shuffled, npartitions=parts), thresholds=grid, progress=False)
    assert _from_results(one) == _brute(picks, np.asarray(one["threshold"].values))
    for name in ("rate_picks", *RATE_RUNS, "rate_days", "picks_per_day"):
        assert one[name].equals(many[name]), name
    assert _runs(one) == _brute_runs(picks, float(one["threshold"].values[0]))
    assert pick_rates(one).equals(pick_rates(many))  # (the table pickscale.tables gives)


@pytest.mark.slow
@settings(max_examples=examples(3))
@given(seed=st.integers(0, 10**6), n=st.integers(1, 120), parts=st.integers(1, 5), days=st.sampled_from([5, 12]))
def test_rates_equal_a_brute_force_in_any_partitioning(seed: int, n: int, parts: int, days: int) -> None:
    """A few examples on the quick path; :func:`test_rates_equal_a_brute_force_in_many_partitionings` runs many."""
    _rates_equal_a_brute_force(seed, n, parts, days)


@pytest.mark.slow
@settings(max_examples=examples(30))
@given(seed=st.integers(0, 10**6), n=st.integers(1, 120), parts=st.integers(1, 5), days=st.sampled_from([5, 12]))
def test_rates_equal_a_brute_force_in_many_partitionings(seed: int, n: int, parts: int, days: int) -> None:
    _rates_equal_a_brute_force(seed, n, parts, days)


@st.composite
def _given_runs(draw) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Runs of days per key (some overlapping, some touching, some repeated, before and after 1970), and a part
    each is in."""
    n = draw(st.integers(0, 40))
    key = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    first = draw(st.lists(st.integers(-8, 25), min_size=n, max_size=n))
    length = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    part = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    first_ = np.array(first, np.int64)
    return np.array(key, np.int64), first_, first_ + np.array(length, np.int64), np.array(part, np.int64)


@pytest.mark.slow
@settings(max_examples=examples(300))
@given(_given_runs())
def test_runs_unite_to_the_maximal_runs_of_their_days_in_any_partitioning(given_runs) -> None:
    """The interval arithmetic alone (what extend and the parts' merge do): the union of runs is the maximal
    runs of the union of their days, whether united at once or part by part, in any order."""
    key, first, last, part = given_runs
    days: dict[int, set[int]] = {}
    for k, a, b in zip(key.tolist(), first.tolist(), last.tolist()):
        days.setdefault(k, set()).update(range(a, b + 1))
    want = [(k, a, b) for k in sorted(days) for a, b in _maximal_runs(days[k])]
    got = coalesce_runs(key, first, last)
    assert list(zip(*(a.tolist() for a in got))) == want
    # Part by part, the parts in reverse order, then united: the same (a merge of merges).
    pieces = [coalesce_runs(key[part == j], first[part == j], last[part == j]) for j in range(3, -1, -1)]
    again = coalesce_runs(*(np.concatenate([p[i] for p in pieces]) for i in range(3)))
    assert all((a == b).all() for a, b in zip(again, got))
    # Maximal runs in order are returned as they are (the fast path), and the same as sorting them would give.
    assert all((a == b).all() for a, b in zip(coalesce_runs(*got), got))
    # Never more runs than days; the days they hold are those given.
    pairs = sorted((k, d) for k in days for d in days[k])
    assert list(zip(*(a.tolist() for a in expand_runs(*got)))) == pairs and len(got[0]) <= len(pairs)
    # The stored form: on (dataset, model, station) indices, the same runs in canonical order.
    d, m, s = key // 2, key % 2, np.zeros_like(key)
    stored = canonical_runs(d, m, s, first, last)
    assert stored["rate_run_model"].tolist() == [k % 2 for k, _, _ in want]
    assert (stored["rate_run_first"].view(np.int64) // DAY_NS).tolist() == [a for _, a, _ in want]
    assert (stored["rate_run_last"].view(np.int64) // DAY_NS).tolist() == [b for _, _, b in want]


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
    for name in ("rate_picks", *RATE_RUNS, "rate_days", "picks_per_day"):
        assert local[name].equals(far[name]), name


@pytest.mark.slow
def test_store_round_trip_report_and_extend_equal_one_run(tmp_path) -> None:
    ref, picks = _random_picks(5, 300)
    one = pickscale.score(ref, picks, progress=False)
    pickscale.save(pickscale.score(ref, picks[picks.model == "m"], progress=False), tmp_path / "a.zarr")
    back = pickscale.open_results(tmp_path / "a.zarr", lazy=False)
    assert [back[name].dtype for name in RATE_RUNS] == [np.int32] * 3 + [np.dtype("datetime64[ns]")] * 2
    assert "day" not in back.dims and "rate_row" not in back.dims and back["rate_run_first"].dims == ("rate_run",)
    pickscale.extend(tmp_path / "a.zarr", ref, picks[picks.model == "n"], progress=False)
    merged = pickscale.open_results(tmp_path / "a.zarr", lazy=False)
    assert pickscale.tables(merged)["pick_rates"].equals(pickscale.tables(one)["pick_rates"])
    # A later stretch (a quiet gap between: no arrival near the cut), days united, picks added: the runs that
    # end on the day of the cut and those that begin there are one.
    cut = T0 + pd.Timedelta(hours=84)
    early, before = picks.time < cut, ref.time < cut
    pickscale.save(pickscale.score(ref[before], picks[early], progress=False), tmp_path / "b.zarr")
    pickscale.extend(tmp_path / "b.zarr", ref[~before], picks[~early], progress=False)
    stretch = pickscale.open_results(tmp_path / "b.zarr", lazy=False)
    for name in ("rate_picks", *RATE_RUNS, "picks_per_day"):
        assert stretch[name].equals(one[name]), name
    assert pickscale.tables(stretch)["pick_rates"].equals(pickscale.tables(one)["pick_rates"])


@pytest.mark.slow
def test_a_store_without_pick_rates_opens_and_extends_without_them(tmp_path) -> None:
    ref, picks = _random_picks(7, 200)
    old = pickscale.score(ref, picks[picks.model == "m"], progress=False)
    old = old.drop_vars(list(RATE_VARIABLES) + ["rate_station"])
    pickscale.save(old, tmp_path / "old.zarr")
    back = pickscale.open_results(tmp_path / "old.zarr", lazy=False)
    assert "rate_picks" not in back and "pick_rates" not in pickscale.tables(back)
    pickscale.extend(tmp_path / "old.zarr", ref, picks[picks.model == "n"], progress=False)
    assert "rate_picks" not in pickscale.open_results(tmp_path / "old.zarr", lazy=False)


def _cli_case(tmp_path) -> list[str]:
    ref, picks = _spec_case()
    ref.to_csv(tmp_path / "ref.csv", index=False)
    picks.to_csv(tmp_path / "picks.csv", index=False)
    return ["score", "--reference", str(tmp_path / "ref.csv"), "--picks", str(tmp_path / "picks.csv"), "--quiet"]


@pytest.mark.slow
def test_cli_writes_the_table_and_report_rewrites_it(tmp_path) -> None:
    """The table through the CLI (without figures: the figure through the CLI is
    :func:`test_cli_writes_the_figure_and_report_rewrites_it`, marked slow; the figure itself is made here)."""
    import io

    from pickscale.report.figures.rates import pick_rates as rates_figure

    args = _cli_case(tmp_path)
    assert main([*args, "--out", str(tmp_path / "a"), "--rate-thresholds", "0.5", "--no-figures"]) == 0
    lines = (tmp_path / "a" / "pick_rates.csv").read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS)
    assert lines[4] == "all,m,P,B,0.5,3,2,0.6666666666666666,False,0"
    store = tmp_path / "a" / "results.zarr"
    assert main(["report", str(store), "--out", str(tmp_path / "c"), "--quiet", "--no-figures"]) == 0
    assert (tmp_path / "c" / "pick_rates.csv").read_bytes() == (tmp_path / "a" / "pick_rates.csv").read_bytes()
    png = io.BytesIO()
    rates_figure(pickscale.open_results(store, lazy=False)).savefig(png, format="png")
    assert png.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"
    # A bad value: exit 2, nothing written.
    assert main([*args, "--out", str(tmp_path / "d"), "--rate-thresholds", "1.5"]) == 2
    assert not (tmp_path / "d" / "results.zarr").exists()


@pytest.mark.slow
def test_cli_writes_the_figure_and_report_rewrites_it(tmp_path) -> None:
    args = _cli_case(tmp_path)
    assert main([*args, "--out", str(tmp_path / "a"), "--rate-thresholds", "0.5"]) == 0
    png = tmp_path / "a" / "figures" / "pick_rates.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["report", str(tmp_path / "a" / "results.zarr"), "--out", str(tmp_path / "c"), "--quiet"]) == 0
    assert (tmp_path / "c" / "pick_rates.csv").read_bytes() == (tmp_path / "a" / "pick_rates.csv").read_bytes()
    assert (tmp_path / "c" / "figures" / "pick_rates.png").exists()


@pytest.mark.slow
def test_figure_rows_busiest_first_and_one_station_has_no_figure() -> None:
    ref, picks = _spec_case()
    ds = pickscale.score(ref, picks, progress=False)
    panels, _ = rate_rows(ds)
    # Equal rates in station order; A has no S arrival.
    assert [(p.phase, p.stations, p.scored) for p in panels] == [("P", ["A", "B"], [True, False]),
                                                                 ("S", ["B", "A"], [False, False])]
    assert panels[0].rate["m"].tolist() == [1.0, 1.0]
    assert has_rates(ds) and not has_rates(pickscale.score(ref, picks[picks.station == "A"], progress=False))


@pytest.mark.slow
def test_table_of_results_without_rates_is_empty_with_its_columns() -> None:
    ref, picks = _spec_case()
    ds = pickscale.score(ref, picks, progress=False).drop_vars(["rate_picks", *RATE_RUNS])
    assert pick_rates(ds).columns.tolist() == COLUMNS and pick_rates(ds).empty


def _by_hand() -> tuple[pd.DataFrame, pd.DataFrame]:
    """A tiny catalogue whose runs are worked out by hand (test_rate_runs_worked_by_hand)."""
    ref = pd.DataFrame({"station": ["A", "A"], "phase": ["P", "P"],
                        "time": pd.to_datetime(["2024-01-30T10:00:00Z", "2024-02-04T10:00:00Z"])})
    picks = pd.DataFrame([
        ("m", "A", "P", "2024-01-30T10:00:00Z", 0.9),              # on the first arrival
        ("m", "A", "S", "2024-01-31T23:59:59.999999999Z", 0.4),    # the last nanosecond of January
        ("m", "A", "P", "2024-02-01T00:00:00Z", 0.5),              # midnight exactly: February 1
        ("m", "A", "S", "2024-02-02T12:00:00Z", 0.3),
        # February 3: no pick at A
        ("m", "A", "P", "2024-02-04T10:00:00Z", 0.6),              # on the second arrival
        ("m", "B", "P", "2024-01-01T05:00:00Z", 0.9), ("m", "B", "P", "2024-01-01T07:00:00Z", 0.4),
        ("n", "A", "P", "1969-12-31T23:00:00Z", 0.6),              # before 1970: day -1
        ("n", "A", "P", "1969-12-31T01:00:00Z", 0.7),              # the same day again
        ("n", "A", "S", "1970-01-01T00:00:00Z", 0.3),              # day 0: the run crosses 1970
        ("n", "A", "S", "2024-01-03T00:00:00Z", 0.3),
        ("n", "C", "P", "2024-01-02T00:00:00Z", 0.01),             # below the floor: no run, no station
    ], columns=["model", "station", "phase", "time", "conf"])
    return ref, picks


@pytest.mark.slow
def test_rate_runs_worked_by_hand() -> None:
    """The runs of a tiny catalogue, worked out by hand: one per maximal run of consecutive UTC days with a pick
    at or above the floor (0.02), per (dataset, model, station), sorted by dataset, model, station, first day.

    (m, A): January 30, 31, February 1, 2 (across the month), not 3, then 4: two runs, one empty day between.
    (m, B): January 1.  (n, A): December 31, 1969 and January 1, 1970 (one run), then January 3, 2024.
    9 days with a pick (the rows of a row per day), 5 runs."""
    ref, picks = _by_hand()
    ds = pickscale.score(ref, picks, progress=False)
    assert ds["rate_station"].values.tolist() == ["A", "B"] and ds["model"].values.tolist() == ["m", "n"]
    assert ds.sizes["rate_run"] == 5
    assert ds["rate_run_dataset"].values.tolist() == [0, 0, 0, 0, 0]
    assert ds["rate_run_model"].values.tolist() == [0, 0, 0, 1, 1]
    assert ds["rate_run_station"].values.tolist() == [0, 0, 1, 0, 0]
    midnights = [np.datetime64(d, "ns").astype(np.int64) for d in (
        "2024-01-30", "2024-02-04", "2024-01-01", "1969-12-31", "2024-01-03")]
    assert ds["rate_run_first"].values.view(np.int64).tolist() == midnights
    assert ds["rate_run_last"].values.view(np.int64).tolist() == [np.datetime64(d, "ns").astype(np.int64) for d in (
        "2024-02-02", "2024-02-04", "2024-01-01", "1970-01-01", "2024-01-03")]
    assert [ds[name].dtype for name in RATE_RUNS] == [np.int32] * 3 + [np.dtype("datetime64[ns]")] * 2
    assert ds["rate_days"].sel(dataset="all").values.tolist() == [[5, 1], [3, 0]]  # (model, station)
    per_day = ds["picks_per_day"].sel(dataset="all", threshold=0.3)
    assert per_day.sel(model="m", phase="P").values.tolist() == [3 / 5, 2.0]  # A: 0.9, 0.5, 0.6 over 5 days
    assert per_day.sel(model="m", phase="S", rate_station="A").item() == 2 / 5
    assert per_day.sel(model="n", rate_station="A").values.tolist() == [2 / 3, 2 / 3]
    assert np.isnan(per_day.sel(model="n", rate_station="B")).all()
    table = rate_runs(ds)
    assert table.columns.tolist() == ["dataset", "model", "station", "first", "last", "days"]
    assert table["days"].tolist() == [4, 1, 1, 2, 1] and str(table["first"][3]) == "1969-12-31 00:00:00+00:00"
    for name in RATE_RUNS:
        assert ds[name].attrs["long_name"] == RATE_VARIABLES[name].long_name
    assert "units" not in ds["rate_run_first"].attrs and "units" not in ds["rate_run_last"].attrs  # datetimes
    assert _runs(ds) == _brute_runs(picks, 0.02)


@pytest.mark.slow
def test_extending_by_the_next_days_joins_the_runs_byte_for_byte(tmp_path) -> None:
    """A store of the catalogue to January 31 extended by February: (m, A)'s run of January 30–31 and that of
    February 1–2 touch, and are one run, as in one run of the whole: the rate variables' files are identical
    (one run's saved alone: the same arrays by the same codec)."""
    import xarray as xr

    ref, picks = _by_hand()
    one = pickscale.score(ref, picks, progress=False)
    pickscale.save(xr.Dataset({k: one[k] for k in RATE_VARIABLES if k in one}), tmp_path / "one.zarr")
    cut = pd.Timestamp("2024-02-01", tz="UTC")
    early, before = pd.to_datetime(picks.time, utc=True, format="ISO8601") < cut, ref.time < cut
    part = pickscale.score(ref[before], picks[early], progress=False)
    assert _runs(part)[:2] == [("all", "m", "A", "2024-01-30", "2024-01-31"), ("all", "m", "B", "2024-01-01",
                                                                            "2024-01-01")]
    pickscale.extend(pickscale.save(part, tmp_path / "two.zarr"), ref[~before], picks[~early], progress=False)
    assert _runs(pickscale.open_results(tmp_path / "two.zarr", lazy=False)) == _runs(one)
    assert _rate_files(tmp_path / "two.zarr") == _rate_files(tmp_path / "one.zarr")


def _rate_files(store) -> dict[str, bytes]:
    return {f.relative_to(store).as_posix(): f.read_bytes() for f in sorted(store.rglob("*"))
            if f.is_file() and f.relative_to(store).parts[0] in (*RATE_VARIABLES, "rate_station")}


@pytest.mark.slow
def test_a_decade_of_picks_is_a_few_runs_not_a_dense_table(tmp_path) -> None:
    """Two stations picking once ten years apart, and one picking every day of the decade between: a dense
    (station × day) layout holds 3 × 3,653 cells, day rows 3,654 rows; the runs are 3, in the run, in the store,
    and after extending a store by the later stretch (C's two runs that touch at the cut joined, no table
    between)."""
    early, late = pd.Timestamp("2014-01-01T10:00:00Z"), pd.Timestamp("2024-01-01T10:00:00Z")
    ref = pd.DataFrame({"station": ["A", "B"], "phase": "P", "time": [early, late]})
    every_day = pd.date_range("2014-01-01T12:00:00Z", "2023-12-31T12:00:00Z", freq="D")
    picks = pd.concat([pd.DataFrame({"station": ["A", "B"], "phase": "P", "time": [early, late], "conf": 0.9}),
                       pd.DataFrame({"station": "C", "phase": "S", "time": every_day, "conf": 0.5})],
                      ignore_index=True).assign(model="m")

    def small(ds) -> None:
        assert ds.sizes["rate_run"] == 3 and ds.sizes["rate_station"] == 3
        rate_dims = {dim for name in RATE_VARIABLES if name in ds for dim in ds[name].dims}
        assert rate_dims == {"dataset", "model", "phase", "threshold", "rate_station", "rate_run"}
        assert all(ds.sizes[dim] < 100 for dim in rate_dims), dict(ds.sizes)  # no dimension of days
        assert sum(ds[name].nbytes for name in RATE_RUNS) == 3 * (3 * 4 + 2 * 8)
        assert _runs(ds) == [("all", "m", "A", "2014-01-01", "2014-01-01"),
                             ("all", "m", "B", "2024-01-01", "2024-01-01"),
                             ("all", "m", "C", "2014-01-01", "2023-12-31")]
        assert ds["rate_days"].values.ravel().tolist() == [1, 1, len(every_day)]

    one = pickscale.score(ref, picks, progress=False)
    small(one)
    pickscale.save(one, tmp_path / "one.zarr")
    small(pickscale.open_results(tmp_path / "one.zarr", lazy=False))
    # Five small arrays: their metadata (zarr.json, ~0.9 kB each) and a few bytes of data.
    assert sum(f.stat().st_size for f in (tmp_path / "one.zarr").glob("rate_run_*/**/*") if f.is_file()) < 5_500
    first = picks.time < pd.Timestamp("2020-01-01", tz="UTC")
    before = ref.time < pd.Timestamp("2020-01-01", tz="UTC")
    pickscale.save(pickscale.score(ref[before], picks[first], progress=False), tmp_path / "two.zarr")
    pickscale.extend(tmp_path / "two.zarr", ref[~before], picks[~first], progress=False)
    extended = pickscale.open_results(tmp_path / "two.zarr", lazy=False)
    small(extended)
    for name in ("rate_picks", *RATE_RUNS, "rate_days", "picks_per_day"):
        assert extended[name].equals(one[name]), name
    assert _rate_files(tmp_path / "two.zarr") == _rate_files(tmp_path / "one.zarr")


def _stored_runs_are_byte_identical(folder, seed: int, n: int, parts: int, days: int, *, whole: bool) -> None:
    """One run and a partitioned, shuffled one store the same bytes for the rate variables: the whole stores
    (``whole``) or the rate variables saved alone (the same arrays, by the same codec: far quicker)."""
    import xarray as xr

    ref, picks = _random_picks(seed, n, days)
    shuffled = dd.from_pandas(picks.sample(frac=1, random_state=seed), npartitions=parts)
    stores = []
    for name, run in (("one", pickscale.score(ref, picks, progress=False)),
                      ("many", pickscale.score(ref, shuffled, progress=False))):
        kept = run if whole else xr.Dataset({k: run[k] for k in RATE_VARIABLES if k in run})
        stores.append(pickscale.save(kept, folder / f"{name}.zarr"))
    one, many = (_rate_files(store) for store in stores)
    assert one == many and any(k.startswith("rate_run_first/") for k in one)


@pytest.mark.slow
@settings(max_examples=examples(3))
@given(seed=st.integers(0, 10**6), n=st.integers(1, 80), parts=st.integers(2, 5), days=st.sampled_from([5, 12]))
def test_stored_rate_runs_are_byte_identical_whatever_the_partitioning(tmp_path_factory, seed: int, n: int,
                                                                       parts: int, days: int) -> None:
    """The rate variables saved alone, a few examples; the whole stores, many:
    :func:`test_stored_rate_runs_are_byte_identical_in_many_partitionings` (slow)."""
    _stored_runs_are_byte_identical(tmp_path_factory.mktemp("runs"), seed, n, parts, days, whole=False)


@pytest.mark.slow
@settings(max_examples=examples(10))
@given(seed=st.integers(0, 10**6), n=st.integers(1, 80), parts=st.integers(2, 5), days=st.sampled_from([5, 12]))
def test_stored_rate_runs_are_byte_identical_in_many_partitionings(tmp_path_factory, seed: int, n: int,
                                                                   parts: int, days: int) -> None:
    _stored_runs_are_byte_identical(tmp_path_factory.mktemp("runs"), seed, n, parts, days, whole=True)
