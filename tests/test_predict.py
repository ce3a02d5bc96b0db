"""SPEC §17: a reference predicted from travel times (``pickscale.predict``, ``pickscale predict``).

Travel times are checked against ObsPy's TauP called directly here (its own ``ttp``/``tts`` phase sets, not the
list pickscale passes), the distance against a hand-worked case, the inputs as real ObsPy objects written to
files, and the written CSV is read back by the reference reader and scored end to end.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pickscale
from pickscale.cli import main
from pickscale.errors import InputError, OptionsError

obspy = pytest.importorskip("obspy")
from obspy.core.event import Catalog, Event, Magnitude, Origin  # noqa: E402
from obspy.core.inventory import Inventory, Network, Station  # noqa: E402
from obspy.taup import TauPyModel  # noqa: E402

ORIGIN = "2024-01-01T00:00:00Z"
ORIGIN_NS = pd.Timestamp(ORIGIN).value


@pytest.fixture(scope="module")
def iasp91() -> TauPyModel:
    return TauPyModel("iasp91")


def _first(taup: TauPyModel, depth: float, distance: float, kind: str) -> tuple[float, str]:
    arrivals = taup.get_travel_times(source_depth_in_km=depth, distance_in_degree=distance,
                                     phase_list=["ttp" if kind == "P" else "tts"])
    first = min(arrivals, key=lambda a: a.time)
    return float(first.time), first.name


def _events(rows: list[tuple[str, float, float, float]], time: str = ORIGIN) -> pd.DataFrame:
    return pd.DataFrame({"event": [r[0] for r in rows], "time": time, "latitude": [r[1] for r in rows],
                         "longitude": [r[2] for r in rows], "depth_km": [r[3] for r in rows]})


def _stations(rows: list[tuple[str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame({"station": [r[0] for r in rows], "latitude": [r[1] for r in rows],
                         "longitude": [r[2] for r in rows]})


# (event depth km, station latitude, longitude) for an event at 45°N 0°E; the distance and TauP's first P.
GEOMETRIES = {
    "epicentre": (10.0, 45.0, 0.0, 0.0, "p"),        # straight up: 10 km at 5.8 km/s
    "one_degree": (10.0, 46.0, 0.0, 1.0, "p"),       # the direct upgoing ray beats the head wave
    "pn": (30.0, 46.0, 0.0, 1.0, "Pn"),              # from 30 km the Moho head wave is first
    "sixty": (10.0, 45.0, 90.0, 60.0, "P"),
    "pdiff": (10.0, 0.0, 135.0, 120.0, "Pdiff"),     # in the core's shadow
    "antipode": (10.0, -45.0, 180.0, 180.0, "PKIKP"),
}


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_first_arrivals_equal_taup_called_directly(name, iasp91):
    depth, lat, lon, distance, p_name = GEOMETRIES[name]
    ref = pickscale.predict(_events([("ev", 45.0, 0.0, depth)]), _stations([("XX.A", lat, lon)]))
    assert ref["phase"].tolist() == ["P", "S"]
    assert ref["distance_deg"].iat[0] == pytest.approx(distance, abs=1e-9)
    for i, kind in enumerate(("P", "S")):
        expected, expected_name = _first(iasp91, depth, float(ref["distance_deg"].iat[i]), kind)
        got = (ref["time"].iat[i].value - ORIGIN_NS) / 1e9
        assert got == pytest.approx(expected, abs=1e-3), (kind, got, expected)
        assert ref["travel_time_s"].iat[i] == pytest.approx(expected, abs=1e-6)
        if kind == "P":
            assert ref["taup_phase"].iat[i] == p_name == expected_name
    if name == "epicentre":
        assert ref["travel_time_s"].iat[0] == pytest.approx(10.0 / 5.8, abs=1e-6)  # iasp91's upper crust


def test_hand_worked_distance_and_columns():
    # cos Δ = sin²45° + cos²45°·cos 90° = 1/2: Δ = 60°, 60·π·6371/180 km.
    ref = pickscale.predict(_events([("ev", 45.0, 0.0, 10.0)]), _stations([("XX.FAR", 45.0, 90.0)]), phases="P")
    assert ref.columns.tolist() == ["event", "station", "phase", "time", "taup_phase", "travel_time_s",
                                    "distance_deg", "distance_km", "depth_km"]
    assert ref["distance_deg"].iat[0] == pytest.approx(60.0, abs=1e-12)
    assert ref["distance_km"].iat[0] == pytest.approx(60.0 * math.pi * 6371.0 / 180.0, rel=1e-12)
    assert ref["distance_km"].iat[0] == pytest.approx(6671.696, abs=1e-3)
    # SPEC §17's worked example, to the microsecond.
    assert ref["time"].iat[0] == pd.Timestamp("2024-01-01T00:10:06.671111Z")


@pytest.mark.slow
def test_rows_sorted_counts_and_max_distance():
    events = _events([("b", 45.0, 0.0, 10.0), ("a", 45.0, 0.0, 10.0)])
    stations = _stations([("XX.Z", 46.0, 0.0), ("XX.B", 45.0, 90.0), ("XX.C", 0.0, 135.0)])
    ref = pickscale.predict(events, stations, dataset="obs", max_distance_deg=90.0)
    assert ref.columns[0] == "dataset" and set(ref["dataset"]) == {"obs"}
    keys = list(zip(ref["event"], ref["station"], ref["phase"]))
    assert keys == sorted(keys) and len(keys) == 2 * 2 * 2  # XX.C (120°) left out for both events
    assert ref.attrs["pickscale_counts"] == {"events": 2, "stations": 3, "rows": 8, "beyond_max_distance": 2,
                                             "no_arrival": 0}
    assert any("max_distance_deg" in n for n in ref.attrs["pickscale_notes"])


@pytest.mark.slow
def test_quakeml_and_stationxml_inputs(tmp_path):
    origin = Origin(time=ORIGIN, latitude=45.0, longitude=0.0, depth=10_000.0)  # QuakeML depths in metres
    other = Origin(time="2024-01-01T00:00:05Z", latitude=10.0, longitude=10.0, depth=50_000.0)
    event = Event(origins=[other, origin], magnitudes=[Magnitude(mag=2.5)])
    event.preferred_origin_id = origin.resource_id
    Catalog([event]).write(str(tmp_path / "events.xml"), format="QUAKEML")
    net = Network("OO", stations=[Station("AXAS1", latitude=46.0, longitude=0.0, elevation=-1500.0),
                                  Station("FAR", latitude=45.0, longitude=90.0, elevation=10.0)])
    Inventory(networks=[net], source="test").write(str(tmp_path / "stations.xml"), format="STATIONXML")
    ref = pickscale.predict(tmp_path / "events.xml", tmp_path / "stations.xml")
    assert ref["station"].tolist() == ["OO.AXAS1", "OO.AXAS1", "OO.FAR", "OO.FAR"]
    assert set(ref["event"]) == {str(event.resource_id)}
    assert ref["depth_km"].tolist() == [10.0] * 4 and ref["magnitude"].tolist() == [2.5] * 4  # the preferred origin
    assert ref["distance_deg"].iat[0] == pytest.approx(1.0, abs=1e-9)
    # Elevation ignored: the sea-floor station at 1.5 km below sea level is at the model's surface.
    assert ref["travel_time_s"].iat[0] == pytest.approx(19.233675, abs=1e-6)
    # The same from the objects themselves.
    again = pickscale.predict(Catalog([event]), Inventory(networks=[net], source="test"))
    pd.testing.assert_frame_equal(ref, again)


def test_csv_inputs_and_the_stations_file_of_group_by(tmp_path):
    (tmp_path / "events.csv").write_text("Time,Latitude,Longitude,Depth_km,Magnitude\n"
                                         "2024-01-01T00:00:00Z,45,0,10,3.0\n"
                                         "2024-01-01T01:00:00Z,45,0,10,\n")
    # The --stations file of SPEC §14: attribute columns beside the coordinates, a trailing-dot station.
    (tmp_path / "stations.csv").write_text("station,site_class,latitude,longitude\nXX.NEAR.,obs,46,0\n")
    ref = pickscale.predict(tmp_path / "events.csv", tmp_path / "stations.csv", phases=["S"])
    assert ref["event"].tolist() == ["2024-01-01T00:00:00.000000000Z", "2024-01-01T01:00:00.000000000Z"]
    assert ref["station"].tolist() == ["XX.NEAR", "XX.NEAR"] and ref["phase"].tolist() == ["S", "S"]
    assert ref["magnitude"].iloc[0] == 3.0 and np.isnan(ref["magnitude"].iloc[1])
    assert (ref["time"].iat[1] - ref["time"].iat[0]) == pd.Timedelta(hours=1)


@pytest.mark.parametrize("events, stations, message", [
    ("events.csv", "missing.csv", "stations file"),
    ("no_depth.csv", "stations.csv", "missing depth_km"),
    ("negative.csv", "stations.csv", "column depth_km: 1 value.* below 0"),
    ("events.csv", "no_coordinates.csv", "columns latitude and longitude"),
])
def test_bad_inputs_are_input_errors(tmp_path, events, stations, message):
    (tmp_path / "events.csv").write_text("time,latitude,longitude,depth_km\n2024-01-01T00:00:00Z,45,0,10\n")
    (tmp_path / "no_depth.csv").write_text("time,latitude,longitude\n2024-01-01T00:00:00Z,45,0\n")
    (tmp_path / "negative.csv").write_text("time,latitude,longitude,depth_km\n2024-01-01T00:00:00Z,45,0,-1\n")
    (tmp_path / "stations.csv").write_text("station,latitude,longitude\nXX.A,46,0\n")
    (tmp_path / "no_coordinates.csv").write_text("station,site_class\nXX.A,obs\n")
    with pytest.raises(InputError, match=message):
        pickscale.predict(tmp_path / events, tmp_path / stations)


def test_bad_options():
    events, stations = _events([("ev", 45.0, 0.0, 10.0)]), _stations([("XX.A", 46.0, 0.0)])
    with pytest.raises(OptionsError, match="phases"):
        pickscale.predict(events, stations, phases=("P", "Pdiff"))
    with pytest.raises(OptionsError, match="max_distance_deg"):
        pickscale.predict(events, stations, max_distance_deg=-1)
    with pytest.raises(InputError, match="unknown TauP model 'iasp92'.*iasp91"):
        pickscale.predict(events, stations, model="iasp92")


@pytest.mark.slow  # scores on Dask: a few seconds, more on a loaded machine
def test_written_reference_is_read_and_scored(tmp_path, capsys):
    (tmp_path / "events.csv").write_text("event,time,latitude,longitude,depth_km\n"
                                         "e1,2024-01-01T00:00:00Z,45,0,10\n"
                                         "e2,2024-01-01T00:30:00Z,44,1,15\n")
    (tmp_path / "stations.csv").write_text("station,latitude,longitude\nXX.A,46,0\nXX.B,45,2\nXX.C,43,0.5\n")
    out = tmp_path / "predicted.csv"
    assert main(["predict", "--events", str(tmp_path / "events.csv"), "--stations", str(tmp_path / "stations.csv"),
                 "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "12 reference row(s) (P 6, S 6) for 2 event(s) and 3 station(s)" in stdout
    written = pd.read_csv(out)
    assert written.columns[:4].tolist() == ["event", "station", "phase", "time"]
    assert written["time"].str.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z").all()

    from pickscale.io import normalise, read_raw

    read = normalise(read_raw(str(out), role="reference"), role="reference", source=str(out))  # as score reads it
    reference = read.frame
    assert len(reference) == 12 and set(reference["phase"]) == {"P", "S"} and read.n_invalid == 0
    assert read.dropped_phases == {} and "distance_km" in read.ignored_columns
    expected = pickscale.predict(tmp_path / "events.csv", tmp_path / "stations.csv")
    assert (reference.sort_values(["station", "phase", "time"])["time"].to_numpy("datetime64[ns]")
            == expected.sort_values(["station", "phase", "time"])["time"].to_numpy("datetime64[ns]")).all()

    # Picks: every P found 0.4 s late, S found at 4 of 6 arrivals 1.5 s early, and one pick far from any.
    p = expected[expected.phase == "P"]
    s = expected[expected.phase == "S"].iloc[:4]
    picks = pd.DataFrame({
        "model": "m", "station": [*p.station, *s.station, "XX.A"], "phase": [*p.phase, *s.phase, "P"],
        "time": [*(p.time + pd.Timedelta(seconds=0.4)), *(s.time - pd.Timedelta(seconds=1.5)),
                 p.time.iat[0] + pd.Timedelta(seconds=30)],
        "conf": 0.9})
    ds = pickscale.score(str(out), picks, tol=2.0, residual_tol=2.0, progress=False)
    det = pickscale.tables(ds)["detection"].set_index("phase")
    assert det.loc["P", "recall"] == 1.0 and det.loc["S", "recall"] == pytest.approx(4 / 6)
    timing = pickscale.tables(ds)["timing"].set_index("phase")
    assert timing.loc["P", "bias"] == pytest.approx(0.4, abs=1e-9)
    assert timing.loc["S", "bias"] == pytest.approx(-1.5, abs=1e-9)


@pytest.mark.slow
def test_cli_refuses_bad_input_with_exit_2(tmp_path, capsys):
    (tmp_path / "events.csv").write_text("time,latitude,longitude,depth_km\n2024-01-01T00:00:00Z,45,0,-3\n")
    (tmp_path / "stations.csv").write_text("station,latitude,longitude\nXX.A,46,0\n")
    out = tmp_path / "p.csv"
    base = ["predict", "--stations", tmp_path / "stations.csv", "--out", out]
    cases = [
        ([*base, "--events", tmp_path / "missing.csv"], "events file"),
        ([*base, "--events", tmp_path / "events.csv"], "depth_km"),
        ([*base, "--events", tmp_path / "stations.csv"], "missing time"),
        ([*base, "--events", tmp_path / "events.csv", "--model", "nope"], "unknown TauP model 'nope'"),
        ([*base, "--events", tmp_path / "events.csv", "--phases", "P,Q"], "--phases"),
    ]
    for argv, message in cases:
        assert main([str(a) for a in argv]) == 2, argv
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, err
        assert not out.exists()
    # An existing --out is replaced only with --overwrite.
    (tmp_path / "events.csv").write_text("time,latitude,longitude,depth_km\n2024-01-01T00:00:00Z,45,0,3\n")
    out.write_text("mine\n")
    assert main([str(a) for a in [*base, "--events", tmp_path / "events.csv"]]) == 2
    assert "--overwrite" in capsys.readouterr().err and out.read_text() == "mine\n"
    assert main([str(a) for a in [*base, "--events", tmp_path / "events.csv", "--overwrite"]]) == 0
    assert pd.read_csv(out)["phase"].tolist() == ["P", "S"]


def test_import_is_lazy_and_exported():
    assert "predict" in pickscale.__all__
    assert Path(pickscale.predict.__code__.co_filename).parent.name == "prediction"


def test_without_obspy_the_message_names_the_extra(monkeypatch):
    import sys

    for name in [m for m in sys.modules if m == "obspy" or m.startswith("obspy.")]:
        monkeypatch.setitem(sys.modules, name, None)  # what an environment without ObsPy gives: ImportError
    with pytest.raises(InputError, match=r"pip install 'pickscale\[obspy\]'"):
        pickscale.predict(_events([("ev", 45.0, 0.0, 10.0)]), _stations([("XX.A", 46.0, 0.0)]))


def test_station_epochs_and_events_without_origin(tmp_path):
    moved = Network("OO", stations=[Station("OBS1", latitude=46.0, longitude=0.0, elevation=-3000.0,
                                            start_date="2023-01-01"),
                                    Station("OBS1", latitude=47.0, longitude=0.0, elevation=-3000.0,
                                            start_date="2024-01-01")])  # redeployed one degree north
    ref = pickscale.predict(_events([("ev", 45.0, 0.0, 10.0)]), Inventory(networks=[moved], source="test"),
                            phases="P")
    assert ref["distance_deg"].iat[0] == pytest.approx(2.0, abs=1e-9)  # the epoch that starts last
    assert any("OO.OBS1" in n and "latest epoch" in n for n in ref.attrs["pickscale_notes"])
    with pytest.raises(InputError, match="no origin"):
        pickscale.predict(Catalog([Event()]), _stations([("XX.A", 46.0, 0.0)]))
    no_depth = Event(origins=[Origin(time=ORIGIN, latitude=45.0, longitude=0.0)])
    with pytest.raises(InputError, match="no depth_km"):
        pickscale.predict(Catalog([no_depth]), _stations([("XX.A", 46.0, 0.0)]))


def test_cli_refuses_a_url_out_and_creates_nothing_locally(tmp_path, capsys, monkeypatch):
    (tmp_path / "events.csv").write_text("time,latitude,longitude,depth_km\n2024-01-01T00:00:00Z,45,0,3\n")
    (tmp_path / "stations.csv").write_text("station,latitude,longitude\nXX.A,46,0\n")
    monkeypatch.chdir(tmp_path)
    argv = ["predict", "--events", "events.csv", "--stations", "stations.csv", "--out", "s3://bucket/p.csv"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "s3://bucket/p.csv" in err and "Traceback" not in err
    assert not (tmp_path / "s3:").exists()
